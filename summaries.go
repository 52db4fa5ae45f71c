package main

import (
	"bytes"
	"cmp"
	"context"
	_ "embed"
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
	"mime/quotedprintable"
	"net/http"
	"net/mail"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/ianaindex"
	xunicode "golang.org/x/text/encoding/unicode"
)

const (
	// Texts stored without asking the model when there is nothing to summarise.
	noTicketsText      = "No tracker tickets updated recently."
	noEmailsText       = "No emails received recently."
	maxPromptDataChars = 200_000 // $TRACKER_TICKETS or $EMAILS: a busy day in a model's budget
	// jobTimeout bounds a summary job: a tracker walk of 20 pages and a model call take
	// minutes at worst, and a job that outlives it no longer holds back the next one.
	jobTimeout = 10 * time.Minute
	// onDemandInterval bounds the rate of on-demand summaries: without API_TOKEN anyone
	// may ask, and each run costs a model call.
	onDemandInterval = 30 * time.Second
	trackerJob       = "tracker summary" // one job of a name runs at a time
	emailJob         = "email summary"
)

// errNoModelKey is missing configuration, the bare message of GET /tracker-summary (SPEC §4).
var errNoModelKey = rejected("GENAI_API_KEY is not configured")

// The default prompt templates, built into the binary so that it runs from any folder.
var (
	//go:embed prompts/tracker_summary.txt
	trackerPromptBuiltIn string
	//go:embed prompts/email_summary.txt
	emailPromptBuiltIn string
)

func trackerTemplate(cfg config) (string, error) {
	return promptTemplate(cfg.TrackerPromptFile, "TRACKER_PROMPT_FILE", trackerPromptBuiltIn)
}

func emailTemplate(cfg config) (string, error) {
	return promptTemplate(cfg.EmailPromptFile, "EMAIL_PROMPT_FILE", emailPromptBuiltIn)
}

// promptTemplate reads file, if any, for each job so that an edit needs no restart. Its
// error's message, for the client, names no path; the log gets the cause.
func promptTemplate(file, variable, builtIn string) (string, error) {
	if file == "" {
		return builtIn, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", &apiError{status: http.StatusInternalServerError, msg: "Prompt template not readable",
			err: fmt.Errorf("%s: %w", variable, err)}
	}
	return string(data), nil
}

// trackerPrompt is the prompt of the tracker summary of now's day, "" when the window holds
// no ticket: formsvc prompt prints it, the job sends it.
func trackerPrompt(ctx context.Context, client *http.Client, cfg config, now time.Time) (string, error) {
	template, err := trackerTemplate(cfg)
	if err != nil {
		return "", err
	}
	tickets, err := recentTickets(ctx, client, cfg, windowStart(now))
	if err != nil {
		return "", err
	}
	fit := promptFit{maxChars: maxPromptDataChars}
	for _, t := range tickets {
		if !fit.offer(t) {
			break
		}
	}
	return fit.fill(template, "$TRACKER_TICKETS", now)
}

// emailPrompt is the prompt of the e-mail summary of now's day, "" when MAILDIR holds none.
func emailPrompt(ctx context.Context, cfg config, log *slog.Logger, now time.Time) (string, error) {
	template, err := emailTemplate(cfg)
	if err != nil {
		return "", err
	}
	if cfg.Maildir == "" {
		return "", errors.New("MAILDIR is not configured")
	}
	fit := promptFit{maxChars: maxPromptDataChars}
	offer := func(m email) bool { return fit.offer(m) }
	if err := readMaildir(ctx, os.DirFS(cfg.Maildir), windowStart(now), log, offer); err != nil {
		return "", fmt.Errorf("MAILDIR %s: %w", cfg.Maildir, err) // the fs.FS names only new/ or cur/
	}
	return fit.fill(template, "$EMAILS", now)
}

// printPrompt writes the prompt the job of kind would send on the day given (today if none),
// private content left out as the job leaves it out (TRACKER_INCLUDE_PRIVATE), and sends
// nothing to the model: what would leave can be read before the first run.
func printPrompt(ctx context.Context, cfg config, kind string, day []string, stdout, stderr io.Writer) error {
	now := time.Now()
	var prompt, nothing string
	var err error
	if len(day) == 1 {
		if now, err = time.ParseInLocation("2006-01-02", day[0], time.Local); err != nil {
			return fmt.Errorf("prompt: date %q: want YYYY-MM-DD", day[0])
		}
	}
	switch kind {
	case "tracker":
		prompt, err = trackerPrompt(ctx, &http.Client{}, cfg, now)
		nothing = noTicketsText
	case "email":
		prompt, err = emailPrompt(ctx, cfg, slog.New(slog.NewTextHandler(stderr, nil)), now)
		nothing = noEmailsText
	default:
		return errors.New(usage)
	}
	if err != nil {
		return fmt.Errorf("prompt %s: %w", kind, err)
	}
	if prompt == "" {
		fmt.Fprintf(stderr, "nothing in the window from %s: the job stores %q without asking the model\n",
			windowStart(now).Format("2006-01-02"), nothing)
		return nil
	}
	_, err = io.WriteString(stdout, prompt)
	return err
}

