package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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
	log := &syncBuffer{}
	done, exited := make(chan error, 1), make(chan struct{})
	go func() {
		done <- run(ctx, nil, func(k string) string { return env[k] }, &syncBuffer{}, log)
		close(exited)
	}()
	return listening(t, log, exited), done, log
}

// listening waits until the service's log names the address it listens on and /healthz
// there answers 200, and returns its base URL; a service that exits first fails the test.
func listening(t *testing.T, log *syncBuffer, exited <-chan struct{}) string {
	t.Helper()
	addr := regexp.MustCompile(`msg=listening addr=(\S+)`)
	deadline := time.After(20 * time.Second)
	for {
		if m := addr.FindStringSubmatch(log.String()); m != nil {
			waitHealthy(t, "http://"+m[1])
			return "http://" + m[1]
		}
		select {
		case <-exited:
			t.Fatalf("the service exited during start-up:\n%s", log)
		case <-deadline:
			t.Fatalf("the service did not start:\n%s", log)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	// Each wrong value stops the start with one line naming it, before the database is
	// created. Cancelled: a value wrongly accepted ends the run at once.
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	dbPath := filepath.Join(t.TempDir(), "never.db")
	missing, aFile := filepath.Join(t.TempDir(), "missing"), filepath.Join(t.TempDir(), "a-file")
	writeFile(t, aFile, "not a folder")
	for _, tc := range []struct{ variable, value, want string }{
		{"TZ", "Mars/Olympus", "TZ: "},
		{"TZ", ":Mars/Olympus", "TZ: "},
		{"TZ", "/no/such/zone", "TZ: "},
		{"TZ", os.Args[0], "TZ: "}, // a file, but no zone
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
		// Named with the reason, not our probe's file (TestDatabaseFolderNotWritable: a
		// folder the service's user may not write).
		{"DATABASE_PATH", filepath.Join(missing, "forms.db"),
			"DATABASE_PATH: database folder " + missing + " cannot be written: no such file or directory"},
		{"DATABASE_PATH", filepath.Join(aFile, "forms.db"),
			"DATABASE_PATH: database folder " + aFile + " cannot be written: not a directory"},
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
	dbPath, dest := newDatabaseFile(t)
	// A backup needs DATABASE_PATH alone: a typo in another setting does not stop it.
	var out syncBuffer
	env := map[string]string{"DATABASE_PATH": dbPath, "TRACKER_PROJECT_ID": "abc", "TZ": "Mars/Olympus"}
	if err := run(context.Background(), []string{"backup", dest}, func(k string) string { return env[k] }, &out, &syncBuffer{}); err != nil ||
		!strings.HasPrefix(out.String(), "backup of "+dbPath+" written to "+dest) {
		t.Errorf("backup with a bad TRACKER_PROJECT_ID and TZ = %v, %q", err, out.String())
	}
	// A backup that fails (here: DEST taken) is an error naming the database, for cron.
	err := run(context.Background(), []string{"backup", dest}, func(k string) string { return env[k] }, &out, &syncBuffer{})
	if want := "backup of " + dbPath + ": " + dest + " already exists"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("backup onto an existing file = %v, want %q", err, want)
	}
	os.Remove(dest)
	// Only "backup" writes a copy: another word is a usage error, and writes nothing.
	for _, args := range [][]string{{"bakup", dest}, {"backup", dest, "extra"}} {
		err = run(stopped, args, func(k string) string { return map[string]string{"DATABASE_PATH": dbPath}[k] }, &syncBuffer{}, &syncBuffer{})
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

type child struct {
	cmd    *exec.Cmd
	base   string
	stderr *syncBuffer
	done   chan struct{} // closed when the process has exited
}

// startChild starts the test binary as the service on a free port.
func startChild(t *testing.T, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), append([]string{"FORMSVC_TEST_SERVE=1", "ADDR=127.0.0.1:0"}, env...)...)
	return startProcess(t, cmd)
}

// startProcess starts cmd, a service process, and waits until it serves.
func startProcess(t *testing.T, cmd *exec.Cmd) *child {
	t.Helper()
	c := &child{cmd: cmd}
	c.stderr, c.done = startCmd(t, cmd)
	c.base = listening(t, c.stderr, c.done)
	return c
}

// startCmd starts cmd with its output in log, in a process group killed whole when the
// test ends (nginx's workers outlive a killed master and hold the pipe open).
func startCmd(t *testing.T, cmd *exec.Cmd) (log *syncBuffer, exited chan struct{}) {
	t.Helper()
	log, exited = &syncBuffer{}, make(chan struct{})
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	return log, exited
}

func createLoadForm(t *testing.T, base string) int64 {
	t.Helper()
	res, err := testClient.Post(base+"/api/forms", "application/json",
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

// checkDatabase checks that the database file at path is intact and holds every response
// acknowledged before lossFrom (every one, when zero) with its value.
func checkDatabase(t *testing.T, path string, acked map[int64]time.Time, lossFrom time.Time) {
	t.Helper()
	kept, err := responseIDs(path)
	if err != nil {
		t.Fatal(err)
	}
	lost, late := 0, []time.Time{}
	for id, at := range acked {
		switch {
		case kept[id]:
		case lossFrom.IsZero() || at.Before(lossFrom):
			lost++
		default:
			late = append(late, at)
		}
	}
	if len(late) > 0 {
		t.Logf("%d of %d acknowledged lost, the oldest acknowledged at %s (loss allowed from %s)",
			len(late), len(acked), slices.MinFunc(late, time.Time.Compare).Format(time.StampMilli),
			lossFrom.Format(time.StampMilli))
	}
	if lost > 0 || len(kept) == 0 {
		t.Errorf("%d of %d acknowledged responses lost or incomplete (%d kept)",
			lost, len(acked), len(kept))
	}
}

// responseIDs is the ids of the responses stored with a value, once integrity_check passes.
func responseIDs(path string) (map[int64]bool, error) {
	db := openReadOnly(path)
	defer db.Close()
	var integrity string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&integrity); err != nil || integrity != "ok" {
		return nil, fmt.Errorf("integrity_check = %q, %v", integrity, err)
	}
	rows, err := db.Query(`SELECT DISTINCT responseId FROM response_values WHERE value IS NOT NULL`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	ids := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids[id] = true
	}
	return ids, rows.Err()
}

// loadedChild is the service process under a write load, 300 responses acknowledged.
type loadedChild struct {
	*child
	dbPath string
	stop   chan struct{}              // close to end the load
	sofar  func() map[int64]time.Time // the responses acknowledged so far, and when
	acked  func() map[int64]time.Time // after stop, once every client ended: the same
}

// startLoadedChild starts the service and clients that submit a response each one every
// pace at most.
func startLoadedChild(t *testing.T, clients int, pace time.Duration) loadedChild {
	t.Helper()
	dbPath := filepath.Join(t.TempDir(), "load.db")
	c := startChild(t, "DATABASE_PATH="+dbPath)
	url := fmt.Sprintf("%s/api/forms/%d/responses", c.base, createLoadForm(t, c.base))
	stop := make(chan struct{})
	var mu sync.Mutex
	acked := map[int64]time.Time{}
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	for i := range clients {
		wg.Go(func() {
			tick := time.NewTicker(pace)
			defer tick.Stop()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				body := fmt.Sprintf(`{"values": {"1": "client %d answer %d"}}`, i, n)
				res, err := client.Post(url, "application/json", strings.NewReader(body))
				if err != nil {
					continue // the service going away acknowledged nothing
				}
				var out struct{ ResponseID int64 }
				err = json.NewDecoder(res.Body).Decode(&out)
				res.Body.Close()
				if err == nil && res.StatusCode == http.StatusCreated {
					mu.Lock()
					acked[out.ResponseID] = time.Now()
					mu.Unlock()
				}
			}
		})
	}
	sofar := func() map[int64]time.Time {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(acked)
	}
	waitFor(t, func() bool { return len(sofar()) >= 300 })
	all := func() map[int64]time.Time {
		wg.Wait()
		return acked
	}
	return loadedChild{child: c, dbPath: dbPath, stop: stop, sofar: sofar, acked: all}
}

// TestSignalDuringWriteLoad: kill -9 or SIGTERM of the process under 32-client write load
// keeps every acknowledged response. After SIGTERM it exits 0, logging an orderly stop;
// after kill -9 the service restarts on the file.
func TestSignalDuringWriteLoad(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			c := startLoadedChild(t, 32, time.Millisecond)
			if err := c.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-c.done:
			case <-time.After(15 * time.Second):
				t.Fatalf("the process did not exit within 15 s of %v", sig)
			}
			close(c.stop)
			if sig == syscall.SIGKILL {
				startChild(t, "DATABASE_PATH="+c.dbPath) // serving again; killed when the test ends
			} else if code := c.cmd.ProcessState.ExitCode(); code != 0 ||
				!strings.Contains(c.stderr.String(), "msg=stopped") {
				t.Errorf("exit status %d after SIGTERM, want 0 and an orderly stop in the log:\n%s",
					code, c.stderr)
			}
			checkDatabase(t, c.dbPath, c.acked(), time.Time{})
		})
	}
}

