package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestTrackerPromptWindow: the prompt holds the tickets updated since local midnight two
// days back, four on a Monday (back to Thursday), across a month end and both
// daylight-saving changes; a ticket updated a second before is left out.
func TestTrackerPromptWindow(t *testing.T) {
	loc := berlin(t)
	for _, tc := range []struct{ now, start string }{
		{"2026-11-23 10:00", "2026-11-19 00:00"}, // Monday: four days, back to Thursday
		{"2026-11-24 00:00", "2026-11-22 00:00"},
		{"2026-11-25 23:59", "2026-11-23 00:00"},
		{"2026-12-01 08:00", "2026-11-29 00:00"}, // across a month end
		{"2026-03-30 09:00", "2026-03-26 00:00"}, // Monday after the spring change: CET window start
		{"2026-03-31 09:00", "2026-03-29 00:00"}, // the change day itself starts at CET midnight
		{"2026-10-27 09:00", "2026-10-25 00:00"}, // autumn change day
	} {
		now, _ := time.ParseInLocation("2006-01-02 15:04", tc.now, loc)
		start, _ := time.ParseInLocation("2006-01-02 15:04", tc.start, loc)
		e := newSummaryEnv(t, now)
		e.tracker.issues = []map[string]any{issue(1, mantisDate(now)), issue(2, mantisDate(start)),
			issue(3, mantisDate(start.Add(-time.Second)))}
		if err := e.srv.generateTrackerSummary(t.Context()); err != nil {
			t.Fatal(err)
		}
		if calls := e.model.calls(); len(calls) != 1 || !strings.Contains(calls[0], `"Ticket 2"`) || strings.Contains(calls[0], `"Ticket 3"`) {
			t.Errorf("%s (%s): prompt %q, want the tickets from %s on", tc.now, now.Weekday(), calls, tc.start)
		}
	}
}

// TestTrackerPaging: the walk reads pages until one is short or leaves the window, at
// most 20, then reads page 1 again. A project so busy that it brings a new note at every
// read is read again at most trackerRereads (3) times, not until it rests; MantisBT going
// offline before the re-read fails the job, as a refusal during the walk does, rather
// than summarising what the walk read as if it were whole.
func TestTrackerPaging(t *testing.T) {
	inside := mantisDate(testNow.Add(-time.Hour))
	outside := mantisDate(testNow.Add(-72 * time.Hour))
	many := func(n int, updated string) []map[string]any {
		var out []map[string]any
		for i := range n {
			out = append(out, issue(i, updated))
		}
		return out
	}
	busy := func(f *fakeTracker, page int) {
		n := len(f.pages)
		f.addNote(1, note(9000+n, mantisDate(testNow.Add(time.Duration(n)*time.Second)), "busy"))
	}
	// After page 2 every request is refused: 503 Mantis Offline.
	offline := func(f *fakeTracker, page int) { f.offline = page == 2 }
	cases := []struct {
		name      string
		issues    []map[string]any
		afterPage func(f *fakeTracker, page int)
		pages     []int
		kept      int
		wantErr   string // "": none
	}{
		{"empty", nil, nil, []int{1}, 0, ""},
		{"one short page", many(10, inside), nil, []int{1}, 10, ""},
		{"exactly one full page", many(50, inside), nil, []int{1, 2, 1}, 50, ""},
		{"window ends on page 2", append(many(60, inside), many(100, outside)...), nil, []int{1, 2, 1}, 60, ""},
		{"cap at 20 pages", many(1500, inside), nil,
			[]int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 1}, 1000, ""},
		{"a new note at every read", many(51, inside), busy, []int{1, 2, 1, 1, 1}, 51, ""},
		{"offline before the re-read", many(51, inside), offline, []int{1, 2}, 0, "MantisBT is offline"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newSummaryEnv(t, testNow)
			e.tracker.issues, e.tracker.afterPage = tc.issues, tc.afterPage
			tickets, err := recentTickets(context.Background(), e.srv.client, e.srv.cfg, windowStart(testNow))
			if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("recentTickets = %v, want %q", err, tc.wantErr)
			}
			if pages := e.tracker.requestedPages(); !slices.Equal(pages, tc.pages) || len(tickets) != tc.kept {
				t.Errorf("pages %v kept %d, want pages %v kept %d", pages, len(tickets), tc.pages, tc.kept)
			}
		})
	}
}

