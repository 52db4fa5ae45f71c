package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	mathrand "math/rand/v2"
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
	"syscall"
	"testing"
	"time"
)

// TestBackupDuringWriteLoad: formsvc backup, run as the operator runs it while the
// service takes a 32-client write load, writes a copy that passes integrity_check and
// holds every response acknowledged before the backup began. (TestRunRejectsBadConfig:
// a backup onto an existing file is refused; TestDatabaseFolderNotWritable: how main
// reports a refusal.)
func TestBackupDuringWriteLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the service and loads it (seconds); -short skips it")
	}
	bin := serviceBinary(t)
	c := startLoadedChild(t, 32, time.Millisecond)
	defer close(c.stop)
	before := c.sofar()
	dest := filepath.Join(t.TempDir(), "backup.db")
	cmd := exec.Command(bin, "backup", dest)
	cmd.Env = append(os.Environ(), "DATABASE_PATH="+c.dbPath)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "backup of "+c.dbPath+" written to "+dest) {
		t.Fatalf("formsvc backup: %v\n%s", err, out)
	}
	if n := len(c.sofar()); n == len(before) {
		t.Errorf("no write was acknowledged while the backup ran (%d before and after)", n)
	}
	checkDatabase(t, dest, before, time.Time{})
}

// TestRestoreFromBackup follows docs/DEPLOY.md's restore: stop the service, put the backup in
// place of the database (its -wal and -shm removed), start: the service serves what the
// backup held and nothing written after it.
func TestRestoreFromBackup(t *testing.T) {
	dbPath, dest := newDatabaseFile(t)
	env := map[string]string{"ADDR": "127.0.0.1:0", "DATABASE_PATH": dbPath}
	serve := func() (base string, stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		base, done, _ := startRun(t, ctx, env)
		return base, func() {
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	}
	base, stop := serve()
	kept := createLoadForm(t, base)
	getenv := func(k string) string { return env[k] }
	err := run(context.Background(), []string{"backup", dest}, getenv, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	lost := createLoadForm(t, base)
	stop()

	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(dbPath + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	copyFile(t, dest, dbPath)
	base, stop = serve()
	defer stop()
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
}

// TestLitestreamReplica follows the production page's Litestream recipe with
// docs/litestream.yml and Litestream itself: the service under write load, `litestream
// replicate` to a file replica, kill -9 of the service and, once the replica holds its
// last commit, of Litestream; `litestream restore` then gives a database that passes
// integrity_check and holds every acknowledged response. A restore from a replica that
// does not exist fails with Litestream's error and writes nothing.
func TestLitestreamReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the service and Litestream as processes (seconds); -short skips it")
	}
	ls, restored, acked, _ := killReplicated(t, false)
	checkDatabase(t, restored, acked, time.Time{})

	os.RemoveAll(ls.replica)
	missing := filepath.Join(t.TempDir(), "from-missing.db")
	msg, err := ls.restore(missing)
	if err == nil || !strings.Contains(string(msg), "no matching backups found") {
		t.Errorf("restore from a missing replica: %v\n%s", err, msg)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("restore from a missing replica left %s: %v", missing, err)
	}
}

// TestLitestreamKillBoth: the service and Litestream killed together with SIGKILL under
// write load, as when the machine is lost. The replica's restore passes integrity_check
// and lacks only responses acknowledged in the last moments before the kill: Litestream
// reads the WAL every monitor-interval and ships it every sync-interval (docs/litestream.yml,
// 1 s each), so a lost response was acknowledged at most their sum before the kill, plus
// the time a sync takes (lossBound allows a loaded machine's 2 s; about 1 s was measured).
func TestLitestreamKillBoth(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the service and Litestream as processes (seconds); -short skips it")
	}
	const lossBound = 2*time.Second + 2*time.Second
	_, restored, acked, killed := killReplicated(t, true)
	checkDatabase(t, restored, acked, killed.Add(-lossBound))
}

