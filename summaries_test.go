package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

const testModelKey = "model-key-456"

// testNow is the summary tests' clock: Wednesday 25 November 2026, 10:00 UTC.
var testNow = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)

func berlin(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// fakeModel speaks the chat-completions protocol and checks every request it gets. It
// answers as OpenAI's API reference describes POST /v1/chat/completions
// (platform.openai.com/docs/api-reference/chat/create: an object "chat.completion" with
// choices[].message {role, content} and finish_reason) and its errors
// ({"error": {"message", "type", "param", "code"}}, code a string or null,
// platform.openai.com/docs/guides/error-codes), the shape Ollama's /v1 (ollama
// docs/openai.md) also writes; with gemini set, its errors are Gemini's
// OpenAI-compatible endpoint's, a list of those objects. Besides the members the service
// reads it writes only id, object and finish_reason.
type fakeModel struct {
	t        *testing.T
	mu       sync.Mutex
	prompts  []string
	answer   string        // content of the answer
	key      string        // the API key it takes; testModelKey when empty
	raw      string        // when set, the whole answer or error body instead
	failures []int         // statuses answered first, one per request
	gemini   bool          // errors as Gemini's list
	release  chan struct{} // when set, answers wait for it to close
	entered  chan struct{} // when set, receives once per request as it arrives
	gone     chan struct{} // when set, receives once per request its client ended while it waited
}

func (m *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		m.t.Errorf("model body: %v", err)
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" ||
		r.Header.Get("Authorization") != "Bearer "+cmp.Or(m.key, testModelKey) || r.Header.Get("Content-Type") != "application/json" ||
		body.Model != "test-model" || len(body.Messages) != 1 || body.Messages[0].Role != "user" {
		m.t.Errorf("model got %s %s %v %+v", r.Method, r.URL.Path, r.Header, body)
	}
	if m.entered != nil {
		m.entered <- struct{}{}
	}
	if m.release != nil {
		select {
		case <-m.release:
		case <-r.Context().Done():
			if m.gone != nil {
				m.gone <- struct{}{}
			}
			return
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.prompts = append(m.prompts, body.Messages[0].Content)
	w.Header().Set("Content-Type", "application/json")
	if len(m.failures) > 0 {
		status := m.failures[0]
		m.failures = m.failures[1:]
		w.WriteHeader(status)
		body := fmt.Sprintf(`{"error": {"message": "quota exceeded for key %s", "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}`, testModelKey)
		if m.gemini {
			body = "[" + body + "]"
		}
		body = cmp.Or(m.raw, body)
		fmt.Fprint(w, body)
		return
	}
	if m.raw != "" {
		fmt.Fprint(w, m.raw)
		return
	}
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": body.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": m.answer}}},
	})
}

func (m *fakeModel) calls() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.prompts)
}

// summaryEnv is a service wired to a fake tracker with one ticket updated now, a fake
// model, a prompt directory and the fixture Maildir, with its clock at now.
type summaryEnv struct {
	*testEnv
	clock   *testClock
	tracker *fakeTracker
	model   *fakeModel
}

func newSummaryEnv(t *testing.T, now time.Time, change ...func(*config)) *summaryEnv {
	t.Helper()
	tracker := &fakeTracker{t: t}
	model := &fakeModel{t: t, answer: "The summary."}
	ts := httptest.NewServer(tracker)
	ms := httptest.NewServer(model)
	t.Cleanup(ts.Close)
	t.Cleanup(ms.Close)
	prompts := t.TempDir()
	writeFile(t, filepath.Join(prompts, "tracker.txt"), "Tickets of $DATE:\n$TRACKER_TICKETS\nEnd.")
	writeFile(t, filepath.Join(prompts, "email.txt"), "Mail of $DATE:\n$EMAILS\nEnd.")
	base := func(c *config) {
		c.TrackerEndpoint = ts.URL + "/api/rest"
		c.TrackerKey = testTrackerKey
		c.GenAIKey = testModelKey
		c.GenAIBaseURL = ms.URL + "/v1"
		c.GenAIModel = "test-model"
		c.TrackerPromptFile = filepath.Join(prompts, "tracker.txt")
		c.EmailPromptFile = filepath.Join(prompts, "email.txt")
		c.Maildir = "testdata/maildir"
	}
	clock := &testClock{now: now}
	e := newTestEnvAt(t, clock.Now, append([]func(*config){base}, change...)...)
	tracker.issues = []map[string]any{issue(1, mantisDate(now))}
	return &summaryEnv{testEnv: e, clock: clock, tracker: tracker, model: model}
}

