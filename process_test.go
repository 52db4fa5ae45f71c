package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
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
	addr := regexp.MustCompile(`msg=listening addr=(\S+)`)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := addr.FindStringSubmatch(stderr.String()); m != nil {
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
	t.Fatalf("run did not log its address: %s", stderr)
	return "", nil, nil
}

func TestRunRejectsBadConfig(t *testing.T) {
	// Cancelled: a value wrongly accepted ends the run at once, not serves until the timeout.
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	err := run(stopped, nil, func(k string) string {
		return map[string]string{"TZ": "Mars/Olympus", "ADDR": "127.0.0.1:0"}[k]
	}, &syncBuffer{}, &syncBuffer{})
	if err == nil || !strings.Contains(err.Error(), "TZ") {
		t.Errorf("run with a bad TZ = %v, want a TZ error", err)
	}
	// Each configuration value that can be wrong stops the start with one line naming it,
	// before the database is created.
	dbPath := filepath.Join(t.TempDir(), "never.db")
	for _, tc := range []struct{ variable, value, want string }{
		{"TRACKER_PROJECT_ID", "abc", `TRACKER_PROJECT_ID "abc": want `},
		{"TRACKER_PROJECT_ID", "0", `TRACKER_PROJECT_ID "0": want `},
		{"TRACKER_INCLUDE_PRIVATE", "yes", `TRACKER_INCLUDE_PRIVATE "yes": want true or false`},
		{"TRACKER_INCLUDE_PRIVATE", "TRUE", `TRACKER_INCLUDE_PRIVATE "TRUE": want true or false`},
		{"TRACKER_INCLUDE_PRIVATE", "1", `TRACKER_INCLUDE_PRIVATE "1": want true or false`},
		{"TRACKER_API_ENDPOINT", "tracker.example.com/api/rest", "TRACKER_API_ENDPOINT: want an http or https URL"},
		{"GENAI_BASE_URL", "localhost:11434/v1", "GENAI_BASE_URL: want an http or https URL"},
		{"GENAI_BASE_URL", "http://user:secret@/v1", "GENAI_BASE_URL: want an http or https URL"},
		{"SUMMARY_SCHEDULE", "6:30", `SUMMARY_SCHEDULE "6:30": want `},
		{"ADDR", "nonsense", "ADDR: listen tcp: address nonsense: missing port"},
	} {
		env := map[string]string{"ADDR": "127.0.0.1:0", "DATABASE_PATH": dbPath, tc.variable: tc.value}
		err := run(stopped, nil, func(k string) string { return env[k] }, &syncBuffer{}, &syncBuffer{})
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("run with %s=%s = %v, want %q and no password", tc.variable, tc.value, err, tc.want)
		}
		if _, statErr := os.Stat(dbPath); statErr == nil {
			t.Fatalf("run with %s=%s created the database", tc.variable, tc.value)
		}
	}
	// A folder that cannot take the database is named, with the reason, not our probe's file.
	missing := filepath.Join(t.TempDir(), "missing")
	inMissing := map[string]string{"ADDR": "127.0.0.1:0", "DATABASE_PATH": filepath.Join(missing, "forms.db")}
	err = run(stopped, nil, func(k string) string { return inMissing[k] }, &syncBuffer{}, &syncBuffer{})
	if want := "DATABASE_PATH: database folder " + missing + " cannot be written: no such file or directory"; err == nil || err.Error() != want {
		t.Errorf("run with DATABASE_PATH in a missing folder = %v, want %q", err, want)
	}
	err = run(context.Background(), []string{"extra"}, func(string) string { return "" }, &syncBuffer{}, &syncBuffer{})
	if err == nil {
		t.Errorf("run with arguments = nil, want a usage error")
	}
	// Only "backup" writes a copy: another word of two arguments is a usage error, and
	// writes nothing.
	dbPath, dest := newDatabaseFile(t)
	// A backup needs DATABASE_PATH alone: a typo in another setting does not stop it.
	var out syncBuffer
	env := map[string]string{"DATABASE_PATH": dbPath, "TRACKER_PROJECT_ID": "abc", "TZ": "Mars/Olympus"}
	if err := run(context.Background(), []string{"backup", dest}, func(k string) string { return env[k] }, &out, &syncBuffer{}); err != nil ||
		!strings.HasPrefix(out.String(), "backup of "+dbPath+" written to "+dest) {
		t.Errorf("backup with a bad TRACKER_PROJECT_ID and TZ = %v, %q", err, out.String())
	}
	// A backup that fails (here: DEST taken) is an error naming the database, for cron.
	err = run(context.Background(), []string{"backup", dest}, func(k string) string { return env[k] }, &out, &syncBuffer{})
	if want := "backup of " + dbPath + ": " + dest + " already exists"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("backup onto an existing file = %v, want %q", err, want)
	}
	os.Remove(dest)
	for _, args := range [][]string{{"bakup", dest}, {"backup", dest, "extra"}} {
		err = run(context.Background(), args, func(k string) string { return map[string]string{"DATABASE_PATH": dbPath}[k] }, &syncBuffer{}, &syncBuffer{})
		if _, statErr := os.Stat(dest); err == nil || !strings.Contains(err.Error(), "usage") || statErr == nil {
			t.Errorf("run %q = %v (DEST %v), want a usage error and no file", args, err, statErr)
		}
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

// startProcess starts cmd, a service process, waits until it has logged its address
// and replies /healthz, and kills it when the test ends.
func startProcess(t *testing.T, cmd *exec.Cmd) *child {
	t.Helper()
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
	addr := regexp.MustCompile(`msg=listening addr=(\S+)`)
	deadline := time.After(20 * time.Second)
	for c.base == "" {
		if m := addr.FindStringSubmatch(c.stderr.String()); m != nil {
			c.base = "http://" + m[1]
			break
		}
		select {
		case <-c.done:
			t.Fatalf("service exited during start-up: %v\n%s", c.err, c.stderr)
		case <-deadline:
			t.Fatalf("service did not start:\n%s", c.stderr)
		case <-time.After(10 * time.Millisecond):
		}
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
				if id, ok := submitAcked(client, fmt.Sprintf("%s/api/forms/%d/responses", base, formID), body); ok {
					mu.Lock()
					acked = append(acked, id)
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

// submitAcked posts body as a response to url and returns its id when the service
// acknowledged it: a 201 with the id. An error is the server going away, which
// acknowledged nothing.
func submitAcked(client *http.Client, url, body string) (int64, bool) {
	res, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, false
	}
	defer res.Body.Close()
	var out struct{ ResponseID int64 }
	err = json.NewDecoder(res.Body).Decode(&out)
	return out.ResponseID, res.StatusCode == http.StatusCreated && err == nil
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
	var f savedForm
	if err := json.NewDecoder(res.Body).Decode(&f); err != nil || res.StatusCode != 201 {
		t.Fatalf("create form: %d %v", res.StatusCode, err)
	}
	return f.ID
}

// waitRows waits until the database holds at least n responses.
func waitRows(t *testing.T, dbPath string, n int) {
	t.Helper()
	db := openReadOnly(dbPath)
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

// TestDiskFull: when the database cannot grow, writes reply a JSON 500, reads keep
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
				t.Errorf("disk-full reply = %s, want %s", raw, want)
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
	// A monitor meets what clients meet: 503 with the reason until a write succeeds.
	if status, raw := e.do("GET", "/healthz", nil); status != 503 ||
		strings.TrimSpace(string(raw)) != `{"error":"Database refuses writes: database or disk is full"}` {
		t.Errorf("healthz on a full database = %d %s", status, raw)
	}
	if e.store.WriteRefusal() == "" {
		t.Errorf("healthz's probe cleared the refusal on a full database")
	}
	// Once there is room, /healthz's own probe finds it, with no client writing, and
	// leaves nothing behind.
	if _, err := e.store.write.Exec(`PRAGMA max_page_count = 1000000`); err != nil {
		t.Fatal(err)
	}
	before = e.snapshot()
	if status, raw := e.do("GET", "/healthz", nil); status != 200 {
		t.Errorf("healthz once the database has room = %d %s", status, raw)
	}
	if e.snapshot() != before {
		t.Errorf("healthz's probe left a change behind")
	}
	if status, raw := e.do("POST", "/api/forms/"+itoa(f.ID)+"/responses", map[string]any{"values": map[string]any{field: long}}); status != 201 {
		t.Fatalf("submit once the disk has room = %d %s", status, raw)
	}
}

// TestHealthProbeMustWrite: after a refused write, /healthz turns 200 again only when its
// own probe's write goes through; a probe that fails for another reason keeps the 503.
func TestHealthProbeMustWrite(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	// A trigger fails the probe's insert alone, inside its transaction, which stays open.
	if _, err := e.store.write.Exec(`CREATE TRIGGER no_probe BEFORE INSERT ON settings
		WHEN NEW.key = char(0) || 'probe' BEGIN SELECT RAISE(ABORT, 'no probe'); END`); err != nil {
		t.Fatal(err)
	}
	e.store.refused.Store(new("database or disk is full"))
	if status, raw := e.do("GET", "/healthz", nil); status != 503 {
		t.Errorf("healthz with its probe failing = %d %s, want 503", status, raw)
	}
	if _, err := e.store.write.Exec(`DROP TRIGGER no_probe`); err != nil {
		t.Fatal(err)
	}
	if status, raw := e.do("GET", "/healthz", nil); status != 200 {
		t.Errorf("healthz with its probe writing = %d %s, want 200", status, raw)
	}
	// The probe takes the one write connection as a client's write does, waiting at most
	// writeWait: with the connection held by a long write, /healthz still answers, 503.
	e.store.refused.Store(new("database or disk is full"))
	e.store.writeWait = 100 * time.Millisecond
	conn, err := e.store.write.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if res, raw := e.request(ctx, "GET", "/healthz", nil); res == nil || res.StatusCode != 503 {
		t.Errorf("healthz with the write connection held = %v %s, want 503 within 2 s", res, raw)
	}
}

// TestHealthReadOnlyDatabase: a database that refuses writes as read-only makes /healthz
// 503 with that reason from the first refused write until one succeeds; a write refused
// for the request's own sake (a missing form) changes nothing.
func TestHealthReadOnlyDatabase(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	if status, raw := e.do("DELETE", "/api/forms/999999", nil); status != 404 {
		t.Fatalf("delete of a missing form = %d %s", status, raw)
	}
	if status, raw := e.do("GET", "/healthz", nil); status != 200 {
		t.Fatalf("healthz = %d %s", status, raw)
	}
	if _, err := e.store.write.Exec(`PRAGMA query_only = ON`); err != nil {
		t.Fatal(err)
	}
	for _, write := range []func() int{
		func() int { status, _ := e.do("PUT", "/api/settings/k", map[string]any{"value": "v"}); return status },
		func() int { status, _ := e.do("DELETE", "/api/forms/"+itoa(f.ID), nil); return status },
	} {
		e.store.refused.Store(nil)
		if status := write(); status != 500 {
			t.Fatalf("write to a read-only database = %d", status)
		}
		if status, raw := e.do("GET", "/healthz", nil); status != 503 || !strings.Contains(string(raw), "Database refuses writes: attempt to write a readonly database") {
			t.Errorf("healthz while writes are refused = %d %s", status, raw)
		}
	}
	if _, err := e.store.write.Exec(`PRAGMA query_only = OFF`); err != nil {
		t.Fatal(err)
	}
	if status, _ := e.do("PUT", "/api/settings/k", map[string]any{"value": "v"}); status != 200 {
		t.Fatalf("write once writable = %d", status)
	}
	if status, raw := e.do("GET", "/healthz", nil); status != 200 {
		t.Errorf("healthz after a write succeeded = %d %s", status, raw)
	}
}

// TestOutboundFaults: a tracker or model that hangs, replies garbage or closes the
// connection mid-reply ends the job with a log line within its timeout, while the API
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
		for name, h := range map[string]http.HandlerFunc{"hangs": hang, "replies garbage": garbage, "closes mid-reply": cut} {
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

// TestDatabaseGone: with the database unusable, every endpoint replies docs/SPEC.md's
// 500 `Failed to <context>: <message>` as JSON, no failure keeps the heavy slot it took,
// and healthz reports it.
func TestDatabaseGone(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	e.submit(f.ID, map[string]any{"1": "x"})
	e.store.forms.drop(f.ID) // so that the form read goes to the database
	// A form kept in the cache: the read of its responses is what fails.
	kept := itoa(e.createForm(fullForm()).ID)
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
		{"GET", "/api/forms/" + kept + "/responses", "", "fetch responses for form " + kept},
		{"GET", "/api/forms/" + kept + "/responses.csv", "", "fetch responses for form " + kept},
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
	if !e.srv.slots.TryAcquire(heavySlots) {
		t.Error("a heavy slot is still taken after the failures")
	}
	if status, raw := e.do("GET", "/healthz", nil); status != 503 || strings.TrimSpace(string(raw)) != `{"error":"Database unavailable"}` {
		t.Errorf("healthz = %d %s, want 503", status, raw)
	}
	if want := `msg="health check" err="sql: database is closed"`; !strings.Contains(e.logs.String(), want) {
		t.Errorf("log %q, want the cause of the failed health check: %s", e.logs, want)
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
			want := `shutdown grace; closing their connections" grace=50ms`
			if !strings.Contains(e.logs.String(), want) {
				t.Errorf("the log after the grace ran out lacks %q:\n%s", want, e.logs)
			}
			closed := e.srv.closeStore()
			if stubborn {
				const line = `level=ERROR msg="work still running after the shutdown grace: database left open" jobs=false handlers=true grace=200ms`
				if closed || !strings.Contains(e.logs.String(), line) {
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

// TestStopServingLogsServeError: an error of Serve other than its closing is logged.
func TestStopServingLogsServeError(t *testing.T) {
	e := newTestEnv(t)
	serveErr := make(chan error, 1)
	serveErr <- errors.New("accept: too many open files")
	e.srv.stopServing(&http.Server{}, serveErr)
	want := `msg=serve err="accept: too many open files"`
	if !strings.Contains(e.logs.String(), want) {
		t.Errorf("the log lacks %q:\n%s", want, e.logs)
	}
}

// TestBinaryAwayFromCheckout: the built binary, run from a folder that holds nothing of
// the checkout and with no prompt variables set, runs a summary with its built-in template.
func TestBinaryAwayFromCheckout(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the service (seconds); -short skips it")
	}
	bin := serviceBinary(t)
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
