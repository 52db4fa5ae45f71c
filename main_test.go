package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// startRun starts the real service through run on a free port and returns its base URL
// and a channel with run's result.
func startRun(t *testing.T, ctx context.Context, env map[string]string) (string, <-chan error) {
	t.Helper()
	stdout := &syncBuffer{}
	stderr := &syncBuffer{}
	getenv := func(k string) string { return env[k] }
	done := make(chan error, 1)
	go func() { done <- run(ctx, nil, getenv, stdout, stderr) }()
	addr := regexp.MustCompile(`listening on (\S+)`)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := addr.FindStringSubmatch(stdout.String()); m != nil {
			base := "http://" + m[1]
			waitHealthy(t, base)
			return base, done
		}
		select {
		case err := <-done:
			t.Fatalf("run returned during start-up: %v\n%s", err, stderr)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("run did not print its address: %s", stderr)
	return "", nil
}

func waitHealthy(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		res, err := http.Get(base + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s/healthz never answered 200", base)
}

// TestRunShutdownKeepsAcknowledged starts the real server, submits, cancels the context as
// SIGTERM would and reopens the database: every acknowledged response is there.
func TestRunShutdownKeepsAcknowledged(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "run.db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, done := startRun(t, ctx, map[string]string{"ADDR": "127.0.0.1:0", "DATABASE_PATH": dbPath})

	res, err := http.Post(base+"/api/forms", "application/json", strings.NewReader(
		`{"title": "T", "categories": [{"fields": [{"label": "a", "type": "text"}]}]}`))
	if err != nil || res.StatusCode != 201 {
		t.Fatalf("create form: %v %v", res, err)
	}
	res.Body.Close()

	acked := 0
	for i := range 100 {
		res, err := http.Post(base+"/api/forms/1/responses", "application/json",
			strings.NewReader(fmt.Sprintf(`{"values": {"1": "answer %d"}}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == 201 {
			acked++
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run = %v, want nil after cancel", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return within 15 s of the cancel")
	}

	store, err := OpenStore(context.Background(), dbPath, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	list := allResponses(t, store, 1)
	for _, r := range list {
		if len(r.Values) != 1 {
			t.Errorf("response %d has %d values, want 1", r.ID, len(r.Values))
		}
	}
	listed := len(list)
	if acked != 100 || listed != acked {
		t.Errorf("acknowledged %d of 100, found %d after restart", acked, listed)
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	err := run(context.Background(), nil, func(k string) string {
		return map[string]string{"TZ": "Mars/Olympus", "ADDR": "127.0.0.1:0"}[k]
	}, &syncBuffer{}, &syncBuffer{})
	if err == nil || !strings.Contains(err.Error(), "TZ") {
		t.Errorf("run with a bad TZ = %v, want a TZ error", err)
	}
	err = run(context.Background(), []string{"extra"}, func(string) string { return "" }, &syncBuffer{}, &syncBuffer{})
	if err == nil {
		t.Errorf("run with arguments = nil, want a usage error")
	}
}

// TestCheckTZ: TZ in every form the runtime reads it (a zone name, with a leading
// colon, an absolute path to a zone file), and misspelt ones refused.
func TestCheckTZ(t *testing.T) {
	cases := []struct {
		tz     string
		wantOK bool
	}{
		{"", true},
		{"UTC", true},
		{"Europe/Berlin", true},
		{":Europe/Berlin", true},
		{"Mars/Olympus", false},
		{":Mars/Olympus", false},
		{"/no/such/zone", false},
		{os.Args[0], false}, // a file, but no zone
	}
	const zoneFile = "/usr/share/zoneinfo/Europe/Berlin"
	if _, err := os.Stat(zoneFile); err == nil {
		cases = append(cases, []struct {
			tz     string
			wantOK bool
		}{{zoneFile, true}, {":" + zoneFile, true}}...)
	} else {
		t.Logf("no %s (Debian's tzdata): the absolute-path forms are not checked", zoneFile)
	}
	for _, tc := range cases {
		if err := checkTZ(tc.tz); (err == nil) != tc.wantOK {
			t.Errorf("checkTZ(%q) = %v, want ok %v", tc.tz, err, tc.wantOK)
		}
	}
}

// testEnv is one service under test: a real store on a temporary SQLite file and the real
// handler behind an httptest server.
type testEnv struct {
	t     testing.TB
	srv   *server
	store *Store
	http  *httptest.Server
	logs  *syncBuffer
}

// newTestEnv builds a service; change edits its configuration before the server is
// built (a nil change is skipped).
func newTestEnv(t testing.TB, change ...func(*config)) *testEnv {
	t.Helper()
	return newTestEnvAt(t, time.Now, change...)
}

// newTestEnvAt builds a service whose clock is now.
func newTestEnvAt(t testing.TB, now func() time.Time, change ...func(*config)) *testEnv {
	t.Helper()
	cfg := loadConfig(func(string) string { return "" })
	cfg.DatabasePath = filepath.Join(t.TempDir(), "test.db")
	cfg.OutboundRetryDelay = time.Millisecond
	for _, c := range change {
		if c != nil { // table tests pass their optional change as is
			c(&cfg)
		}
	}
	store, err := OpenStore(context.Background(), cfg.DatabasePath, now)
	if err != nil {
		t.Fatalf("OpenStore: %v", err)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	srv := newServer(cfg, store, log, now, &http.Client{})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		if !srv.jobs.stop(5 * time.Second) {
			t.Errorf("background jobs did not stop")
		}
		store.Close()
	})
	return &testEnv{t: t, srv: srv, store: store, http: hs, logs: logs}
}

// do sends a request with an optional JSON body (a string is sent as is) and returns the
// status and the raw body.
func (e *testEnv) do(method, path string, body any, header ...string) (int, []byte) {
	e.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			e.t.Fatalf("marshal body: %v", err)
		}
		r = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, e.http.URL+path, r)
	if err != nil {
		e.t.Fatalf("new request: %v", err)
	}
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := e.http.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatalf("read body: %v", err)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" && ct != "application/pdf" {
		e.t.Fatalf("%s %s: Content-Type = %q, want JSON", method, path, ct)
	}
	return res.StatusCode, out
}

// getRaw sends a GET with optional header pairs and returns the answer with its body read.
func (e *testEnv) getRaw(path string, header ...string) (*http.Response, []byte) {
	e.t.Helper()
	req, err := http.NewRequest("GET", e.http.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := e.http.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return res, body
}

// doJSON is do that also decodes the answer into out.
func (e *testEnv) doJSON(method, path string, body, out any) int {
	e.t.Helper()
	status, raw := e.do(method, path, body)
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			e.t.Fatalf("%s %s: decode %q: %v", method, path, raw, err)
		}
	}
	return status
}

// wantError checks a JSON error answer byte for byte.
func (e *testEnv) wantError(method, path string, body any, wantStatus int, wantMsg string) {
	e.t.Helper()
	status, raw := e.do(method, path, body)
	want, _ := json.Marshal(map[string]string{"error": wantMsg})
	if status != wantStatus || strings.TrimSpace(string(raw)) != string(want) {
		e.t.Errorf("%s %s = %d %s, want %d %s", method, path, status, raw, wantStatus, want)
	}
}

// createForm creates a form through the API and returns its tree as read back.
func (e *testEnv) createForm(body any) FormDetail {
	e.t.Helper()
	var created formAnswer
	if status := e.doJSON("POST", "/api/forms", body, &created); status != http.StatusCreated {
		e.t.Fatalf("create form: status %d", status)
	}
	var f FormDetail
	if status := e.doJSON("GET", "/api/forms/"+itoa(created.ID), nil, &f); status != http.StatusOK {
		e.t.Fatalf("read form: status %d", status)
	}
	return f
}

// submit posts values to a form and returns the new response id.
func (e *testEnv) submit(formID int64, values map[string]any) int64 {
	e.t.Helper()
	var out struct{ ResponseID int64 }
	if status := e.doJSON("POST", "/api/forms/"+itoa(formID)+"/responses", map[string]any{"values": values}, &out); status != http.StatusCreated {
		e.t.Fatalf("submit: status %d", status)
	}
	return out.ResponseID
}

// count returns the number of rows of a table, read straight from the database.
func (e *testEnv) count(table string) int {
	e.t.Helper()
	var n int
	if err := e.store.read.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
		e.t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// snapshot returns the whole content of every form table, to prove that nothing changed.
func (e *testEnv) snapshot() string {
	e.t.Helper()
	var b strings.Builder
	for _, q := range []string{
		"SELECT id, title, ifnull(description, '<null>'), createdAt FROM forms ORDER BY id",
		"SELECT id, formId, name, sortOrder FROM categories ORDER BY id",
		"SELECT id, categoryId, label, type, ifnull(description, '<null>'), sortOrder FROM fields ORDER BY id",
		"SELECT id, formId, submittedAt FROM responses ORDER BY id",
		"SELECT responseId, fieldId, ifnull(value, '<null>') FROM response_values ORDER BY responseId, fieldId",
		"SELECT key, value FROM settings ORDER BY key",
		"SELECT * FROM sqlite_sequence ORDER BY name",
	} {
		rows, err := e.store.read.Query(q)
		if err != nil {
			e.t.Fatalf("snapshot: %v", err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				e.t.Fatalf("snapshot: %v", err)
			}
			for _, v := range vals {
				b.WriteString(toString(v))
				b.WriteString("|")
			}
			b.WriteString("\n")
		}
		rows.Close()
	}
	return b.String()
}

func toString(v any) string {
	switch v := v.(type) {
	case []byte:
		return string(v)
	case string:
		return v
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// wantNoOrphans checks that no row refers to a row that does not exist.
func (e *testEnv) wantNoOrphans() {
	e.t.Helper()
	for what, q := range map[string]string{
		"categories without form": `SELECT count(*) FROM categories WHERE formId NOT IN (SELECT id FROM forms)`,
		"fields without category": `SELECT count(*) FROM fields WHERE categoryId NOT IN (SELECT id FROM categories)`,
		"responses without form":  `SELECT count(*) FROM responses WHERE formId NOT IN (SELECT id FROM forms)`,
		"values without response": `SELECT count(*) FROM response_values WHERE responseId NOT IN (SELECT id FROM responses)`,
		"values without field":    `SELECT count(*) FROM response_values WHERE fieldId NOT IN (SELECT id FROM fields)`,
		"values of another form's field": `SELECT count(*) FROM response_values rv JOIN responses r ON r.id = rv.responseId
			JOIN fields f ON f.id = rv.fieldId JOIN categories c ON c.id = f.categoryId WHERE c.formId != r.formId`,
	} {
		var n int
		if err := e.store.read.QueryRow(q).Scan(&n); err != nil {
			e.t.Fatalf("%s: %v", what, err)
		}
		if n != 0 {
			e.t.Errorf("%d %s", n, what)
		}
	}
}

func TestRoutingErrors(t *testing.T) {
	e := newTestEnv(t)
	e.wantError("GET", "/api/nope", nil, 404, "Not found")
	e.wantError("GET", "/nope", nil, 404, "Not found")
	e.wantError("GET", "/api/forms/1/unknown", nil, 404, "Not found")
	cases := []struct {
		method, path, allow string
	}{
		{"PATCH", "/api/forms/1", "GET, HEAD, PUT, DELETE"},
		{"POST", "/api/settings/k", "GET, HEAD, PUT"},
		{"DELETE", "/api/forms", "GET, HEAD, POST"},
		{"GET", "/api/forms/1/export", ""}, // not a path at all
	}
	for _, tc := range cases {
		req, _ := http.NewRequest(tc.method, e.http.URL+tc.path, nil)
		res, err := e.http.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		wantStatus, wantBody := 405, `{"error":"Method not allowed"}`
		if tc.allow == "" {
			wantStatus, wantBody = 404, `{"error":"Not found"}`
		}
		if res.StatusCode != wantStatus || strings.TrimSpace(string(body)) != wantBody || res.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s = %d %s Allow %q, want %d %s Allow %q", tc.method, tc.path, res.StatusCode, body, res.Header.Get("Allow"), wantStatus, wantBody, tc.allow)
		}
	}
}

func TestHealth(t *testing.T) {
	e := newTestEnv(t)
	status, raw := e.do("GET", "/healthz", nil)
	if status != 200 || strings.TrimSpace(string(raw)) != `{"status":"ok"}` {
		t.Errorf("healthz = %d %s", status, raw)
	}
}

func TestBodyTooLarge(t *testing.T) {
	e := newTestEnv(t)
	big := `{"title": "` + strings.Repeat("x", maxBodyBytes) + `"}`
	before := e.snapshot()
	e.wantError("POST", "/api/forms", big, 413, "Request body too large")
	// Without Content-Length the limit is enforced while reading.
	req, _ := http.NewRequest("PUT", e.http.URL+"/api/settings/k", io.MultiReader(strings.NewReader(`{"value": "`), bytes.NewReader(bytes.Repeat([]byte("y"), 2*maxBodyBytes))))
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = -1
	res, err := e.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 413 || strings.TrimSpace(string(body)) != `{"error":"Request body too large"}` {
		t.Errorf("chunked oversized body = %d %s, want 413", res.StatusCode, body)
	}
	if e.snapshot() != before {
		t.Errorf("oversized bodies changed the database")
	}
}

// TestWriteErrorCanceledWhileClientStays: an error that wraps context.Canceled is a
// client gone (499, no answer) only when the request's own context ended; from anything
// else (a job's context, say) it is a failure like any other, answered 500 without its
// cause.
func TestWriteErrorCanceledWhileClientStays(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	rec := httptest.NewRecorder()
	e.srv.writeError(rec, apiRequest("GET", "/api/forms", nil), during("fetch forms", fmt.Errorf("run job: %w", context.Canceled)))
	if want := `{"error":"Failed to fetch forms: internal error"}`; rec.Code != 500 || strings.TrimSpace(rec.Body.String()) != want {
		t.Errorf("writeError = %d %s, want 500 %s", rec.Code, rec.Body, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec = httptest.NewRecorder()
	e.srv.writeError(rec, apiRequest("GET", "/api/forms", nil).WithContext(ctx), during("fetch forms", fmt.Errorf("query: %w", context.Canceled)))
	if rec.Body.Len() != 0 {
		t.Errorf("writeError for a client gone wrote %q, want nothing", rec.Body)
	}
}

// TestBodyCheckedOnEveryRoute: a body that is not JSON, or is over 1 MiB, is refused
// before any route runs, as the original's body parser did, on routes that read no body
// too (a DELETE or a generate with a broken body does nothing), and on a path with a bad
// id. A JSON body on a route that reads none is read and ignored.
func TestBodyCheckedOnEveryRoute(t *testing.T) {
	e := newTestEnv(t)
	form := e.createForm(seedFormBody())
	responseID := e.submit(form.ID, map[string]any{fmt.Sprint(form.Categories[0].Fields[0].ID): "a"})
	e.do("PUT", "/api/settings/k", map[string]any{"value": "v"})
	path := strings.NewReplacer("{id}", fmt.Sprint(form.ID), "{responseId}", fmt.Sprint(responseID), "{key}", "k")
	before := e.snapshot()
	oversized := `{"value": "` + strings.Repeat("z", 1048577) + `"}`
	for _, rt := range e.srv.routes() {
		method, pattern, _ := strings.Cut(rt.pattern, " ")
		e.wantError(method, path.Replace(pattern), `{bad`, 400, "Invalid JSON body")
		e.wantError(method, path.Replace(pattern), oversized, 413, "Request body too large")
	}
	e.wantError("PUT", "/api/forms/abc", `{bad`, 400, "Invalid JSON body")
	e.wantError("POST", "/api/no-such-route", `{bad`, 400, "Invalid JSON body")
	if e.snapshot() != before {
		t.Errorf("a refused body changed the database")
	}
	if status, raw := e.do("DELETE", fmt.Sprintf("/api/forms/%d", form.ID), `{"any": "thing"}`); status != 200 {
		t.Errorf("DELETE with a JSON body = %d %s, want 200", status, raw)
	}
}

// TestBodyLimitBoundary pins the limit with literals: a body of exactly 1 MiB
// (1,048,576 bytes) is read, one byte more is a 413, announced or streamed.
func TestBodyLimitBoundary(t *testing.T) {
	e := newTestEnv(t)
	body := func(size int) string {
		t.Helper()
		const head, tail = `{"value": "`, `"}`
		return head + strings.Repeat("z", size-len(head)-len(tail)) + tail
	}
	for _, tc := range []struct {
		size    int
		chunked bool
		want    int
	}{
		{1048576, false, 200},
		{1048576, true, 200},
		{1048577, false, 413},
		{1048577, true, 413},
	} {
		b := body(tc.size)
		if len(b) != tc.size {
			t.Fatalf("body is %d bytes, want %d", len(b), tc.size)
		}
		var r io.Reader = strings.NewReader(b)
		if tc.chunked {
			r = io.MultiReader(r) // hides the length: sent chunked
		}
		req, err := http.NewRequest("PUT", e.http.URL+"/api/settings/boundary", r)
		req.Header.Set("Content-Type", "application/json")
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.http.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != tc.want {
			t.Errorf("%d-byte body (chunked %v) = %d, want %d", tc.size, tc.chunked, res.StatusCode, tc.want)
		}
	}
}

// TestMemberNamesExact: members match by exact name at every level of every body, as
// req.body.title did in the original; Go's case-insensitive matching would take "Title"
// for "title". Of a member given twice, the last counts.
func TestMemberNamesExact(t *testing.T) {
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
			status, raw := e.do(tc.method, tc.path, tc.body)
			var got struct{ Error string }
			json.Unmarshal(raw, &got)
			wantStatus := 400 // validation inside create and update is docs/SPEC.md's 500
			if strings.HasPrefix(tc.want, "Failed to ") {
				wantStatus = 500
			}
			if got.Error != tc.want || status != wantStatus {
				t.Errorf("%s %s %s = %d %s, want %d %q", tc.method, tc.path, tc.body, status, raw, wantStatus, tc.want)
			}
		}
		if e.snapshot() != before {
			t.Error("refused bodies changed the database")
		}
	})

	t.Run("ignored", func(t *testing.T) {
		// Wrongly cased members beside the right ones are other members: ignored.
		var created formAnswer
		e.doJSON("POST", "/api/forms", `{"title": "a", "TITLE": "b", "Description": "d",
			"categories": [{"name": "c", "Name": "C", "Fields": [{"label": "x", "type": "text"}],
				"fields": [{"label": "l", "Label": "L", "type": "text", "TYPE": "number", "Description": "D"}]}]}`, &created)
		var got FormDetail
		e.doJSON("GET", "/api/forms/"+itoa(created.ID), nil, &got)
		if got.Title != "a" || got.Description != nil || len(got.Categories) != 1 || got.Categories[0].Name != "c" ||
			len(got.Categories[0].Fields) != 1 {
			t.Fatalf("form = %+v, want title a, no description, one category c with one field", got)
		}
		if fd := got.Categories[0].Fields[0]; fd.Label != "l" || fd.Type != "text" || fd.Description != nil {
			t.Errorf("field = %+v, want l, text, no description", fd)
		}
		e.doJSON("PUT", "/api/settings/k", `{"value": "a", "Value": "b"}`, nil)
		var s setting
		e.doJSON("GET", "/api/settings/k", nil, &s)
		if s.Value != "a" {
			t.Errorf("setting = %q, want a", s.Value)
		}
	})

	t.Run("last of a repeated member", func(t *testing.T) {
		var created formAnswer
		e.doJSON("POST", "/api/forms", `{"title": "first", "title": "second"}`, &created)
		if created.Title != "second" {
			t.Errorf("title = %q, want second", created.Title)
		}
		e.doJSON("PUT", "/api/settings/k", `{"value": "first", "value": "second"}`, nil)
		var s setting
		e.doJSON("GET", "/api/settings/k", nil, &s)
		if s.Value != "second" {
			t.Errorf("setting = %q, want second", s.Value)
		}
	})
}

func TestAPIToken(t *testing.T) {
	const token = "s3cret-token-value"
	e := newTestEnv(t, func(c *config) { c.APIToken = token })
	f := e.createFormWithToken(token)
	paths := []struct{ method, path string }{
		{"GET", "/api/forms"}, {"POST", "/api/forms"}, {"GET", "/api/forms/" + itoa(f)},
		{"PUT", "/api/forms/" + itoa(f)}, {"DELETE", "/api/forms/" + itoa(f)},
		{"POST", "/api/forms/" + itoa(f) + "/responses"}, {"GET", "/api/forms/" + itoa(f) + "/responses"},
		{"GET", "/api/responses/1/export/pdf"},
		{"GET", "/api/tracker-summary/today"}, {"GET", "/api/tracker-summaries"},
		{"POST", "/api/tracker-summaries/generate"}, {"GET", "/api/tracker-summary"},
		{"GET", "/api/email-summaries"}, {"POST", "/api/email-summaries/generate"},
		{"GET", "/api/settings/k"}, {"PUT", "/api/settings/k"}, {"GET", "/api/unknown"}, {"GET", "/api"},
	}
	before := e.snapshot()
	for _, p := range paths {
		for _, header := range []string{"", "Bearer wrong", "Bearer " + token + "x", "Basic " + token, token, "Bearer"} {
			status, raw := e.do(p.method, p.path, `{"title": "x", "value": "v", "values": {"1": 1}}`, "Authorization", header)
			if status != 401 || strings.TrimSpace(string(raw)) != `{"error":"Unauthorized"}` {
				t.Errorf("%s %s with %q = %d %s, want 401", p.method, p.path, header, status, raw)
			}
		}
	}
	if e.snapshot() != before {
		t.Errorf("unauthorized requests changed the database")
	}
	for _, header := range []string{"Bearer " + token, "bearer " + token, "BEARER " + token} {
		if status, _ := e.do("GET", "/api/forms", nil, "Authorization", header); status != 200 {
			t.Errorf("GET /api/forms with %q = %d, want 200", header, status)
		}
	}
	if status, _ := e.do("GET", "/healthz", nil); status != 200 {
		t.Errorf("healthz without token = %d, want 200", status)
	}
	// Only /api and what is under /api/ needs it: /apix is just an unknown path.
	for _, path := range []string{"/apix", "/apidocs/x"} {
		e.wantError("GET", path, nil, 404, "Not found")
	}
	if strings.Contains(e.logs.String(), token) {
		t.Errorf("the token appears in the logs")
	}
}

// createFormWithToken creates an empty form through the API with the token and returns its id.
func (e *testEnv) createFormWithToken(token string) int64 {
	e.t.Helper()
	status, raw := e.do("POST", "/api/forms", `{"title": "t"}`, "Authorization", "Bearer "+token)
	if status != 201 {
		e.t.Fatalf("create with token = %d %s", status, raw)
	}
	var f formAnswer
	if err := json.Unmarshal(raw, &f); err != nil {
		e.t.Fatalf("decode %s: %v", raw, err)
	}
	return f.ID
}

// rawGET sends a request line as written, bypassing any client-side path cleaning, and
// returns the status and body.
func rawGET(t *testing.T, addr, target string) (int, string, http.Header) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", target)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, strings.TrimSpace(string(body)), res.Header
}

func TestPathAbuse(t *testing.T) {
	e := newTestEnv(t)
	addr := strings.TrimPrefix(e.http.URL, "http://")
	long := strings.Repeat("k", 10*1024)
	cases := []struct {
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
	}
	for _, tc := range cases {
		status, body, h := rawGET(t, addr, tc.target)
		if status != tc.status || body != tc.body || h.Get("Content-Type") != "application/json; charset=utf-8" {
			t.Errorf("GET %.60s = %d %s (%s), want %d %s", tc.target, status, body, h.Get("Content-Type"), tc.status, tc.body)
		}
	}
}

// TestSlowHeadersCutOff: a client that sends its headers byte by byte is disconnected
// once the header timeout passes, however long it would go on.
func TestSlowHeadersCutOff(t *testing.T) {
	cfg := loadConfig(func(string) string { return "" })
	cfg.HeaderTimeout = 300 * time.Millisecond
	e := newTestEnv(t)
	hs := newHTTPServer(cfg, e.srv, e.srv.log)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	defer hs.Close()

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	request := "GET /api/forms HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + strings.Repeat("a", 200) + "\r\n\r\n"
	var writeErr error
	for i := 0; i < len(request) && writeErr == nil; i++ {
		_, writeErr = conn.Write([]byte{request[i]})
		time.Sleep(20 * time.Millisecond)
		if time.Since(start) > 3*time.Second {
			break
		}
	}
	conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 512)
	n, readErr := conn.Read(buf)
	if writeErr == nil && !(readErr == io.EOF || strings.Contains(string(buf[:n]), "408")) {
		t.Errorf("slow client not cut off: wrote all, read %q, %v", buf[:n], readErr)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("cut off only after %s with a 300 ms header timeout", d)
	}
}

// TestLargeBodyRefusedUnread: a request announcing a 100 MiB body gets its 413 at once,
// while most of the body was never sent.
func TestLargeBodyRefusedUnread(t *testing.T) {
	e := newTestEnv(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.http.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/forms HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"title\": \"", 100<<20)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer before the body was sent: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 413 || strings.TrimSpace(string(body)) != `{"error":"Request body too large"}` {
		t.Errorf("answer = %d %s, want 413", res.StatusCode, body)
	}
	if n := e.count("forms"); n != 0 {
		t.Errorf("%d forms created", n)
	}
}

// TestMain lets the test binary serve as the real program: with FORMSVC_TEST_SERVE=1 it
// runs main, so that fault tests can kill a real process without building a second binary.
func TestMain(m *testing.M) {
	if os.Getenv("FORMSVC_TEST_SERVE") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child is the service running as a separate process.
type child struct {
	cmd    *exec.Cmd
	base   string
	stderr *syncBuffer
	done   chan struct{} // closed when the process has exited
	err    error         // of Wait, once done is closed
}

// startChild starts the service process on a free port with the given environment.
func startChild(t *testing.T, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), append([]string{"FORMSVC_TEST_SERVE=1", "ADDR=127.0.0.1:0"}, env...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-c.done
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := regexp.MustCompile(`listening on (\S+)`).FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case a := <-addr:
		c.base = "http://" + a
	case <-c.done:
		t.Fatalf("service exited during start-up: %v\n%s", c.err, c.stderr)
	case <-time.After(20 * time.Second):
		t.Fatalf("service did not start:\n%s", c.stderr)
	}
	waitHealthy(t, c.base)
	return c
}

// writeLoad submits responses from 32 clients until stop is closed and returns the ids
// of the acknowledged ones.
func writeLoad(base string, formID int64, stop <-chan struct{}) func() []int64 {
	var mu sync.Mutex
	var acked []int64
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	for i := range 32 {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				body := fmt.Sprintf(`{"values": {"1": "client %d answer %d"}}`, i, n)
				res, err := client.Post(fmt.Sprintf("%s/api/forms/%d/responses", base, formID), "application/json", strings.NewReader(body))
				if err != nil {
					continue // the server is going away; nothing was acknowledged
				}
				var out struct{ ResponseID int64 }
				err = json.NewDecoder(res.Body).Decode(&out)
				res.Body.Close()
				if res.StatusCode == http.StatusCreated && err == nil {
					mu.Lock()
					acked = append(acked, out.ResponseID)
					mu.Unlock()
				}
			}
		})
	}
	return func() []int64 {
		wg.Wait()
		return acked
	}
}

// createLoadForm makes the one-field form the load writes to.
func createLoadForm(t *testing.T, base string) int64 {
	t.Helper()
	res, err := http.Post(base+"/api/forms", "application/json",
		strings.NewReader(`{"title": "load", "categories": [{"fields": [{"label": "a", "type": "text"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var f formAnswer
	if err := json.NewDecoder(res.Body).Decode(&f); err != nil || res.StatusCode != 201 {
		t.Fatalf("create form: %d %v", res.StatusCode, err)
	}
	return f.ID
}

// waitRows waits until the database holds at least n responses.
func waitRows(t *testing.T, dbPath string, n int) {
	t.Helper()
	db, err := sql.Open("sqlite3", dbPath+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	waitFor(t, func() bool {
		var got int
		return db.QueryRow(`SELECT count(*) FROM responses`).Scan(&got) == nil && got >= n
	})
}

// checkDatabase reopens the file after the process is gone: every acknowledged response
// is there with its value, and SQLite finds the file intact.
func checkDatabase(t *testing.T, dbPath string, formID int64, acked []int64) {
	t.Helper()
	store, err := OpenStore(context.Background(), dbPath, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var integrity string
	if err := store.read.QueryRow(`PRAGMA integrity_check`).Scan(&integrity); err != nil || integrity != "ok" {
		t.Errorf("integrity_check = %q, %v", integrity, err)
	}
	listed := map[int64]int{}
	for _, r := range allResponses(t, store, formID) {
		listed[r.ID] = len(r.Values)
	}
	lost := 0
	for _, id := range acked {
		if n, ok := listed[id]; !ok || n != 1 {
			lost++
		}
	}
	if lost > 0 || len(acked) == 0 {
		t.Errorf("%d of %d acknowledged responses lost or incomplete (%d listed)", lost, len(acked), len(listed))
	}
	t.Logf("%d acknowledged, %d listed", len(acked), len(listed))
}

// loadedChild is the service process on a fresh database, with 32 clients writing to
// it and at least 300 responses already stored.
type loadedChild struct {
	*child
	dbPath string
	formID int64
	stop   chan struct{}  // close to end the load
	acked  func() []int64 // after stop: waits for the clients, returns what was acknowledged
}

func startLoadedChild(t *testing.T) loadedChild {
	t.Helper()
	dbPath := filepath.Join(t.TempDir(), "load.db")
	c := startChild(t, "DATABASE_PATH="+dbPath)
	formID := createLoadForm(t, c.base)
	stop := make(chan struct{})
	acked := writeLoad(c.base, formID, stop)
	waitRows(t, dbPath, 300)
	return loadedChild{child: c, dbPath: dbPath, formID: formID, stop: stop, acked: acked}
}

// TestKill9DuringWriteLoad: kill -9 of the real process under 32-client write load;
// after a restart on the same file every acknowledged response is listed.
func TestKill9DuringWriteLoad(t *testing.T) {
	c := startLoadedChild(t)
	dbPath, formID := c.dbPath, c.formID
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.done
	close(c.stop)
	acked := c.acked()

	c2 := startChild(t, "DATABASE_PATH="+dbPath)
	res, err := http.Get(fmt.Sprintf("%s/api/forms/%d/responses", c2.base, formID))
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("list after restart: %v %v", res, err)
	}
	var list []listedResponse
	if err := json.NewDecoder(res.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if len(list) < len(acked) {
		t.Errorf("listed %d after restart, acknowledged %d", len(list), len(acked))
	}
	c2.cmd.Process.Signal(syscall.SIGTERM)
	<-c2.done
	checkDatabase(t, dbPath, formID, acked)
}

// TestSIGTERMDuringLoad: SIGTERM under load ends the process with status 0 within the
// shutdown bound, and nothing acknowledged is lost.
func TestSIGTERMDuringLoad(t *testing.T) {
	c := startLoadedChild(t)
	start := time.Now()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.done:
		if c.err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", c.err, c.stderr)
		}
		if d := time.Since(start); d > 15*time.Second {
			t.Errorf("shutdown took %s, want at most 15 s", d)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the process did not exit within 20 s of SIGTERM")
	}
	close(c.stop)
	checkDatabase(t, c.dbPath, c.formID, c.acked())
	if !strings.Contains(c.stderr.String(), "msg=stopped") {
		t.Errorf("no orderly stop in the log:\n%s", c.stderr)
	}
}

// TestDiskFull: when the database cannot grow, writes answer a JSON 500, reads keep
// working, and nothing is half-written. SQLite's page limit raises the same SQLITE_FULL
// a full disk does, portably and without root.
func TestDiskFull(t *testing.T) {
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	field := itoa(f.Categories[1].Fields[0].ID)
	var pages int
	if err := e.store.write.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.write.Exec(fmt.Sprintf(`PRAGMA max_page_count = %d`, pages+2)); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 3000)
	acked, failed := 0, 0
	for range 40 {
		status, raw := e.do("POST", "/api/forms/"+itoa(f.ID)+"/responses", map[string]any{"values": map[string]any{field: long}})
		switch status {
		case 201:
			acked++
		case 500:
			failed++
			if want := `{"error":"Failed to submit response for form ` + itoa(f.ID) + `: internal error"}`; strings.TrimSpace(string(raw)) != want {
				t.Errorf("disk-full answer = %s, want %s", raw, want)
			}
		default:
			t.Fatalf("submit = %d %s", status, raw)
		}
	}
	if failed == 0 {
		t.Fatal("the page limit never stopped a write")
	}
	if !strings.Contains(e.logs.String(), "database or disk is full") {
		t.Errorf("the log does not say the database is full:\n%s", e.logs)
	}
	status, raw := e.do("PUT", "/api/settings/k", map[string]any{"value": strings.Repeat("y", 20000)})
	if status != 500 || !strings.HasPrefix(string(raw), `{"error":"Failed to update setting 'k': `) {
		t.Errorf("setting write on a full database = %d %s", status, raw)
	}
	longField := map[string]any{"label": "l", "type": "text", "description": strings.Repeat("x", maxDescriptionChars)}
	big := map[string]any{"title": strings.Repeat("t", maxTitleChars), "description": strings.Repeat("d", maxDescriptionChars),
		"categories": []any{map[string]any{"name": "c", "fields": []any{longField, longField, longField}}}}
	before := e.snapshot()
	status, raw = e.do("POST", "/api/forms", big)
	if status != 500 || !strings.HasPrefix(string(raw), `{"error":"Failed to create form: `) {
		t.Errorf("create on a full database = %d %s", status, raw)
	}
	status, raw = e.do("PUT", "/api/forms/"+itoa(f.ID), big)
	if want := `{"error":"Failed to update form ` + itoa(f.ID) + `: `; status != 500 || !strings.HasPrefix(string(raw), want) {
		t.Errorf("update on a full database = %d %s", status, raw)
	}
	if e.snapshot() != before {
		t.Errorf("failed writes on a full database changed it")
	}
	if status, _ := e.do("GET", "/api/forms/"+itoa(f.ID), nil); status != 200 {
		t.Errorf("read on a full database = %d", status)
	}
	var list []listedResponse
	if status := e.doJSON("GET", "/api/forms/"+itoa(f.ID)+"/responses", nil, &list); status != 200 || len(list) != acked {
		t.Errorf("list on a full database = %d with %d responses, want 200 with the %d acknowledged", status, len(list), acked)
	}
	if n := e.count("response_values"); n != acked {
		t.Errorf("%d values for %d acknowledged responses: a failed write left a part behind", n, acked)
	}
	e.wantNoOrphans()
	if status, _ := e.do("GET", "/healthz", nil); status != 200 {
		t.Errorf("healthz on a full database = %d", status)
	}
}

// TestOutboundFaults: a tracker or model that hangs, answers garbage or closes the
// connection mid-answer ends the job with a log line within its timeout, while the API
// keeps answering.
func TestOutboundFaults(t *testing.T) {
	hang := func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // so that the server notices the client leaving
		<-r.Context().Done()
	}
	garbage := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"issues": [{"id": 1, "upd`+"\x00\xff")
	}
	cut := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		io.WriteString(w, `{"issues": [`)
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	for _, side := range []string{"tracker", "model"} {
		for name, h := range map[string]http.HandlerFunc{"hangs": hang, "answers garbage": garbage, "closes mid-answer": cut} {
			t.Run(side+" "+name, func(t *testing.T) {
				bad := httptest.NewServer(h)
				defer bad.Close()
				e := newSummaryEnv(t, now, func(c *config) {
					c.OutboundTimeout = 300 * time.Millisecond
					if side == "tracker" {
						c.TrackerEndpoint = bad.URL
					} else {
						c.GenAIBaseURL = bad.URL
					}
				})
				e.tracker.issues = []map[string]any{issue(1, now.Format(time.RFC3339))}
				start := time.Now()
				if status, _ := e.do("POST", "/api/tracker-summaries/generate", nil); status != 202 {
					t.Fatal("generate not accepted")
				}
				for !strings.Contains(e.logs.String(), "summary job failed") {
					if status, _ := e.do("GET", "/api/forms", nil); status != 200 {
						t.Fatalf("API not answering during the job: %d", status)
					}
					if time.Since(start) > 10*time.Second {
						t.Fatalf("job did not end:\n%s", e.logs)
					}
					time.Sleep(10 * time.Millisecond)
				}
				// Hangs and 5xx-free failures are not retried: one timeout, well inside 3 s.
				if d := time.Since(start); d > 3*time.Second {
					t.Errorf("job took %s with a 300 ms timeout", d)
				}
				if n := e.count("tracker_summaries"); n != 0 {
					t.Errorf("a failed job stored %d summaries", n)
				}
			})
		}
	}
}

// TestDatabaseGone: with the database unusable, every endpoint answers docs/SPEC.md's
// 500 `Failed to <context>: <message>` as JSON, and healthz reports it.
func TestDatabaseGone(t *testing.T) {
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	e.submit(f.ID, map[string]any{"1": "x"})
	e.store.forms.drop(f.ID) // so that the form read goes to the database
	e.store.read.Close()
	e.store.write.Close()
	id := itoa(f.ID)
	cases := []struct{ method, path, body, context string }{
		{"GET", "/api/forms", "", "fetch forms"},
		{"POST", "/api/forms", `{"title": "t"}`, "create form"},
		{"PUT", "/api/forms/" + id, `{"title": "t"}`, "update form " + id},
		{"GET", "/api/forms/" + id, "", "fetch form " + id},
		{"DELETE", "/api/forms/" + id, "", "delete form " + id},
		{"POST", "/api/forms/" + id + "/responses", `{"values": {"1": "x"}}`, "submit response for form " + id},
		{"GET", "/api/forms/" + id + "/responses", "", "fetch responses for form " + id},
		{"GET", "/api/responses/1/export/pdf", "", "generate PDF for response 1"},
		{"GET", "/api/tracker-summary/today", "", "fetch today's tracker summary"},
		{"GET", "/api/tracker-summaries", "", "fetch paginated tracker summaries"},
		{"GET", "/api/email-summaries", "", "fetch paginated Email summaries"},
		{"GET", "/api/settings/k", "", "fetch setting 'k'"},
		{"PUT", "/api/settings/k", `{"value": 1}`, "update setting 'k'"},
	}
	for _, tc := range cases {
		status, raw := e.do(tc.method, tc.path, tc.body)
		var got struct{ Error string }
		json.Unmarshal(raw, &got)
		if want := "Failed to " + tc.context + ": "; status != 500 || !strings.HasPrefix(got.Error, want) {
			t.Errorf("%s %s = %d %s, want 500 %q…", tc.method, tc.path, status, raw, want)
		}
	}
	if status, raw := e.do("GET", "/healthz", nil); status != 503 || strings.TrimSpace(string(raw)) != `{"error":"Database unavailable"}` {
		t.Errorf("healthz = %d %s, want 503", status, raw)
	}
}

// benchEnv is a quiet service with the 50-field form of compare.sh and n responses.
func benchEnv(b *testing.B, responses int) (*testEnv, FormDetail) {
	b.Helper()
	e := newTestEnv(b)
	e.srv.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	f := e.createForm(seedFormBody())
	body := submitBody(f)
	for range responses {
		if status, raw := e.do("POST", "/api/forms/"+itoa(f.ID)+"/responses", body); status != 201 {
			b.Fatalf("seed: %d %s", status, raw)
		}
	}
	return e, f
}

// seedFormBody is seed.mjs's form: 5 categories of 10 fields, types cycling.
func seedFormBody() map[string]any {
	types := []string{"text", "number", "date", "textarea", "boolean"}
	var cats []any
	for c := range 5 {
		var fields []any
		for i := range 10 {
			fd := map[string]any{"label": fmt.Sprintf("Question %d.%d", c+1, i+1), "type": types[(c*10+i)%5]}
			if i%2 == 0 {
				fd["description"] = fmt.Sprintf("Guidance for question %d.%d, shown in italics.", c+1, i+1)
			}
			fields = append(fields, fd)
		}
		cats = append(cats, map[string]any{"name": fmt.Sprintf("Section %d", c+1), "fields": fields})
	}
	return map[string]any{"title": "Site inspection report", "description": "Benchmark form", "categories": cats}
}

// submitBody answers every field of f, as seed.mjs does.
func submitBody(f FormDetail) string {
	var parts []string
	for _, c := range f.Categories {
		for _, fd := range c.Fields {
			v := map[string]string{"text": `"Answer text for the field"`, "number": "42.5", "date": `"2026-11-25"`,
				"textarea": `"A longer answer, written over a few sentences to look like a real one."`, "boolean": "true"}[fd.Type]
			parts = append(parts, fmt.Sprintf(`"%d": %s`, fd.ID, v))
		}
	}
	return `{"values": {` + strings.Join(parts, ", ") + `}}`
}

// serve runs one request through the handler and checks its status. The answer is
// counted and dropped, so that allocations are the handler's own, not a recorder's.
func serve(b *testing.B, h http.Handler, method, path, body string, want int) {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := apiRequest(method, path, r)
	w := &discardWriter{header: http.Header{}, status: http.StatusOK}
	h.ServeHTTP(w, req)
	if w.status != want {
		b.Errorf("%s %s = %d", method, path, w.status)
	}
}

// discardWriter is an http.ResponseWriter that keeps only the status and the size.
type discardWriter struct {
	header http.Header
	status int
	n      int64
}

func (w *discardWriter) Header() http.Header { return w.header }

func (w *discardWriter) WriteHeader(status int) { w.status = status }

func (w *discardWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

// fuzzServe runs one request through the handler and checks the rules every answer
// keeps: JSON, and a 500 only for docs/SPEC.md's validation failures.
func fuzzServe(t *testing.T, h http.Handler, method, path, body string) int {
	t.Helper()
	// A deadline turns a request that would wait forever (a transaction left open, the
	// write connection never released) into a failure within seconds rather than a hang.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := apiRequest(method, path, strings.NewReader(body)).WithContext(ctx)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if ct := w.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" || !json.Valid(w.Body.Bytes()) {
		t.Fatalf("%s %s %q: answer %d %q is not JSON (%s)", method, path, body, w.Code, w.Body, ct)
	}
	if w.Code == 500 {
		var e struct{ Error string }
		json.Unmarshal(w.Body.Bytes(), &e)
		if !regexp.MustCompile(`^Failed to (create|update) form( \d+)?: (Invalid field type: |Field label is required$|(Field label|Field description|Category name) is too long)`).MatchString(e.Error) {
			t.Fatalf("%s %s %q: unexpected 500 %s", method, path, body, w.Body)
		}
	}
	return w.Code
}

// TestCORS: with CORS_ORIGINS set, an allowed origin is named on answers and its
// preflights are answered with the route's methods, without the token; a foreign origin
// gets no CORS header; unset, nothing changes.
func TestCORS(t *testing.T) {
	const token = "cors-token"
	const allowed = "https://forms.example.com"
	e := newTestEnv(t, func(c *config) {
		c.CORSOrigins = []string{allowed, "https://other.example.com"}
		c.APIToken = token
	})
	preflight := func(e *testEnv, origin, path, method string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("OPTIONS", e.http.URL+path, nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", method)
		req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
		res, err := e.http.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	corsHeaders := func(h http.Header) []string {
		var names []string
		for name := range h {
			if strings.HasPrefix(name, "Access-Control-") {
				names = append(names, name)
			}
		}
		return names
	}

	res := preflight(e, allowed, "/api/forms/7", "PUT")
	if res.StatusCode != 204 {
		t.Fatalf("preflight = %d, want 204", res.StatusCode)
	}
	for name, want := range map[string]string{
		"Access-Control-Allow-Origin":  allowed,
		"Access-Control-Allow-Methods": "GET, HEAD, PUT, DELETE",
		"Access-Control-Allow-Headers": "Content-Type, Authorization",
		"Access-Control-Max-Age":       "600",
		"Vary":                         "Origin",
	} {
		if got := res.Header.Get(name); got != want {
			t.Errorf("preflight %s = %q, want %q", name, got, want)
		}
	}
	if res := preflight(e, allowed, "/api/forms", "POST"); res.Header.Get("Access-Control-Allow-Methods") != "GET, HEAD, POST" {
		t.Errorf("preflight of /api/forms allows %q", res.Header.Get("Access-Control-Allow-Methods"))
	}

	// An allowed origin's real request carries the headers and still needs the token.
	res, _ = e.getRaw("/api/forms", "Origin", allowed, "Authorization", "Bearer "+token)
	if res.StatusCode != 200 || res.Header.Get("Access-Control-Allow-Origin") != allowed || res.Header.Get("Vary") != "Origin" {
		t.Errorf("GET from %s = %d, Allow-Origin %q, Vary %q", allowed, res.StatusCode,
			res.Header.Get("Access-Control-Allow-Origin"), res.Header.Get("Vary"))
	}
	if got := res.Header.Get("Access-Control-Expose-Headers"); got != "Content-Disposition" {
		t.Errorf("Expose-Headers = %q, want Content-Disposition (a download's name)", got)
	}
	res, body := e.getRaw("/api/forms", "Origin", allowed) // no token
	if got := res.Header.Get("WWW-Authenticate"); got != "Bearer" {
		t.Errorf("401 WWW-Authenticate = %q, want Bearer", got)
	}
	if res.StatusCode != 401 || res.Header.Get("Access-Control-Allow-Origin") != allowed {
		t.Errorf("GET without token from %s = %d %s, want 401 with Allow-Origin (so the page can read the error)", allowed, res.StatusCode, body)
	}

	// A foreign origin gets no CORS header at all, preflight or not.
	const foreign = "https://evil.example.net"
	if res := preflight(e, foreign, "/api/forms/7", "PUT"); res.StatusCode == 204 || len(corsHeaders(res.Header)) > 0 {
		t.Errorf("foreign preflight = %d with %v", res.StatusCode, corsHeaders(res.Header))
	}
	if res, _ := e.getRaw("/api/forms", "Origin", foreign, "Authorization", "Bearer "+token); len(corsHeaders(res.Header)) > 0 {
		t.Errorf("foreign GET carries %v", corsHeaders(res.Header))
	}
	// A preflight of a path no route serves is answered as any request to it.
	for _, path := range []string{"/api/nothing", "/api//forms", "/api/x/../forms"} {
		if res := preflight(e, allowed, path, "GET"); res.StatusCode == 204 {
			t.Errorf("preflight of %s = 204", path)
		}
	}

	// CORS_ORIGINS unset: no CORS at all.
	plain := newTestEnv(t)
	if res := preflight(plain, allowed, "/api/forms", "POST"); res.StatusCode == 204 || len(corsHeaders(res.Header)) > 0 || res.Header.Get("Vary") != "" {
		t.Errorf("without CORS_ORIGINS, preflight = %d with %v", res.StatusCode, corsHeaders(res.Header))
	}
	if res, _ := plain.getRaw("/api/forms", "Origin", allowed); len(corsHeaders(res.Header)) > 0 {
		t.Errorf("without CORS_ORIGINS, GET carries %v", corsHeaders(res.Header))
	}

	// "*" allows any origin.
	star := newTestEnv(t, func(c *config) { c.CORSOrigins = []string{"*"} })
	if res := preflight(star, foreign, "/api/settings/x", "PUT"); res.StatusCode != 204 || res.Header.Get("Access-Control-Allow-Origin") != foreign {
		t.Errorf("with *, preflight = %d, Allow-Origin %q", res.StatusCode, res.Header.Get("Access-Control-Allow-Origin"))
	}
	// An OPTIONS without Access-Control-Request-Method is no preflight: it is the 405 any
	// OPTIONS gets, token check and all.
	req, _ := http.NewRequest("OPTIONS", e.http.URL+"/api/forms", nil)
	req.Header.Set("Origin", allowed)
	req.Header.Set("Authorization", "Bearer "+token)
	if res, err := e.http.Client().Do(req); err != nil || res.StatusCode != 405 || res.Header.Get("Allow") != "GET, HEAD, POST" {
		t.Errorf("OPTIONS without a request method = %v %v, want 405 with Allow: GET, HEAD, POST", res, err)
	} else {
		res.Body.Close()
	}
	// A request without Origin (not from a browser page) gets no CORS header, even with *.
	if res, _ := star.getRaw("/api/forms"); len(corsHeaders(res.Header)) > 0 {
		t.Errorf("with *, a GET without Origin carries %v", corsHeaders(res.Header))
	}
}

func TestCORSOriginsConfig(t *testing.T) {
	cfg := loadConfig(func(k string) string {
		return map[string]string{"CORS_ORIGINS": " https://a.example , https://b.example:8443,, "}[k]
	})
	if want := []string{"https://a.example", "https://b.example:8443"}; !slices.Equal(cfg.CORSOrigins, want) {
		t.Errorf("CORSOrigins = %q, want %q", cfg.CORSOrigins, want)
	}
}

// openAPIDoc is docs/openapi.json, decoded.
type openAPIDoc struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas   map[string]json.RawMessage `json:"schemas"`
		Responses map[string]json.RawMessage `json:"responses"`
	} `json:"components"`
}

func loadOpenAPI(t *testing.T) openAPIDoc {
	t.Helper()
	var doc openAPIDoc
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatalf("docs/openapi.json: %v", err)
	}
	return doc
}

// TestOpenAPIDocumentsEveryRoute: the document's paths and methods are exactly the
// routes the mux serves.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	doc := loadOpenAPI(t)
	var documented, served []string
	for path, item := range doc.Paths {
		for method := range item {
			if method != "parameters" {
				documented = append(documented, strings.ToUpper(method)+" "+path)
			}
		}
	}
	e := newTestEnv(t)
	for _, rt := range e.srv.routes() {
		served = append(served, rt.pattern)
	}
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Errorf("documented:\n%s\nserved:\n%s", strings.Join(documented, "\n"), strings.Join(served, "\n"))
	}
	// The document the service answers is the file.
	status, raw := e.do("GET", "/api/openapi.json", nil)
	if status != 200 || !bytes.Equal(raw, openAPI) {
		t.Errorf("GET /api/openapi.json = %d, %d bytes; want 200 and docs/openapi.json", status, len(raw))
	}
}