// logSummaryReadiness tells the operator at start-up whether each summary can run, and
// if not why: a failed job shows only in the log.
func logSummaryReadiness(log *slog.Logger, cfg config) {
	set := map[string]bool{"GENAI_API_KEY": cfg.GenAIKey != "", "MAILDIR": cfg.Maildir != "",
		"TRACKER_API_ENDPOINT": cfg.TrackerEndpoint != "", "TRACKER_API_KEY": cfg.TrackerKey != ""}
	for _, job := range []struct {
		kind     string
		template func(config) (string, error)
		needs    []string
	}{
		{trackerJob, trackerTemplate,
			[]string{"GENAI_API_KEY", "TRACKER_API_ENDPOINT", "TRACKER_API_KEY"}},
		{emailJob, emailTemplate, []string{"GENAI_API_KEY", "MAILDIR"}},
	} {
		missing := slices.DeleteFunc(job.needs, func(v string) bool { return set[v] })
		if _, err := job.template(cfg); err != nil {
			log.Error("summaries cannot run: prompt template not readable", "kind", job.kind, "err", err)
		} else if len(missing) == 0 {
			log.Info("summaries configured", "kind", job.kind, "model", cfg.GenAIModel)
		}
		if len(missing) > 0 {
			log.Warn("summaries cannot run until configured", "kind", job.kind,
				"missing", strings.Join(missing, ", "))
		}
	}
}

// trackerSummary is the tracker summary of now's day; the model key is checked first.
func (s *server) trackerSummary(ctx context.Context, now time.Time) (string, error) {
	if s.cfg.GenAIKey == "" {
		return "", errNoModelKey
	}
	prompt, err := trackerPrompt(ctx, s.client, s.cfg, now)
	switch {
	case err != nil:
		return "", err
	case prompt == "":
		return noTicketsText, nil
	}
	return complete(ctx, s.client, s.cfg, prompt)
}

// generateTrackerSummary stores today's tracker summary in place of any of the day.
func (s *server) generateTrackerSummary(ctx context.Context) error {
	now := s.now()
	text, err := s.trackerSummary(ctx, now)
	if err != nil {
		return err
	}
	return s.store.SaveTrackerSummary(ctx, startOfDay(now), text)
}

// generateEmailSummary adds a summary of today's e-mail; the model key is checked first.
func (s *server) generateEmailSummary(ctx context.Context) error {
	if s.cfg.GenAIKey == "" {
		return errNoModelKey
	}
	now := s.now()
	prompt, err := emailPrompt(ctx, s.cfg, s.log, now)
	if err != nil {
		return err
	}
	text := noEmailsText
	if prompt != "" {
		if text, err = complete(ctx, s.client, s.cfg, prompt); err != nil {
			return err
		}
	}
	return s.store.AddEmailSummary(ctx, startOfDay(now), text)
}

// promptFit builds a prompt's JSON array of at most maxChars characters from items offered
// newest first, each marshalled once. One too large on its own is passed over, lest it crowd
// out every other; the first other that does not fit ends the array, as no older item should
// go before it. <, > and & stay: the reader is a model, and escapes would cost it tokens.
type promptFit struct {
	maxChars int
	offered  int
	size     int // characters of the items kept
	items    [][]byte
}

// offer marshals item and keeps it if it fits; it reports false once the array is full.
func (f *promptFit) offer(item any) bool {
	f.offered++
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(item) // tickets and e-mails hold strings and numbers alone: no error
	raw := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	chars := utf8.RuneCount(raw)
	if len("[]")+chars > f.maxChars {
		return true
	}
	if len("[]")+f.size+len(f.items)+chars > f.maxChars { // a comma after each item kept
		return false
	}
	f.size += chars
	f.items = append(f.items, raw)
	return true
}

// fill is template with $DATE and placeholder filled in; "" when no item was offered.
func (f *promptFit) fill(template, placeholder string, now time.Time) (string, error) {
	switch {
	case f.offered == 0:
		return "", nil
	case len(f.items) == 0:
		return "", fmt.Errorf("prompt data: none of the %d items fits in %d characters",
			f.offered, f.maxChars)
	}
	date := now.Format("2006-01-02")
	return strings.NewReplacer("$DATE", date, placeholder, string(f.json())).Replace(template), nil
}

// json is the array of the items kept.
func (f *promptFit) json() []byte {
	return append(append([]byte("["), bytes.Join(f.items, []byte(","))...), ']')
}

// windowStart is local midnight two days before now, four on a Monday to cover the weekend.
func windowStart(now time.Time) time.Time {
	days := 2
	if now.Weekday() == time.Monday {
		days = 4
	}
	return startOfDay(now.AddDate(0, 0, -days))
}

// startOfDay is local midnight of now's day: the summaryDate of its summaries.
func startOfDay(now time.Time) time.Time {
	y, m, d := now.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, now.Location())
}

// startJob starts generate in the background unless a job of its name is running.
func (s *server) startJob(name string, generate func(context.Context) error) {
	started := s.jobs.start(name, func(ctx context.Context) {
		defer s.logPanic(name)
		start := s.now()
		err := generate(ctx)
		took := s.now().Sub(start).Round(time.Millisecond)
		if err != nil {
			s.log.Error("summary job failed", "job", name, "duration", took, "err", err)
		} else {
			s.log.Info("summary job done", "job", name, "duration", took)
		}
	})
	if !started {
		s.log.Info("summary job already running or shutting down; none started", "job", name)
	}
}