// TestOutboundRetries: what is retried, what is an answer, and the message an error takes
// out of each provider's error shape (OpenAI's, Gemini's, Ollama's own /api's, a text's). An
// answer past maxAnswerBytes is refused as too large, not cut into a malformed one.
func TestOutboundRetries(t *testing.T) {
	quota := ": quota exceeded for key [redacted]"
	long := strings.Repeat("x", 300)
	cases := []struct {
		name           string
		tracker, model []int
		wantErr        string // the error's end; empty: success
		gemini         bool   // the model's errors as Gemini's list
		body           string // the model's answer or error body, when not OpenAI's
	}{
		{"tracker 503 twice", []int{503, 503}, nil, "", false, ""},
		{"tracker 429 then ok", []int{429}, nil, "", false, ""},
		{"tracker 500 then ok", []int{500}, nil, "", false, ""},
		{"model 300, the first status past success", nil, []int{300, 200}, "model answered 300" + quota, false, ""},
		{"model 503 three times", nil, []int{503, 503, 503}, "model answered 503" + quota, false, ""},
		{"model 400, Gemini's error list", nil, []int{400}, "model answered 400" + quota, true, ""},
		{"Ollama's own error shape", nil, []int{400}, "400: quota exceeded", false, `{"error": "quota exceeded"}`},
		{"a text", nil, []int{400}, "400: Bad Gateway", false, "  Bad Gateway\n"},
		{"an empty list: the body itself", nil, []int{400}, "400: []", false, "[]"},
		{"a long message, cut", nil, []int{400}, "400: " + long[:200], false, `{"error": {"message": "` + long + `"}}`},
		{"an answer without content", nil, nil, "no choices[0].message.content", false,
			`{"choices": []}`},
		{"an answer with null content", nil, nil, "no choices[0].message.content", false,
			`{"choices": [{"message": {"content": null}}]}`},
		{"an answer not JSON", nil, nil, "not a chat completion: invalid character '<' " +
			"looking for beginning of value", false, `<html>bad gateway</html>`},
		{"an answer too large", nil, nil, "model: answer larger than 32 MiB (status 200)", false,
			strings.Repeat(" ", maxAnswerBytes+1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newSummaryEnv(t, testNow)
			e.tracker.failures = tc.tracker
			e.model.failures, e.model.gemini, e.model.raw = tc.model, tc.gemini, tc.body
			err := e.srv.generateTrackerSummary(context.Background())
			if (err == nil) != (tc.wantErr == "") || err != nil && !strings.HasSuffix(err.Error(), tc.wantErr) {
				t.Errorf("generate = %v, want %q (\"\": success after the retries)", err, tc.wantErr)
			}
		})
	}
}

// TestModelErrorKeepsChain: the model client's errors hide the key but keep what
// caused them, so that a shutdown (context.Canceled) and a timeout
// (context.DeadlineExceeded) can be told from a refusal.
func TestModelErrorKeepsChain(t *testing.T) {
	cases := []struct {
		name     string
		failures []int         // the model's answers; nil: it never answers
		timeout  time.Duration // of each outbound call
		deadline time.Duration // of the caller's ctx; 0: a minute
		cancel   bool          // cancel the caller's ctx once the request arrived
		wantIs   error         // the context error in the chain, and not the other
		wantMsg  string
	}{
		{"cancelled during the call", nil, time.Minute, 0, true, context.Canceled, "context canceled"},
		{"call timed out", nil, 50 * time.Millisecond, 0, false, context.DeadlineExceeded, "deadline exceeded"},
		// The pause before a retry ends with the caller's context: a shutdown does not wait it out.
		{"the caller's deadline during the pause before a retry", []int{503}, time.Minute,
			100 * time.Millisecond, false, context.DeadlineExceeded, "deadline exceeded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := &fakeModel{t: t, failures: tc.failures, release: make(chan struct{}),
				entered: make(chan struct{}, 10)}
			// Some gateways carry the key in the path, so that it appears in the client's
			// own error messages too.
			ms := httptest.NewServer(http.StripPrefix("/"+testModelKey, m))
			defer ms.Close()
			if tc.failures != nil {
				close(m.release)
			} else {
				defer close(m.release) // before Close, which waits for the handlers
			}
			cfg := testConfig(t, map[string]string{"GENAI_API_KEY": testModelKey,
				"GENAI_MODEL": "test-model", "GENAI_BASE_URL": ms.URL + "/" + testModelKey + "/v1"})
			cfg.OutboundTimeout = tc.timeout
			cfg.OutboundRetryDelay = time.Hour // a retry waits until the cancel

			ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(tc.deadline, time.Minute))
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				_, err := complete(ctx, ms.Client(), cfg, "prompt")
				errc <- err
			}()
			if tc.cancel {
				<-m.entered
				cancel()
			}
			var err error
			select {
			case err = <-errc:
			case <-time.After(10 * time.Second):
				t.Fatal("complete did not return within 10 s")
			}
			for _, target := range []error{context.Canceled, context.DeadlineExceeded} {
				if got, want := errors.Is(err, target), target == tc.wantIs; got != want {
					t.Errorf("errors.Is(%v, %v) = %v, want %v", err, target, got, want)
				}
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantMsg) ||
				strings.Contains(err.Error(), testModelKey) {
				t.Errorf("error %v, want it to contain %q and not the key", err, tc.wantMsg)
			}
		})
	}
}

