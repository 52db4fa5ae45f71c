package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/http"
	"net/mail"
	"os"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/ianaindex"
)

// Texts stored without asking the model when there is nothing to summarise.
const (
	noTicketsText = "No tracker tickets updated recently."
	noEmailsText  = "No emails received recently."
	// maxPromptDataChars bounds $TRACKER_TICKETS and $EMAILS, so that one busy day cannot
	// exceed a model's context or budget.
	maxPromptDataChars = 200_000
)

// configError is a missing model key or prompt template, which the earlier variant's
// GET /tracker-summary answers with its bare message (docs/SPEC.md §4, earlier variant, 1).
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

// summaryPipeline is one kind of summary: how to gather its material and where to keep it.
type summaryPipeline struct {
	name        string // for logs
	promptFile  func(config) string
	placeholder string // replaced by the JSON of the material
	emptyText   string
	gather      func(ctx context.Context, s *server, start time.Time) (items any, n int, err error)
	save        func(store *Store, ctx context.Context, date time.Time, text string) error
}

var trackerPipeline = summaryPipeline{
	name:        "tracker summary",
	promptFile:  func(c config) string { return c.TrackerPromptFile },
	placeholder: "$TRACKER_TICKETS",
	emptyText:   noTicketsText,
	gather: func(ctx context.Context, s *server, start time.Time) (any, int, error) {
		// Private issues and notes stay out: every API client reads the summary.
		tickets, err := recentTickets(ctx, s.client, s.cfg, start, false)
		return tickets, len(tickets), err
	},
	save: (*Store).SaveTrackerSummary,
}

var emailPipeline = summaryPipeline{
	name:        "email summary",
	promptFile:  func(c config) string { return c.EmailPromptFile },
	placeholder: "$EMAILS",
	emptyText:   noEmailsText,
	gather: func(ctx context.Context, s *server, start time.Time) (any, int, error) {
		emails, err := recentEmails(s.cfg.Maildir, start, s.log)
		return emails, len(emails), err
	},
	save: (*Store).AddEmailSummary,
}

// summaryText runs a pipeline for the day of now: check the configuration, read the
// template (each time, so that an edit takes effect without a restart), gather the
// material of the window, and ask the model unless there is none.
func (s *server) summaryText(ctx context.Context, p summaryPipeline, now time.Time) (string, error) {
	if s.cfg.GenAIKey == "" {
		return "", &configError{"GENAI_API_KEY is not configured"}
	}
	template, err := os.ReadFile(p.promptFile(s.cfg))
	if err != nil {
		return "", &configError{fmt.Sprintf("Prompt template not readable: %s", p.promptFile(s.cfg))}
	}
	items, n, err := p.gather(ctx, s, windowStart(now))
	if err != nil {
		return "", err
	}
	if n == 0 {
		return p.emptyText, nil
	}
	data, kept, err := fitJSON(items, maxPromptDataChars)
	if err != nil {
		return "", err
	}
	if kept == 0 {
		return "", fmt.Errorf("prompt data: none of the %d items fits in %d characters", n, maxPromptDataChars)
	}
	prompt := strings.NewReplacer("$DATE", now.Format("2006-01-02"), p.placeholder, string(data)).Replace(string(template))
	return complete(ctx, s.client, s.cfg, prompt)
}

// fitJSON writes a slice (newest first) as a JSON array of at most maxChars characters,
// dropping the oldest items first, and says how many it kept. An item too large to fit
// on its own is passed over, so that it cannot crowd out every other. <, > and & stay
// as they are: the reader is a model, not a browser, and escapes would only cost it
// tokens.
func fitJSON(items any, maxChars int) ([]byte, int, error) {
	raw, err := marshalPlain(items)
	if err != nil {
		return nil, 0, fmt.Errorf("prompt data: %w", err)
	}
	var each []json.RawMessage
	if err := json.Unmarshal(raw, &each); err != nil {
		return nil, 0, fmt.Errorf("prompt data: %w", err)
	}
	kept := []json.RawMessage{}
	size := 2 // the brackets
	for _, item := range each {
		chars := utf8.RuneCount(item)
		if 2+chars > maxChars {
			continue
		}
		if len(kept) > 0 {
			chars++ // the comma
		}
		if size+chars > maxChars {
			break
		}
		size += chars
		kept = append(kept, item)
	}
	data, err := marshalPlain(kept)
	return data, len(kept), err
}

