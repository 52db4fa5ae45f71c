package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startRun starts the real service through run on a free port and returns its base URL,
// a channel with run's result, and its log.
func startRun(t *testing.T, ctx context.Context, env map[string]string) (string, <-chan error, *syncBuffer) {
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
			return base, done, stderr
		}
		select {
		case err := <-done:
			t.Fatalf("run returned during start-up: %v\n%s", err, stderr)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("run did not print its address: %s", stderr)
	return "", nil, nil
}

// TestRunShutdownKeepsAcknowledged starts the real server, submits, cancels the context as
// SIGTERM would and reopens the database: every acknowledged response is there.
func TestRunShutdownKeepsAcknowledged(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "run.db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, done, _ := startRun(t, ctx, map[string]string{"ADDR": "127.0.0.1:0", "DATABASE_PATH": dbPath})

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
	// Only "backup" writes a copy: another word of two arguments is a usage error, and
	// writes nothing.
	dir := t.TempDir()
	dbPath, dest := filepath.Join(dir, "forms.db"), filepath.Join(dir, "copy.db")
	store, err := OpenStore(context.Background(), dbPath, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	store.Close()
	err = run(context.Background(), []string{"bakup", dest}, func(k string) string { return map[string]string{"DATABASE_PATH": dbPath}[k] }, &syncBuffer{}, &syncBuffer{})
	if _, statErr := os.Stat(dest); err == nil || !strings.Contains(err.Error(), "usage") || statErr == nil {
		t.Errorf("run bakup DEST = %v (DEST %v), want a usage error and no file", err, statErr)
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
	return startProcess(t, cmd)
}

// startProcess starts cmd, a service process, waits until it has printed its address
// and answers /healthz, and kills it when the test ends.
func startProcess(t *testing.T, cmd *exec.Cmd) *child {
	t.Helper()
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

// writeLoad submits responses from 32 clients until stop is closed. Its first result
// returns the ids acknowledged so far; its second waits for the clients to end and
// returns every acknowledged id.
func writeLoad(base string, formID int64, stop <-chan struct{}) (sofar, all func() []int64) {
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
	sofar = func() []int64 {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(acked)
	}
	return sofar, func() []int64 {
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
	sofar  func() []int64 // what was acknowledged so far
	acked  func() []int64 // after stop: waits for the clients, returns what was acknowledged
}

func startLoadedChild(t *testing.T) loadedChild {
	t.Helper()
	dbPath := filepath.Join(t.TempDir(), "load.db")
	c := startChild(t, "DATABASE_PATH="+dbPath)
	formID := createLoadForm(t, c.base)
	stop := make(chan struct{})
	sofar, acked := writeLoad(c.base, formID, stop)
	waitRows(t, dbPath, 300)
	return loadedChild{child: c, dbPath: dbPath, formID: formID, stop: stop, sofar: sofar, acked: acked}
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
	t.Parallel()
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
	t.Parallel()
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

// TestBinaryAwayFromCheckout: the built binary, run from a folder that holds nothing of
// the checkout and with no prompt variables set, runs a summary with its built-in template.
func TestBinaryAwayFromCheckout(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the service (seconds); -short skips it")
	}
	bin, err := builtBinary()
	if err != nil {
		t.Fatal(err)
	}
	tracker := &fakeTracker{t: t, issues: []map[string]any{issue(1, mantisDate(time.Now()))}}
	model := &fakeModel{t: t, answer: "The summary."}
	ts, ms := httptest.NewServer(tracker), httptest.NewServer(model)
	defer ts.Close()
	defer ms.Close()
	cmd := exec.Command(bin)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "ADDR=127.0.0.1:0", "DATABASE_PATH=forms.db",
		"TRACKER_API_ENDPOINT="+ts.URL+"/api/rest", "TRACKER_API_KEY="+testTrackerKey,
		"GENAI_API_KEY="+testModelKey, "GENAI_BASE_URL="+ms.URL+"/v1", "GENAI_MODEL=test-model",
		"TRACKER_PROMPT_FILE=", "EMAIL_PROMPT_FILE=")
	c := startProcess(t, cmd)
	res, err := http.Get(c.base + "/api/tracker-summary")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("GET /api/tracker-summary = %d %s\n%s", res.StatusCode, body, c.stderr)
	}
	if calls := model.calls(); len(calls) != 1 || !strings.HasPrefix(calls[0], "You are writing the daily briefing of a software team for ") {
		t.Errorf("prompts sent = %.200q, want the built-in tracker template", calls)
	}
	if strings.Contains(c.stderr.String(), "level=ERROR") {
		t.Errorf("the service logged an error:\n%s", c.stderr)
	}
}

// TestBackupDuringWriteLoad: formsvc backup, run as the operator runs it while the
// service takes a 32-client write load, writes a copy that passes integrity_check and
// holds every response acknowledged before the backup began; a second backup onto it is
// refused with a one-line message and exit status 1, the copy unchanged.
func TestBackupDuringWriteLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the service and loads it (seconds); -short skips it")
	}
	bin, err := builtBinary()
	if err != nil {
		t.Fatal(err)
	}
	c := startLoadedChild(t)
	defer close(c.stop)
	before := c.sofar()
	dest := filepath.Join(t.TempDir(), "backup.db")
	backup := func() (string, string, error) {
		cmd := exec.Command(bin, "backup", dest)
		cmd.Env = append(os.Environ(), "DATABASE_PATH="+c.dbPath)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	out, errOut, err := backup()
	if err != nil {
		t.Fatalf("formsvc backup: %v\n%s%s", err, out, errOut)
	}
	if !strings.HasPrefix(out, "backup of "+c.dbPath+" written to "+dest) {
		t.Errorf("formsvc backup printed %q", out)
	}
	if n := len(c.sofar()); n == len(before) {
		t.Errorf("no write was acknowledged while the backup ran (%d before and after)", n)
	}
	copied, err := os.ReadFile(dest)
	if err != nil {
		t.Fatal(err)
	}
	checkDatabase(t, dest, c.formID, before)

	if err := os.WriteFile(dest, copied, 0o600); err != nil { // checkDatabase opened it
		t.Fatal(err)
	}
	out, errOut, err = backup()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || out != "" ||
		errOut != "backup of "+c.dbPath+": "+dest+" already exists; a backup never replaces a file\n" {
		t.Errorf("a backup onto an existing file: %v, stdout %q, stderr %q", err, out, errOut)
	}
	if again, _ := os.ReadFile(dest); !bytes.Equal(again, copied) {
		t.Errorf("a refused backup changed the existing file")
	}
}

// TestRestoreFromBackup follows README's restore: stop the service, put the backup in
// place of the database (its -wal and -shm removed), start: the service serves what the
// backup held and nothing written after it.
func TestRestoreFromBackup(t *testing.T) {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "forms.db")
	ctx, cancel := context.WithCancel(context.Background())
	base, done, _ := startRun(t, ctx, map[string]string{"ADDR": "127.0.0.1:0", "DATABASE_PATH": dbPath})
	kept := createLoadForm(t, base)
	dest := filepath.Join(dir, "backup.db")
	if err := run(context.Background(), []string{"backup", dest}, func(k string) string {
		return map[string]string{"DATABASE_PATH": dbPath}[k]
	}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	lost := createLoadForm(t, base)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(dbPath + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	copyFile(t, dest, dbPath)
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	base, done, _ = startRun(t, ctx, map[string]string{"ADDR": "127.0.0.1:0", "DATABASE_PATH": dbPath})
	for id, want := range map[int64]int{kept: 200, lost: 404} {
		res, err := http.Get(fmt.Sprintf("%s/api/forms/%d", base, id))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("form %d after the restore = %d, want %d", id, res.StatusCode, want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestLitestreamReplica follows README's Litestream recipe with docs/litestream.yml and
// Litestream itself: the service under a 32-client write load, `litestream replicate` to
// a file replica, kill -9 of the service and, once the replica holds its last commit, of
// Litestream; `litestream restore` then gives a database that passes integrity_check and
// holds every acknowledged response. A restore from a replica that does not exist fails
// with Litestream's error and writes nothing.
func TestLitestreamReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the service and Litestream as processes (seconds); -short skips it")
	}
	litestream, err := exec.LookPath("litestream")
	if err != nil {
		notInstalled(t, "litestream (v0.3.13) is not installed; .ci/run installs it: go install github.com/benbjohnson/litestream/cmd/litestream@v0.3.13")
	}
	config, err := filepath.Abs("docs/litestream.yml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	replica := filepath.Join(dir, "replica")
	env := func(dbPath string) []string {
		return append(os.Environ(), "DATABASE_PATH="+dbPath, "LITESTREAM_REPLICA_URL=file://"+replica)
	}
	litestreamCmd := func(dbPath string, args ...string) *exec.Cmd {
		cmd := exec.Command(litestream, args...)
		cmd.Env = env(dbPath)
		return cmd
	}
	// restore restores the replica of dbPath into a new file and reports Litestream's exit.
	restore := func(dbPath, out string) ([]byte, error) {
		return litestreamCmd(dbPath, "restore", "-config", config, "-o", out, dbPath).CombinedOutput()
	}

	c := startLoadedChild(t)
	replicating := litestreamCmd(c.dbPath, "replicate", "-config", config)
	var replicateLog syncBuffer
	replicating.Stdout, replicating.Stderr = &replicateLog, &replicateLog
	if err := replicating.Start(); err != nil {
		t.Fatal(err)
	}
	replicated := make(chan struct{}) // closed when Litestream has exited
	go func() {
		replicating.Wait()
		close(replicated)
	}()
	t.Cleanup(func() {
		replicating.Process.Kill()
		<-replicated
	})
	waitRows(t, c.dbPath, 1500) // the load goes on while Litestream takes its snapshot and ships the WAL

	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.done
	close(c.stop)
	acked := c.acked()

	// Litestream ships what the killed service committed: wait until a restore holds
	// every acknowledged response, then kill it too. A probe restored while Litestream
	// still writes the replica may fail or come out malformed (seen once in a loaded
	// full run): v0.3.13's Replica.Restore (replica.go) lists the snapshots, then the WAL
	// segments, in separate reads of a folder that is being written. Such a probe is
	// only not caught up yet; the restore checked below runs once nothing writes the
	// replica, as README's restore does.
	deadline := time.Now().Add(30 * time.Second)
	for n := 0; ; n++ {
		out := filepath.Join(dir, fmt.Sprintf("probe%d.db", n))
		msg, err := restore(c.dbPath, out)
		if err == nil {
			var got int
			if got, err = countResponses(out); err == nil && got >= len(acked) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica never caught up with %d acknowledged responses: %v %s\nlitestream replicate:\n%s", len(acked), err, msg, &replicateLog)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := replicating.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-replicated

	restored := filepath.Join(dir, "restored.db")
	if msg, err := restore(c.dbPath, restored); err != nil {
		t.Fatalf("litestream restore: %v\n%s", err, msg)
	}
	checkDatabase(t, restored, c.formID, acked)

	os.RemoveAll(replica)
	missing := filepath.Join(dir, "from-missing.db")
	msg, err := restore(c.dbPath, missing)
	if err == nil || !strings.Contains(string(msg), "no matching backups found") {
		t.Errorf("restore from a missing replica: %v\n%s", err, msg)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("restore from a missing replica left %s: %v", missing, err)
	}
}

// countResponses is the number of responses in the database file at path, read-only.
func countResponses(path string) (int, error) {
	db, err := sql.Open("sqlite3", path+"?mode=ro")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int
	err = db.QueryRow(`SELECT count(*) FROM responses`).Scan(&n)
	return n, err
}

// TestSystemdUnits: docs/formsvc.service and docs/litestream.service pass systemd-analyze
// verify (with their ExecStart pointed at the binary just built, since verify checks that
// the program exists), keep the hardening README promises, and systemd-analyze security
// rates each one's exposure OK.
func TestSystemdUnits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the service (seconds); -short skips it")
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		notInstalled(t, "systemd-analyze is not installed (Debian's systemd package; .ci/run installs it)")
	}
	bin, err := builtBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var paths []string
	for _, unit := range []struct {
		name, program string
		lines         []string
	}{
		{"formsvc.service", "/usr/local/bin/formsvc", []string{"ExecStart=/usr/local/bin/formsvc", "StateDirectory=formsvc",
			"Restart=on-failure", "After=litestream.service"}},
		{"litestream.service", "/usr/local/bin/litestream", []string{"ExecStart=/usr/local/bin/litestream replicate -config /etc/formsvc/litestream.yml",
			"Before=formsvc.service"}},
	} {
		text, err := os.ReadFile(filepath.Join("docs", unit.name))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range append(unit.lines, "User=formsvc", "EnvironmentFile=/etc/formsvc/formsvc.env", "Restart=on-failure",
			"NoNewPrivileges=yes", "ProtectSystem=strict", "ReadWritePaths=/var/lib/formsvc", "PrivateTmp=yes", "ProtectHome=yes") {
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(line) + `$`).Match(text) {
				t.Errorf("docs/%s lacks %s", unit.name, line)
			}
		}
		path := filepath.Join(dir, unit.name)
		writeFile(t, path, strings.Replace(string(text), "ExecStart="+unit.program, "ExecStart="+bin, 1))
		paths = append(paths, path)

		out, err := exec.Command(analyze, "security", "--offline=yes", path).CombinedOutput()
		m := regexp.MustCompile(`Overall exposure level for ` + regexp.QuoteMeta(unit.name) + `: (\d+\.\d+) (\w+)`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("systemd-analyze security %s: %v\n%s", unit.name, err, out)
		}
		if exposure, _ := strconv.ParseFloat(string(m[1]), 64); exposure > 2 {
			t.Errorf("systemd-analyze security rates %s %s %s, want at most 2.0:\n%s", unit.name, m[1], m[2], out)
		} else {
			t.Logf("systemd-analyze security %s: %s %s", unit.name, m[1], m[2])
		}
	}
	if out, err := exec.Command(analyze, append([]string{"verify"}, paths...)...).CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestEnvironmentFile: every variable docs/formsvc.env sets, or shows commented out, is
// one the service reads (or Litestream's, for docs/litestream.yml), so that a typo in the
// example cannot pass for configuration.
func TestEnvironmentFile(t *testing.T) {
	t.Parallel()
	read := map[string]bool{"TZ": true, "LITESTREAM_REPLICA_URL": true}
	loadConfig(func(k string) string { read[k] = true; return "" })
	data, err := os.ReadFile("docs/formsvc.env")
	if err != nil {
		t.Fatal(err)
	}
	assignment := regexp.MustCompile(`^#?([A-Z][A-Z0-9_]*)=`)
	var names []string
	for line := range strings.Lines(string(data)) {
		if m := assignment.FindStringSubmatch(line); m != nil {
			names = append(names, m[1])
			if !read[m[1]] {
				t.Errorf("docs/formsvc.env sets %s, which nothing reads", m[1])
			}
		}
	}
	for _, want := range []string{"ADDR", "DATABASE_PATH", "API_TOKEN", "ALLOWED_HOSTS"} {
		if !slices.Contains(names, want) {
			t.Errorf("docs/formsvc.env does not show %s", want)
		}
	}
}

// TestReverseProxy runs README's two reverse-proxy recipes as written, Caddy's and
// nginx's, with Debian's caddy and nginx in front of three services, as an operator
// deploys one: TLS (Caddy's internal root, which the client trusts through the file
// README names; for nginx a certificate made here); the Host the client asked for reaches
// the service, so ALLOWED_HOSTS and API_TOKEN decide as they do without a proxy; a body
// over 1 MiB gets the service's 413, status, type and body (Caddy passes the service's
// on, nginx answers it itself as README configures it); the request log names the proxy
// as the client.
func TestReverseProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the service, Caddy and nginx as processes (seconds); -short skips it")
	}
	for _, proxy := range []struct {
		name  string
		start func(t *testing.T, upstreams map[string]*child) *http.Client
	}{
		{"Caddy", startCaddy},
		{"nginx", startNginx},
	} {
		t.Run(proxy.name, func(t *testing.T) {
			const token = "proxy-test-token-0123456789"
			dir := t.TempDir()
			upstreams := map[string]*child{
				"forms.example.com": startChild(t, "DATABASE_PATH="+filepath.Join(dir, "allowed.db"), "ALLOWED_HOSTS=forms.example.com"),
				"open.example.com":  startChild(t, "DATABASE_PATH="+filepath.Join(dir, "open.db")),
				"token.example.com": startChild(t, "DATABASE_PATH="+filepath.Join(dir, "token.db"), "API_TOKEN="+token),
			}
			client := proxy.start(t, upstreams)
			checkThroughProxy(t, client, token)
			// The client connects from 127.0.0.2, the proxy from 127.0.0.1, and Caddy's
			// X-Forwarded-For names 127.0.0.2: the log names the TCP peer, the proxy.
			for host, c := range upstreams {
				log := c.stderr.String()
				if !regexp.MustCompile(`msg=request client=127\.0\.0\.1:\d+ method=GET path=/api/forms`).MatchString(log) || strings.Contains(log, "127.0.0.2") {
					t.Errorf("%s: the request log does not name the proxy (127.0.0.1) as the client, or names the client (127.0.0.2):\n%s", host, log)
				}
			}
		})
	}
}

// checkThroughProxy sends TestReverseProxy's requests through client to the three
// services of the names forms.example.com (in ALLOWED_HOSTS), open.example.com (not) and
// token.example.com (API_TOKEN token), and checks each answer.
func checkThroughProxy(t *testing.T, client *http.Client, token string) {
	t.Helper()
	over := strings.Repeat("a", 2<<20)
	cases := []struct {
		name, host, method, path, auth, body string
		status                               int
		want                                 string // the answer, whole; empty: any
	}{
		{"health", "forms.example.com", "GET", "/healthz", "", "", 200, `{"status":"ok"}`},
		{"a name in ALLOWED_HOSTS is served", "forms.example.com", "GET", "/api/forms", "", "", 200, ""},
		{"a form created through the proxy", "forms.example.com", "POST", "/api/forms", "", `{"title":"Via the proxy","categories":[]}`, 201, ""},
		{"a body just under 1 MiB reaches the service", "forms.example.com", "POST", "/api/forms", "", `{"title":""}` + strings.Repeat(" ", 1<<20-12), 400, `{"error":"Form title is required"}`},
		{"a name not in ALLOWED_HOSTS: the client's Host reached the service", "open.example.com", "GET", "/api/forms", "", "", 403, `{"error":"Host not allowed"}`},
		{"API_TOKEN set, no token", "token.example.com", "GET", "/api/forms", "", "", 401, `{"error":"Unauthorized"}`},
		{"API_TOKEN set, the token", "token.example.com", "GET", "/api/forms", "Bearer " + token, "", 200, ""},
		{"a body over 1 MiB: the service's 413", "forms.example.com", "POST", "/api/forms", "", over, 413, `{"error":"Request body too large"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, "https://"+tc.host+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			res, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tc.status || tc.want != "" && strings.TrimSpace(string(body)) != tc.want {
				t.Errorf("%s https://%s%s = %d %.200s, want %d %s", tc.method, tc.host, tc.path, res.StatusCode, body, tc.status, tc.want)
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
				t.Errorf("Content-Type %q, want the service's application/json; charset=utf-8", ct)
			}
		})
	}
}

// readmeBlock is the code block README's "Reverse proxy" gives after the words after,
// which must hold each of wants.
func readmeBlock(t *testing.T, after string, wants ...string) string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "**Reverse proxy.**")
	if ok {
		_, rest, ok = strings.Cut(rest, after)
	}
	if ok {
		_, rest, ok = strings.Cut(rest, "```\n")
	}
	block, _, closed := strings.Cut(rest, "```\n")
	for _, want := range wants {
		ok = ok && strings.Contains(block, want)
	}
	if !ok || !closed {
		t.Fatalf("README's Reverse proxy section has no code block after %q holding %q:\n%s", after, wants, block)
	}
	return block
}

// startCaddy runs caddy with README's Caddyfile, its site block repeated for each name
// of upstreams (proxying to that service), with its state in a temporary folder, and
// answers a client that trusts Caddy's root as README tells clients to.
func startCaddy(t *testing.T, upstreams map[string]*child) *http.Client {
	t.Helper()
	caddy, err := exec.LookPath("caddy")
	if err != nil {
		notInstalled(t, "caddy is not installed; .ci/run installs Debian's caddy")
	}
	global, site, _ := strings.Cut(readmeBlock(t, "[Caddy]", "\nforms.example.com {", "reverse_proxy 127.0.0.1:8080"), "\nforms.example.com {")
	site = "forms.example.com {" + site
	state := t.TempDir()
	root := filepath.Join(state, "data/caddy/pki/authorities/local/root.crt")
	start := func(httpsPort string) *exec.Cmd {
		// admin off, the ports and loopback: a test's Caddy must not take :2019, :80 or
		// :443, nor listen beyond the machine.
		conf := strings.Replace(global, "{\n", fmt.Sprintf("{\n\tadmin off\n\tdefault_bind 127.0.0.1\n\thttp_port %s\n\thttps_port %s\n", freePort(t), httpsPort), 1) + "\n"
		for host, c := range upstreams {
			s := strings.ReplaceAll(site, "forms.example.com", host)
			conf += strings.ReplaceAll(s, "127.0.0.1:8080", strings.TrimPrefix(c.base, "http://"))
		}
		path := filepath.Join(state, "Caddyfile")
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(caddy, "run", "--config", path, "--adapter", "caddyfile")
		cmd.Env = append(os.Environ(), "HOME="+state, "XDG_DATA_HOME="+filepath.Join(state, "data"), "XDG_CONFIG_HOME="+filepath.Join(state, "config"))
		return cmd
	}
	trust := func() (*x509.CertPool, bool) {
		data, err := os.ReadFile(root) // written once Caddy has made its authority
		pool := x509.NewCertPool()
		return pool, err == nil && pool.AppendCertsFromPEM(data)
	}
	return runProxy(t, start, trust, slices.Collect(maps.Keys(upstreams)))
}

// startNginx runs nginx with README's server block, repeated for each name of upstreams
// (proxying to that service) with a certificate made here for every name, and answers a
// client that trusts that certificate.
func startNginx(t *testing.T, upstreams map[string]*child) *http.Client {
	t.Helper()
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		nginx, err = exec.LookPath("/usr/sbin/nginx") // Debian's, outside a user's PATH
	}
	if err != nil {
		notInstalled(t, "nginx is not installed; .ci/run installs Debian's nginx")
	}
	server := readmeBlock(t, "With nginx", "listen 443 ssl;", "server_name forms.example.com;", "proxy_pass http://127.0.0.1:8080;")
	state := t.TempDir()
	// nginx started by root runs its workers as nobody, who must reach its temporary
	// folders here.
	for _, dir := range []string{state, filepath.Dir(state)} {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hosts := slices.Collect(maps.Keys(upstreams))
	certFile, keyFile, pool := selfSigned(t, state, hosts)
	start := func(httpsPort string) *exec.Cmd {
		conf := fmt.Sprintf("daemon off;\nerror_log stderr;\npid %s;\nevents {}\nhttp {\n\taccess_log off;\n\tclient_body_temp_path %s;\n\tproxy_temp_path %s;\n",
			filepath.Join(state, "nginx.pid"), filepath.Join(state, "body"), filepath.Join(state, "proxy"))
		for host, c := range upstreams {
			s := regexp.MustCompile(`ssl_certificate\s+\S+;`).ReplaceAllString(server, "ssl_certificate "+certFile+";")
			s = regexp.MustCompile(`ssl_certificate_key\s+\S+;`).ReplaceAllString(s, "ssl_certificate_key "+keyFile+";")
			s = strings.Replace(s, "listen 443 ssl;", "listen 127.0.0.1:"+httpsPort+" ssl;", 1)
			s = strings.ReplaceAll(s, "forms.example.com", host)
			conf += strings.ReplaceAll(s, "127.0.0.1:8080", strings.TrimPrefix(c.base, "http://"))
		}
		conf += "}\n"
		path := filepath.Join(state, "nginx.conf")
		if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		return exec.Command(nginx, "-p", state, "-c", path)
	}
	return runProxy(t, start, func() (*x509.CertPool, bool) { return pool, true }, hosts)
}

// selfSigned writes a self-signed certificate for hosts and its key into dir, and
// answers their files and a pool that trusts the certificate.
func selfSigned(t *testing.T, dir string, hosts []string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: hosts[0]},
		DNSNames:              hosts,
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	writeFile(t, certFile, string(certPEM))
	writeFile(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})))
	pool = x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return certFile, keyFile, pool
}

