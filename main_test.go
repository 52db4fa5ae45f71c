package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// TestTZForms: TZ is accepted in every form the runtime reads it: a zone name, with a
// leading colon, an absolute path to a zone file (TestRunRejectsBadConfig: misspelt ones).
func TestTZForms(t *testing.T) {
	forms := []string{"", "UTC", "Europe/Berlin", ":Europe/Berlin"}
	const zoneFile = "/usr/share/zoneinfo/Europe/Berlin"
	if _, err := os.Stat(zoneFile); err == nil {
		forms = append(forms, zoneFile, ":"+zoneFile)
	} else {
		t.Logf("no %s (Debian's tzdata): the absolute-path forms are not checked", zoneFile)
	}
	for _, tz := range forms {
		testConfig(t, map[string]string{"TZ": tz}) // fails the test on an error
	}
}

// TestRoutingErrors: an unknown path is 404 and a known one under another method 405
// with Allow; a path that is not clean is no route, a bad id or key is named.
func TestRoutingErrors(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.wantError("GET", "/api/nope", nil, 404, "Not found")
	e.wantError("GET", "/nope", nil, 404, "Not found")
	e.wantError("GET", "/api/forms/1/unknown", nil, 404, "Not found")
	for _, tc := range []struct{ method, path, allow string }{
		{"PATCH", "/api/forms/1", "GET, HEAD, PUT, DELETE"},
		{"POST", "/api/settings/k", "GET, HEAD, PUT"},
		{"DELETE", "/api/forms", "GET, HEAD, POST"},
		{"GET", "/api/forms/1/export", ""}, // not a path at all
	} {
		res, body := e.request(t.Context(), tc.method, tc.path, nil)
		wantStatus, wantBody := 405, `{"error":"Method not allowed"}`
		if tc.allow == "" {
			wantStatus, wantBody = 404, `{"error":"Not found"}`
		}
		if res.StatusCode != wantStatus || strings.TrimSpace(string(body)) != wantBody || res.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s = %d %s Allow %q, want %d %s Allow %q", tc.method, tc.path, res.StatusCode, body, res.Header.Get("Allow"), wantStatus, wantBody, tc.allow)
		}
	}
	addr := strings.TrimPrefix(e.http.URL, "http://")
	long := strings.Repeat("k", 10*1024)
	for _, tc := range []struct {
		target string
		status int
		body   string
	}{
		{"/api//forms", 404, `{"error":"Not found"}`},
		{"/api/settings/../forms", 404, `{"error":"Not found"}`},
		{"/api/./forms", 404, `{"error":"Not found"}`},
		{"/api/forms/1/../2", 404, `{"error":"Not found"}`},
		{"/../../etc/passwd", 404, `{"error":"Not found"}`},
		{"/api/settings/%00", 400, `{"error":"Invalid setting key"}`},
		{"/api/settings/a%0Ab", 400, `{"error":"Invalid setting key"}`},
		{"/api/settings/%FF", 400, `{"error":"Invalid setting key"}`},
		{"/api/settings/" + long, 400, `{"error":"Setting key is too long"}`},
		{"/api/settings/..%2F..%2Fetc", 200, `{"key":"../../etc","value":""}`}, // a key like any other
		{"/api/forms/%00", 400, `{"error":"Invalid form ID"}`},
		{"/api/forms/1%00", 400, `{"error":"Invalid form ID"}`},
		{"/api/forms/" + strings.Repeat("9", 40), 404, `{"error":"Form not found"}`},
		{"/api/responses/" + strings.Repeat("1", 40) + "/export/pdf", 404, `{"error":"Response not found"}`},
		{"/api/forms/1%27%20OR%201=1", 400, `{"error":"Invalid form ID"}`},
	} {
		status, body, h := rawGET(t, addr, tc.target)
		if status != tc.status || body != tc.body || h.Get("Content-Type") != "application/json; charset=utf-8" {
			t.Errorf("GET %.60s = %d %s (%s), want %d %s", tc.target, status, body, h.Get("Content-Type"), tc.status, tc.body)
		}
	}
	// The path is judged before the body: a body that is no JSON to an unclean path, 404.
	e.wantError("POST", "/api//forms", "x", 404, "Not found")
}

