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
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// apiRequest is httptest.NewRequest as a local client sends it: to Host localhost (the
// service refuses unknown Host names while it has no token), a body as JSON.
func apiRequest(method, target string, body io.Reader) *http.Request {
	r := httptest.NewRequest(method, target, body)
	r.Host = "localhost"
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	return r
}

// testClient is the client of a test that calls a port: no request of a test outlives
// 30 s, so a service that never answers fails the test, not the suite's timeout.
var testClient = &http.Client{Timeout: 30 * time.Second}

// waitHealthy waits until the service at base answers /healthz with 200.
func waitHealthy(t *testing.T, base string) {
	t.Helper()
	waitFor(t, func() bool {
		res, err := testClient.Get(base + "/healthz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == 200
	})
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

// testConfig is the configuration of the environment env, which must be valid.
func testConfig(t testing.TB, env map[string]string) config {
	t.Helper()
	cfg, err := loadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("loadConfig(%v): %v", env, err)
	}
	return cfg
}

// newTestEnvAt builds a service whose clock is now.
func newTestEnvAt(t testing.TB, now func() time.Time, change ...func(*config)) *testEnv {
	t.Helper()
	cfg := testConfig(t, nil)
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
	hs.Client().Timeout = 30 * time.Second // a broken handler fails its test, not the suite's timeout
	t.Cleanup(func() {
		// Bounded, as the client is; the store stays open for a stuck handler or job.
		var stopped bool
		within(t, 15*time.Second, "the requests and jobs of the test", func() {
			hs.Close() // waits for the requests in flight
			stopped = srv.jobs.stop(5 * time.Second)
		})
		if !stopped {
			t.Errorf("background jobs did not stop")
		}
		store.Close()
	})
	return &testEnv{t: t, srv: srv, store: store, http: hs, logs: logs}
}

// openStore opens the database at path, as the service does, or fails the test; within
// 30 s, so that a store stuck on its own connection fails the test, not the suite.
func openStore(t testing.TB, path string) *Store {
	t.Helper()
	var s *Store
	var err error
	within(t, 30*time.Second, "OpenStore("+path+")", func() {
		s, err = OpenStore(context.Background(), path, time.Now)
	})
	if err != nil {
		t.Fatalf("OpenStore(%s): %v", path, err)
	}
	return s
}

// within runs f and fails t if f has not returned in d: a call stuck on a lock fails its test.
func within(t testing.TB, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s: still running after %v, stuck", what, d)
	}
}

// newDatabaseFile creates an empty, migrated database in a new folder and closes it, for
// the commands that open a database file themselves; dest is a free name beside it.
func newDatabaseFile(t *testing.T) (dbPath, dest string) {
	t.Helper()
	dir := t.TempDir()
	dbPath, dest = filepath.Join(dir, "forms.db"), filepath.Join(dir, "copy.db")
	openStore(t, dbPath).Close()
	return dbPath, dest
}

// request sends a request with an optional JSON body (a string is sent as is) and header
// pairs within ctx, and returns the reply with its body read; a nil reply when ctx ended
// first. Any other failure to get a reply fails the test.
func (e *testEnv) request(ctx context.Context, method, path string, body any, header ...string) (*http.Response, []byte) {
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
	req, err := http.NewRequestWithContext(ctx, method, e.http.URL+path, r)
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
	if err != nil && ctx.Err() != nil {
		return nil, nil
	}
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatalf("%s %s: reading the reply: %v", method, path, err)
	}
	return res, out
}

// do sends a request as request does for as long as the test runs, checks that the reply
// is JSON (or a PDF), and returns its status and body.
func (e *testEnv) do(method, path string, body any, header ...string) (int, []byte) {
	e.t.Helper()
	res, out := e.request(e.t.Context(), method, path, body, header...)
	if ct := res.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" && ct != "application/pdf" {
		e.t.Fatalf("%s %s: Content-Type = %q, want JSON", method, path, ct)
	}
	return res.StatusCode, out
}

// send is request for as long as the test runs.
func (e *testEnv) send(method, path string, body any) (*http.Response, []byte) {
	e.t.Helper()
	return e.request(e.t.Context(), method, path, body)
}

// getRaw sends a GET with optional header pairs and returns the reply with its body read.
func (e *testEnv) getRaw(path string, header ...string) (*http.Response, []byte) {
	e.t.Helper()
	return e.request(e.t.Context(), "GET", path, nil, header...)
}

// decodeJS decodes raw JSON as readBody does (numbers as json.Number).
func decodeJS(t testing.TB, raw string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", raw, err)
	}
	return v
}

