package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// TestEmailAsAReaderSees: each class of real-world mail that a mail program reads past
// (issue 16's list, cited per case) reaches the model as a reader sees it.
func TestEmailAsAReaderSees(t *testing.T) {
	delivered := time.Date(2026, 11, 25, 7, 5, 0, 0, time.UTC)
	const date = "Date: Wed, 25 Nov 2026 09:00:00 +0000\r\n"
	const from = "From: a@example.com\r\n"
	cases := []struct {
		name          string
		msg           string
		subject, body string
		date          string // empty: the Date header's
	}{
		{"multipart without its closing boundary (1.2)", from + date + "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nHello there\r\n--b\r\nContent-Type: text/html\r\n\r\n<p>x",
			"", "Hello there", ""},
		{"base64 without final padding (1.3)", from + date + "Content-Transfer-Encoding: base64\r\n\r\nSGVsbG8gd29ybGQ\r\n",
			"", "Hello world", ""},
		{"an attachment's base64 cut off (1.3)", from + date + "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nSee attached.\r\n--b\r\nContent-Type: text/plain; name=a.txt\r\nContent-Disposition: attachment\r\nContent-Transfer-Encoding: base64\r\n\r\nSGVsbG8gd29y=\r\n",
			"", "See attached.", ""},
		{"an unindented continuation line (1.4)", from + "Subject: first half\r\nsecond half of the subject\r\n" + date + "\r\nBody.\r\n",
			"first half", "second half of the subject\r\n" + date + "\r\nBody.", "delivery"},
		{"multipart without a boundary parameter (1.5)", from + date + "Subject: s\r\nContent-Type: multipart/mixed\r\n\r\nbody\r\n",
			"s", "", ""},
		{"an attachment's Content-Type not parseable (1.5)", from + date + "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n\r\nText part.\r\n--b\r\nContent-Type: application/octet-stream; name=\"a b\r\n\r\nxxx\r\n--b--\r\n",
			"", "Text part.", ""},
		{"text after a boundary is no delimiter (1.5)", from + date + "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n\r\nline one\r\n--b is not a delimiter\r\nline two\r\n--b--\r\n",
			"", "line one\r\n--b is not a delimiter\r\nline two", ""},
		{"a boundary longer than Go's reader's buffer (1.5)", from + date + "Content-Type: multipart/mixed; boundary=\"" + strings.Repeat("x", 5000) + "\"\r\n\r\n--" + strings.Repeat("x", 5000) + "\r\n\r\nLong boundary.\r\n--" + strings.Repeat("x", 5000) + "--\r\n",
			"", "Long boundary.", ""},
		{"Outlook's unquoted boundary (1.6)", from + date + "Content-Type: multipart/alternative;\r\n\tboundary=----=_NextPart_000_0001_01D0\r\n\r\n------=_NextPart_000_0001_01D0\r\nContent-Type: text/plain\r\n\r\nOutlook text.\r\n------=_NextPart_000_0001_01D0--\r\n",
			"", "Outlook text.", ""},
		{"a text attachment is not the body (1.7)", from + date + "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename=log.txt\r\n\r\nattached log\r\n--b\r\nContent-Type: text/html\r\n\r\n<p>The message</p>\r\n--b--\r\n",
			"", "The message", ""},
		{"an 8-bit byte inside an encoded-word (1.8)", from + date + "Subject: =?iso-8859-1?q?caf\xe9_=E9t=E9?=\r\n\r\nb\r\n",
			"café été", "b", ""},
		{"an unknown charset spoils no other word (1.8)", from + date + "Subject: =?NONE?q?plain?= =?utf-8?q?Gr=C3=BC=C3=9Fe?=\r\n\r\nb\r\n",
			"plainGrüße", "b", ""},
		{"a malformed word stops no other (1.8)", from + date + "Subject: =?utf-8?x?bad?= and =?utf-8?b?R3LDvMOfZQ==?=\r\n\r\nb\r\n",
			"=?utf-8?x?bad?= and Grüße", "b", ""},
		{"words in iso-8859-1 read as windows-1252, as in bodies", from + date + "Subject: =?iso-8859-1?q?=93quoted=94_=80?=\r\n\r\nb\r\n",
			"“quoted” €", "b", ""},
		{"8-bit bytes in a us-ascii word read as in bodies", from + date + "Subject: =?us-ascii?q?caf=C3=A9?=\r\n\r\nb\r\n",
			"café", "b", ""},
		{"UTF-7 (1.9)", from + date + "Content-Type: text/plain; charset=utf-7\r\n\r\nHi +AOk-t+AOk-\r\n",
			"", "Hi été", ""},
		{"cp932 (1.9)", from + date + "Content-Type: text/plain; charset=cp932\r\n\r\n\x93\xfa\x96\x7b\r\n",
			"", "日本", ""},
		{"text without a subtype is text/plain (1.10)", from + date + "Content-Type: text\r\n\r\nJust text.\r\n",
			"", "Just text.", ""},
		{"a digest's parts are messages, not text (1.10)", from + date + "Content-Type: multipart/digest; boundary=b\r\n\r\n--b\r\n\r\nFrom: inner@example.com\r\nSubject: inner\r\n\r\ninner body\r\n--b--\r\n",
			"", "", ""},
		{"an attached message is not the body (1.10)", from + date + "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: message/rfc822\r\n\r\nSubject: inner\r\nContent-Type: text/plain\r\n\r\nforwarded\r\n--b\r\nContent-Type: text/plain\r\n\r\nmy note\r\n--b--\r\n",
			"", "my note", ""},
		{"no <title> (1.10)", from + date + "Content-Type: text/html\r\n\r\n<title>Newsletter 12</title><p>News</p>\r\n",
			"", "News", ""},
		{"a raw 8-bit GB2312 subject read in the body's charset (1.10)", from + date + "Subject: \xd6\xd0\xce\xc4\r\nContent-Type: text/plain; charset=gb2312\r\n\r\n\xd6\xd0\xce\xc4\r\n",
			"中文", "中文", ""},
		{"no Date: dated by delivery (1.1)", from + "Subject: s\r\n\r\nb\r\n", "s", "b", "delivery"},
		{"a Date Go cannot parse: dated by delivery (1.1)", from + "Date: sometime on Tuesday\r\n\r\nb\r\n", "", "b", "delivery"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseEmail([]byte(tc.msg), delivered, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			wantDate := "2026-11-25T09:00:00.000Z"
			if tc.date == "delivery" {
				wantDate = timestamp(delivered)
			}
			if got.Subject != tc.subject || got.Body != tc.body || got.Date != wantDate {
				t.Errorf("got subject %q body %q date %s,\nwant %q %q %s", got.Subject, got.Body, got.Date, tc.subject, tc.body, wantDate)
			}
		})
	}
}