// killReplicated runs the service under a write load of 4 clients, each one every 10 ms
// at most (a busy small deployment, which leaves Litestream the processor), replicated by
// Litestream, and kills it with SIGKILL at killed: Litestream too when both, else once
// the replica holds every acknowledged response. It returns the replica's restore.
func killReplicated(t *testing.T, both bool) (ls *litestream, restored string,
	acked map[int64]time.Time, killed time.Time) {
	t.Helper()
	c := startLoadedChild(t, 4, 10*time.Millisecond)
	ls = startLitestream(t, c.dbPath)
	ls.waitRestorable(t, 1)                // its first snapshot,
	ls.waitRestorable(t, len(c.sofar())+1) // then the WAL shipped as it comes: Litestream's steady state
	// The load under test, for 2 to 3 s: the probe above ended just after a sync, and a
	// kill a fixed time after it would always meet the same phase of Litestream's ticks.
	time.Sleep(2*time.Second + mathrand.N(time.Second))

	killed = time.Now()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if both {
		ls.kill()
	}
	<-c.done
	close(c.stop)
	acked = c.acked()
	if !both {
		ls.waitRestorable(t, len(acked))
		ls.kill()
	}
	restored = filepath.Join(t.TempDir(), "restored.db")
	if msg, err := ls.restore(restored); err != nil {
		t.Fatalf("litestream restore: %v\n%s", err, msg)
	}
	return ls, restored, acked, killed
}

// litestream is `litestream replicate` with docs/litestream.yml, replicating one database
// to a file replica in a temporary folder.
type litestream struct {
	bin, config, dbPath, replica string
	cmd                          *exec.Cmd
	log                          *syncBuffer
	exited                       chan struct{} // closed when the process has exited
}

// startLitestream starts Litestream replicating dbPath, and kills it when the test ends.
func startLitestream(t *testing.T, dbPath string) *litestream {
	t.Helper()
	bin, err := exec.LookPath("litestream")
	if err != nil {
		notInstalled(t, "litestream (v0.3.13) is not installed; .ci/run installs it: "+
			"go install github.com/benbjohnson/litestream/cmd/litestream@v0.3.13")
	}
	config, err := filepath.Abs("docs/litestream.yml")
	if err != nil {
		t.Fatal(err)
	}
	ls := &litestream{bin: bin, config: config, dbPath: dbPath,
		replica: filepath.Join(t.TempDir(), "replica")}
	ls.cmd = ls.command("replicate", "-config", config)
	ls.log, ls.exited = startCmd(t, ls.cmd)
	return ls
}

func (ls *litestream) command(args ...string) *exec.Cmd {
	cmd := exec.Command(ls.bin, args...)
	cmd.Env = append(os.Environ(), "DATABASE_PATH="+ls.dbPath,
		"LITESTREAM_REPLICA_URL=file://"+ls.replica)
	return cmd
}

// restore restores the replica into the new file out and reports Litestream's exit.
func (ls *litestream) restore(out string) ([]byte, error) {
	return ls.command("restore", "-config", ls.config, "-o", out, ls.dbPath).CombinedOutput()
}

// kill kills Litestream and waits for it to end.
func (ls *litestream) kill() {
	ls.cmd.Process.Kill()
	<-ls.exited
}