// TestBodyCheckedOnEveryRoute: a body that is not JSON, or is over 1 MiB, is refused
// before any route runs, as by the original's body parser, even where the route reads no
// body or the id is bad. A JSON body on a route that reads none is ignored. A body is read
// only as application/json, in any case and with any parameters; any other type, or none,
// is 415, which ends the "simple" requests a page on another site sends without a preflight.
func TestBodyCheckedOnEveryRoute(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	form := e.createForm(seedFormBody())
	responseID := e.submit(form.ID, map[string]any{fmt.Sprint(form.Categories[0].Fields[0].ID): "a"})
	e.do("PUT", "/api/settings/k", map[string]any{"value": "v"})
	path := strings.NewReplacer("{id}", fmt.Sprint(form.ID), "{responseId}", fmt.Sprint(responseID), "{key}", "k")
	before := e.snapshot()
	oversized := `{"value": "` + strings.Repeat("z", 1048577) + `"}`
	for route := range e.srv.routes() {
		method, pattern, _ := strings.Cut(route, " ")
		for _, bad := range []string{`{bad`, "x", "\x00"} {
			e.wantError(method, path.Replace(pattern), bad, 400, "Invalid JSON body")
		}
		e.wantError(method, path.Replace(pattern), oversized, 413, "Request body too large")
	}
	e.wantError("PUT", "/api/forms/abc", `{bad`, 400, "Invalid JSON body")
	e.wantError("POST", "/api/no-such-route", `{bad`, 400, "Invalid JSON body")
	for _, contentType := range []string{"text/plain", "application/x-www-form-urlencoded",
		"multipart/form-data; boundary=x", "", "application/jsonp"} {
		status, raw := e.do("POST", "/api/forms", `{"title":"x"}`, "Content-Type", contentType)
		if want := `{"error":"Content-Type must be application/json"}`; status != 415 ||
			strings.TrimSpace(string(raw)) != want {
			t.Errorf("Content-Type %q = %d %s, want 415 %s", contentType, status, raw, want)
		}
	}
	if e.snapshot() != before {
		t.Errorf("a refused body changed the database")
	}
	for _, contentType := range []string{"application/json; charset=utf-8", "Application/JSON"} {
		status, raw := e.do("POST", "/api/forms", `{"title":"x"}`, "Content-Type", contentType)
		if status != 201 {
			t.Errorf("Content-Type %q = %d %s, want 201", contentType, status, raw)
		}
	}
	if status, raw := e.do("DELETE", fmt.Sprintf("/api/forms/%d", form.ID), `{"any": "thing"}`); status != 200 {
		t.Errorf("DELETE with a JSON body = %d %s, want 200", status, raw)
	}
}