// newHeldSummaryEnv is a summary environment whose model holds every call until
// e.model.release is closed, each arrival sent on e.model.entered.
func newHeldSummaryEnv(t *testing.T, now time.Time) *summaryEnv {
	t.Helper()
	e := newSummaryEnv(t, now)
	e.model.release = make(chan struct{})
	e.model.entered = make(chan struct{}, 100)
	return e
}

type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestTrackerPrompt checks the exact prompt: the kept tickets as JSON with the requested
// fields only, old notes dropped (`"notes": []` when none is left), `notes` absent when
// MantisBT left it out, long texts cut; a trailing slash in the endpoint is not doubled. A
// key is hidden in errors and logs, never in the data: with the keys "t" and "x" (as
// docs/SUMMARIES.md lets an Ollama user choose), MantisBT's answer and the summary stay
// whole.
func TestTrackerPrompt(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, berlin(t)) // Wednesday; window from 23 Nov 00:00 CET
	e := newSummaryEnv(t, now, func(c *config) {
		c.TrackerEndpoint += "/"
		c.TrackerKey, c.GenAIKey = "t", "x"
	})
	e.tracker.token, e.model.key = "t", "x"
	long := strings.Repeat("é", 2500)
	e.tracker.issues = []map[string]any{
		issue(3, "2026-11-25T09:00:00+01:00",
			note(31, "2026-11-22T23:59:59+01:00", "too old"),
			note(32, "2026-11-22T23:00:00+00:00", "exactly at the start <&>"),
			note(33, "2026-11-24T10:00:00-05:00", long)),
		issue(4, "2026-11-24T08:00:00+00:00", note(41, "2026-10-01T08:00:00+00:00", "old")),
		issue(2, "2026-11-23T01:30:00+02:00"), // 22 Nov 23:30 UTC = 23 Nov 00:30 CET: inside, no notes field
		issue(1, "2026-11-22T22:59:59+00:00", note(11, "2026-11-24T10:00:00+00:00", "new note on an old ticket")),
	}
	e.tracker.issues[0]["description"] = long
	e.model.answer = "Next: fix the mailbox export."
	if err := e.srv.generateTrackerSummary(context.Background()); err != nil {
		t.Fatal(err)
	}
	reporter := `{"id":1,"name":"admin"}` // no real_name, no email
	noteReporter := `{"id":2,"name":"dev"}`
	cut := strings.Repeat("é", 2000)
	want := "Tickets of 2026-11-25:\n[" +
		`{"id":3,"summary":"Ticket 3","description":"` + cut + `","created_at":"2026-01-01T08:00:00+00:00","updated_at":"2026-11-25T09:00:00+01:00","reporter":` + reporter +
		`,"notes":[{"id":32,"reporter":` + noteReporter + `,"text":"exactly at the start <&>","created_at":"2026-11-22T23:00:00+00:00","updated_at":"2026-11-22T23:00:00+00:00"},` +
		`{"id":33,"reporter":` + noteReporter + `,"text":"` + cut + `","created_at":"2026-11-24T10:00:00-05:00","updated_at":"2026-11-24T10:00:00-05:00"}]},` +
		`{"id":4,"summary":"Ticket 4","description":"Description 4","created_at":"2026-01-01T08:00:00+00:00",` +
		`"updated_at":"2026-11-24T08:00:00+00:00","reporter":` + reporter + `,"notes":[]},` +
		`{"id":2,"summary":"Ticket 2","description":"Description 2","created_at":"2026-01-01T08:00:00+00:00","updated_at":"2026-11-23T01:30:00+02:00","reporter":` + reporter + `}` +
		"]\nEnd."
	calls := e.model.calls()
	if len(calls) != 1 || calls[0] != want {
		t.Errorf("prompt =\n%q\nwant\n%q", calls, want)
	}
}