// TestOpenAPIAnswersConform sends requests to every route, with answers of every
// documented kind, success and error, and checks each against the document: the status
// is documented for the route, and a JSON body conforms to its schema.
func TestOpenAPIAnswersConform(t *testing.T) {
	doc := loadOpenAPI(t)
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	field := itoa(f.Categories[0].Fields[0].ID)
	id := itoa(f.ID)
	responseID := itoa(e.submit(f.ID, map[string]any{field: "x"}))
	doomed := itoa(e.createForm(map[string]any{"title": "to delete"}).ID)
	locked := newTestEnv(t, func(c *config) { c.APIToken = "t" })
	big := `{"title": "` + strings.Repeat("x", 1<<20) + `"}`

	type call struct {
		env                   *testEnv
		method, path, docPath string
		body                  string
		status                int
	}
	calls := []call{
		{e, "GET", "/healthz", "/healthz", "", 200},
		{e, "GET", "/api/openapi.json", "/api/openapi.json", "", 200},
		{e, "GET", "/api/forms", "/api/forms", "", 200},
		{e, "POST", "/api/forms", "/api/forms", `{"title": "n", "categories": [{"fields": [{"label": "l", "type": "date"}]}]}`, 201},
		{e, "POST", "/api/forms", "/api/forms", `{}`, 400},
		{e, "POST", "/api/forms", "/api/forms", `{"title": 5}`, 400},
		{e, "POST", "/api/forms", "/api/forms", `{`, 400},
		{e, "POST", "/api/forms", "/api/forms", big, 413},
		{e, "POST", "/api/forms", "/api/forms", `{"title": "t", "categories": [{"fields": [{"label": "l", "type": "x"}]}]}`, 500},
		{e, "GET", "/api/forms/" + id, "/api/forms/{id}", "", 200},
		{e, "GET", "/api/forms/x", "/api/forms/{id}", "", 400},
		{e, "GET", "/api/forms/999", "/api/forms/{id}", "", 404},
		{e, "PUT", "/api/forms/999", "/api/forms/{id}", `{"title": "t"}`, 404},
		{e, "PUT", "/api/forms/" + id, "/api/forms/{id}", `{"title": ""}`, 400},
		{e, "PUT", "/api/forms/" + id, "/api/forms/{id}", `{"title": "t", "categories": [{"fields": [{"type": "text"}]}]}`, 500},
		{e, "DELETE", "/api/forms/" + doomed, "/api/forms/{id}", "", 200},
		{e, "DELETE", "/api/forms/" + doomed, "/api/forms/{id}", "", 404},
		{e, "DELETE", "/api/forms/-1", "/api/forms/{id}", "", 400},
		{e, "POST", "/api/forms/" + id + "/responses", "/api/forms/{id}/responses", `{"values": {"` + field + `": 1}}`, 201},
		{e, "POST", "/api/forms/" + id + "/responses", "/api/forms/{id}/responses", `{"values": {}}`, 400},
		{e, "POST", "/api/forms/999/responses", "/api/forms/{id}/responses", `{"values": {"1": 1}}`, 404},
		{e, "GET", "/api/forms/" + id + "/responses", "/api/forms/{id}/responses", "", 200},
		{e, "GET", "/api/forms/999/responses", "/api/forms/{id}/responses", "", 404},
		{e, "GET", "/api/forms/" + id + "/responses.csv", "/api/forms/{id}/responses.csv", "", 200},
		{e, "GET", "/api/forms/1x/responses.csv", "/api/forms/{id}/responses.csv", "", 400},
		{e, "GET", "/api/responses/" + responseID + "/export/pdf", "/api/responses/{responseId}/export/pdf", "", 200},
		{e, "GET", "/api/responses/x/export/pdf", "/api/responses/{responseId}/export/pdf", "", 400},
		{e, "GET", "/api/responses/999/export/pdf", "/api/responses/{responseId}/export/pdf", "", 404},
		{e, "GET", "/api/tracker-summary/today", "/api/tracker-summary/today", "", 404},
		{e, "POST", "/api/tracker-summaries/generate", "/api/tracker-summaries/generate", "", 202},
		{e, "POST", "/api/email-summaries/generate", "/api/email-summaries/generate", "", 202},
		{e, "GET", "/api/tracker-summary", "/api/tracker-summary", "", 500},
		{e, "PUT", "/api/settings/k", "/api/settings/{key}", `{"value": [1, 2]}`, 200},
		{e, "PUT", "/api/settings/k", "/api/settings/{key}", `{}`, 400},
		{e, "GET", "/api/settings/k", "/api/settings/{key}", "", 200},
		{e, "GET", "/api/settings/" + strings.Repeat("k", 300), "/api/settings/{key}", "", 400},
		{e, "DELETE", "/api/settings/k", "/api/settings/{key}", "", 405},
		{locked, "GET", "/api/forms", "/api/forms", "", 401},
	}
	for _, c := range calls {
		checkAnswer(t, doc, c.env, c.method, c.path, c.docPath, c.body, c.status)
	}
	// Every route refuses a body that is not JSON, or is too large.
	for _, rt := range e.srv.routes() {
		method, pattern, _ := strings.Cut(rt.pattern, " ")
		path := strings.NewReplacer("{id}", id, "{responseId}", responseID, "{key}", "k").Replace(pattern)
		checkAnswer(t, doc, e, method, path, pattern, `{bad`, 400)
		checkAnswer(t, doc, e, method, path, pattern, big, 413)
	}
	// Summaries, once stored.
	now := time.Now()
	if err := e.store.SaveTrackerSummary(context.Background(), startOfDay(now), "text"); err != nil {
		t.Fatal(err)
	}
	if err := e.store.AddEmailSummary(context.Background(), startOfDay(now), "mail"); err != nil {
		t.Fatal(err)
	}
	checkAnswer(t, doc, e, "GET", "/api/tracker-summary/today", "/api/tracker-summary/today", "", 200)
	checkAnswer(t, doc, e, "GET", "/api/tracker-summaries?page=1&limit=5", "/api/tracker-summaries", "", 200)
	checkAnswer(t, doc, e, "GET", "/api/email-summaries?page=x", "/api/email-summaries", "", 200)
}