// runProxy starts the proxy that start makes for a free HTTPS port, stops it when the
// test ends, and answers a client that trusts the pool trust gives and reaches every name
// at that port, from 127.0.0.2, once the proxy serves /healthz for each of hosts (Caddy
// gets each name's certificate after it starts). A port another process took between
// freePort and the proxy's start is tried again with others.
func runProxy(t *testing.T, start func(httpsPort string) *exec.Cmd, trust func() (*x509.CertPool, bool), hosts []string) *http.Client {
	t.Helper()
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		cmd := start(port)
		var log syncBuffer
		cmd.Stdout, cmd.Stderr = &log, &log
		// Its own process group, killed whole at the end: nginx's workers outlive a
		// killed master, and hold the log's pipe open.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() {
			cmd.Wait()
			close(exited)
		}()
		t.Cleanup(func() {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		})
		client, err := proxyReady(port, trust, hosts, exited)
		switch {
		case err == nil:
			return client
		case attempt < 3 && strings.Contains(log.String(), "address already in use"):
			continue
		}
		t.Fatalf("%s: %v\n%s", filepath.Base(cmd.Path), err, &log)
	}
}

// proxyReady polls the proxy at 127.0.0.1:port until it serves /healthz for each of hosts,
// for 30 s at most or until exited is closed.
func proxyReady(port string, trust func() (*x509.CertPool, bool), hosts []string, exited <-chan struct{}) (*http.Client, error) {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		select {
		case <-exited:
			return nil, errors.New("exited during start-up")
		default:
		}
		pool, ok := trust()
		if !ok {
			continue
		}
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool},
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
				return d.DialContext(ctx, network, "127.0.0.1:"+port)
			},
		}}
		if servesAll(client, hosts) {
			return client, nil
		}
	}
	return nil, errors.New("did not serve /healthz for every name within 30 s")
}