// TestSummaryFailuresStoreNothing: every kind of failure leaves no summary and a
// healthy service, through the endpoints, and logs why (TestRefusalLogHidesKey: no key). GET
// /api/tracker-summary answers it without a path or a detail, which the log keeps, and
// stores nothing either; within 30 s after a failed run, a caller is answered 503 with the
// time to wait in Retry-After, not a new run.
func TestSummaryFailuresStoreNothing(t *testing.T) {
	const internal = `500 {"error":"Failed to generate summary: internal error"}`
	cases := []struct {
		name    string
		change  func(*config)
		setup   func(*summaryEnv)
		wantLog string
		// what the job that does not fail stores; GET /api/tracker-summary's status and body
		wantTracker, wantEmail int
		onDemand               string
	}{
		{"no model key", func(c *config) { c.GenAIKey = "" }, nil, "GENAI_API_KEY is not configured", 0, 0,
			`500 {"error":"GENAI_API_KEY is not configured"}`},
		{"no tracker endpoint", func(c *config) { c.TrackerEndpoint = "" }, nil, "TRACKER_API_ENDPOINT is not configured", 0, 1,
			`500 {"error":"TRACKER_API_ENDPOINT is not configured"}`},
		{"no template", func(c *config) {
			c.TrackerPromptFile, c.EmailPromptFile = "/nonexistent/t.txt", "/nonexistent/e.txt"
		}, nil,
			"Prompt template not readable: TRACKER_PROMPT_FILE: open /nonexistent/t.txt", 0, 0,
			`500 {"error":"Prompt template not readable"}`},
		{"no Maildir", func(c *config) { c.Maildir = "" }, nil, "MAILDIR is not configured", 1, 0,
			`200 {"summary":"The summary."}`},
		{"Maildir missing", func(c *config) { c.Maildir = "/nonexistent/mail" }, nil, "MAILDIR /nonexistent/mail: read Maildir: open new", 1, 0,
			`200 {"summary":"The summary."}`},
		{"tracker refuses", nil, func(e *summaryEnv) { e.tracker.failures = []int{403, 403} }, "MantisBT did not accept TRACKER_API_KEY: no user has this token (it is unknown, revoked or mistyped; MantisBT's tokens do not expire): tracker answered 403 (API token not found)", 0, 1,
			internal},
		{"a ticket too large for the prompt", nil,
			func(e *summaryEnv) { e.tracker.issues = []map[string]any{tooLargeTicket(1)} },
			"none of the 1 items fits in 200000 characters", 0, 1, internal},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newSummaryEnv(t, testNow, tc.change)
			if tc.setup != nil {
				tc.setup(e)
			}
			status, raw := e.do("GET", "/api/tracker-summary", nil)
			if got := fmt.Sprintf("%d %s", status, strings.TrimSpace(string(raw))); got != tc.onDemand {
				t.Errorf("GET /api/tracker-summary = %s, want %s", got, tc.onDemand)
			}
			if tc.onDemand == internal { // 10.5 s after a failed run: the 19.5 s left, rounded up
				e.clock.Set(testNow.Add(10500 * time.Millisecond))
				res, body := e.getRaw("/api/tracker-summary")
				busy := res.StatusCode == 503 && res.Header.Get("Retry-After") == "20" &&
					strings.Contains(string(body), errSummaryBusy.Error())
				if !busy || strings.Count(e.logs.String(), "on-demand tracker summary failed") != 1 {
					t.Errorf("a second caller = %d (Retry-After %q) %s, want 503 with Retry-After 20, no new run:\n%s",
						res.StatusCode, res.Header.Get("Retry-After"), body, e.logs)
				}
			}
			for _, path := range []string{"/api/tracker-summaries/generate", "/api/email-summaries/generate"} {
				if status, _ := e.do("POST", path, nil); status != 202 {
					t.Fatalf("POST %s = %d, want 202", path, status)
				}
			}
			waitFor(t, func() bool { return strings.Count(e.logs.String(), "summary job") >= 2 })
			if !strings.Contains(e.logs.String(), tc.wantLog) {
				t.Errorf("logs lack %q:\n%s", tc.wantLog, e.logs)
			}
			if tr, em := e.count("tracker_summaries"), e.count("email_summaries"); tr != tc.wantTracker || em != tc.wantEmail {
				t.Errorf("stored %d tracker and %d e-mail summaries, want %d and %d", tr, em, tc.wantTracker, tc.wantEmail)
			}
			// A job that stores nothing says it failed; one that stores its summary, done.
			stored := tc.wantTracker + tc.wantEmail
			failed, done := strings.Count(e.logs.String(), `msg="summary job failed"`), strings.Count(e.logs.String(), `msg="summary job done"`)
			if failed != 2-stored || done != stored {
				t.Errorf("%d jobs logged as failed and %d as done, want %d and %d:\n%s", failed, done, 2-stored, stored, e.logs)
			}
			if status, _ := e.do("GET", "/healthz", nil); status != 200 {
				t.Errorf("service unhealthy after a failed job")
			}
		})
	}
}