// doJSON is do that also decodes the reply into out.
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

// wantReply checks a JSON reply's status, and its body byte for byte, want and the
// newline json.Encoder ends it with.
func (e *testEnv) wantReply(method, path string, body any, wantStatus int, want string) {
	e.t.Helper()
	status, raw := e.do(method, path, body)
	if status != wantStatus || string(raw) != want+"\n" {
		e.t.Errorf("%s %s = %d %s,\nwant %d %s", method, path, status, raw, wantStatus, want)
	}
}

// wantError checks a JSON error reply byte for byte.
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
	var created savedForm
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

// exec runs a statement on the write connection, around the store, or fails the test.
func (e *testEnv) exec(query string, args ...any) {
	e.t.Helper()
	if _, err := e.store.write.Exec(query, args...); err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
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
		vals := make([]sql.NullString, len(cols)) // no column is NULL: the queries say <null>
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				e.t.Fatalf("snapshot: %v", err)
			}
			for _, v := range vals {
				b.WriteString(v.String + "|")
			}
			b.WriteString("\n")
		}
		rows.Close()
	}
	return b.String()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// notInstalled skips t, saying why, where a tool or test data from a system package is not
// installed, as `go test ./...` must pass on a machine with only Go and a C compiler.
// Under .ci/run, which installs every one and sets FORMSVC_CI=1, it fails t instead, so
// that CI never passes by skipping a check.
func notInstalled(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("FORMSVC_CI") != "" {
		t.Fatalf("missing under .ci/run, which installs it: "+format, args...)
	}
	t.Skipf(format, args...)
}

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

// createFormWithToken creates an empty form through the API with the token and returns its id.
func (e *testEnv) createFormWithToken(token string) int64 {
	e.t.Helper()
	status, raw := e.do("POST", "/api/forms", `{"title": "t"}`, "Authorization", "Bearer "+token)
	var f savedForm
	if err := json.Unmarshal(raw, &f); status != 201 || err != nil {
		e.t.Fatalf("create with token = %d %s (%v)", status, raw, err)
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
	conn.SetDeadline(time.Now().Add(30 * time.Second)) // a service that never answers fails the test
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", target)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, strings.TrimSpace(string(body)), res.Header
}

// benchEnv is a quiet service with the 50-field form of benchmarkForm and n responses.
func benchEnv(b *testing.B, responses int) (*testEnv, FormDetail) {
	b.Helper()
	e := newTestEnv(b)
	e.srv.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	f := e.createForm(seedFormBody())
	body := submitBody(f)
	for range responses {
		serve(b, e.srv, "POST", "/api/forms/"+itoa(f.ID)+"/responses", body, 201)
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

// submitBody replies every field of f, as seed.mjs does.
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

// serve runs one request through the handler and checks its status. The reply is
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

// fuzzServe runs one request through the handler and checks the rules every reply
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
		t.Fatalf("%s %s %q: reply %d %q is not JSON (%s)", method, path, body, w.Code, w.Body, ct)
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

// occupyHeavy takes every heavy slot; the function it returns gives them back.
func occupyHeavy(t *testing.T, s *server) func() {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a leaked slot fails
	defer cancel()
	if err := s.slots.Acquire(ctx, heavySlots); err != nil {
		t.Fatalf("take every heavy slot: %v (one never given back?)", err)
	}
	return func() { s.slots.Release(heavySlots) }
}

// serviceBinary is the service built once for the tests that run it as a process; a
// failed build fails the test.
func serviceBinary(t *testing.T) string {
	t.Helper()
	bin, err := builtBinary()
	if err != nil {
		t.Fatalf("build the service: %v", err)
	}
	return bin
}

// builtBinary builds the service once per test run, for the tests that run it as an
// operator does: the hostile suite, the binary away from its checkout, backups.
var builtBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "formsvc-hostile")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "formsvc")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// fullForm uses every field type, descriptions present, empty and absent, and an
// unnamed category.
func fullForm() map[string]any {
	return map[string]any{"title": "Site inspection", "description": "Yearly check",
		"categories": []any{
			map[string]any{"name": "General", "fields": []any{
				map[string]any{"label": "Inspector", "type": "text", "description": "Full name"},
				map[string]any{"label": "Rooms", "type": "number", "description": ""},
				map[string]any{"label": "Visited", "type": "date"},
			}},
			map[string]any{"fields": []any{
				map[string]any{"label": "Notes", "type": "textarea"},
				map[string]any{"label": "Passed", "type": "boolean"},
			}},
		}}
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