// waitRestorable waits, for 30 s at most, until a restore of the replica holds at least n
// responses. A probe restored while Litestream writes the replica may fail or come out
// malformed (seen once in a loaded full run: v0.3.13's Replica.Restore lists snapshots,
// then WAL segments, in separate reads): it is only not caught up yet. A restore that is
// checked runs once nothing writes the replica, as DEPLOY.md's does.
func (ls *litestream) waitRestorable(t *testing.T, n int) {
	t.Helper()
	dir := t.TempDir()
	deadline := time.Now().Add(30 * time.Second)
	for probe := 0; ; probe++ {
		out := filepath.Join(dir, fmt.Sprintf("probe%d.db", probe))
		msg, err := ls.restore(out)
		if err == nil {
			var ids map[int64]bool
			if ids, err = responseIDs(out); err == nil && len(ids) >= n {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica never held %d responses: %v %s\nlitestream replicate:\n%s",
				n, err, msg, ls.log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSystemdUnits: the units in docs/ (the service, Litestream, the backup and its
// timer) pass systemd-analyze verify (with /usr/local/bin/formsvc and litestream pointed
// at the binary just built, since verify checks that a program exists), keep the
// hardening the production page promises, and systemd-analyze security rates each
// service's exposure OK.
func TestSystemdUnits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the service (seconds); -short skips it")
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		notInstalled(t, "systemd-analyze is not installed (Debian's systemd package; .ci/run installs it)")
	}
	bin := serviceBinary(t)
	hardening := []string{"User=formsvc", "EnvironmentFile=/etc/formsvc/formsvc.env",
		"NoNewPrivileges=yes", "ProtectSystem=strict", "ReadWritePaths=/var/lib/formsvc",
		"PrivateTmp=yes", "ProtectHome=yes"}
	dir := t.TempDir()
	var paths []string
	for _, unit := range []struct {
		name  string
		lines []string
	}{
		{"formsvc.service", append([]string{"ExecStart=/usr/local/bin/formsvc",
			"StateDirectory=formsvc", "Restart=on-failure", "After=litestream.service"},
			hardening...)},
		{"litestream.service", append([]string{
			"ExecStart=/usr/local/bin/litestream replicate -config /etc/formsvc/litestream.yml",
			"Restart=on-failure", "Before=formsvc.service"}, hardening...)},
		{"formsvc-backup.service", append([]string{"Type=oneshot",
			"StateDirectory=formsvc formsvc/backups",
			"ExecStartPost=/usr/bin/find /var/lib/formsvc/backups -name forms-*.db -mtime +14 -delete"},
			hardening...)},
		{"formsvc-backup.timer", []string{"OnCalendar=*-*-* 02:30:00", "Persistent=true",
			"WantedBy=timers.target"}},
	} {
		text, err := os.ReadFile(filepath.Join("docs", unit.name))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range unit.lines {
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(line) + `$`).Match(text) {
				t.Errorf("docs/%s lacks %s", unit.name, line)
			}
		}
		path := filepath.Join(dir, unit.name)
		programs := strings.NewReplacer("/usr/local/bin/formsvc", bin, "/usr/local/bin/litestream", bin)
		writeFile(t, path, programs.Replace(string(text)))
		paths = append(paths, path)
		if !strings.HasSuffix(unit.name, ".service") {
			continue
		}
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

// TestBackupUnit runs docs/formsvc-backup.service's two commands as systemd would (%%
// read as %), in a temporary folder in place of /var/lib/formsvc: the first writes a
// backup named by the date and time, the second deletes the backups older than 14 days
// and keeps the others.
func TestBackupUnit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the service (seconds); -short skips it")
	}
	bin := serviceBinary(t)
	text, err := os.ReadFile("docs/formsvc-backup.service")
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	backups := filepath.Join(state, "backups")
	if err := os.Mkdir(backups, 0o700); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(state, "forms.db")
	copyFile(t, "testdata/forms-before-migrations.db", dbPath) // as before an upgrade
	old, recent := filepath.Join(backups, "forms-old.db"), filepath.Join(backups, "forms-recent.db")
	for file, days := range map[string]int{old: 15, recent: 13} {
		writeFile(t, file, "a backup")
		then := time.Now().AddDate(0, 0, -days)
		if err := os.Chtimes(file, then, then); err != nil {
			t.Fatal(err)
		}
	}

	unit := strings.NewReplacer("%%", "%", "/usr/local/bin/formsvc", bin, "/var/lib/formsvc", state).
		Replace(string(text))
	for _, key := range []string{"ExecStart", "ExecStartPost"} {
		m := regexp.MustCompile(`(?m)^` + key + `=(/\S+) (.*)$`).FindStringSubmatch(unit)
		if m == nil {
			t.Fatalf("docs/formsvc-backup.service has no %s", key)
		}
		args := strings.Fields(m[2])
		if m[1] == "/bin/sh" { // sh -c '<script>'
			args = []string{"-c", strings.Trim(strings.TrimPrefix(m[2], "-c "), "'")}
		}
		cmd := exec.Command(m[1], args...)
		cmd.Env = append(os.Environ(), "DATABASE_PATH="+dbPath)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", key, err, out)
		}
	}
	dated, _ := filepath.Glob(filepath.Join(backups, "forms-2*.db"))
	named := regexp.MustCompile(`/forms-\d{4}-\d\d-\d\dT\d{4}Z\.db$`)
	if len(dated) != 1 || !named.MatchString(dated[0]) {
		t.Errorf("backups named by the date: %q, want one forms-YYYY-MM-DDTHHMMZ.db", dated)
	}
	for file, kept := range map[string]bool{old: false, recent: true} {
		if _, err := os.Stat(file); (err == nil) != kept {
			t.Errorf("%s, kept: %v, want %v", file, err, kept)
		}
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

// TestReverseProxy runs docs/DEPLOY.md's two reverse-proxy recipes as written, Caddy's
// and nginx's, with Debian's caddy and nginx in front of three services, as an operator
// deploys one: TLS (Caddy's internal root, which the client trusts through the file
// DEPLOY.md names; for nginx httptest's certificate); the Host the client asked for
// reaches the service, so ALLOWED_HOSTS and API_TOKEN decide as they do without a proxy;
// a body over 1 MiB gets the service's 413, status, type and body (Caddy passes the
// service's on, nginx answers it itself as DEPLOY.md configures it); the service's
// request log names the proxy as the client, and the proxy's own log the client.
func TestReverseProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the service, Caddy and nginx as processes (seconds); -short skips it")
	}
	for _, proxy := range []struct {
		name   string
		start  func(t *testing.T, upstreams map[string]*child) (*http.Client, *syncBuffer)
		client *regexp.Regexp // in the proxy's log: the client's address, 127.0.0.2
	}{
		{"Caddy", startCaddy, regexp.MustCompile(`"remote_ip":"127\.0\.0\.2"`)},
		{"nginx", startNginx, regexp.MustCompile(`(?m)^127\.0\.0\.2 - - \[`)},
	} {
		t.Run(proxy.name, func(t *testing.T) {
			const token = "proxy-test-token-0123456789"
			dir := t.TempDir()
			upstreams := map[string]*child{
				"forms.example.com": startChild(t, "DATABASE_PATH="+filepath.Join(dir, "allowed.db"), "ALLOWED_HOSTS=forms.example.com"),
				"open.example.com":  startChild(t, "DATABASE_PATH="+filepath.Join(dir, "open.db")),
				"token.example.com": startChild(t, "DATABASE_PATH="+filepath.Join(dir, "token.db"), "API_TOKEN="+token),
			}
			client, proxyLog := proxy.start(t, upstreams)
			over := strings.Repeat("a", 2<<20)
			cases := []struct {
				name, host, method, path, auth, body string
				status                               int
				want                                 string // the answer, whole; empty: any
			}{
				{"a name in ALLOWED_HOSTS is served", "forms.example.com", "GET", "/api/forms", "", "", 200, ""},
				{"a form created through the proxy", "forms.example.com", "POST", "/api/forms", "", `{"title":"Via the proxy","categories":[]}`, 201, ""},
				{"a body just under 1 MiB reaches the service", "forms.example.com", "POST", "/api/forms", "", `{"title":""}` + strings.Repeat(" ", 1<<20-12), 400, `{"error":"Form title is required"}`},
				{"a name not in ALLOWED_HOSTS: the client's Host reached the service", "open.example.com", "GET", "/api/forms", "", "", 403, `{"error":"Host not allowed"}`},
				{"API_TOKEN set, no token", "token.example.com", "GET", "/api/forms", "", "", 401, `{"error":"Unauthorized"}`},
				{"API_TOKEN set, the token", "token.example.com", "GET", "/api/forms", "Bearer " + token, "", 200, ""},
				{"a body over 1 MiB: the service's 413", "forms.example.com", "POST", "/api/forms", "", over, 413, `{"error":"Request body too large"}`},
			}
			for _, tc := range cases {
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
					t.Fatalf("%s: %v", tc.name, err)
				}
				body, err := io.ReadAll(res.Body)
				res.Body.Close()
				// The service's reply, status, type and body, whichever answered it.
				ct := res.Header.Get("Content-Type")
				if err != nil || res.StatusCode != tc.status || ct != jsonType ||
					tc.want != "" && strings.TrimSpace(string(body)) != tc.want {
					t.Errorf("%s: %s https://%s%s = %d %s %.200s (%v), want %d %s %s", tc.name, tc.method,
						tc.host, tc.path, res.StatusCode, ct, body, err, tc.status, jsonType, tc.want)
				}
			}
			if !proxy.client.MatchString(proxyLog.String()) {
				t.Errorf("%s's log does not name the client, 127.0.0.2 (%s):\n%s",
					proxy.name, proxy.client, proxyLog)
			}
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

// deployBlock is the code block docs/DEPLOY.md's "Reverse proxy" gives after the words
// after, which must hold each of wants.
func deployBlock(t *testing.T, after string, wants ...string) string {
	t.Helper()
	page, err := os.ReadFile("docs/DEPLOY.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(page), "\n## Reverse proxy\n")
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
		t.Fatalf("docs/DEPLOY.md's Reverse proxy section has no code block after %q holding %q:\n%s",
			after, wants, block)
	}
	return block
}

// startCaddy runs caddy with docs/DEPLOY.md's Caddyfile, its site block repeated for each
// name of upstreams (proxying to that service), with its state in a temporary folder, and
// answers a client that trusts Caddy's root as DEPLOY.md tells clients to, and Caddy's log.
func startCaddy(t *testing.T, upstreams map[string]*child) (*http.Client, *syncBuffer) {
	t.Helper()
	caddy, err := exec.LookPath("caddy")
	if err != nil {
		notInstalled(t, "caddy is not installed; .ci/run installs Debian's caddy")
	}
	block := deployBlock(t, "[Caddy]", "\nforms.example.com {", "\tlog\n",
		"reverse_proxy 127.0.0.1:8080")
	global, site, _ := strings.Cut(block, "\nforms.example.com {")
	site = "forms.example.com {" + site
	state := t.TempDir()
	root := filepath.Join(state, "data/caddy/pki/authorities/local/root.crt")
	start := func(httpsPort string) *exec.Cmd {
		// admin off, the ports and loopback: a test's Caddy must not take :2019, :80 or
		// :443, nor listen beyond the machine.
		conf := strings.Replace(global, "{\n", fmt.Sprintf("{\n\tadmin off\n\tdefault_bind 127.0.0.1\n\thttp_port %s\n\thttps_port %s\n", freePort(t), httpsPort), 1) + "\n"
		path := filepath.Join(state, "Caddyfile")
		writeFile(t, path, conf+perHost(site, upstreams))
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

// startNginx runs nginx with docs/DEPLOY.md's server block, repeated for each name of
// upstreams (proxying to that service) with a certificate for every name, and
// answers a client that trusts that certificate, and nginx's log. The request log goes
// to stderr, where Debian's nginx.conf sends it to /var/log/nginx/access.log.
func startNginx(t *testing.T, upstreams map[string]*child) (*http.Client, *syncBuffer) {
	t.Helper()
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		nginx, err = exec.LookPath("/usr/sbin/nginx") // Debian's, outside a user's PATH
	}
	if err != nil {
		notInstalled(t, "nginx is not installed; .ci/run installs Debian's nginx")
	}
	server := deployBlock(t, "With nginx", "listen 443 ssl;", "server_name forms.example.com;",
		"proxy_pass http://127.0.0.1:8080;")
	state := t.TempDir()
	// nginx started by root runs its workers as nobody, who must reach its temporary
	// folders here.
	for _, dir := range []string{state, filepath.Dir(state)} {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hosts := slices.Collect(maps.Keys(upstreams))
	certFile, keyFile, pool := exampleCert(t, state)
	for directive, file := range map[string]string{"ssl_certificate": certFile, "ssl_certificate_key": keyFile} {
		re := regexp.MustCompile(directive + `\s+\S+;`)
		server = re.ReplaceAllString(server, directive+" "+file+";")
	}
	start := func(httpsPort string) *exec.Cmd {
		conf := fmt.Sprintf("daemon off;\nerror_log stderr;\npid %s;\nevents {}\nhttp {\n"+
			"\taccess_log /dev/stderr;\n\tclient_body_temp_path %s;\n\tproxy_temp_path %s;\n",
			filepath.Join(state, "nginx.pid"), filepath.Join(state, "body"), filepath.Join(state, "proxy"))
		listen := strings.Replace(server, "listen 443 ssl;", "listen 127.0.0.1:"+httpsPort+" ssl;", 1)
		path := filepath.Join(state, "nginx.conf")
		writeFile(t, path, conf+perHost(listen, upstreams)+"}\n")
		return exec.Command(nginx, "-p", state, "-c", path)
	}
	return runProxy(t, start, func() (*x509.CertPool, bool) { return pool, true }, hosts)
}

// perHost is block, which serves forms.example.com from 127.0.0.1:8080, once for each
// name of upstreams, serving it from that service.
func perHost(block string, upstreams map[string]*child) string {
	var conf strings.Builder
	for host, c := range upstreams {
		s := strings.ReplaceAll(block, "forms.example.com", host)
		conf.WriteString(strings.ReplaceAll(s, "127.0.0.1:8080", strings.TrimPrefix(c.base, "http://")))
	}
	return conf.String()
}

// exampleCert writes the certificate of net/http/httptest's servers, which names
// *.example.com, and its key into dir, and answers their files and a pool that trusts it.
func exampleCert(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	srv := httptest.NewTLSServer(nil)
	srv.Close()
	key, err := x509.MarshalPKCS8PrivateKey(srv.TLS.Certificates[0].PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	cert := &pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}
	writeFile(t, certFile, string(pem.EncodeToMemory(cert)))
	writeFile(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key})))
	pool = x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return certFile, keyFile, pool
}

// runProxy starts the proxy that start makes for a free HTTPS port, stops it when the
// test ends, and answers a client that trusts the pool trust gives and reaches every name
// at that port, from 127.0.0.2, once the proxy serves /healthz for each of hosts (Caddy
// gets each name's certificate after it starts), and the proxy's output. A port another
// process took between freePort and the proxy's start is tried again with others.
func runProxy(t *testing.T, start func(httpsPort string) *exec.Cmd,
	trust func() (*x509.CertPool, bool), hosts []string) (*http.Client, *syncBuffer) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		cmd := start(port)
		log, exited := startCmd(t, cmd)
		client, err := proxyReady(port, trust, hosts, exited)
		switch {
		case err == nil:
			return client, log
		case attempt < 3 && strings.Contains(log.String(), "address already in use"):
			continue
		}
		t.Fatalf("%s: %v\n%s", filepath.Base(cmd.Path), err, log)
	}
}

// proxyReady polls the proxy at 127.0.0.1:port until it serves /healthz for each of hosts,
// for 30 s at most or until exited is closed.
func proxyReady(port string, trust func() (*x509.CertPool, bool), hosts []string, exited <-chan struct{}) (*http.Client, error) {
poll:
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
		for _, host := range hosts {
			res, err := client.Get("https://" + host + "/healthz")
			if err != nil {
				continue poll
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				continue poll
			}
		}
		return client, nil
	}
	return nil, errors.New("did not serve /healthz for every name within 30 s")
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
// its user may not write (mode 0555; as root, the service runs as nobody, for whom root's
// rights do not hold) exits with status 1 and one line naming the variable, the folder
// and why, and creates nothing. SQLite's own error named no folder, and said "no such
// file or directory" here. TestRunRejectsBadConfig states the other reasons in-process.
func TestDatabaseFolderNotWritable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the service (seconds); -short skips it")
	}
	bin := serviceBinary(t)
	// Folders every user may enter: the binary's, and the one with the read-only folder.
	top := t.TempDir()
	for _, dir := range []string{filepath.Dir(bin), top, filepath.Dir(top)} {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	readOnly := filepath.Join(top, "read-only")
	if err := os.Mkdir(readOnly, 0o555); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "ADDR=127.0.0.1:0",
		"DATABASE_PATH="+filepath.Join(readOnly, "forms.db"))
	if os.Getuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if cmd.ProcessState == nil {
		notInstalled(t, "cannot run the service (as nobody when root: a TMPDIR only root may "+
			"enter, or no uid 65534 in this user namespace): %v", err)
	}
	want := "DATABASE_PATH: database folder " + readOnly + " cannot be written: permission denied\n"
	if code := cmd.ProcessState.ExitCode(); code != 1 || len(out) != 0 || stderr.String() != want {
		t.Errorf("exit status %d (%v), stdout %q, stderr:\n%s\nwant status 1 and:\n%s",
			code, err, out, &stderr, want)
	}
	if entries, err := os.ReadDir(readOnly); err != nil || len(entries) != 0 {
		t.Errorf("the read-only folder holds %v (%v)", entries, err)
	}
}

// TestDocLinks: README gives the test command .ci/run runs, word for word, and every
// relative link of README and docs/*.md names a file that exists (the pages moved once).
func TestDocLinks(t *testing.T) {
	t.Parallel()
	ci, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	command := regexp.MustCompile(`(?m)^FORMSVC_CI=1 go test .*$`).Find(ci)
	pages, _ := filepath.Glob("docs/*.md")
	links := 0
	for _, page := range append(pages, "README.md") {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		if page == "README.md" && (command == nil || !bytes.Contains(text, command)) {
			t.Errorf("README does not give .ci/run's test command %q", command)
		}
		for _, m := range regexp.MustCompile(`\]\(([^):#]+)(#[^)]*)?\)`).FindAllSubmatch(text, -1) {
			links++
			if _, err := os.Stat(filepath.Join(filepath.Dir(page), string(m[1]))); err != nil {
				t.Errorf("%s links to %s: %v", page, m[1], err)
			}
		}
	}
	if links < 8 {
		t.Errorf("found %d relative links; README alone has more", links)
	}
}