func TestGenerateAnswersBeforeSlowModelAndRunsOnce(t *testing.T) {
	e := newHeldSummaryEnv(t, testNow)

	status, raw := e.do("POST", "/api/tracker-summaries/generate", nil)
	if status != 202 || strings.TrimSpace(string(raw)) != `{"message":"Summary generation started."}` {
		t.Fatalf("generate = %d %s", status, raw)
	}
	<-e.model.entered // the job is inside its model call, which waits for release
	if status, _ := e.do("POST", "/api/tracker-summaries/generate", nil); status != 202 {
		t.Fatalf("second generate = %d", status)
	}
	if !strings.Contains(e.logs.String(), "summary job already running") {
		t.Errorf("the second generate started nothing and the log does not say so:\n%s", e.logs)
	}
	status, raw = e.do("GET", "/api/tracker-summary/today", nil)
	if status != 404 || strings.TrimSpace(string(raw)) != `{"message":"No tracker summary found for today (2026-11-25)."}` {
		t.Errorf("today while the job runs = %d %s, want 404 with the date", status, raw)
	}
	close(e.model.release)
	waitFor(t, func() bool { return strings.Contains(e.logs.String(), "summary job done") })
	if !regexp.MustCompile(`msg="summary job done" job="tracker summary" duration=\d`).MatchString(e.logs.String()) {
		t.Errorf("the job's log line does not say how long it took:\n%s", e.logs)
	}
	if n := len(e.model.calls()); n != 1 {
		t.Errorf("model calls = %d, want 1 for two rapid generate requests", n)
	}
}

// TestTrackerSummaryRegeneratedInPlace: a second tracker job of the day replaces the
// day's summary in place, same id and date, new text and generatedAt; the template is read
// per job, so that an edit takes effect without a restart.
func TestTrackerSummaryRegeneratedInPlace(t *testing.T) {
	e := newSummaryEnv(t, testNow)
	var first Summary
	for i, answer := range []string{"First.", "Second."} {
		e.clock.Set(testNow.Add(time.Duration(i) * time.Hour))
		e.model.answer = answer
		if err := e.srv.generateTrackerSummary(context.Background()); err != nil {
			t.Fatal(err)
		}
		var list summaryList
		e.doJSON("GET", "/api/tracker-summaries", nil, &list)
		if list.Total != 1 || len(list.Summaries) != 1 {
			t.Fatalf("after job %d: %+v, want one summary", i+1, list)
		}
		got := list.Summaries[0]
		first = cmp.Or(first, got)
		if got.ID != first.ID || got.SummaryDate != first.SummaryDate || got.SummaryText != answer ||
			got.GeneratedAt != timestamp(testNow.Add(time.Duration(i)*time.Hour)) {
			t.Errorf("after job %d: %+v, want %q generated now, of the first's id and date", i+1, got, answer)
		}
		writeFile(t, e.srv.cfg.TrackerPromptFile, "Edited $DATE $TRACKER_TICKETS")
	}
	if calls := e.model.calls(); len(calls) != 2 || !strings.HasPrefix(calls[1], "Edited 2026-11-25 [") {
		t.Errorf("second prompt = %q, want the edited template", calls[len(calls)-1])
	}
}