// TestBodyLimitBoundary pins the limit with literals: a body of exactly 1 MiB
// (1,048,576 bytes) is read, one byte more is a 413, announced or streamed; a request
// announcing 100 MiB gets its 413 at once, before it sends the body; one of unknown length
// holds the whole body limit of the upload budget while it is read, since it may be that long.
func TestBodyLimitBoundary(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	for _, tc := range []struct{ size, want int }{{1048576, 200}, {1048577, 413}} {
		for _, chunked := range []bool{false, true} {
			const head, tail = `{"value": "`, `"}`
			body := head + strings.Repeat("z", tc.size-len(head)-len(tail)) + tail
			r := apiRequest("PUT", "/api/settings/boundary", strings.NewReader(body))
			if chunked {
				r.ContentLength = -1 // as net/http reads a chunked body
			}
			w := httptest.NewRecorder()
			e.srv.ServeHTTP(w, r)
			tooLarge := `{"error":"Request body too large"}` + "\n"
			if w.Code != tc.want || tc.want == 413 && w.Body.String() != tooLarge {
				t.Errorf("%d-byte body (chunked %v) = %d %.60s, want %d",
					tc.size, chunked, w.Code, w.Body, tc.want)
			}
		}
	}
	announced := apiRequest("POST", "/api/forms", iotest.ErrReader(errors.New("the body was read")))
	announced.ContentLength = 100 << 20
	w := httptest.NewRecorder()
	if e.srv.ServeHTTP(w, announced); w.Code != 413 {
		t.Errorf("a body announcing 100 MiB = %d %s, want 413 unread", w.Code, w.Body)
	}
	chunked, err := net.Dial("tcp", strings.TrimPrefix(e.http.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer chunked.Close()
	io.WriteString(chunked, "POST /api/forms HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"tit\r\n")
	fits := func(n int64) bool { // the room for bodies gives n now
		if e.srv.uploads.TryAcquire(n) {
			e.srv.uploads.Release(n)
			return true
		}
		return false
	}
	waitFor(t, func() bool { return !fits(maxUploadBytes - maxBodyBytes + 1) })
	if !fits(maxUploadBytes - maxBodyBytes) {
		t.Error("a chunked body holds more than maxBodyBytes")
	}
	chunked.Close()
	waitFor(t, func() bool { return fits(maxUploadBytes) })
}

// TestMemberNamesExact: members match by exact name at every level, as req.body.title did
// in the original, not as Go's case-insensitive match; of a member given twice, the last.
func TestMemberNamesExact(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	field := itoa(f.Categories[0].Fields[0].ID)
	formPath := "/api/forms/" + itoa(f.ID)

	t.Run("refused", func(t *testing.T) {
		before := e.snapshot()
		for _, tc := range []struct {
			method, path, body, want string
		}{
			{"POST", "/api/forms", `{"Title": "x"}`, "Form title is required"},
			{"POST", "/api/forms", `{"TITLE": "x"}`, "Form title is required"},
			{"PUT", formPath, `{"Title": "x"}`, "Form title is required"},
			{"POST", formPath + "/responses", `{"Values": {"` + field + `": "x"}}`, "Response values are required"},
			{"POST", formPath + "/responses", `{"VALUES": {"` + field + `": "x"}}`, "Response values are required"},
			{"PUT", "/api/settings/k", `{"Value": "x"}`, "Setting value is required in the request body"},
			{"POST", "/api/forms", `{"title": "t", "categories": [{"fields": [{"Label": "l", "type": "text"}]}]}`,
				"Failed to create form: Field label is required"},
			{"POST", "/api/forms", `{"title": "t", "categories": [{"fields": [{"label": "l", "Type": "text"}]}]}`,
				"Failed to create form: Invalid field type: undefined"},
		} {
			wantStatus := 400 // validation inside create and update is docs/SPEC.md's 500
			if strings.HasPrefix(tc.want, "Failed to ") {
				wantStatus = 500
			}
			e.wantError(tc.method, tc.path, tc.body, wantStatus, tc.want)
		}
		if e.snapshot() != before {
			t.Error("refused bodies changed the database")
		}
	})

	t.Run("ignored, or the last of a repeated member", func(t *testing.T) {
		got := e.createForm(`{"title": "a", "TITLE": "b", "Description": "d",
			"categories": [{"name": "c", "Name": "C", "Fields": [{"label": "x", "type": "text"}],
				"fields": [{"label": "l", "Label": "L", "type": "text", "TYPE": "number", "Description": "D"}]}]}`)
		if got.Title != "a" || got.Description != nil || len(got.Categories) != 1 || got.Categories[0].Name != "c" ||
			len(got.Categories[0].Fields) != 1 {
			t.Fatalf("form = %+v, want title a, no description, one category c with one field", got)
		}
		if fd := got.Categories[0].Fields[0]; fd.Label != "l" || fd.Type != "text" || fd.Description != nil {
			t.Errorf("field = %+v, want l, text, no description", fd)
		}
		if f := e.createForm(`{"title": "first", "title": "second"}`); f.Title != "second" {
			t.Errorf("title = %q, want second", f.Title)
		}
		for _, tc := range []struct{ body, want string }{
			{`{"value": "a", "Value": "b"}`, "a"},
			{`{"value": "first", "value": "second"}`, "second"},
		} {
			e.doJSON("PUT", "/api/settings/k", tc.body, nil)
			var setting struct{ Value string }
			if e.doJSON("GET", "/api/settings/k", nil, &setting); setting.Value != tc.want {
				t.Errorf("PUT %s: setting = %q, want %s", tc.body, setting.Value, tc.want)
			}
		}
	})
}

// TestClientGoneWhileWaiting: a client that leaves while its PDF waits for a slot is
// logged as gone (499), not as a 200.
func TestClientGoneWhileWaiting(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	id := e.submit(f.ID, map[string]any{itoa(f.Categories[0].Fields[0].ID): "x"})
	defer occupyHeavy(t, e.srv)()
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan struct{})
	go func() {
		defer close(served)
		r := apiRequest("GET", "/api/responses/"+itoa(id)+"/export/pdf", nil)
		e.srv.ServeHTTP(httptest.NewRecorder(), r.WithContext(ctx))
	}()
	// A semaphore with a waiter refuses even zero units: the export waits for a slot.
	waitFor(t, func() bool { return !e.srv.slots.TryAcquire(0) })
	cancel()
	<-served
	logs := e.logs.String()
	line := regexp.MustCompile(`(?m)^.*msg=request .*/export/pdf.*$`).FindString(logs)
	if !strings.Contains(logs, `msg="client gone"`) || !strings.Contains(line, "status=499") {
		t.Errorf("the export left waiting is logged as %q, want status=499 after client gone", line)
	}
}

// TestRunLogsStartUp: the start-up log names each summary that can run with its model, or
// the settings it lacks; an unreadable prompt file is an error naming its variable. Beyond
// loopback, or with ALLOWED_HOSTS, and no API_TOKEN, it warns once that anyone may write.
func TestRunLogsStartUp(t *testing.T) {
	if addr := testConfig(t, nil).Addr; addr != "127.0.0.1:8080" {
		t.Errorf("default ADDR = %q, want 127.0.0.1:8080", addr)
	}
	model := map[string]string{"GENAI_API_KEY": testModelKey, "GENAI_MODEL": "test-model"}
	tracker := map[string]string{"TRACKER_API_ENDPOINT": "http://127.0.0.1:1/api/rest", "TRACKER_API_KEY": testTrackerKey}
	const open = `level=WARN msg="no API_TOKEN and listening beyond loopback: anyone who can reach this address reads and changes every form, response, summary and setting; set API_TOKEN"`
	const behindProxy = `level=WARN msg="no API_TOKEN and ALLOWED_HOSTS set: anyone who reaches these host names reads and changes every form, response, summary and setting; set API_TOKEN"`
	const noTokenWarning = `level=WARN msg="no API_TOKEN`
	for _, tc := range []struct {
		name        string
		env         []map[string]string
		want, avoid []string
	}{
		{"nothing configured", nil, []string{
			`level=WARN msg="summaries cannot run until configured" kind="tracker summary" missing="GENAI_API_KEY, TRACKER_API_ENDPOINT, TRACKER_API_KEY"`,
			`level=WARN msg="summaries cannot run until configured" kind="email summary" missing="GENAI_API_KEY, MAILDIR"`,
			`msg=listening addr=127.0.0.1:`, ` database=`,
		}, []string{`summaries configured`, noTokenWarning}},
		{"tracker unconfigured", []map[string]string{model, {"MAILDIR": t.TempDir()}}, []string{
			`level=WARN msg="summaries cannot run until configured" kind="tracker summary" missing="TRACKER_API_ENDPOINT, TRACKER_API_KEY"`,
			`level=INFO msg="summaries configured" kind="email summary" model=test-model`,
		}, []string{`level=ERROR`, `msg="summaries configured" kind="tracker summary"`}},
		{"both configured, built-in prompts", []map[string]string{model, tracker, {"MAILDIR": t.TempDir()}}, []string{
			`level=INFO msg="summaries configured" kind="tracker summary" model=test-model`,
			`level=INFO msg="summaries configured" kind="email summary" model=test-model`,
		}, []string{`level=ERROR`, `level=WARN`}},
		{"prompt files unreadable", []map[string]string{model, tracker, {"MAILDIR": t.TempDir(),
			"TRACKER_PROMPT_FILE": "/nonexistent/tracker.txt", "EMAIL_PROMPT_FILE": t.TempDir()}}, []string{
			`level=ERROR msg="summaries cannot run: prompt template not readable" kind="tracker summary" err="Prompt template not readable: TRACKER_PROMPT_FILE: open /nonexistent/tracker.txt: no such file or directory"`,
			`level=ERROR msg="summaries cannot run: prompt template not readable" kind="email summary" err="Prompt template not readable: EMAIL_PROMPT_FILE: read `,
		}, []string{`summaries configured`}},
		{"IPv6 loopback", []map[string]string{{"ADDR": "[::1]:0"}}, nil, []string{noTokenWarning}},
		{"all addresses", []map[string]string{{"ADDR": "0.0.0.0:0"}}, []string{open}, []string{behindProxy}},
		{"all addresses, no host", []map[string]string{{"ADDR": ":0"}}, []string{open}, []string{behindProxy}},
		{"all addresses, a token", []map[string]string{{"ADDR": ":0", "API_TOKEN": "a-token"}},
			nil, []string{noTokenWarning}},
		{"behind a proxy", []map[string]string{{"ALLOWED_HOSTS": "forms.example.com"}},
			[]string{behindProxy}, []string{open}},
		{"behind a proxy, a token", []map[string]string{{"ALLOWED_HOSTS": "forms.example.com", "API_TOKEN": "t"}},
			nil, []string{noTokenWarning}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"ADDR": "127.0.0.1:0", "DATABASE_PATH": filepath.Join(t.TempDir(), "db")}
			for _, e := range tc.env {
				maps.Copy(env, e)
			}
			if ln, err := net.Listen("tcp", env["ADDR"]); err != nil { // [::1] may not exist
				t.Skipf("cannot listen on %s here: %v", env["ADDR"], err)
			} else {
				ln.Close()
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			_, done, log := startRun(t, ctx, env)
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("run = %v", err)
			}
			for _, want := range tc.want {
				if strings.Count(log.String(), want) != 1 {
					t.Errorf("start-up log lacks %s, or holds it more than once:\n%s", want, log)
				}
			}
			for _, avoid := range append(tc.avoid, testModelKey, testTrackerKey) {
				if strings.Contains(log.String(), avoid) {
					t.Errorf("start-up log holds %s:\n%s", avoid, log)
				}
			}
		})
	}
}