// servesAll reports whether https://<host>/healthz answers 200 through client for each
// of hosts.
func servesAll(client *http.Client, hosts []string) bool {
	for _, host := range hosts {
		res, err := client.Get("https://" + host + "/healthz")
		if err != nil {
			return false
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return false
		}
	}
	return true
}

// freePort is a TCP port on loopback that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// TestDatabaseFolderNotWritable: the service started with DATABASE_PATH in a folder that
// is missing, is a file, or that its user may not write (a folder of mode 0555; as root,
// the service runs as nobody, for whom root's rights do not hold) exits with status 1
// and one line naming the variable, the folder and why, and creates nothing. SQLite's own
// error named no folder, and said "no such file or directory" for the read-only one too.
func TestDatabaseFolderNotWritable(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the service as a process; -short skips it")
	}
	// A folder every user may enter, with a copy of this test binary every user may run.
	top := t.TempDir()
	if err := os.Chmod(top, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(top), 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(top, "formsvc.test")
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	readOnly := filepath.Join(top, "read-only")
	if err := os.Mkdir(readOnly, 0o555); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(top, "a-file")
	writeFile(t, file, "not a folder")
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	// Under go test -cover the child writes its counters here, not to a folder of root's.
	coverage := filepath.Join(top, "coverage")
	if err := os.Mkdir(coverage, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(coverage, 0o777); err != nil { // past the umask
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, folder, why string
		userMatters       bool // root may write any folder: then the service runs as nobody
	}{
		{"missing", filepath.Join(top, "none"), "no such file or directory", false},
		{"a file", file, "not a directory", false},
		{"not writable by the service's user", readOnly, "permission denied", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin)
			cmd.Env = append(os.Environ(), "FORMSVC_TEST_SERVE=1", "ADDR=127.0.0.1:0", "DATABASE_PATH="+filepath.Join(tc.folder, "forms.db"), "GOCOVERDIR="+coverage)
			asNobody := tc.userMatters && os.Getuid() == 0
			if asNobody {
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			}
			out, err := cmd.CombinedOutput()
			if cmd.ProcessState == nil && asNobody {
				notInstalled(t, "cannot run the service as nobody here (a TMPDIR only root may enter, or no uid 65534 in this user namespace): %v", err)
			}
			if cmd.ProcessState == nil {
				t.Fatalf("the service did not start: %v", err)
			}
			want := "DATABASE_PATH: database folder " + tc.folder + " cannot be written: " + tc.why + "\n"
			if code := cmd.ProcessState.ExitCode(); code != 1 || string(out) != want {
				t.Errorf("exit status %d (%v), output:\n%s\nwant status 1 and:\n%s", code, err, out, want)
			}
		})
	}
	if entries, err := os.ReadDir(readOnly); err != nil || len(entries) != 0 {
		t.Errorf("the read-only folder holds %v (%v)", entries, err)
	}
}