// TestNothingToSummarise: without tickets or mail in the window, the jobs (GET
// /api/tracker-summary runs the tracker's) give their no-material texts, no model called.
func TestNothingToSummarise(t *testing.T) {
	e := newSummaryEnv(t, testNow, func(c *config) { c.Maildir = newMaildir(t) })
	e.tracker.issues = []map[string]any{issue(1, mantisDate(testNow.Add(-100*time.Hour)))}
	for _, generate := range []func(context.Context) error{
		e.srv.generateTrackerSummary, e.srv.generateEmailSummary,
	} {
		if err := generate(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	var tr, em summaryList
	e.doJSON("GET", "/api/tracker-summaries", nil, &tr)
	e.doJSON("GET", "/api/email-summaries", nil, &em)
	if len(tr.Summaries) != 1 || tr.Summaries[0].SummaryText != "No tracker tickets updated recently." ||
		len(em.Summaries) != 1 || em.Summaries[0].SummaryText != "No emails received recently." {
		t.Errorf("stored %+v and %+v, want the no-material texts", tr, em)
	}
	if n := len(e.model.calls()); n != 0 {
		t.Errorf("model called %d times with nothing to summarise", n)
	}
}

func TestSummaryLists(t *testing.T) {
	e := newSummaryEnv(t, testNow)
	ctx := context.Background()
	for i := range 15 {
		day := testNow.AddDate(0, 0, -(i*7%15 + 1)) // distinct dates, out of insertion order
		if err := e.store.SaveTrackerSummary(ctx, startOfDay(day), fmt.Sprintf("tracker %d", i)); err != nil {
			t.Fatal(err)
		}
		if err := e.store.AddEmailSummary(ctx, startOfDay(day), fmt.Sprintf("email %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		query       string
		first, size int // first: offset into the date-descending order
	}{
		{"", 0, 10},
		{"?page=2", 10, 5},
		{"?page=3", 15, 0},
		{"?page=2&limit=4", 4, 4},
		{"?page=1&limit=1", 0, 1},
		{"?page=15&limit=1", 14, 1},
		{"?limit=100", 0, 15},
		{"?page=0&limit=0", 0, 10},
		{"?page=-1&limit=-5", 0, 10},
		{"?page=1.5&limit=2e1", 0, 10},
		{"?page=99999999999999999999&limit=3", 15, 0}, // beyond int64: still a page, past the end
		{"?limit=99999999999999999999", 0, 15},
		{"?page=9223372036854775807&limit=10", 15, 0},
	}
	for _, path := range []string{"/api/tracker-summaries", "/api/email-summaries"} {
		var all summaryList
		e.doJSON("GET", path+"?limit=1000", nil, &all)
		newestFirst := func(a, b Summary) int { return strings.Compare(b.SummaryDate, a.SummaryDate) }
		if !slices.IsSortedFunc(all.Summaries, newestFirst) {
			t.Errorf("%s not ordered by summaryDate descending", path)
		}
		for _, tc := range cases {
			var got struct {
				Summaries []Summary `json:"summaries"`
				Total     *int      `json:"total"`
			}
			if status := e.doJSON("GET", path+tc.query, nil, &got); status != 200 {
				t.Fatalf("GET %s%s = %d", path, tc.query, status)
			}
			want := all.Summaries[min(tc.first, 15):min(tc.first+tc.size, 15)]
			if got.Total == nil || *got.Total != 15 || got.Summaries == nil || !slices.Equal(got.Summaries, want) {
				t.Errorf("GET %s%s = %d summaries, total %v; want %d from %d, total 15", path, tc.query, len(got.Summaries), got.Total, len(want), tc.first)
			}
		}
	}
}

func TestEmailSummaryPrompt(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, berlin(t)) // window from 23 Nov 00:00 CET
	e := newSummaryEnv(t, now)
	e.model.answer = "Mail digest."
	sent := sentEmails(t, e)
	sentEmails(t, e) // a second job of the day
	// Newest delivered first; the old message and the file that is not one are left out,
	// the undated one is dated by its delivery, the time in its file's name.
	want := [][5]string{ // From, To, Subject, Date, Body
		{"Ivan <ivan@example.ru>", "team@example.com", "Status", "2026-11-25T08:00:00.000Z",
			"Привет, мир.\nВторая строка."},
		{"Nodate <nodate@example.com>", "", "No date", "2026-11-25T07:05:00.000Z", "No Date header."},
		{"Newsletter <news@example.com>", "team@example.com", "HTML only", "2026-11-25T06:00:00.000Z",
			"Café & tea on Friday"},
		{"Ops <ops@example.com>", "team@example.com", "Deploy finished", "2026-11-24T23:30:00.000Z",
			"Deploy 42 finished without errors."},
		{"Jörg Müller <joerg@example.com>", "team@example.com", "Grüße aus Köln",
			"2026-11-24T08:15:00.000Z", "Hallo zusammen, die Straße ist gesperrt."},
		{"Claire <claire@example.fr>", "team@example.com", "Café crème", "2026-11-23T13:00:00.000Z",
			"Un café crème, s'il vous plaît. Cette ligne est très longue et continue ici, " +
				"bien au-delà de soixante-seize caractères."},
	}
	if len(sent) != len(want) {
		t.Errorf("sent %d messages, want %d: %+v", len(sent), len(want), sent)
	}
	for i, m := range sent[:min(len(sent), len(want))] {
		if got := [5]string{m.From, m.To, m.Subject, m.Date, m.Body}; got != want[i] {
			t.Errorf("message %d sent as %q,\nwant %q", i, got, want[i])
		}
	}
	if strings.Count(e.logs.String(), `msg="skip e-mail message" file=new/`) != 2 ||
		strings.Count(e.logs.String(), `err="not a message: no header field and no text"`) != 2 {
		t.Errorf("want one skip line per job, for the file that is not a message, saying so:\n%s", e.logs)
	}
	var list summaryList
	e.doJSON("GET", "/api/email-summaries", nil, &list)
	if list.Total != 2 || list.Summaries[0].SummaryText != "Mail digest." || list.Summaries[0].SummaryDate != "2026-11-24T23:00:00.000Z" {
		t.Errorf("e-mail summaries = %+v, want two appended for 2026-11-24T23:00:00.000Z", list)
	}
	status, raw := e.do("POST", "/api/email-summaries/generate", nil)
	if status != 202 || strings.TrimSpace(string(raw)) != `{"message":"Email summary generation started."}` {
		t.Errorf("POST /api/email-summaries/generate = %d %s", status, raw)
	}
}

// summaryList is the reply of GET /api/tracker-summaries and /api/email-summaries.
type summaryList struct {
	Summaries []Summary
	Total     int
}

// sentEmails runs the e-mail job and returns the messages its prompt, written for
// 2026-11-25, gave the model.
func sentEmails(t *testing.T, e *summaryEnv) []email {
	t.Helper()
	if err := e.srv.generateEmailSummary(context.Background()); err != nil {
		t.Fatal(err)
	}
	calls := e.model.calls()
	prompt := calls[len(calls)-1]
	data, head := strings.CutPrefix(prompt, "Mail of 2026-11-25:\n")
	data, tail := strings.CutSuffix(data, "\nEnd.")
	var sent []email
	if err := json.Unmarshal([]byte(data), &sent); err != nil || !head || !tail {
		t.Fatalf("prompt %q: want the template around a JSON array (%v)", prompt, err)
	}
	return sent
}

// TestSchedule: the run time is local, across a daylight-saving change too (the day's run
// time, strictly after now, is TestScheduleCatchesUp's), and SUMMARY_SCHEDULE is HH:MM.
func TestSchedule(t *testing.T) {
	loc := berlin(t)
	want := time.Date(2026, 3, 29, 6, 30, 0, 0, loc) // after the spring change at 02:00
	for _, now := range []time.Time{
		time.Date(2026, 3, 28, 12, 0, 0, 0, loc), // the next day's run
		time.Date(2026, 3, 29, 1, 0, 0, 0, loc),  // the same day's
	} {
		if got := nextRun(now, 6, 30); !got.Equal(want) {
			t.Errorf("nextRun(%s) = %s, want %s", now, got, want)
		}
	}
	for _, bad := range []string{"6:30", "24:00", "06:60", "0630", "06:30:00", "x"} {
		want := fmt.Sprintf("SUMMARY_SCHEDULE %q: want HH:MM, e.g. 06:30", bad)
		if _, _, err := parseSchedule(bad); err == nil || err.Error() != want {
			t.Errorf("parseSchedule(%q) = %v, want %s", bad, err, want)
		}
	}
	if h, m, err := parseSchedule("23:05"); err != nil || h != 23 || m != 5 {
		t.Errorf("parseSchedule(23:05) = %d %d %v", h, m, err)
	}
}

// TestScheduleCatchesUp: started after today's run time without today's tracker
// summary, the schedule runs both jobs at once; otherwise it waits for the next run, runs
// both jobs when it comes and waits for the same time the next day; when today's summary
// cannot be read, it says so in the log. The schedule logs that wait after its start-up
// decision, so a test that sees the line knows that any catch-up job has been started.
func TestScheduleCatchesUp(t *testing.T) {
	const (
		catchUp = "summary schedule: catching up on today's run"
		wait    = "summary schedule: waiting for the next run"
	)
	ctx := context.Background()
	save := func(day time.Time) func(*Store) error {
		return func(s *Store) error { return s.SaveTrackerSummary(ctx, startOfDay(day), "done") }
	}
	cases := []struct {
		name         string
		hour, minute int                // the run time
		existing     func(*Store) error // before the start; nil: nothing
		log          string             // catchUp: both jobs run at once
		comes        bool               // the clock moves with real time from 300 ms before the run
	}{
		{"after the run time, today's summary missing", 6, 30, nil, catchUp, false},
		{"after the run time, only yesterday's summary", 6, 30, save(testNow.AddDate(0, 0, -1)), catchUp, false},
		{"after the run time, only today's e-mail summary", 6, 30,
			func(s *Store) error { return s.AddEmailSummary(ctx, startOfDay(testNow), "done") }, catchUp, false},
		{"after the run time, today's summary exists", 6, 30, save(testNow), wait, false},
		{"after the run time, today's summary unreadable", 6, 30, func(s *Store) error {
			_, err := s.write.Exec(`DROP TABLE tracker_summaries`)
			return err
		}, "summary schedule: no catch-up, today's tracker summary not readable", false},
		{"exactly at the run time", 10, 0, nil, catchUp, false}, // the next run is tomorrow's
		{"before the run time", 11, 30, nil, wait, false},
		{"the run time comes", 10, 0, nil, wait, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newSummaryEnv(t, testNow)
			if tc.existing != nil {
				if err := tc.existing(e.store); err != nil {
					t.Fatal(err)
				}
			}
			emailBefore := e.count("email_summaries")
			if started := time.Now(); tc.comes {
				e.srv.now = func() time.Time { return testNow.Add(time.Since(started) - 300*time.Millisecond) }
			}
			e.srv.scheduleSummaries(tc.hour, tc.minute)
			waitFor(t, func() bool { return strings.Contains(e.logs.String(), wait) })
			if !strings.Contains(e.logs.String(), tc.log) {
				t.Errorf("the log lacks %q:\n%s", tc.log, e.logs)
			}
			if tc.log == catchUp || tc.comes {
				waitFor(t, func() bool { return strings.Count(e.logs.String(), "summary job done") == 2 })
				var today Summary
				e.doJSON("GET", "/api/tracker-summary/today", nil, &today)
				if today.SummaryText != "The summary." || e.count("email_summaries") != emailBefore+1 {
					t.Errorf("after the run: today's tracker summary %q, %d e-mail summaries; want the model's text and %d",
						today.SummaryText, e.count("email_summaries"), emailBefore+1)
				}
				next := fmt.Sprintf("at=2026-11-26T%02d:%02d:00.000Z", tc.hour, tc.minute)
				waitFor(t, func() bool { return strings.Contains(e.logs.String(), next) })
				return
			}
			if names := runningJobs(e.srv.jobs); len(names) > 0 || strings.Contains(e.logs.String(), "summary job") {
				t.Errorf("schedule started %v at start-up, want no catch-up:\n%s", names, e.logs)
			}
			if n := len(e.model.calls()); n != 0 || e.count("email_summaries") != emailBefore {
				t.Errorf("model called %d times, e-mail summaries changed", n)
			}
		})
	}
}

// runningJobs names the background jobs running now.
func runningJobs(j *summaryJobs) []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var names []string
	for name := range j.running {
		names = append(names, name)
	}
	return names
}

// TestShutdownDuringSlowModel: the real server, a model that never answers, SIGTERM (a
// cancelled ctx): run returns within its bound and the job's call is cancelled.
func TestShutdownDuringSlowModel(t *testing.T) {
	e := newHeldSummaryEnv(t, time.Now())
	defer close(e.model.release)
	e.model.gone = make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := e.srv.cfg
	base, done, _ := startRun(t, ctx, map[string]string{
		"ADDR": "127.0.0.1:0", "DATABASE_PATH": filepath.Join(t.TempDir(), "db"),
		"TRACKER_API_ENDPOINT": cfg.TrackerEndpoint, "TRACKER_API_KEY": testTrackerKey,
		"GENAI_API_KEY": testModelKey, "GENAI_BASE_URL": cfg.GenAIBaseURL, "GENAI_MODEL": "test-model",
		"TRACKER_PROMPT_FILE": cfg.TrackerPromptFile,
	})
	res, err := testClient.Post(base+"/api/tracker-summaries/generate", "application/json", nil)
	if err != nil || res.StatusCode != 202 {
		t.Fatalf("generate: %v %v", res, err)
	}
	res.Body.Close()
	<-e.model.entered
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run = %v", err)
		}
	// Cancelled, the job ends at once; only a job that kept waiting for its model would
	// use up the 5 s bound.
	case <-time.After(2 * time.Second):
		t.Fatal("run did not return within 2 s: the job's model call was not cancelled")
	}
	select {
	case <-e.model.gone:
	case <-time.After(5 * time.Second):
		t.Error("the model call was not cancelled: the model never saw its client go")
	}
}