// logPanic, deferred, logs a panic of a background job; the service goes on, as after a handler's.
func (s *server) logPanic(job string) {
	if v := recover(); v != nil {
		s.log.Error("panic", "job", job, "panic", fmt.Sprint(v))
	}
}

// summaryJobs is the background work, cancelled and waited for (bounded) at shutdown.
type summaryJobs struct {
	now      func() time.Time
	ctx      context.Context // ended by stop
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	mu       sync.Mutex
	running  map[string]*runningJob
	onDemand *onDemandRun // the latest on-demand run
}

// runningJob is a job started and not yet ended.
type runningJob struct {
	started time.Time
	cancel  context.CancelFunc
}

// onDemandRun is an on-demand run; text and err are its outcome once it has ended.
type onDemandRun struct {
	started time.Time
	ended   bool          // under summaryJobs.mu
	done    chan struct{} // closed when it ends
	text    string
	err     error
}

func newSummaryJobs(now func() time.Time) *summaryJobs {
	ctx, cancel := context.WithCancel(context.Background())
	return &summaryJobs{now: now, ctx: ctx, cancel: cancel, running: map[string]*runningJob{},
		onDemand: &onDemandRun{ended: true}} // long ago: the first caller starts a run
}

// start runs job with a context that ends at jobTimeout or at stop, unless the jobs are
// stopped or a job of its name started less than jobTimeout ago runs. One older is stuck where
// no context reaches (a hung network file system): cancelled, it stores nothing, ends alone.
func (j *summaryJobs) start(name string, job func(ctx context.Context)) (started bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	old := j.running[name]
	if j.ctx.Err() != nil || old != nil && j.now().Sub(old.started) < jobTimeout {
		return false
	}
	if old != nil {
		old.cancel()
	}
	ctx, cancel := context.WithTimeout(j.ctx, jobTimeout)
	r := &runningJob{started: j.now(), cancel: cancel}
	j.running[name] = r
	j.wg.Go(func() {
		job(ctx) // a panic out of job ends the process: no cleanup to defer
		cancel()
		j.mu.Lock()
		defer j.mu.Unlock()
		if j.running[name] == r {
			delete(j.running, name)
		}
	})
	return true
}

// stop cancels every job and reports whether they all ended within grace.
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

// scheduleSummaries generates both summaries daily at hour:minute until the jobs stop, and at
// once when a restart passed today's run time without a tracker summary for today.
func (s *server) scheduleSummaries(hour, minute int) {
	s.jobs.wg.Go(func() {
		defer s.logPanic("summary schedule")
		now, run := s.now(), false
		if nextRun(now, hour, minute).Day() != now.Day() { // today's run time has passed
			_, err := s.store.TrackerSummary(s.jobs.ctx, startOfDay(now))
			if run = errors.Is(err, ErrNotFound); run {
				s.log.Info("summary schedule: catching up on today's run")
			} else if err != nil {
				s.log.Error("summary schedule: no catch-up, today's tracker summary not readable", "err", err)
			}
		}
		for {
			if run {
				s.startJob(trackerJob, s.generateTrackerSummary)
				s.startJob(emailJob, s.generateEmailSummary)
			}
			// Logged after the start-up decision: the log shows any catch-up before the wait.
			next := nextRun(s.now(), hour, minute)
			s.log.Info("summary schedule: waiting for the next run", "at", timestamp(next))
			select {
			case <-s.jobs.ctx.Done():
				return
			case <-time.After(next.Sub(s.now())):
				run = true
			}
		}
	})
}

func (s *server) handleTodayTrackerSummary(w http.ResponseWriter, r *http.Request) error {
	today := startOfDay(s.now())
	sum, err := s.store.TrackerSummary(r.Context(), today)
	if errors.Is(err, ErrNotFound) {
		return writeJSON(w, http.StatusNotFound,
			map[string]string{"message": fmt.Sprintf("No tracker summary found for today (%s).", today.Format("2006-01-02"))})
	}
	if err != nil {
		return during("fetch today's tracker summary", err)
	}
	return writeJSON(w, http.StatusOK, sum.DatedSummary)
}

func (s *server) handleListTrackerSummaries(w http.ResponseWriter, r *http.Request) error {
	return s.listSummaries(w, r, trackerSummaries, "fetch paginated tracker summaries")
}

func (s *server) handleListEmailSummaries(w http.ResponseWriter, r *http.Request) error {
	return s.listSummaries(w, r, emailSummaries, "fetch paginated Email summaries")
}

// listSummaries writes one page of a summary list, newest summaryDate first, and the total;
// op names the list in a failure's message.
func (s *server) listSummaries(w http.ResponseWriter, r *http.Request, kind summaryKind,
	op string) error {
	// A page so far out that (page-1)*limit would overflow reads as one past every row.
	page := min(positiveOr(r.URL.Query().Get("page"), 1), math.MaxInt64/maxSummaryPage)
	limit := min(positiveOr(r.URL.Query().Get("limit"), 10), maxSummaryPage)
	list, total, err := s.store.ListSummaries(r.Context(), kind, limit, (page-1)*limit)
	if err != nil {
		return during(op, err)
	}
	return writeJSON(w, http.StatusOK, map[string]any{"summaries": list, "total": total})
}