// checkAnswer sends one request and checks its answer against the document.
func checkAnswer(t *testing.T, doc openAPIDoc, e *testEnv, method, path, docPath, body string, wantStatus int) {
	t.Helper()
	req, err := http.NewRequest(method, e.http.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := e.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	where := fmt.Sprintf("%s %s", method, path)
	if res.StatusCode != wantStatus {
		t.Errorf("%s = %d %s, want %d", where, res.StatusCode, raw, wantStatus)
		return
	}
	var op struct {
		Responses map[string]json.RawMessage `json:"responses"`
	}
	opRaw := doc.Paths[docPath][strings.ToLower(method)]
	if opRaw == nil && res.StatusCode == http.StatusMethodNotAllowed {
		opRaw = doc.Paths[docPath]["get"] // a 405 is documented on the path's operations
	}
	if err := json.Unmarshal(opRaw, &op); err != nil || op.Responses == nil {
		t.Errorf("%s: %s %s is not documented", where, method, docPath)
		return
	}
	answer := op.Responses[strconv.Itoa(res.StatusCode)]
	if answer == nil {
		t.Errorf("%s: status %d is not documented for %s %s", where, res.StatusCode, method, docPath)
		return
	}
	var r struct {
		Ref     string                                      `json:"$ref"`
		Content map[string]struct{ Schema json.RawMessage } `json:"content"`
	}
	json.Unmarshal(answer, &r)
	if name, ok := strings.CutPrefix(r.Ref, "#/components/responses/"); ok {
		json.Unmarshal(doc.Components.Responses[name], &r)
	}
	mediaType, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	content, ok := r.Content[mediaType]
	if !ok {
		t.Errorf("%s: answer of type %q, documented: %v", where, mediaType, slices.Collect(maps.Keys(r.Content)))
		return
	}
	if mediaType != "application/json" {
		return
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Errorf("%s: %v", where, err)
		return
	}
	if err := conforms(doc, content.Schema, v, "body"); err != nil {
		t.Errorf("%s: %s: %v", where, raw[:min(len(raw), 300)], err)
	}
}

// conforms checks v against the part of JSON Schema (2020-12, as OpenAPI 3.1 uses it)
// that docs/openapi.json uses: $ref, type, const, enum, pattern, minLength, properties,
// required, additionalProperties, propertyNames, minProperties and items. A keyword it
// does not know fails the check, so that the document cannot outgrow its test.
func conforms(doc openAPIDoc, schema json.RawMessage, v any, at string) error {
	var s map[string]json.RawMessage
	if err := json.Unmarshal(schema, &s); err != nil {
		return fmt.Errorf("%s: schema: %v", at, err)
	}
	for kw, raw := range s {
		var err error
		switch kw {
		case "description", "format", "examples":
		case "$ref":
			var ref string
			json.Unmarshal(raw, &ref)
			name, _ := strings.CutPrefix(ref, "#/components/schemas/")
			target, ok := doc.Components.Schemas[name]
			if !ok {
				return fmt.Errorf("%s: unknown $ref %s", at, ref)
			}
			err = conforms(doc, target, v, at)
		case "type":
			var types []string
			if json.Unmarshal(raw, &types) != nil {
				var one string
				json.Unmarshal(raw, &one)
				types = []string{one}
			}
			if !slices.Contains(types, jsonTypeOf(v)) && !(jsonTypeOf(v) == "integer" && slices.Contains(types, "number")) {
				err = fmt.Errorf("%s: %s, want %v", at, jsonTypeOf(v), types)
			}
		case "const", "enum":
			var allowed []any
			if kw == "const" {
				var one any
				json.Unmarshal(raw, &one)
				allowed = []any{one}
			} else {
				json.Unmarshal(raw, &allowed)
			}
			if !slices.ContainsFunc(allowed, func(a any) bool { return reflect.DeepEqual(a, v) }) {
				err = fmt.Errorf("%s: %v, want one of %v", at, v, allowed)
			}
		case "pattern", "minLength":
			str, ok := v.(string)
			if !ok {
				continue
			}
			var pattern string
			var minLength int
			json.Unmarshal(raw, &pattern)
			json.Unmarshal(raw, &minLength)
			if kw == "pattern" && !regexp.MustCompile(pattern).MatchString(str) {
				err = fmt.Errorf("%s: %q does not match %s", at, str, pattern)
			}
			if kw == "minLength" && utf8.RuneCountInString(str) < minLength {
				err = fmt.Errorf("%s: %q shorter than %d", at, str, minLength)
			}
		case "properties", "required", "additionalProperties", "propertyNames", "minProperties":
			obj, ok := v.(map[string]any)
			if !ok {
				continue
			}
			err = objectConforms(doc, kw, raw, s, obj, at)
		case "items":
			arr, ok := v.([]any)
			if !ok {
				continue
			}
			for i, item := range arr {
				if err = conforms(doc, raw, item, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					break
				}
			}
		default:
			err = fmt.Errorf("%s: schema keyword %q not checked by this test", at, kw)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// objectConforms checks one object keyword of schema s.
func objectConforms(doc openAPIDoc, kw string, raw json.RawMessage, s map[string]json.RawMessage, obj map[string]any, at string) error {
	var props map[string]json.RawMessage
	json.Unmarshal(s["properties"], &props)
	switch kw {
	case "properties":
		for name, sub := range props {
			if value, ok := obj[name]; ok {
				if err := conforms(doc, sub, value, at+"."+name); err != nil {
					return err
				}
			}
		}
	case "required":
		var required []string
		json.Unmarshal(raw, &required)
		for _, name := range required {
			if _, ok := obj[name]; !ok {
				return fmt.Errorf("%s: member %q missing", at, name)
			}
		}
	case "additionalProperties":
		for name, value := range obj {
			if _, declared := props[name]; declared {
				continue
			}
			if string(raw) == "false" {
				return fmt.Errorf("%s: member %q not in the schema", at, name)
			}
			if err := conforms(doc, raw, value, at+"."+name); err != nil {
				return err
			}
		}
	case "propertyNames":
		for name := range obj {
			if err := conforms(doc, raw, name, at+" key "+name); err != nil {
				return err
			}
		}
	case "minProperties":
		var n int
		json.Unmarshal(raw, &n)
		if len(obj) < n {
			return fmt.Errorf("%s: %d members, want at least %d", at, len(obj), n)
		}
	}
	return nil
}

// jsonTypeOf names the JSON Schema type of a decoded JSON value.
func jsonTypeOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if v == math.Trunc(v) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	default:
		return "object"
	}
}

// TestPanicEndsTheAnswer: a panic before anything is written is a JSON 500; a panic
// after part of the answer is out ends the connection, so the client sees an error and
// never a short answer that parses.
func TestPanicEndsTheAnswer(t *testing.T) {
	e := newTestEnv(t)
	e.srv.mux.HandleFunc("GET /test/panic-before", func(w http.ResponseWriter, r *http.Request) {
		panic("before")
	})
	e.srv.mux.HandleFunc("GET /test/panic-after", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(`[{"id":1},`))
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("flush: %v", err)
		}
		panic("after")
	})
	e.wantError("GET", "/test/panic-before", nil, 500, "Internal server error")

	res, err := e.http.Client().Get(e.http.URL + "/test/panic-after")
	if err != nil {
		t.Fatalf("the status line and the first bytes were flushed, yet: %v", err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err == nil {
		t.Errorf("a panic after the first bytes gave a complete answer: %d %q", res.StatusCode, body)
	}
	if !strings.Contains(e.logs.String(), `panic=after`) {
		t.Errorf("the panic was not logged:\n%s", e.logs)
	}
}

// occupyHeavy takes every heavy slot; the function it returns gives them back.
func occupyHeavy(t *testing.T, s *server) func() {
	t.Helper()
	release, err := s.heavy.acquire(context.Background(), s.heavy.capacity)
	if err != nil {
		t.Fatalf("take every heavy slot: %v", err)
	}
	return release
}

// gateUsed is what g has handed out.
func gateUsed(g *gate) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.used
}