// TestBuiltInPromptTemplates: without TRACKER_PROMPT_FILE and EMAIL_PROMPT_FILE the jobs
// use the templates built into the binary, which are prompts/'s files, so that the binary
// needs no folder of its own beside it.
func TestBuiltInPromptTemplates(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, berlin(t))
	e := newSummaryEnv(t, now, func(c *config) { c.TrackerPromptFile, c.EmailPromptFile = "", "" })
	for _, tc := range []struct {
		generate    func(context.Context) error
		file, field string
	}{
		{e.srv.generateTrackerSummary, "prompts/tracker_summary.txt", "$TRACKER_TICKETS"},
		{e.srv.generateEmailSummary, "prompts/email_summary.txt", "$EMAILS"},
	} {
		file, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		before, after, ok := strings.Cut(strings.ReplaceAll(string(file), "$DATE", "2026-11-25"), tc.field)
		if !ok {
			t.Fatalf("%s has no %s", tc.file, tc.field)
		}
		if err := tc.generate(context.Background()); err != nil {
			t.Fatal(err)
		}
		calls := e.model.calls()
		if last := calls[len(calls)-1]; !strings.HasPrefix(last, before+"[") || !strings.HasSuffix(last, "]"+after) {
			t.Errorf("%s: the prompt sent is not %s's template:\n%s", tc.field, tc.file, last)
		}
	}
}