// TestRequestLogNamesClient: each request's log line names the TCP peer, not a header
// the client may forge (a forwarded address, its Host).
func TestRequestLogNamesClient(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	r := apiRequest("GET", "/api/forms", nil) // from httptest's peer, 192.0.2.1:1234
	r.Host = "localhost:4321"
	r.Header.Set("X-Forwarded-For", "203.0.113.9")
	e.srv.ServeHTTP(httptest.NewRecorder(), r)
	line := regexp.MustCompile(`(?m)^.*msg=request .*$`).FindString(e.logs.String())
	forged := strings.Contains(line, "203.0.113.9") || strings.Contains(line, "4321")
	fields := regexp.MustCompile(` msg=request client=192\.0\.2\.1:1234 method=GET ` +
		`path=/api/forms status=200 duration=[\d.]+[µm]?s aborted=false$`)
	if !fields.MatchString(line) || forged {
		t.Errorf("request log line %q, want the peer, method, path, status, duration and "+
			"aborted=false, no forwarded address, no Host", line)
	}
}

const usageText = "usage: formsvc (serve, configured by environment variables: see README.md), " +
	"formsvc backup DEST, or formsvc prompt tracker|email [YYYY-MM-DD]"

// TestPromptCommand: formsvc prompt prints exactly the prompt the day's job sends the
// model (private content kept back), calls no model and opens no database; a missing
// setting is named as the service names it, and a bad date, kind or window says so.
func TestPromptCommand(t *testing.T) {
	now := time.Date(2026, 11, 25, 20, 0, 0, 0, time.Local)
	e := newSummaryEnv(t, now)
	secret := issue(2, mantisDate(now.Add(-time.Hour)))
	secret["view_state"] = private
	e.tracker.issues = []map[string]any{issue(1, mantisDate(now.Add(-time.Minute))), secret}
	cfg := e.srv.cfg
	dbPath := filepath.Join(t.TempDir(), "never.db")
	env := map[string]string{"TRACKER_API_ENDPOINT": cfg.TrackerEndpoint, "TRACKER_API_KEY": cfg.TrackerKey,
		"GENAI_API_KEY": cfg.GenAIKey, "GENAI_BASE_URL": cfg.GenAIBaseURL, "MAILDIR": cfg.Maildir,
		"TRACKER_PROMPT_FILE": cfg.TrackerPromptFile, "EMAIL_PROMPT_FILE": cfg.EmailPromptFile,
		"DATABASE_PATH": dbPath}
	prompt := func(env map[string]string, args ...string) (stdout, stderr string, err error) {
		var out, errOut syncBuffer
		err = run(context.Background(), append([]string{"prompt"}, args...), func(k string) string { return env[k] }, &out, &errOut)
		return out.String(), errOut.String(), err
	}
	for i, tc := range []struct {
		kind     string
		generate func(context.Context) error
		want     string
	}{
		{"tracker", e.srv.generateTrackerSummary, `"summary":"Ticket 1"`},
		{"email", e.srv.generateEmailSummary, `"subject":`},
	} {
		printed, _, err := prompt(env, tc.kind, "2026-11-25")
		if err != nil || !strings.Contains(printed, tc.want) || !strings.Contains(printed, " of 2026-11-25:") {
			t.Fatalf("prompt %s = %v:\n%s", tc.kind, err, printed)
		}
		if n := len(e.model.calls()); n != i {
			t.Fatalf("prompt %s called the model: %d calls, want %d", tc.kind, n, i)
		}
		if err := tc.generate(context.Background()); err != nil {
			t.Fatal(err)
		}
		if sent := e.model.calls()[i]; !strings.HasSuffix(sent, printed) {
			t.Errorf("prompt %s printed\n%s\nthe job sent\n%s", tc.kind, printed, sent)
		}
	}
	if printed, _, _ := prompt(env, "tracker"); strings.Contains(printed, "Ticket 2") {
		t.Errorf("the printed prompt holds a private issue:\n%s", printed)
	}
	if _, err := os.Stat(dbPath); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("prompt opened the database: %v", err)
	}
	for kind, nothing := range map[string]string{"email": "No emails received recently.",
		"tracker": "No tracker tickets updated recently."} {
		out, errOut, err := prompt(env, kind, "2030-01-01")
		want := fmt.Sprintf("window from 2029-12-30: the job stores %q", nothing)
		if err != nil || out != "" || !strings.Contains(errOut, want) {
			t.Errorf("prompt %s of an empty window = %v, stdout %q, stderr %q", kind, err, out, errOut)
		}
	}
	_, closed := io.Pipe()
	closed.Close() // the prompt cannot be written
	getenv := func(k string) string { return env[k] }
	args := []string{"prompt", "tracker", "2026-11-25"}
	if err := run(context.Background(), args, getenv, closed, io.Discard); err == nil {
		t.Error("prompt to a stdout that refuses writes succeeded")
	}
	for _, tc := range []struct {
		unset string
		args  []string
		want  string
	}{
		{"MAILDIR", []string{"email"}, "prompt email: MAILDIR is not configured"},
		{"TRACKER_API_ENDPOINT", []string{"tracker"}, "prompt tracker: TRACKER_API_ENDPOINT is not configured"},
		{"TRACKER_API_KEY", []string{"tracker"}, "prompt tracker: TRACKER_API_KEY is not configured"},
		{"", []string{"email", "25.11.2026"}, `prompt: date "25.11.2026": want YYYY-MM-DD`},
		{"", []string{"forms"}, usageText},
		{"", []string{"email", "2026-11-25", "extra"}, usageText},
	} {
		env := maps.Clone(env)
		delete(env, tc.unset)
		if _, _, err := prompt(env, tc.args...); err == nil || err.Error() != tc.want {
			t.Errorf("prompt %q without %s = %v, want %q", tc.args, tc.unset, err, tc.want)
		}
	}
}