// positiveOr parses a page or limit: base-10 digits above zero, else def. A number beyond
// int64 is still a positive integer and reads as the largest.
func positiveOr(s string, def int64) int64 {
	n, ok := parseDigits(s)
	switch {
	case !ok || n == 0:
		return def
	case n < 0:
		return math.MaxInt64
	}
	return n
}

func (s *server) handleGenerateTrackerSummary(w http.ResponseWriter, r *http.Request) error {
	s.startJob(trackerJob, s.generateTrackerSummary)
	return writeJSON(w, http.StatusAccepted, map[string]string{"message": "Summary generation started."})
}

func (s *server) handleGenerateEmailSummary(w http.ResponseWriter, r *http.Request) error {
	s.startJob(emailJob, s.generateEmailSummary)
	return writeJSON(w, http.StatusAccepted, map[string]string{"message": "Email summary generation started."})
}

// handleTrackerSummaryNow is the earlier variant's GET /tracker-summary; it stores nothing.
func (s *server) handleTrackerSummaryNow(w http.ResponseWriter, r *http.Request) error {
	text, err := s.trackerSummaryNow(r.Context())
	if _, ok := errors.AsType[*apiError](err); ok {
		return err // already a reply: missing configuration, or the 503 after a failed run
	}
	if err != nil {
		return during("generate summary", err)
	}
	// The text is the run's, shared by its callers; each answer is built in a heavy slot.
	return s.inHeavySlot(r, func() error {
		return writeJSON(w, http.StatusOK, map[string]string{"summary": text})
	})
}

// errSummaryBusy refuses an on-demand summary within onDemandInterval of a failed run.
var errSummaryBusy = errors.New("the tracker summary failed moments ago")

// trackerSummaryNow is the tracker summary for GET /api/tracker-summary: one run at most per
// onDemandInterval, shared by the callers that ask while it runs, its text or failure their
// reply until the interval ends. Stop ends the run; each caller waits as long as its ctx.
func (s *server) trackerSummaryNow(ctx context.Context) (string, error) {
	j := s.jobs
	j.mu.Lock()
	r, stopped := j.onDemand, j.ctx.Err() != nil
	wait := onDemandInterval - j.now().Sub(r.started)
	if r.ended && wait <= 0 && !stopped {
		r = &onDemandRun{started: j.now(), done: make(chan struct{})}
		j.onDemand = r
		j.wg.Go(func() { s.runOnDemand(r) })
	}
	ended := r.ended
	j.mu.Unlock()
	switch {
	case stopped:
		return "", fmt.Errorf("on-demand summary: %w", context.Canceled)
	case ended && r.err != nil:
		return "", &apiError{status: http.StatusServiceUnavailable, retryAfter: wait, err: errSummaryBusy,
			msg: fmt.Sprintf("%v; try again in %d s", errSummaryBusy, retrySeconds(wait))}
	case ended:
		return r.text, nil
	}
	select {
	case <-r.done:
		return r.text, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// runOnDemand makes the run r and logs its failure (a panic among them) once for all callers.
func (s *server) runOnDemand(r *onDemandRun) {
	// What the callers get if trackerSummary panics (logPanic recovers it); else its result.
	r.err = errors.New("on-demand tracker summary: panic")
	defer func() {
		if r.err != nil {
			s.log.Error("on-demand tracker summary failed", "err", r.err)
		}
		s.jobs.mu.Lock()
		r.ended = true
		s.jobs.mu.Unlock()
		close(r.done)
	}()
	defer s.logPanic("on-demand tracker summary")
	// Reply, if only with the error, before the server's write timeout swallows it.
	ctx, cancel := context.WithTimeout(s.jobs.ctx, writeTimeout-10*time.Second)
	defer cancel()
	r.text, r.err = s.trackerSummary(ctx, r.started)
}

// The mail reader: the Maildir's messages of the window, each read as a mail program
// shows it, malformed mail read past as Python's email package and enmime read it.
const (
	maxEmailBodyChars = 4000
	// maxEmailHeaderChars bounds From, To and Subject (a mass mailing's To runs to megabytes).
	maxEmailHeaderChars = 1000
	maxEmailFileBytes   = 25 << 20 // a larger message file is read only this far
	// maxMIMEDepth bounds the nesting of multiparts read for the body, so that a
	// message's cost stays linear in its size (each level read is one pass).
	maxMIMEDepth = 16
)

// email is one message of the Maildir as the prompt's $EMAILS carries it.
type email struct {
	From    string    `json:"from"`
	To      string    `json:"to"`
	Subject string    `json:"subject"`
	Date    string    `json:"date"`
	Body    string    `json:"body"`
	when    time.Time // Date, or the delivery time of an undated message
}

// readMaildir offers the messages of the Maildir fsys delivered and dated from start,
// newest delivered first, until offer reports the prompt full; files delivered before start
// are not opened.
func readMaildir(ctx context.Context, fsys fs.FS, start time.Time, log *slog.Logger,
	offer func(email) bool) error {
	type delivered struct {
		name string
		at   time.Time
	}
	var files []delivered
	for _, sub := range []string{"new", "cur"} {
		entries, err := fs.ReadDir(fsys, sub)
		if err != nil {
			return fmt.Errorf("read Maildir: %w", err)
		}
		for _, entry := range entries {
			if !entry.Type().IsRegular() || strings.HasPrefix(entry.Name(), ".") {
				continue
			}
			if at, ok := deliveryTime(entry); !ok || !at.Before(start) {
				files = append(files, delivered{sub + "/" + entry.Name(), at})
			}
		}
	}
	slices.SortStableFunc(files, func(a, b delivered) int { return b.at.Compare(a.at) })
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		flog := log.With("file", f.name)
		e, err := readEmailFile(fsys, f.name, f.at, flog)
		switch {
		case err != nil:
			flog.Warn("skip e-mail message", "err", err)
		case e.when.Before(start):
			flog.Info("e-mail message dated before the window, left out", "date", e.Date)
		default:
			if !offer(e) {
				return nil
			}
		}
	}
	return nil
}

// deliveryTime is when a Maildir file arrived: the seconds that start its name
// (1732590000.M123P456.host:2,S), else its modification time.
func deliveryTime(entry fs.DirEntry) (time.Time, bool) {
	if digits, _, found := strings.Cut(entry.Name(), "."); found {
		if secs, ok := parseDigits(digits); ok && secs > 0 {
			return time.Unix(secs, 0), true
		}
	}
	info, err := entry.Info()
	if err != nil {
		return time.Time{}, false
	}
	return info.ModTime(), true
}

// readEmailFile parses one message file, read at most maxEmailFileBytes far.
func readEmailFile(fsys fs.FS, name string, delivered time.Time, log *slog.Logger) (email, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return email{}, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxEmailFileBytes))
	if err != nil {
		return email{}, err
	}
	return parseEmail(raw, delivered, log)
}