// TestStuckJobDoesNotBlockTheNext: a job stuck where its context does not reach holds
// back a job of its name until its timeout, then a new one starts and the stuck one's
// context is cancelled; when the stuck one ends at last, the newer one still holds back a
// third (its entry stays), so that two jobs of a kind never run at once.
func TestStuckJobDoesNotBlockTheNext(t *testing.T) {
	clock := &testClock{now: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}
	j := newSummaryJobs(clock.Now)
	releaseStuck, releaseNewer := make(chan struct{}), make(chan struct{})
	stuckCtx := make(chan context.Context, 1)
	stuckDone := make(chan struct{})
	j.start("kind", func(ctx context.Context) {
		defer close(stuckDone)
		stuckCtx <- ctx
		<-releaseStuck // ignores ctx, as a read on a hung file system would
	})
	ctx := <-stuckCtx
	ran := make(chan struct{}, 3)
	job := func(context.Context) { ran <- struct{}{}; <-releaseNewer }
	clock.Set(clock.Now().Add(jobTimeout - time.Second))
	if j.start("kind", job) {
		t.Fatal("a second job started within the stuck one's timeout")
	}
	clock.Set(clock.Now().Add(time.Second))
	if !j.start("kind", job) {
		t.Fatal("no new job once the stuck one's timeout passed")
	}
	<-ran
	if ctx.Err() == nil {
		t.Error("the stuck job's context is not cancelled")
	}
	// The stuck job ends; the newer one, still running, keeps its place.
	close(releaseStuck)
	<-stuckDone
	if j.start("kind", job) {
		t.Error("a third job started beside the newer one after the stuck one ended")
	}
	close(releaseNewer)
	if !j.stop(5 * time.Second) {
		t.Error("jobs did not end")
	}
}