// TestHeavyAnswersWaitForASlot: with every heavy slot busy, a PDF export, a response
// list and a CSV export wait; the moment a slot frees, the waiting one is answered.
func TestHeavyAnswersWaitForASlot(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	responseID := e.submit(f.ID, map[string]any{itoa(f.Categories[0].Fields[0].ID): "x"})
	for _, path := range []string{
		"/api/responses/" + itoa(responseID) + "/export/pdf",
		"/api/forms/" + itoa(f.ID) + "/responses",
		"/api/forms/" + itoa(f.ID) + "/responses.csv",
	} {
		release := occupyHeavy(t, e.srv)
		answered := make(chan int, 1)
		go func() {
			w := httptest.NewRecorder()
			e.srv.ServeHTTP(w, apiRequest("GET", path, nil))
			answered <- w.Code
		}()
		select {
		case status := <-answered:
			t.Errorf("%s answered %d while every slot was busy", path, status)
			release()
			continue
		case <-time.After(300 * time.Millisecond): // an answer without a slot takes a few ms
		}
		release()
		select {
		case status := <-answered:
			if status != 200 {
				t.Errorf("%s = %d once a slot freed, want 200", path, status)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s still waits after a slot freed", path)
		}
	}
}

// TestClientGoneWhileWaiting: a client that leaves while its PDF waits for a slot is
// logged as gone (499), not as a 200.
func TestClientGoneWhileWaiting(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	pdfPath := "/api/responses/" + itoa(e.submit(f.ID, map[string]any{itoa(f.Categories[0].Fields[0].ID): "x"})) + "/export/pdf"
	defer occupyHeavy(t, e.srv)()
	arrived := make(chan struct{}, 1)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		e.srv.ServeHTTP(w, r)
	}))
	defer hs.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", hs.URL+pdfPath, nil)
	done := make(chan error, 1)
	go func() {
		res, err := hs.Client().Do(req)
		if err == nil {
			res.Body.Close()
		}
		done <- err
	}()
	<-arrived
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the request finished although every slot was busy")
	}
	waitFor(t, func() bool { return strings.Contains(e.logs.String(), "client gone") })
	for _, line := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(line, "msg=request") && strings.Contains(line, "/export/pdf") && !strings.Contains(line, "status=499") {
			t.Errorf("logged as %s", line)
		}
	}
}