// parseEmail reads one message as a mail program shows it, in UTF-8; delivered dates one
// without a readable Date.
func parseEmail(raw []byte, delivered time.Time, log *slog.Logger) (email, error) {
	msg := parseEntity(raw)
	if len(msg.fields) == 0 && len(bytes.TrimSpace(msg.body)) == 0 {
		return email{}, errors.New("not a message: no header field and no text")
	}
	when, err := mail.ParseDate(string(msg.get("Date")))
	if err != nil {
		when = delivered
	}
	var pick bodyPick
	pick.find(msg, "text/plain", "", 0)
	body, charset := "", pick.params["charset"]
	if pick.found {
		decoded := pick.part.decoded()
		// A text part without a charset is read in its multipart's (the multipart/signed
		// messages of mnako/letters' tests), unless it is UTF-8 beyond ASCII.
		if charset == "" && !(utf8.Valid(decoded) && nonASCII.Match(decoded)) {
			charset = pick.outer
		}
		text := decodeCharset(charset, decoded, log)
		encoding := strings.TrimSpace(string(pick.part.get("Content-Transfer-Encoding")))
		if strings.EqualFold(encoding, "base64") && notBase64.Match(pick.part.body) && !readable(text) {
			// Declared base64, written as text (enmime's mime-bad-content-transfer-encoding.raw).
			if raw := decodeCharset(charset, pick.part.body, log); readable(raw) {
				text = raw
			}
		}
		if pick.html {
			text = stripHTML(text)
		}
		body = cutText(strings.TrimSpace(text), maxEmailBodyChars)
	}
	header := func(name string) string {
		return cutText(strings.TrimSpace(decodeHeader(msg.get(name), charset, log)), maxEmailHeaderChars)
	}
	return email{From: header("From"), To: header("To"), Subject: header("Subject"),
		Date: timestamp(when), Body: body, when: when}, nil
}

// mimeEntity is a message or one part of it: its header fields, in order, and its raw body.
type mimeEntity struct {
	fields [][2][]byte // name and unfolded value
	body   []byte
}

// get is the value of the first field called name.
func (e mimeEntity) get(name string) []byte {
	for _, f := range e.fields {
		if strings.EqualFold(string(f[0]), name) {
			return f[1]
		}
	}
	return nil
}

// parseEntity splits raw into fields and body at the blank line; a line that is no field
// begins the body unless the header goes on after it.
func parseEntity(raw []byte) mimeEntity {
	var e mimeEntity
	for rest := raw; len(rest) > 0; {
		line, next := cutLine(rest)
		switch {
		case len(line) == 0:
			return mimeEntity{fields: e.fields, body: next}
		case line[0] == ' ' || line[0] == '\t':
			if n := len(e.fields); n > 0 {
				e.fields[n-1][1] = append(e.fields[n-1][1], line...)
			}
		default:
			name, value, _ := bytes.Cut(line, []byte(":"))
			if !rfcField.Match(line) && !headerGoesOn(line, next) {
				return mimeEntity{fields: e.fields, body: rest}
			}
			name = bytes.TrimRight(name, " \t")
			e.fields = append(e.fields, [2][]byte{name, bytes.Clone(bytes.TrimLeft(value, " \t"))})
		}
		rest = next
	}
	return e
}

// rfcField is the start of an RFC 5322 header field: its name, printable ASCII, a colon,
// blanks before it allowed (4.5's obsolete syntax, as mime4j's obsolete.msg writes it).
var rfcField = regexp.MustCompile(`^[!-9;-~]+[ \t]*:`)