// TestMIMEDepthLinear: a message nested 14,000 multiparts deep (issue 15, 8: seconds
// before) is read in well under a second of work: deeper than maxMIMEDepth nothing is
// read, and each level read is one pass. A part at a depth real mail has is found.
func TestMIMEDepthLinear(t *testing.T) {
	nested := func(depth int) []byte {
		var sb strings.Builder
		sb.WriteString("From: a@example.com\r\nDate: Wed, 25 Nov 2026 09:00:00 +0000\r\n")
		for i := range depth {
			fmt.Fprintf(&sb, "Content-Type: multipart/mixed; boundary=b%d\r\n\r\n--b%d\r\n", i, i)
		}
		sb.WriteString("Content-Type: text/plain\r\n\r\ndeep\r\n")
		return []byte(sb.String())
	}
	start := time.Now()
	got, err := parseEmail(nested(14000), time.Time{}, slog.New(slog.DiscardHandler))
	if err != nil || got.Body != "" {
		t.Errorf("14,000 levels: body %q, %v; want the message without a body", got.Body, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("14,000 levels took %s", d)
	}
	if got, _ := parseEmail(nested(maxMIMEDepth), time.Time{}, slog.New(slog.DiscardHandler)); got.Body != "deep" {
		t.Errorf("%d levels: body %q, want deep", maxMIMEDepth, got.Body)
	}
}

// TestMaildirCostsItsPrompt: messages are offered newest delivered first, and once the
// prompt is full no other file is opened; a cancelled context ends the read before the
// next file.
func TestMaildirCostsItsPrompt(t *testing.T) {
	start := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	fsys := fstest.MapFS{"cur": &fstest.MapFile{Mode: fs.ModeDir}}
	var newest []string
	for i := range 100 {
		at := start.Add(time.Duration(i) * time.Minute)
		name := fmt.Sprintf("new/%d.M%dP1.host", at.Unix(), i)
		fsys[name] = &fstest.MapFile{Data: []byte(maildirMessage(fmt.Sprint(i), at))}
		if i >= 97 {
			newest = append([]string{name}, newest...)
		}
	}
	counting := &countingFS{FS: fsys}
	var subjects []string
	err := readMaildir(context.Background(), counting, start, slog.New(slog.DiscardHandler), func(e email) (bool, error) {
		subjects = append(subjects, e.Subject)
		return len(subjects) < 3, nil
	})
	if err != nil || !slices.Equal(subjects, []string{"99", "98", "97"}) {
		t.Errorf("offered %q (%v), want 99, 98, 97", subjects, err)
	}
	slices.Sort(newest)
	if opened := counting.openedFiles(); !slices.Equal(opened, newest) {
		t.Errorf("opened %q, want only %q", opened, newest)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	counting = &countingFS{FS: fsys}
	err = readMaildir(ctx, counting, start, slog.New(slog.DiscardHandler), func(email) (bool, error) { return true, nil })
	if !errors.Is(err, context.Canceled) || len(counting.openedFiles()) != 0 {
		t.Errorf("cancelled: %v after opening %d files, want context.Canceled and none", err, len(counting.openedFiles()))
	}
}

// TestStuckJobDoesNotBlockTheNext: a job stuck where its context does not reach holds
// back a job of its name until its timeout, then a new one starts; the stuck one's
// context is cancelled.
func TestStuckJobDoesNotBlockTheNext(t *testing.T) {
	j := newSummaryJobs()
	j.timeout = 100 * time.Millisecond
	release := make(chan struct{})
	stuckCtx := make(chan context.Context, 1)
	j.start("kind", func(ctx context.Context) {
		stuckCtx <- ctx
		<-release // ignores ctx, as a read on a hung file system would
	})
	ctx := <-stuckCtx
	ran := make(chan struct{}, 2)
	j.start("kind", func(context.Context) { ran <- struct{}{} })
	deadline := time.Now().Add(10 * time.Second)
	for len(ran) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no new job within 10 s of a stuck one")
		}
		time.Sleep(10 * time.Millisecond)
		j.start("kind", func(context.Context) { ran <- struct{}{} })
	}
	if ctx.Err() == nil {
		t.Error("the stuck job's context is not cancelled")
	}
	close(release)
	if !j.stop(5 * time.Second) {
		t.Error("jobs did not end")
	}
}