// TestShutdownLeavesDatabaseToRunningHandlers: a handler that outlives both graces
// (it ignores its cancelled context) still finds the database open, and the log says
// why; a handler that returns when cancelled lets shutdown close the database.
func TestShutdownLeavesDatabaseToRunningHandlers(t *testing.T) {
	for _, stubborn := range []bool{true, false} {
		t.Run(fmt.Sprintf("stubborn=%v", stubborn), func(t *testing.T) {
			e := newTestEnv(t, func(c *config) {
				c.RequestGrace = 50 * time.Millisecond
				c.JobGrace = 200 * time.Millisecond
			})
			entered, release := make(chan struct{}), make(chan struct{})
			handlerErr := make(chan error, 1)
			e.srv.mux.HandleFunc("GET /test/slow", func(w http.ResponseWriter, r *http.Request) {
				close(entered)
				if stubborn {
					<-release
				} else {
					<-r.Context().Done()
				}
				handlerErr <- e.store.Ping(context.Background())
			})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			hs := &http.Server{Handler: e.srv}
			serveErr := make(chan error, 1)
			go func() { serveErr <- hs.Serve(ln) }()
			go http.Get("http://" + ln.Addr().String() + "/test/slow")
			<-entered

			e.srv.stopServing(hs, serveErr)
			closed := e.srv.closeStore()
			if stubborn {
				if closed || !strings.Contains(e.logs.String(), "database left open") {
					t.Errorf("closeStore = %v with a handler running; logs:\n%s", closed, e.logs)
				}
				close(release)
				if err := <-handlerErr; err != nil {
					t.Errorf("the running handler found the database closed: %v", err)
				}
				return
			}
			if !closed {
				t.Errorf("closeStore = false although the handler returned when cancelled; logs:\n%s", e.logs)
			}
			if err := e.store.Ping(context.Background()); err == nil {
				t.Error("the database is still open after shutdown")
			}
		})
	}
}