// headerGoesOn reports whether the header goes on after line, no field, before rest: an
// mbox "From " line, a field name with blanks or punctuation continued on the next line
// (mnako/letters' tests), or a field within three lines (a Received: continued unindented).
// No further: a message whose body follows its header without the blank line keeps the
// body's first lines, even where a later one looks like a field ("Note: see below").
func headerGoesOn(line, rest []byte) bool {
	continued := len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t')
	if bytes.HasPrefix(line, []byte("From ")) || continued && bytes.Contains(line, []byte(":")) {
		return true
	}
	for range 3 {
		line, rest = cutLine(rest)
		if ok := rfcField.Match(line); ok || len(line) == 0 {
			return ok
		}
	}
	return false
}

// cutLine cuts the first line off b, at CRLF, LF or a lone CR.
func cutLine(b []byte) (line, rest []byte) {
	i := bytes.IndexAny(b, "\r\n")
	switch {
	case i < 0:
		return b, nil
	case b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n':
		return b[:i], b[i+2:]
	}
	return b[:i], b[i+1:]
}

// bodyPick finds the body a reader sees first, as Python's get_body(('plain', 'html')):
// the first text/plain part not attached, else the first text/html one, in multiparts (of
// multipart/related its start part) but not in attached messages (a digest's parts).
type bodyPick struct {
	found, html bool
	part        mimeEntity
	params      map[string]string
	outer       string // the charset of the innermost multipart around part that names one
}

// find looks in e, of type def by default, in a multipart of charset outer; true at text/plain.
func (p *bodyPick) find(e mimeEntity, def, outer string, depth int) bool {
	disp, _, _ := strings.Cut(string(e.get("Content-Disposition")), ";")
	mediaType, params := e.contentType(def)
	text := mediaType == "text/plain" || mediaType == "text/html"
	switch {
	case strings.EqualFold(strings.TrimSpace(disp), "attachment") ||
		text && len(bytes.TrimSpace(e.decoded())) == 0:
		return false
	case mediaType == "text/plain" || mediaType == "text/html" && !p.found:
		*p = bodyPick{found: true, html: mediaType == "text/html", part: e, params: params, outer: outer}
		return !p.html
	case !strings.HasPrefix(mediaType, "multipart/") || depth >= maxMIMEDepth:
		return false
	}
	// A boundary in single quotes (wildduck's fix3.eml), else the body's own delimiter when
	// the parameter is cut short or misspelt (CPython's msg_25.txt and msg_31.txt).
	parts := splitMultipart(e.body, strings.Trim(params["boundary"], "'"))
	if len(parts) == 0 {
		parts = splitMultipart(e.body, bodyDelimiter(e.body))
	}
	if len(parts) == 0 {
		// No boundary in the body: its text, where it is text and holds no delimiter
		// line (MIME structure), as a mail program shows it rather than nothing.
		body := e.decoded()
		ok := len(bytes.TrimSpace(body)) > 0 && readable(string(body)) && bodyDelimiter(body) == ""
		if ok {
			*p = bodyPick{found: true, part: e, params: params, outer: outer}
		}
		return ok
	}
	childDefault := "text/plain"
	if mediaType == "multipart/digest" {
		childDefault = "message/rfc822" // RFC 2046 5.1.5
	}
	if mediaType == "multipart/related" { // RFC 2387: the start part, by Content-ID, else the first
		i := slices.IndexFunc(parts, func(part []byte) bool {
			return params["start"] != "" && string(parseEntity(part).get("Content-ID")) == params["start"]
		})
		parts = [][]byte{parts[max(i, 0)]}
	}
	outer = cmp.Or(params["charset"], outer)
	for _, part := range parts {
		if p.find(parseEntity(part), childDefault, outer, depth+1) {
			return true
		}
	}
	return false
}

// bodyDelimiter is the boundary of body's first delimiter line (no blank, not dashes alone).
func bodyDelimiter(body []byte) string {
	for rest := body; len(rest) > 0; {
		var line []byte
		line, rest = cutLine(rest)
		b, ok := strings.CutPrefix(string(bytes.TrimRight(line, " \t")), "--")
		b = strings.TrimSuffix(b, "--")
		if ok && strings.Trim(b, "-") != "" && !strings.ContainsAny(b, " \t") {
			return b
		}
	}
	return ""
}

var (
	notBase64     = regexp.MustCompile(`[^A-Za-z0-9+/=\r\n \t]|[ \t][^ \t\r\n]`) // a text, not base64
	notBase64Char = regexp.MustCompile(`[^A-Za-z0-9+/]+`)
	unreadable    = regexp.MustCompile(`[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\x{FFFD}]`)
)

// readable reports whether s holds no U+FFFD and no control but a tab, line break or form feed.
func readable(s string) bool { return !unreadable.MatchString(s) }

// contentType is the media type and parameters of e's first Content-Type that names a
// type and subtype, else def with the first one's parameters.
func (e mimeEntity) contentType(def string) (string, map[string]string) {
	var first map[string]string
	for _, f := range e.fields {
		if strings.EqualFold(string(f[0]), "Content-Type") {
			mediaType, params := parseMediaType(string(f[1]))
			if top, sub, _ := strings.Cut(mediaType, "/"); top != "" && sub != "" {
				return mediaType, params
			}
			if first == nil {
				first = params
			}
		}
	}
	return def, first
}