// TestDiskFull: when the database cannot grow, writes reply a JSON 500, reads keep
// working, and nothing is half-written. The page limit raises a full disk's SQLITE_FULL.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	id, field := itoa(f.ID), itoa(f.Categories[1].Fields[0].ID)
	var pages int
	if err := e.store.write.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.write.Exec(fmt.Sprintf(`PRAGMA max_page_count = %d`, pages+2)); err != nil {
		t.Fatal(err)
	}
	answer := map[string]any{"values": map[string]any{field: strings.Repeat("x", 3000)}}
	acked, failed := 0, 0
	for range 40 {
		switch status, raw := e.do("POST", "/api/forms/"+id+"/responses", answer); status {
		case 201:
			acked++
		case 500:
			failed++
			if want := `{"error":"Failed to submit response for form ` + id + `: internal error"}`; strings.TrimSpace(string(raw)) != want {
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
	longField := map[string]any{"label": "l", "type": "text", "description": strings.Repeat("x", maxDescriptionChars)}
	big := map[string]any{"title": strings.Repeat("t", maxTitleChars), "description": strings.Repeat("d", maxDescriptionChars),
		"categories": []any{map[string]any{"name": "c", "fields": []any{longField, longField, longField}}}}
	before := e.snapshot()
	for _, w := range []struct {
		method, path string
		body         any
		want         string
	}{
		{"PUT", "/api/settings/k", map[string]any{"value": strings.Repeat("y", 20000)}, "update setting 'k'"},
		{"POST", "/api/forms", big, "create form"},
		{"PUT", "/api/forms/" + id, big, "update form " + id},
	} {
		status, raw := e.do(w.method, w.path, w.body)
		if status != 500 || !strings.HasPrefix(string(raw), `{"error":"Failed to `+w.want+`: `) {
			t.Errorf("%s %s on a full database = %d %s", w.method, w.path, status, raw)
		}
	}
	if e.snapshot() != before {
		t.Errorf("failed writes on a full database changed it")
	}
	var list []listedResponse
	if status := e.doJSON("GET", "/api/forms/"+id+"/responses", nil, &list); status != 200 || len(list) != acked {
		t.Errorf("list on a full database = %d with %d responses, want 200 with the %d acknowledged", status, len(list), acked)
	}
	if n := e.count("response_values"); n != acked {
		t.Errorf("%d values for %d acknowledged responses: a failed write left a part behind", n, acked)
	}
	e.wantNoOrphans()
	// A monitor meets what clients meet: 503 with the reason until a write succeeds; the
	// second asks whether the first one's failed probe cleared the reason.
	for range 2 {
		e.wantError("GET", "/healthz", nil, 503,
			"Database refuses writes: database or disk is full")
	}
	// Once there is room, /healthz's own probe finds it and leaves nothing behind.
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
	if status, raw := e.do("POST", "/api/forms/"+id+"/responses", answer); status != 201 {
		t.Fatalf("submit once the disk has room = %d %s", status, raw)
	}
}

// TestHealthRefusedWrites: a read-only database makes /healthz 503 with that reason from
// the first refused write (one statement, a transaction) until a write, its probe's or a
// client's, succeeds (TestDiskFull: the probe finds the room).
func TestHealthRefusedWrites(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	if _, err := e.store.write.Exec(`PRAGMA query_only = ON`); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct{ method, path, body string }{
		{"PUT", "/api/settings/k", `{"value": "v"}`},
		{"DELETE", "/api/forms/" + itoa(f.ID), ""},
	} {
		e.store.refused.Store(nil)
		if status, raw := e.do(w.method, w.path, w.body); status != 500 {
			t.Fatalf("%s %s on a read-only database = %d %s", w.method, w.path, status, raw)
		}
		e.wantError("GET", "/healthz", nil, 503,
			"Database refuses writes: attempt to write a readonly database")
	}
	if _, err := e.store.write.Exec(`PRAGMA query_only = OFF`); err != nil {
		t.Fatal(err)
	}
	e.do("GET", "/healthz", nil) // its probe's write goes through
	// Once a write went through, healthz no longer probes: with the write connection held
	// it answers 200 at once, where a probe would wait for the connection and fail.
	e.store.writeWait = 100 * time.Millisecond
	held, err := e.store.write.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if status, raw := e.do("GET", "/healthz", nil); status != 200 {
		t.Errorf("healthz after the database took a write, its connection held = %d %s", status, raw)
	}
	// After a refused write, the probe waits for the write connection at most writeWait, as a
	// client's write does.
	e.store.refused.Store(new("database or disk is full"))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if res, raw := e.request(ctx, "GET", "/healthz", nil); res == nil || res.StatusCode != 503 {
		t.Errorf("healthz with the write connection held = %v %s, want 503 within 2 s", res, raw)
	}
	held.Close()
	// A probe that fails for another reason (a trigger refusing its insert alone) keeps the
	// 503 too.
	if _, err := e.store.write.Exec(`CREATE TRIGGER no_probe BEFORE INSERT ON settings
		WHEN NEW.key = char(0) || 'probe' BEGIN SELECT RAISE(ABORT, 'no probe'); END`); err != nil {
		t.Fatal(err)
	}
	e.wantError("GET", "/healthz", nil, 503, "Database refuses writes: database or disk is full")
}

// TestDatabaseGone: with the database unusable, every endpoint replies docs/SPEC.md's
// 500 `Failed to <context>: <message>`, no heavy slot stays taken, and healthz says so.
func TestDatabaseGone(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	e.submit(f.ID, map[string]any{"1": "x"})
	e.store.forms.drop(f.ID)                  // so that the form read goes to the database
	kept := itoa(e.createForm(fullForm()).ID) // cached: the read of its responses fails
	e.store.Close()
	id := itoa(f.ID)
	for _, tc := range []struct{ method, path, body, context string }{
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
	} {
		status, raw := e.do(tc.method, tc.path, tc.body)
		want := `{"error":"Failed to ` + tc.context + ": "
		if status != 500 || !strings.HasPrefix(string(raw), want) {
			t.Errorf("%s %s = %d %s, want 500 %q…", tc.method, tc.path, status, raw, want)
		}
	}
	if !e.srv.slots.TryAcquire(heavySlots) {
		t.Error("a heavy slot is still taken after the failures")
	}
	e.wantError("GET", "/healthz", nil, 503, "Database unavailable")
	if want := `msg="health check" err="sql: database is closed"`; !strings.Contains(e.logs.String(), want) {
		t.Errorf("log %q, want the cause of the failed health check: %s", e.logs, want)
	}
}

// TestShutdownLeavesDatabaseToRunningHandlers: a handler that ignores its cancelled
// context past both graces still finds the database open, and the log says why; one that
// returns when cancelled lets shutdown close it, and a request after that is a 503.
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
			hs := httptest.NewUnstartedServer(e.srv)
			serveErr := make(chan error, 1)
			go func() { serveErr <- hs.Config.Serve(hs.Listener) }()
			go testClient.Get("http://" + hs.Listener.Addr().String() + "/test/slow")
			<-entered

			e.srv.stopServing(hs.Config, serveErr)
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
			// A request whose handler begins now is answered without touching the store.
			w := httptest.NewRecorder()
			e.srv.ServeHTTP(w, apiRequest("GET", "/api/forms", nil))
			if w.Code != 503 || strings.TrimSpace(w.Body.String()) != `{"error":"Shutting down"}` ||
				strings.Contains(e.logs.String(), "database is closed") {
				t.Errorf("a request after the store closed = %d %s, want 503 Shutting down; logs:\n%s",
					w.Code, w.Body, e.logs)
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