// marshalPlain is json.Marshal without the escaping of <, > and &.
func marshalPlain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// windowStart is local midnight two days before now, four when now is a Monday, so that
// a Monday's summary covers the weekend. time.Date normalises across month ends and
// daylight-saving changes.
func windowStart(now time.Time) time.Time {
	days := 2
	if now.Weekday() == time.Monday {
		days = 4
	}
	y, m, d := now.Date()
	return time.Date(y, m, d-days, 0, 0, 0, 0, now.Location())
}

// startOfDay is local midnight of now's day: the summaryDate of its summaries.
func startOfDay(now time.Time) time.Time {
	y, m, d := now.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, now.Location())
}

// generate runs a pipeline for today and stores its text; failures are the caller's to log.
func (s *server) generate(ctx context.Context, p summaryPipeline) error {
	now := s.now()
	text, err := s.summaryText(ctx, p, now)
	if err != nil {
		return err
	}
	return p.save(s.store, ctx, startOfDay(now), text)
}

// startJob starts a pipeline in the background unless one of its kind is running.
func (s *server) startJob(p summaryPipeline) {
	s.jobs.start(p.name, func(ctx context.Context) {
		start := time.Now()
		if err := s.generate(ctx, p); err != nil {
			s.log.Error("summary job failed", "job", p.name, "duration", time.Since(start).Round(time.Millisecond), "err", err)
			return
		}
		s.log.Info("summary job done", "job", p.name, "duration", time.Since(start).Round(time.Millisecond))
	})
}

// summaryJobs tracks background work: at most one job per name, all cancelled and waited
// for (bounded) at shutdown.
type summaryJobs struct {
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	running map[string]bool
}

func newSummaryJobs() *summaryJobs {
	ctx, cancel := context.WithCancel(context.Background())
	return &summaryJobs{ctx: ctx, cancel: cancel, running: map[string]bool{}}
}

// start runs job in a goroutine, unless a job of the same name is running or the jobs
// are stopped.
func (j *summaryJobs) start(name string, job func(ctx context.Context)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.running[name] || j.ctx.Err() != nil {
		return
	}
	j.running[name] = true
	j.wg.Go(func() {
		defer func() {
			j.mu.Lock()
			delete(j.running, name)
			j.mu.Unlock()
		}()
		job(j.ctx)
	})
}

// stop cancels every job (their outbound calls end) and waits for them up to grace.
// It reports whether they all ended in time.
func (j *summaryJobs) stop(grace time.Duration) bool {
	j.mu.Lock()
	j.cancel()
	j.mu.Unlock()
	return waitGroupWithin(&j.wg, grace)
}

// parseSchedule reads SUMMARY_SCHEDULE's HH:MM.
func parseSchedule(s string) (hour, minute int, err error) {
	t, err := time.Parse("15:04", s)
	if err != nil || len(s) != 5 {
		return 0, 0, fmt.Errorf("SUMMARY_SCHEDULE %q: want HH:MM, e.g. 06:30", s)
	}
	return t.Hour(), t.Minute(), nil
}

// nextRun is the first hour:minute local time strictly after now.
func nextRun(now time.Time, hour, minute int) time.Time {
	y, m, d := now.Date()
	next := time.Date(y, m, d, hour, minute, 0, 0, now.Location())
	if !next.After(now) {
		next = time.Date(y, m, d+1, hour, minute, 0, 0, now.Location())
	}
	return next
}

