package main

import (
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

const (
	maxEmailBodyChars = 4000
	maxEmailFileBytes = 25 << 20 // a larger message file is read only this far
)

// email is one message of the Maildir as the prompt's $EMAILS carries it.
type email struct {
	From    string    `json:"from"`
	To      string    `json:"to"`
	Subject string    `json:"subject"`
	Date    string    `json:"date"`
	Body    string    `json:"body"`
	when    time.Time // Date, for the window and the order
}

// recentEmails reads the messages in dir's new/ and cur/ dated at or after start, newest
// first. A message that cannot be parsed is skipped with a log line.
func recentEmails(dir string, start time.Time, log *slog.Logger) ([]email, error) {
	if dir == "" {
		return nil, errors.New("MAILDIR is not configured")
	}
	var emails []email
	for _, sub := range []string{"new", "cur"} {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			return nil, fmt.Errorf("read Maildir: %w", err)
		}
		for _, entry := range entries {
			if !entry.Type().IsRegular() || strings.HasPrefix(entry.Name(), ".") {
				continue
			}
			path := filepath.Join(dir, sub, entry.Name())
			e, err := readEmailFile(path)
			if err != nil {
				log.Warn("skip e-mail message", "file", filepath.Join(sub, entry.Name()), "err", err)
				continue
			}
			if !e.when.Before(start) {
				emails = append(emails, e)
			}
		}
	}
	sort.SliceStable(emails, func(i, j int) bool { return emails[i].when.After(emails[j].when) })
	return emails, nil
}

func readEmailFile(path string) (email, error) {
	f, err := os.Open(path)
	if err != nil {
		return email{}, err
	}
	defer f.Close()
	return parseEmail(io.LimitReader(f, maxEmailFileBytes))
}

// headerDecoder decodes RFC 2047 words; it knows UTF-8, US-ASCII and ISO-8859-1 itself
// and reads Windows-1252 as ISO-8859-1, which differs only in rarely used punctuation.
var headerDecoder = mime.WordDecoder{CharsetReader: func(charset string, r io.Reader) (io.Reader, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return strings.NewReader(decodeCharset(charset, b)), nil
}}

// parseEmail reads one RFC 5322 message: decoded headers and the text of its body.
func parseEmail(r io.Reader) (email, error) {
	msg, err := mail.ReadMessage(r)
	if err != nil {
		return email{}, fmt.Errorf("parse message: %w", err)
	}
	when, err := msg.Header.Date()
	if err != nil {
		return email{}, fmt.Errorf("parse Date: %w", err)
	}
	header := func(name string) string {
		v := msg.Header.Get(name)
		if d, err := headerDecoder.DecodeHeader(v); err == nil {
			v = d
		}
		return strings.TrimSpace(strings.ToValidUTF8(v, "\uFFFD"))
	}
	plain, htmlText, err := bodyText(msg.Header.Get("Content-Type"), msg.Header.Get("Content-Transfer-Encoding"), msg.Body)
	if err != nil {
		return email{}, err
	}
	body := plain
	if body == "" {
		body = stripHTML(htmlText)
	}
	return email{
		From:    header("From"),
		To:      header("To"),
		Subject: header("Subject"),
		Date:    timestamp(when),
		Body:    cutText(strings.TrimSpace(body), maxEmailBodyChars),
		when:    when,
	}, nil
}

// bodyText returns the first text/plain and the first text/html text of a body, walking
// nested multiparts, transfer-decoded and converted to UTF-8.
func bodyText(contentType, encoding string, body io.Reader) (plain, htmlText string, err error) {
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil || contentType == "" {
		mediaType, params = "text/plain", map[string]string{"charset": "us-ascii"}
	}
	switch {
	case strings.HasPrefix(mediaType, "multipart/"):
		mr := multipart.NewReader(body, params["boundary"])
		for {
			part, err := mr.NextPart()
			if err == io.EOF {
				return plain, htmlText, nil
			}
			if err != nil {
				return "", "", fmt.Errorf("read multipart: %w", err)
			}
			// NextPart already undoes quoted-printable and hides that header.
			p, h, err := bodyText(part.Header.Get("Content-Type"), part.Header.Get("Content-Transfer-Encoding"), part)
			if err != nil {
				return "", "", err
			}
			if plain == "" {
				plain = p
			}
			if htmlText == "" {
				htmlText = h
			}
		}
	case mediaType == "text/plain" || mediaType == "text/html":
		var r io.Reader = body
		switch strings.ToLower(strings.TrimSpace(encoding)) {
		case "base64":
			r = base64.NewDecoder(base64.StdEncoding, body)
		case "quoted-printable":
			r = quotedprintable.NewReader(body)
		}
		b, err := io.ReadAll(r)
		if err != nil {
			return "", "", fmt.Errorf("decode %s body: %w", encoding, err)
		}
		text := decodeCharset(params["charset"], b)
		if mediaType == "text/html" {
			return "", text, nil
		}
		return text, "", nil
	default:
		return "", "", nil // attachments and other parts carry no text for a summary
	}
}

// decodeCharset turns text in charset into UTF-8. ISO-8859-1 bytes are their code
// points; UTF-8, US-ASCII and unknown charsets are kept, with invalid bytes replaced.
func decodeCharset(charset string, b []byte) string {
	switch strings.ToLower(strings.TrimSpace(charset)) {
	case "iso-8859-1", "latin1", "iso_8859-1", "windows-1252", "cp1252":
		var sb strings.Builder
		sb.Grow(len(b))
		for _, c := range b {
			sb.WriteRune(rune(c))
		}
		return sb.String()
	default:
		if utf8.Valid(b) {
			return string(b)
		}
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
}

var (
	htmlHidden = regexp.MustCompile(`(?is)<(script|style|head)\b.*?</(script|style|head)\s*>`)
	htmlTag    = regexp.MustCompile(`(?s)<[^>]*>`)
	blankRun   = regexp.MustCompile(`[ \t\r\f\v]+`)
	blankLines = regexp.MustCompile(`\n\s*\n+`)
)

// stripHTML reduces an HTML body to its text, good enough for a summary prompt.
func stripHTML(s string) string {
	s = htmlHidden.ReplaceAllString(s, " ")
	s = htmlTag.ReplaceAllString(s, " ")
	s = html.UnescapeString(s)
	s = blankRun.ReplaceAllString(s, " ")
	return strings.TrimSpace(blankLines.ReplaceAllString(s, "\n\n"))
}
