package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

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