// TestRefusalLogHidesKey: a key that a server at the endpoint echoes in its refusal (a
// proxy's error page may list the request's headers; MantisBT's refusals have no body) is
// in no answer of GET /api/tracker-summary and no log line, which names the status and the
// message. Where the message is cut (the body's first 200 characters, the reason
// phrase's), the key is hidden whole before the cut, so that no part of it is left. User
// information in TRACKER_API_ENDPOINT or GENAI_BASE_URL (a name or a password may be a
// token) is hidden too where an error names the address.
func TestRefusalLogHidesKey(t *testing.T) {
	const key = "Zq8fK2mP4xR7tW1nB6vY3cL9hJ5dS0aG" // 32 characters, as a MantisBT token
	// The key straddles the 200th character, and the cut is by characters, not bytes.
	pad := strings.Repeat("é", 190)
	inBody := func(status int, format string) func(http.ResponseWriter, string) {
		return func(w http.ResponseWriter, key string) { w.WriteHeader(status); fmt.Fprintf(w, format, key) }
	}
	inReason := func(w http.ResponseWriter, key string) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 400 %s%s cut off\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", pad, key)
		buf.Flush()
	}
	hangUp := func(w http.ResponseWriter, _ string) {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	}
	for _, tc := range []struct {
		name, service string // the service that refuses: tracker or model
		echo          func(w http.ResponseWriter, key string)
		wantLog       string // "": the server's address, its endpoint given with user information
	}{
		{"tracker: a message quoting the token", "tracker", inBody(403, `{"message": "API token %s not found", "code": 1000}`),
			"tracker answered 403: API token [redacted] not found"},
		{"model: a body cut in the key", "model", inBody(400, pad+"%s cut off"), "model answered 400: " + pad + "[redacted]\""},
		{"model: a reason cut in the key", "model", inReason, "model answered 400 (" + pad + "[redacted])"},
		{"tracker: user information in the endpoint", "tracker", hangUp, ""},
		{"model: user information in the base URL", "model", hangUp, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tc.echo(w, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
			}))
			defer srv.Close()
			base, wantLog := srv.URL, tc.wantLog
			if wantLog == "" {
				wantLog = srv.Listener.Addr().String()
				base = "http://user-7f3a:pass-9b2c@" + wantLog
			}
			e := newSummaryEnv(t, time.Now(), func(c *config) {
				if tc.service == "tracker" {
					c.TrackerEndpoint, c.TrackerKey = base+"/api/rest", key
				} else {
					c.GenAIBaseURL, c.GenAIKey = base+"/v1", key
				}
			})
			status, raw := e.do("GET", "/api/tracker-summary", nil)
			const answer = `{"error":"Failed to generate summary: internal error"}`
			if status != 500 || strings.TrimSpace(string(raw)) != answer || !strings.Contains(e.logs.String(), wantLog) {
				t.Errorf("GET /api/tracker-summary = %d %s, want 500 %s and a log naming %q:\n%s",
					status, raw, answer, wantLog, e.logs)
			}
			for _, secret := range []string{key[:8], "user-7f3a", "pass-9b2c"} {
				if strings.Contains(string(raw), secret) || strings.Contains(e.logs.String(), secret) {
					t.Errorf("%s leaked: answer %s\nlogs:\n%s", secret, raw, e.logs)
				}
			}
		})
	}
}