// scheduleSummaries generates both summaries every day at hour:minute until the jobs
// stop. At start it catches up when today's run time has passed without a tracker
// summary for today, as after a restart across the scheduled time.
func (s *server) scheduleSummaries(hour, minute int) {
	s.jobs.wg.Go(func() {
		now := s.now()
		y, m, d := now.Date()
		if !now.Before(time.Date(y, m, d, hour, minute, 0, 0, now.Location())) {
			_, err := s.store.TrackerSummary(s.jobs.ctx, startOfDay(now))
			switch {
			case errors.Is(err, errNotFound):
				s.log.Info("summary schedule: catching up on today's run")
				s.startJob(trackerPipeline)
				s.startJob(emailPipeline)
			case err != nil:
				s.log.Error("summary schedule: no catch-up, today's tracker summary not readable", "err", err)
			}
		}
		for {
			// Logged after the start-up decision, so that a test knows it was made.
			next := nextRun(s.now(), hour, minute)
			s.log.Info("summary schedule: waiting for the next run", "at", timestamp(next))
			timer := time.NewTimer(next.Sub(s.now()))
			select {
			case <-s.jobs.ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
				s.startJob(trackerPipeline)
				s.startJob(emailPipeline)
			}
		}
	})
}

// summaryAnswer is GET /tracker-summary/today's exact shape.
type summaryAnswer struct {
	SummaryDate string `json:"summaryDate"`
	SummaryText string `json:"summaryText"`
	GeneratedAt string `json:"generatedAt"`
}

func (s *server) handleTodayTrackerSummary(w http.ResponseWriter, r *http.Request) {
	today := startOfDay(s.now())
	sum, err := s.store.TrackerSummary(r.Context(), today)
	if errors.Is(err, errNotFound) {
		err = &requestError{status: http.StatusNotFound, member: "message",
			msg: fmt.Sprintf("No tracker summary found for today (%s).", today.Format("2006-01-02"))}
	}
	if err != nil {
		s.fail(w, r, "fetch today's tracker summary", err)
		return
	}
	writeJSON(w, http.StatusOK, summaryAnswer{sum.SummaryDate, sum.SummaryText, sum.GeneratedAt})
}

func (s *server) handleListTrackerSummaries(w http.ResponseWriter, r *http.Request) {
	s.listSummaries(w, r, trackerSummaries, "fetch paginated tracker summaries")
}

func (s *server) handleListEmailSummaries(w http.ResponseWriter, r *http.Request) {
	s.listSummaries(w, r, emailSummaries, "fetch paginated Email summaries")
}

// listSummaries answers one page of a summary list: page and limit as positiveOr reads
// them, newest summaryDate first, with the total count.
func (s *server) listSummaries(w http.ResponseWriter, r *http.Request, kind summaryKind, op string) {
	page := positiveOr(r.URL.Query().Get("page"), 1)
	limit := positiveOr(r.URL.Query().Get("limit"), 10)
	offset := int64(math.MaxInt64) // past every row when (page-1)*limit would overflow
	if page-1 <= offset/limit {
		offset = (page - 1) * limit
	}
	list, total, err := s.store.ListSummaries(r.Context(), kind, limit, offset)
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"summaries": list, "total": total})
}

// positiveOr parses a page or limit: base-10 digits above zero, else def. A number beyond
// int64 is still a positive integer and reads as the largest: a page past the end, or
// no limit.
func positiveOr(s string, def int64) int64 {
	if !isDigits(s) {
		return def
	}
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil:
		return math.MaxInt64 // out of range, the one error digits can give
	case n == 0:
		return def
	}
	return n
}

func (s *server) handleGenerateTrackerSummary(w http.ResponseWriter, r *http.Request) {
	s.startJob(trackerPipeline)
	writeJSON(w, http.StatusAccepted, map[string]string{"message": "Summary generation started."})
}

func (s *server) handleGenerateEmailSummary(w http.ResponseWriter, r *http.Request) {
	s.startJob(emailPipeline)
	writeJSON(w, http.StatusAccepted, map[string]string{"message": "Email summary generation started."})
}

// handleTrackerSummaryNow is the earlier variant's GET /tracker-summary: the tracker
// pipeline run while the client waits, storing nothing.
func (s *server) handleTrackerSummaryNow(w http.ResponseWriter, r *http.Request) {
	// Answer, if only with the error, before the server's write timeout swallows it.
	ctx, cancel := context.WithTimeout(r.Context(), writeTimeout-10*time.Second)
	defer cancel()
	text, err := s.summaryText(ctx, trackerPipeline, s.now())
	if err != nil {
		s.fail(w, r, "generate summary", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"summary": text})
}