// TestJobPanicLogged: a background job's panic is logged as a handler's is, and the
// service and the next job of its kind go on.
func TestJobPanicLogged(t *testing.T) {
	t.Parallel()
	e := newSummaryEnv(t, time.Now())
	panicker := func(context.Context) error { panic("boom") }
	e.srv.startJob("panicker", panicker)
	waitFor(t, func() bool { return strings.Contains(e.logs.String(), `msg=panic job=panicker panic=boom`) })
	waitFor(t, func() bool { return len(runningJobs(e.srv.jobs)) == 0 })
	e.srv.startJob("panicker", panicker)
	waitFor(t, func() bool { return strings.Count(e.logs.String(), "msg=panic") == 2 })
}

// TestTrackerPromptWithinBudget: a busy window's tickets fill $TRACKER_TICKETS up to
// maxPromptDataChars characters (not bytes), newest-updated first; the first that does not
// fit ends them, though older, shorter ones would fit: an older ticket never stands in for a
// newer one. A ticket too large on its own is passed over, lest it crowd out every other.
func TestTrackerPromptWithinBudget(t *testing.T) {
	e := newSummaryEnv(t, testNow)
	e.tracker.issues = []map[string]any{tooLargeTicket(1000)}
	// 500 tickets of 399 characters (their id twice, so fewer é for more digits) and a comma
	// each fill the data's 200,000 but for the brackets: 499 fit. 50 short ones follow.
	for i := range 550 {
		is := issue(i+1, mantisDate(testNow.Add(-time.Duration(i+1)*time.Second)))
		if i < 500 {
			is["description"] = strings.Repeat("é", 238-2*len(itoa(int64(i+1))))
		}
		e.tracker.issues = append(e.tracker.issues, is)
	}
	prompt, err := trackerPrompt(context.Background(), e.srv.client, e.srv.cfg, testNow)
	if err != nil {
		t.Fatal(err)
	}
	data := strings.TrimSuffix(strings.TrimPrefix(prompt, "Tickets of 2026-11-25:\n"), "\nEnd.")
	var tickets []ticket
	if err := json.Unmarshal([]byte(data), &tickets); err != nil {
		t.Fatalf("$TRACKER_TICKETS is not a JSON array: %v", err)
	}
	if n := len(tickets); n != 499 || utf8.RuneCountInString(data) > maxPromptDataChars {
		t.Fatalf("%d tickets in %d characters, want 499 within %d",
			n, utf8.RuneCountInString(data), maxPromptDataChars)
	}
	for i, tk := range tickets {
		j, _ := json.Marshal(tk)
		if n := utf8.RuneCount(j); tk.ID != int64(i+1) || n != 399 {
			t.Fatalf("ticket %d is #%d of %d characters, want #%d of 399: whole, the newest first",
				i, tk.ID, n, i+1)
		}
	}
}

// tooLargeTicket is a ticket updated at testNow whose notes, each cut to maxTextChars, are
// more than maxPromptDataChars.
func tooLargeTicket(id int) map[string]any {
	notes := make([]map[string]any, 110)
	for i := range notes {
		notes[i] = note(id*1000+i, mantisDate(testNow), strings.Repeat("n", 3000))
	}
	return issue(id, mantisDate(testNow), notes...)
}