// TestRetryPauseGrows: the pause before the second retry is twice the first, and any 2xx
// is an answer.
func TestRetryPauseGrows(t *testing.T) {
	var mu sync.Mutex
	var at []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		at = append(at, time.Now())
		n := len(at)
		mu.Unlock()
		if n < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	cfg := testConfig(t, nil)
	const delay = 40 * time.Millisecond
	cfg.OutboundRetryDelay = delay
	_, _, err := callWithRetry(context.Background(), srv.Client(), cfg, "test", "GET", srv.URL, "", nil)
	if err != nil || len(at) != 3 {
		t.Fatalf("callWithRetry = %v after %d requests, want success after 3", err, len(at))
	}
	// Lower bounds only: a loaded machine may pause longer, never shorter.
	if first, second := at[1].Sub(at[0]), at[2].Sub(at[1]); first < delay || second < 2*delay {
		t.Errorf("pauses %v then %v, want at least %v then %v", first, second, delay, 2*delay)
	}
}

// TestTrackerListChangesDuringWalk: a note added to a ticket on page 3 while the walk
// reads moves it to the top of MantisBT's list and shifts every page after the first by
// one: still each of the 120 tickets of the window reaches the model once, the moved one
// with its new note, newest first. A ticket already read that gets a note is read again
// with it (the later version wins), and one already read that is made private is left
// out.
func TestTrackerListChangesDuringWalk(t *testing.T) {
	e := newSummaryEnv(t, testNow)
	e.tracker.issues = nil
	var want []int64
	for i := range 120 {
		e.tracker.issues = append(e.tracker.issues, issue(i+1, mantisDate(testNow.Add(-time.Duration(i+1)*time.Minute))))
		want = append(want, int64(i+1))
	}
	e.tracker.afterPage = func(f *fakeTracker, page int) {
		switch len(f.pages) {
		case 1:
			f.addNote(101, note(9001, mantisDate(testNow), "added while the walk reads"))
			f.addNote(2, note(9002, mantisDate(testNow.Add(-30*time.Second)), "added after ticket 2 was read"))
		case 2:
			f.makePrivate(3, mantisDate(testNow.Add(-40*time.Second)))
		}
	}
	tickets, err := recentTickets(context.Background(), e.srv.client, e.srv.cfg, windowStart(testNow))
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, tk := range tickets {
		ids = append(ids, tk.ID)
	}
	want = append([]int64{101, 2}, slices.DeleteFunc(want, func(id int64) bool { return id == 101 || id == 2 || id == 3 })...)
	if !slices.Equal(ids, want) {
		t.Errorf("tickets = %v,\nwant %v", ids, want)
	}
	for i, noteID := range []int64{9001, 9002} {
		if i >= len(tickets) || tickets[i].Notes == nil || len(*tickets[i].Notes) != 1 || (*tickets[i].Notes)[0].ID != noteID {
			t.Errorf("ticket %d = %+v, want it with its new note %d", want[i], tickets[min(i, len(tickets)-1)], noteID)
		}
	}
	// Page 1 again brings tickets 101, 2 and 3, updated; once more brings nothing new.
	if pages := e.tracker.requestedPages(); !slices.Equal(pages, []int{1, 2, 3, 1, 1}) {
		t.Errorf("pages = %v, want [1 2 3 1 1]", pages)
	}
}