// mediaParam is one name=value parameter of a Content-Type, its value quoted or not.
var mediaParam = regexp.MustCompile(`(?:^|;)\s*([^\s;=:]+)\s*=\s*("[^"]*"|[^;]*)`)

// parseMediaType reads a Content-Type as mime.ParseMediaType, else as enmime's
// fixMangledMediaType: values unquoted (Outlook's boundary=----=_NextPart_...), a missing
// semicolon, "text/" text/plain, "multipart/" multipart/mixed, "x/" application/octet-stream.
func parseMediaType(value string) (string, map[string]string) {
	mediaType, params, err := mime.ParseMediaType(value)
	// ParseMediaType also drops, without an error, an RFC 2231 value that is quoted.
	if err == nil && (!strings.HasPrefix(mediaType, "multipart/") || params["boundary"] != "") {
		return mediaType, params
	}
	value = strings.TrimSpace(value) + ";"
	i := strings.IndexAny(value, "; \t") // a type ends at a semicolon or a blank
	mediaType, rest := value[:i], value[i:]
	if top, sub, ok := strings.Cut(strings.ToLower(mediaType), "/"); ok {
		if sub, _, _ = strings.Cut(sub, "/"); sub == "" {
			sub = map[string]string{"text": "plain", "multipart": "mixed"}[top]
		}
		if sub == "" {
			top, sub = "application", "octet-stream"
		}
		mediaType = top + "/" + sub
	}
	params = map[string]string{}
	for _, m := range slices.Backward(mediaParam.FindAllStringSubmatch(rest, -1)) {
		name, v := strings.ToLower(m[1]), strings.Trim(strings.TrimSpace(m[2]), `"`)
		if n, ok := strings.CutSuffix(name, "*"); ok {
			// RFC 2231's charset'language'value, percent-encoded (some mailers quote it).
			name = n
			if parts := strings.SplitN(v, "'", 3); len(parts) == 3 {
				v = parts[2]
			}
			if u, err := url.PathUnescape(v); err == nil {
				v = u
			}
		}
		params[name] = v // read backward: the first of a name wins
	}
	return strings.ToLower(mediaType), params
}

// splitMultipart cuts a multipart body at its delimiter lines (--boundary, blanks after;
// RFC 2046 5.1.1), the last part ending at the close delimiter or at the end.
func splitMultipart(body []byte, boundary string) [][]byte {
	delim := []byte("--" + boundary)
	var parts [][]byte
	start := -1 // of the current part; -1 before the first delimiter
	for rest := body; len(rest) > 0 && boundary != ""; {
		at := len(body) - len(rest)
		var line []byte
		line, rest = cutLine(rest)
		tail, ok := bytes.CutPrefix(line, delim)
		tail, closing := bytes.CutPrefix(tail, []byte("--"))
		if !ok || len(bytes.Trim(tail, " \t")) > 0 {
			continue // not a delimiter line
		}
		if start >= 0 { // the line break before a delimiter belongs to it
			part := bytes.TrimSuffix(body[start:at], []byte("\n"))
			parts = append(parts, bytes.TrimSuffix(part, []byte("\r")))
		}
		if closing {
			return parts
		}
		start = len(body) - len(rest)
	}
	if start >= 0 {
		parts = append(parts, body[start:])
	}
	return parts
}

// decoded is e's body, its Content-Transfer-Encoding undone as leniently as a mail program.
func (e mimeEntity) decoded() []byte {
	switch strings.ToLower(strings.TrimSpace(string(e.get("Content-Transfer-Encoding")))) {
	case "base64":
		return decodeBase64(e.body)
	case "quoted-printable":
		return decodeQuotedPrintable(e.body)
	}
	return e.body
}

// decodeBase64 decodes b as mail programs do: characters not base64, padding too, ignored.
func decodeBase64(b []byte) []byte {
	out, _ := base64.RawStdEncoding.DecodeString(string(notBase64Char.ReplaceAll(b, nil)))
	return out
}

// decodeQuotedPrintable decodes with Go's reader, a lone CR ending a line as in cutLine;
// text the reader refuses (a raw control character) is kept as written.
func decodeQuotedPrintable(b []byte) []byte {
	b = bytes.ReplaceAll(bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n"))
	out, err := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(b)))
	if err != nil {
		return b
	}
	return out
}

// encodedWord is an RFC 2047 word: charset (less an RFC 2231 language), B or Q text; a Q
// text with blanks, as mailers write, is read as Python reads it.
var encodedWord = regexp.MustCompile(`=\?([^?*\s]+)(?:\*[^?\s]*)?\?(?:[bB]\?([^?\s]*)|[qQ]\?([^?]*))\?=`)