const (
	maxEmailBodyChars = 4000
	// maxEmailHeaderChars bounds From, To and Subject: a mass mailing's To can run to
	// megabytes, which would leave the message too large for the prompt.
	maxEmailHeaderChars = 1000
	maxEmailFileBytes   = 25 << 20 // a larger message file is read only this far
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

// recentEmails reads the messages of the Maildir dir delivered and dated at or after
// start, newest first (see readMaildir).
func recentEmails(dir string, start time.Time, log *slog.Logger) ([]email, error) {
	if dir == "" {
		return nil, errors.New("MAILDIR is not configured")
	}
	emails, err := readMaildir(os.DirFS(dir), start, log)
	if err != nil {
		return nil, fmt.Errorf("MAILDIR %s: %w", dir, err) // the fs.FS names only new/ or cur/
	}
	return emails, nil
}

// readMaildir reads the messages in new/ and cur/ of the Maildir fsys dated at or after
// start, newest first. A file delivered before start is passed over without being
// opened, so that a job over a Maildir of years costs only the messages of its window;
// a file delivered later is opened and kept when its Date is in the window. A message
// that cannot be parsed is skipped with a log line.
func readMaildir(fsys fs.FS, start time.Time, log *slog.Logger) ([]email, error) {
	var emails []email
	for _, sub := range []string{"new", "cur"} {
		entries, err := fs.ReadDir(fsys, sub)
		if err != nil {
			return nil, fmt.Errorf("read Maildir: %w", err)
		}
		for _, entry := range entries {
			if !entry.Type().IsRegular() || strings.HasPrefix(entry.Name(), ".") {
				continue
			}
			if deliveredBefore(entry, start) {
				continue
			}
			name := path.Join(sub, entry.Name())
			flog := log.With("file", name)
			e, err := readEmailFile(fsys, name, flog)
			if err != nil {
				flog.Warn("skip e-mail message", "err", err)
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

// deliveredBefore reports whether a Maildir file arrived before start, without opening
// it: by the delivery time that starts a standard Maildir name (seconds since the epoch,
// as in 1732590000.M123P456.host,S=123:2,S), else by the modification time the directory
// entry carries. When neither can be read the file is not passed over.
func deliveredBefore(entry fs.DirEntry, start time.Time) bool {
	if secs, ok := deliverySeconds(entry.Name()); ok {
		return time.Unix(secs, 0).Before(start)
	}
	info, err := entry.Info()
	if err != nil {
		return false
	}
	return info.ModTime().Before(start)
}

// deliverySeconds reads the leading seconds-since-epoch of a standard Maildir file name:
// digits up to the first dot.
func deliverySeconds(name string) (int64, bool) {
	digits, _, found := strings.Cut(name, ".")
	if !found || !isDigits(digits) {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil
}

// readEmailFile parses one message file, read at most maxEmailFileBytes far, so that a
// huge attachment costs no more than that.
func readEmailFile(fsys fs.FS, name string, log *slog.Logger) (email, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return email{}, err
	}
	defer f.Close()
	return parseEmail(io.LimitReader(f, maxEmailFileBytes), log)
}

// parseEmail reads one RFC 5322 message: decoded headers and the text of its body, in
// UTF-8 whatever charsets the sender used; log hears of a charset that is not known.
func parseEmail(r io.Reader, log *slog.Logger) (email, error) {
	msg, err := mail.ReadMessage(r)
	if err != nil {
		return email{}, fmt.Errorf("parse message: %w", err)
	}
	when, err := msg.Header.Date()
	if err != nil {
		return email{}, fmt.Errorf("parse Date: %w", err)
	}
	words := mime.WordDecoder{CharsetReader: func(charset string, r io.Reader) (io.Reader, error) {
		b, err := io.ReadAll(r)
		if err != nil {
			return nil, err
		}
		return strings.NewReader(decodeCharset(charset, b, log)), nil
	}}
	header := func(name string) string {
		// Bytes outside RFC 2047 words carry no charset; the words themselves are ASCII,
		// so converting the raw bytes first leaves them intact.
		v := decodeCharset("", []byte(msg.Header.Get(name)), log)
		if d, err := words.DecodeHeader(v); err == nil {
			v = d
		}
		// The decoder passes UTF-8 words through unchecked.
		return cutText(strings.TrimSpace(validUTF8([]byte(v))), maxEmailHeaderChars)
	}
	plain, htmlText, err := bodyText(msg.Header.Get("Content-Type"), msg.Header.Get("Content-Transfer-Encoding"), msg.Body, log)
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
func bodyText(contentType, transferEncoding string, body io.Reader, log *slog.Logger) (plain, htmlText string, err error) {
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
			p, h, err := bodyText(part.Header.Get("Content-Type"), part.Header.Get("Content-Transfer-Encoding"), part, log)
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
		switch strings.ToLower(strings.TrimSpace(transferEncoding)) {
		case "base64":
			r = base64.NewDecoder(base64.StdEncoding, body)
		case "quoted-printable":
			r = quotedprintable.NewReader(body)
		}
		b, err := io.ReadAll(r)
		if err != nil {
			return "", "", fmt.Errorf("decode %s body: %w", transferEncoding, err)
		}
		text := decodeCharset(params["charset"], b, log)
		if mediaType == "text/html" {
			return "", text, nil
		}
		return text, "", nil
	default:
		return "", "", nil // attachments and other parts carry no text for a summary
	}
}

// decodeCharset turns text written in charset into UTF-8, for headers (RFC 2047 words)
// and bodies alike.
//
// Labels are looked up as browsers do (the WHATWG Encoding Standard, which also knows
// what mail programs write: Outlook's ks_c_5601-1987 is EUC-KR, gb2312 is read as its
// superset GBK, iso-8859-1 as its superset windows-1252), then in the IANA registry.
// Text without a charset, or labelled US-ASCII while it has 8-bit bytes, is kept when it
// is valid UTF-8 (what such mislabelled mail nearly always is) and read as windows-1252
// otherwise, so that every byte stays a character. A charset that is not known keeps the
// text, valid UTF-8 as it is and every other byte as U+FFFD, and is logged: no character
// is lost unnoticed.
func decodeCharset(charset string, b []byte, log *slog.Logger) string {
	label := strings.ToLower(strings.TrimSpace(charset))
	if label == "" || label == "us-ascii" || label == "ascii" {
		if utf8.Valid(b) {
			return string(b)
		}
		label = "windows-1252"
	}
	enc := lookupCharset(label)
	if enc == nil {
		log.Warn("e-mail charset not known, text kept as written", "charset", charset)
		return validUTF8(b)
	}
	text, err := enc.NewDecoder().Bytes(b)
	if err != nil {
		log.Warn("e-mail text not decodable, kept as written", "charset", charset, "err", err)
		return validUTF8(b)
	}
	return string(text)
}

// lookupCharset finds the decoder of a charset label, or nil. WHATWG's "replacement"
// encoding (its answer to ISO-2022-KR and HZ) would turn the whole text into a single
// U+FFFD, so it counts as not known.
func lookupCharset(label string) encoding.Encoding {
	// Python's email package writes its own codec names, not registered ones, in RFC 2047
	// words of these two charsets (its email.charset.CODEC_MAP), and Python scripts send a
	// good deal of mail.
	switch label {
	case "eucgb2312_cn":
		label = "gb2312"
	case "big5_tw":
		label = "big5"
	}
	if enc, err := htmlindex.Get(label); err == nil && enc != encoding.Replacement {
		return enc
	}
	if enc, err := ianaindex.IANA.Encoding(label); err == nil && enc != nil {
		return enc
	}
	return nil
}

// validUTF8 keeps the valid UTF-8 of b and turns each other byte into U+FFFD, so that a
// reader sees how many characters were lost.
func validUTF8(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b))
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		sb.WriteRune(r) // utf8.RuneError for an invalid byte, size 1
		b = b[size:]
	}
	return sb.String()
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