// TestTrackerAnswerSaysWhatItIs: an answer that is not the token's issue list fails the
// job with an error that says what it is, MantisBT's texts in it cut. A 200 naming no
// login method is not MantisBT's (every answer AuthMiddleware.php lets through names one);
// one served to another account names it and its login method; a fault, the project the
// user may not read; a body that is neither, no list.
func TestTrackerAnswerSaysWhatItIs(t *testing.T) {
	user, method, fault := strings.Repeat("u", 150), strings.Repeat("m", 50), strings.Repeat("f", 300)
	answer := func(body string, header ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			for i := 0; i < len(header); i += 2 {
				w.Header().Set(header[i], header[i+1])
			}
			io.WriteString(w, body)
		}
	}
	for _, tc := range []struct {
		name   string
		server http.HandlerFunc
		want   string // the job's error, after "read tracker page 1: "
	}{
		{"no login method", answer(`{"issues":[]}`, "Content-Type", "application/json"),
			"MantisBT's answer names no login method (no X-Mantis-LoginMethod): TRACKER_API_ENDPOINT may not be MantisBT's REST API (…/api/rest)"},
		{"not JSON", answer("<html>Maintenance</html>", "X-Mantis-LoginMethod", "api-token"),
			"answer is not MantisBT's issue list: invalid character '<' looking for beginning of value"},
		{"another account", answer(`{"issues":[]}`, "X-Mantis-LoginMethod", method, "X-Mantis-Username", user),
			fmt.Sprintf("MantisBT did not accept TRACKER_API_KEY and served another account, %q (X-Mantis-LoginMethod: %s): "+
				"the token is unknown or revoked, and the tracker lets anyone in as that account", user[:100], method[:40])},
		{"a fault", answer(fmt.Sprintf(`{"issues":{"status_code":403,"fault_string":%q}}`, fault), "X-Mantis-LoginMethod", "api-token"),
			"MantisBT refused the issue list, the token's user may not read the project (status_code 403): " + fault[:200]},
	} {
		srv := httptest.NewServer(tc.server)
		defer srv.Close()
		e := newSummaryEnv(t, testNow)
		e.srv.cfg.TrackerEndpoint = srv.URL + "/api/rest" // read by each job
		want := "read tracker page 1: " + tc.want
		if err := e.srv.generateTrackerSummary(t.Context()); err == nil || err.Error() != want {
			t.Errorf("%s: generate = %v,\nwant %q", tc.name, err, want)
		}
	}
}

// TestTrackerPromptPrivateOnlyWhenIncluded: private issues and notes (view_state 50, which a
// developer's token sees) and an issue not said to be public reach the model only with
// TRACKER_INCLUDE_PRIVATE; reporters' e-mail addresses and real names, and view states,
// never.
func TestTrackerPromptPrivateOnlyWhenIncluded(t *testing.T) {
	secretNote := note(12, mantisDate(testNow), "private note")
	secretNote["view_state"] = private
	hidden := issue(2, mantisDate(testNow.Add(-time.Minute)), note(21, mantisDate(testNow), "note of a private issue"))
	hidden["view_state"] = private
	noState := issue(3, mantisDate(testNow.Add(-2*time.Minute)))
	delete(noState, "view_state") // not said to be public: left out
	issues := []map[string]any{issue(1, mantisDate(testNow), note(11, mantisDate(testNow), "public note"), secretNote), hidden, noState}
	for _, include := range []bool{false, true} {
		e := newSummaryEnv(t, testNow, func(c *config) { c.TrackerIncludePrivate = include })
		e.tracker.issues = issues
		if err := e.srv.generateTrackerSummary(context.Background()); err != nil {
			t.Fatal(err)
		}
		calls := e.model.calls()
		if len(calls) != 1 {
			t.Fatalf("model calls = %d", len(calls))
		}
		for text, want := range map[string]bool{"public note": true,
			"private note": include, "Ticket 2": include, "note of a private issue": include, "Ticket 3": include,
			"@example.com": false, "Ada Admin": false, "Dev Eloper": false, "real_name": false, "email": false, "view_state": false} {
			if strings.Contains(calls[0], text) != want {
				t.Errorf("TRACKER_INCLUDE_PRIVATE=%v: prompt holds %q = %v, want %v:\n%s", include, text, !want, want, calls[0])
			}
		}
	}
}