// TestDocumentedDefaults: the defaults of README's and docs/DESIGN.md's configuration
// tables are the ones loadConfig takes with nothing set ("none" is unset, "off" false),
// each variable is read under its documented name, and docs/formsvc.env shows no other.
func TestDocumentedDefaults(t *testing.T) {
	t.Parallel()
	values := func(cfg config) map[string]string {
		return map[string]string{
			"ADDR":                    cfg.Addr,
			"DATABASE_PATH":           cfg.DatabasePath,
			"API_TOKEN":               cfg.APIToken,
			"ALLOWED_HOSTS":           strings.Join(cfg.AllowedHosts, ","),
			"CORS_ORIGINS":            strings.Join(cfg.CORSOrigins, ","),
			"TRACKER_API_ENDPOINT":    cfg.TrackerEndpoint,
			"TRACKER_API_KEY":         cfg.TrackerKey,
			"TRACKER_PROJECT_ID":      cfg.TrackerProjectID,
			"TRACKER_INCLUDE_PRIVATE": strconv.FormatBool(cfg.TrackerIncludePrivate),
			"GENAI_API_KEY":           cfg.GenAIKey,
			"GENAI_BASE_URL":          cfg.GenAIBaseURL,
			"GENAI_MODEL":             cfg.GenAIModel,
			"MAILDIR":                 cfg.Maildir,
			"SUMMARY_SCHEDULE":        cfg.SummarySchedule,
			"PDF_FONT_DIR":            cfg.PDFFontDir,
		}
	}
	set := map[string]string{"TZ": "UTC", "TRACKER_PROJECT_ID": "7", "TRACKER_INCLUDE_PRIVATE": "true",
		"TRACKER_API_ENDPOINT": "https://tracker.example/api/rest", "GENAI_BASE_URL": "https://model.example/v1"}
	given := func(name string) string { return cmp.Or(set[name], "value of "+name) }
	cfg, err := loadConfig(given)
	if err != nil {
		t.Fatal(err)
	}
	read := values(cfg)
	read["TRACKER_PROMPT_FILE"], read["EMAIL_PROMPT_FILE"] = cfg.TrackerPromptFile, cfg.EmailPromptFile
	for name, got := range read {
		if got != given(name) {
			t.Errorf("%s set to %q: the config holds %q", name, given(name), got)
		}
	}
	value := values(testConfig(t, nil))
	row := regexp.MustCompile("(?m)^\\| `([A-Z_]+)` \\| ([^|]+) \\|")
	for _, doc := range []string{"README.md", "docs/DESIGN.md"} {
		text := readDoc(t, doc)
		checked := 0
		for _, m := range row.FindAllStringSubmatch(string(text), -1) {
			got, known := value[m[1]]
			documented := strings.TrimSpace(m[2])
			want, literal := strings.CutPrefix(strings.TrimSuffix(documented, "`"), "`")
			switch {
			case !known: // TZ, the prompt files: the system's or built in
				continue
			case documented == "none":
				want = ""
			case documented == "off":
				want = "false"
			case !literal:
				t.Errorf("%s: %s's default %q is not one the test reads", doc, m[1], documented)
			}
			if got != want {
				t.Errorf("%s: %s defaults to %q, the code to %q", doc, m[1], want, got)
			}
			checked++
		}
		if checked < 12 {
			t.Errorf("%s: %d variables' defaults checked, want the table's (12 or more)", doc, checked)
		}
	}
	// Every variable docs/formsvc.env sets, or shows commented out, is one the service (or
	// docs/litestream.yml) reads: a typo cannot pass for configuration.
	readByName := map[string]bool{"TZ": true, "LITESTREAM_REPLICA_URL": true}
	loadConfig(func(k string) string { readByName[k] = true; return "" })
	shown := map[string]bool{}
	assignment := regexp.MustCompile(`(?m)^#?([A-Z][A-Z0-9_]*)=`)
	for _, m := range assignment.FindAllStringSubmatch(string(readDoc(t, "docs/formsvc.env")), -1) {
		shown[m[1]] = true
		if !readByName[m[1]] {
			t.Errorf("docs/formsvc.env sets %s, which nothing reads", m[1])
		}
	}
	for _, name := range []string{"ADDR", "DATABASE_PATH", "API_TOKEN", "ALLOWED_HOSTS"} {
		if !shown[name] {
			t.Errorf("docs/formsvc.env does not show %s", name)
		}
	}
}