// decodeHeader decodes a field as a mail program shows it (mime.WordDecoder fails a whole
// field on one unknown charset): adjacent words of one charset decoded together (mailers
// split a character), 8-bit text outside words in fallback (the body's charset).
func decodeHeader(v []byte, fallback string, log *slog.Logger) string {
	decodeRawHeader := func(b []byte) string {
		if !utf8.Valid(b) && lookupCharset(strings.ToLower(strings.TrimSpace(fallback))) != nil {
			return decodeCharset(fallback, b, log)
		}
		return decodeCharset("", b, log)
	}
	var sb strings.Builder
	var word []byte       // decoded bytes of the adjacent words of charset so far
	charset, end := "", 0 // charset is "" when no word is pending
	for _, m := range encodedWord.FindAllSubmatchIndex(v, -1) {
		between, next := v[end:m[0]], string(v[m[2]:m[3]])
		blank := len(bytes.Trim(between, " \t")) == 0 // between two words: dropped (RFC 2047 6.2)
		if !blank || !strings.EqualFold(next, charset) {
			sb.WriteString(decodeCharset(charset, word, log))
			word, charset = nil, ""
		}
		if !blank || end == 0 {
			sb.WriteString(decodeRawHeader(between))
		}
		if m[4] >= 0 {
			word = append(word, decodeBase64(v[m[4]:m[5]])...)
		} else { // Q: an underscore is a space
			q := bytes.ReplaceAll(v[m[6]:m[7]], []byte("_"), []byte("=20"))
			word = append(word, decodeQuotedPrintable(q)...)
		}
		charset, end = next, m[1]
	}
	sb.WriteString(decodeCharset(charset, word, log)) // none pending: ""
	sb.WriteString(decodeRawHeader(v[end:]))
	return sb.String() // each part decoded to valid UTF-8
}

// decodeCharset turns text in charset into UTF-8 by WHATWG's labels (Outlook's
// ks_c_5601-1987; iso-8859-1 as windows-1252), else IANA's. Unlabelled or US-ASCII 8-bit
// text is windows-1252 unless valid UTF-8. A charset not known is logged, the text kept.
func decodeCharset(charset string, b []byte, log *slog.Logger) string {
	label := strings.ToLower(strings.TrimSpace(charset))
	if label == "" || label == "us-ascii" || label == "ascii" {
		if utf8.Valid(b) {
			return string(b)
		}
		label = "windows-1252"
	}
	if label == "utf-7" || label == "unicode-1-1-utf-7" || label == "csunicode11utf7" {
		return decodeUTF7(b)
	}
	enc := lookupCharset(label)
	if enc == nil {
		log.Warn("e-mail charset not known, text kept as written", "charset", charset)
		return string([]rune(string(b))) // each byte that is not UTF-8 a U+FFFD
	}
	text, err := enc.NewDecoder().Bytes(b)
	if err != nil {
		log.Warn("e-mail text not decodable in its charset, kept as written", "charset", charset, "err", err)
		return string([]rune(string(b)))
	}
	return string(text)
}

// charsetAliases are labels mailers write (Python's codec names, Windows') unknown to both.
var charsetAliases = map[string]string{
	"eucgb2312_cn": "gb2312", "big5_tw": "big5", "cp932": "shift_jis", "ms932": "shift_jis",
}

// lookupCharset finds the decoder of a charset label, or nil. WHATWG's "replacement"
// (ISO-2022-KR, HZ) would make the text one U+FFFD: it counts as not known.
func lookupCharset(label string) encoding.Encoding {
	if alias, ok := charsetAliases[label]; ok {
		label = alias
	}
	enc, err := htmlindex.Get(label)
	if err != nil || enc == encoding.Replacement {
		enc, _ = ianaindex.IANA.Encoding(label) // nil when not known
	}
	return enc
}

// utf7Run is a run of UTF-16 in RFC 2152's UTF-7: +, modified base64, an optional -.
var utf7Run = regexp.MustCompile(`\+[A-Za-z0-9+/]*-?`)

var nonASCII = regexp.MustCompile(`[^\x00-\x7f]`) // each byte that is not UTF-8 matches alone

// decodeUTF7 reads UTF-7, which no standard decoder knows; outside ASCII is U+FFFD.
func decodeUTF7(b []byte) string {
	ascii := nonASCII.ReplaceAllString(string(b), "\uFFFD")
	return utf7Run.ReplaceAllStringFunc(ascii, func(run string) string {
		if run == "+-" || run == "+" {
			return "+"
		}
		wide, _ := base64.RawStdEncoding.DecodeString(strings.TrimSuffix(run[1:], "-"))
		be := xunicode.UTF16(xunicode.BigEndian, xunicode.IgnoreBOM)
		text, _ := be.NewDecoder().Bytes(wide[:len(wide)&^1]) // past the last unit: padding
		return string(text)
	})
}

var (
	htmlHidden = regexp.MustCompile(`(?is)<(script|style|head|title)\b.*?</(script|style|head|title)\s*>`)
	htmlTag    = regexp.MustCompile(`(?s)<[^>]*>`)
	blankRun   = regexp.MustCompile(`[ \t\r\f\v]+`)
	blankLines = regexp.MustCompile(`\n\s*\n+`)
)

// stripHTML reduces an HTML body to its text, as much as a summary prompt needs.
func stripHTML(s string) string {
	s = htmlHidden.ReplaceAllString(s, " ")
	s = htmlTag.ReplaceAllString(s, " ")
	s = html.UnescapeString(s)
	s = blankRun.ReplaceAllString(s, " ")
	return strings.TrimSpace(blankLines.ReplaceAllString(s, "\n\n"))
}