// TestTrackerSummaryNowShared: 30 callers of GET /api/tracker-summary at once share one
// tracker walk and one model call, and all get its text; within the interval a caller
// after it gets the same text without a new run (written in a heavy slot); after the
// interval a new run starts.
func TestTrackerSummaryNowShared(t *testing.T) {
	e := newHeldSummaryEnv(t, testNow)
	results := make(chan string, 30)
	for range 30 {
		go func() {
			status, raw := e.do("GET", "/api/tracker-summary", nil)
			results <- fmt.Sprintf("%d %s", status, strings.TrimSpace(string(raw)))
		}()
	}
	<-e.model.entered
	close(e.model.release)
	for range 30 {
		if r := <-results; r != `200 {"summary":"The summary."}` {
			t.Errorf("GET /api/tracker-summary = %s", r)
		}
	}
	if n, pages := len(e.model.calls()), e.tracker.requestedPages(); n != 1 || len(pages) != 1 {
		t.Errorf("%d model calls and tracker pages %v for 30 callers, want one of each", n, pages)
	}
	// The model's text may be long: it is written in a heavy slot, as a list is.
	release := occupyHeavy(t, e.srv)
	answered := make(chan int, 1)
	go func() {
		status, _ := e.do("GET", "/api/tracker-summary", nil)
		answered <- status
	}()
	select {
	case status := <-answered:
		t.Fatalf("a caller with every heavy slot busy = %d, want it to wait", status)
	case <-time.After(300 * time.Millisecond):
	}
	release()
	if status := <-answered; status != 200 {
		t.Errorf("a caller once a heavy slot freed = %d, want 200", status)
	}
	e.clock.Set(testNow.Add(onDemandInterval - time.Millisecond))
	if status, _ := e.do("GET", "/api/tracker-summary", nil); status != 200 || len(e.model.calls()) != 1 {
		t.Errorf("a caller at the interval's end = %d after %d model calls, want 200 and the shared run", status, len(e.model.calls()))
	}
	e.clock.Set(testNow.Add(onDemandInterval))
	if status, _ := e.do("GET", "/api/tracker-summary", nil); status != 200 || len(e.model.calls()) != 2 {
		t.Errorf("a caller after the interval = %d after %d model calls, want 200 and a new run", status, len(e.model.calls()))
	}
}

// summaryNow is trackerSummaryNow, failing the test if it has not returned within 10 s
// (a lock never released): a broken run fails its test, not the suite's timeout.
func summaryNow(t *testing.T, e *summaryEnv, ctx context.Context) (string, error) {
	t.Helper()
	var text string
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		text, err = e.srv.trackerSummaryNow(ctx)
	}()
	select {
	case <-done:
		return text, err
	case <-time.After(10 * time.Second):
		t.Error("the on-demand summary did not return within 10 s")
		return "", errors.New("no answer within 10 s")
	}
}

// TestTrackerSummaryNowCallerLeaves: a caller that leaves while the shared run is on gets
// its context's error at once; the run is not cancelled with it, and a caller after it
// gets the run's text without a second model call. Once the jobs are stopped (a
// shutdown), a run is refused as cancelled, and none starts.
func TestTrackerSummaryNowCallerLeaves(t *testing.T) {
	e := newHeldSummaryEnv(t, testNow)
	ctx, cancel := context.WithCancel(context.Background())
	left := make(chan error, 1)
	go func() {
		_, err := summaryNow(t, e, ctx)
		left <- err
	}()
	<-e.model.entered
	cancel()
	if err := <-left; !errors.Is(err, context.Canceled) {
		t.Errorf("the caller that left got %v, want context.Canceled", err)
	}
	close(e.model.release)
	text, err := summaryNow(t, e, context.Background())
	if err != nil || text != "The summary." || len(e.model.calls()) != 1 {
		t.Errorf("the next caller = %q, %v after %d model calls, want the run's text after 1", text, err, len(e.model.calls()))
	}

	e.clock.Set(testNow.Add(onDemandInterval)) // the shared run's text has expired
	if !e.srv.jobs.stop(5 * time.Second) {
		t.Fatal("the jobs did not stop")
	}
	_, err = summaryNow(t, e, context.Background())
	e.srv.jobs.wg.Wait() // a run started after all would be in the WaitGroup
	if !errors.Is(err, context.Canceled) || strings.Contains(e.logs.String(), "on-demand") {
		t.Errorf("after stop: %v, logs:\n%s\nwant context.Canceled and no run", err, e.logs)
	}
}