// panicRunner is a summary pipeline that panics.
type panicRunner struct{}

func (panicRunner) jobName() string { return "panicker" }
func (panicRunner) text(context.Context, *server, time.Time) (string, error) {
	panic("boom")
}
func (panicRunner) saveText(context.Context, *server, time.Time, string) error { return nil }

// TestJobPanicLogged: a background job's panic is logged as a handler's is, and the
// service and the next job of its kind go on.
func TestJobPanicLogged(t *testing.T) {
	e := newSummaryEnv(t, time.Now())
	e.srv.startJob(panicRunner{})
	waitFor(t, func() bool { return strings.Contains(e.logs.String(), `msg=panic job=panicker panic=boom`) })
	waitFor(t, func() bool { return len(runningJobs(e.srv.jobs)) == 0 })
	e.srv.startJob(panicRunner{})
	waitFor(t, func() bool { return strings.Count(e.logs.String(), "msg=panic") == 2 })
	if status, _ := e.do("GET", "/healthz", nil); status != 200 {
		t.Errorf("healthz = %d after a job's panic", status)
	}
}

// TestUndatedMessageByFileTime: without a Date and a time in its name, a message is dated
// by its file's modification time.
func TestUndatedMessageByFileTime(t *testing.T) {
	dir := newMaildir(t)
	at := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	path := filepath.Join(dir, "cur", "imported:2,S")
	writeFile(t, path, "From: a@example.com\r\nSubject: undated\r\n\r\nbody\r\n")
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
	got, err := readAllMail(os.DirFS(dir), at.Add(-time.Hour), slog.New(slog.DiscardHandler))
	if err != nil || len(got) != 1 || got[0].Date != "2026-11-24T12:00:00.000Z" {
		t.Errorf("readMaildir = %+v, %v; want the message dated 2026-11-24T12:00:00.000Z", got, err)
	}
}

// BenchmarkEmailPromptBusyWindow: a window of 20,000 messages costs the job the messages
// that fit in its prompt (about 400 here), not the 20,000: newest delivered first, the
// read stops once the prompt is full.
func BenchmarkEmailPromptBusyWindow(b *testing.B) {
	start := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	dir := newMaildir(b)
	body := strings.Repeat("A line of an ordinary message. ", 12)
	for i := range 20_000 {
		at := start.Add(time.Duration(i) * time.Second)
		msg := maildirMessage(fmt.Sprint(i), at) + body + "\r\n"
		if err := os.WriteFile(filepath.Join(dir, "cur", fmt.Sprintf("%d.M%dP1.host:2,S", at.Unix(), i)), []byte(msg), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	src := sources{cfg: config{Maildir: dir}, log: slog.New(slog.DiscardHandler)}
	for b.Loop() {
		fit := promptFit{maxChars: maxPromptDataChars, size: 2}
		err := emailPipeline.gather(context.Background(), src, start, func(e email) (bool, error) { return fit.offer(e) })
		if err != nil || fit.offered > 1000 || len(fit.items) < 100 {
			b.Fatalf("gather = %v after %d offers, %d kept", err, fit.offered, len(fit.items))
		}
	}
}
