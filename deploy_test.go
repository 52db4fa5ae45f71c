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
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBackupDuringWriteLoad: formsvc backup, run while the service takes a 32-client
// write load, writes a copy that passes integrity_check and holds every response
// acknowledged before the backup began.
func TestBackupDuringWriteLoad(t *testing.T) {
	skipShort(t, "builds the service and loads it")
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
// backup held and nothing written after it. The backup, its stdout closed (by cron), still
// succeeds.
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
	closed, err := os.Open(os.DevNull) // read-only: every write fails
	if err != nil {
		t.Fatal(err)
	}
	defer closed.Close()
	getenv := func(k string) string { return env[k] }
	if err := run(t.Context(), []string{"backup", dest}, getenv, closed, io.Discard); err != nil {
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
		status, _, _ := rawGET(t, strings.TrimPrefix(base, "http://"), "/api/forms/"+itoa(id))
		if status != want {
			t.Errorf("form %d after the restore = %d, want %d", id, status, want)
		}
	}
}

// TestLitestreamReplica follows docs/DEPLOY.md's Litestream recipe with docs/litestream.yml:
// after kill -9 of the loaded service and, once it caught up, of Litestream, `litestream
// restore` gives an intact database with every acknowledged response. A restore from a
// replica that does not exist fails and writes nothing.
func TestLitestreamReplica(t *testing.T) {
	skipShort(t, "runs the service and Litestream as processes")
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

// TestLitestreamKillBoth: the service and Litestream killed together under write load, as
// when the machine is lost. The restore is intact and lacks only responses acknowledged
// within monitor-interval plus sync-interval (docs/litestream.yml, 1 s each) and a sync's
// time (2 s allowed for a loaded machine; about 1 s measured) before the kill.
func TestLitestreamKillBoth(t *testing.T) {
	skipShort(t, "runs the service and Litestream as processes")
	const lossBound = 2*time.Second + 2*time.Second
	_, restored, acked, killed := killReplicated(t, true)
	checkDatabase(t, restored, acked, killed.Add(-lossBound))
}

// killReplicated runs the service under a write load of 4 clients, each one every 10 ms
// at most (a busy small deployment), replicated by Litestream, and kills it at killed:
// Litestream too when both, else once the replica caught up. It returns the restore.
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
		ls.cmd.Process.Kill()
		<-ls.exited
	}
	<-c.done
	close(c.stop)
	acked = c.acked()
	if !both {
		ls.waitRestorable(t, len(acked))
		ls.cmd.Process.Kill()
		<-ls.exited
	}
	restored = filepath.Join(t.TempDir(), "restored.db")
	if msg, err := ls.restore(restored); err != nil {
		t.Fatalf("litestream restore: %v\n%s", err, msg)
	}
	return ls, restored, acked, killed
}

// litestream is `litestream replicate` with docs/litestream.yml to a file replica.
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
	ls := &litestream{bin: bin, config: "docs/litestream.yml", dbPath: dbPath,
		replica: filepath.Join(t.TempDir(), "replica")}
	ls.cmd = ls.command("replicate", "-config", ls.config)
	ls.log, ls.exited = startCmd(t, ls.cmd)
	return ls
}

func (ls *litestream) command(args ...string) *exec.Cmd {
	cmd := exec.Command(ls.bin, args...)
	cmd.Env = append(os.Environ(), "DATABASE_PATH="+ls.dbPath,
		"LITESTREAM_REPLICA_URL=file://"+ls.replica)
	return cmd
}

func (ls *litestream) restore(out string) ([]byte, error) {
	return ls.command("restore", "-config", ls.config, "-o", out, ls.dbPath).CombinedOutput()
}

// waitRestorable waits, for 30 s at most, until a restore of the replica holds at least n
// responses. A probe restored while Litestream writes may fail or come out malformed
// (v0.3.13 lists snapshots, then WAL segments, in separate reads): not caught up yet.
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

// TestSystemdUnits: the units in docs/ pass systemd-analyze verify (their programs pointed
// at the binary just built, as verify checks that they exist), keep the hardening
// DEPLOY.md promises, and systemd-analyze security rates each service's exposure OK.
func TestSystemdUnits(t *testing.T) {
	skipShort(t, "builds the service")
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
			"StateDirectory=formsvc formsvc/backups"}, hardening...)}, // Exec*: TestBackupUnit
		{"formsvc-backup.timer", []string{"OnCalendar=*-*-* 02:30:00", "Persistent=true",
			"WantedBy=timers.target"}},
	} {
		text := readDoc(t, filepath.Join("docs", unit.name))
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

// TestBackupUnit runs docs/formsvc-backup.service's two commands as systemd would (%% as
// %) in place of /var/lib/formsvc: a backup named by the date and time is written, and
// the backups older than 14 days are deleted.
func TestBackupUnit(t *testing.T) {
	skipShort(t, "builds the service")
	bin := serviceBinary(t)
	text := readDoc(t, "docs/formsvc-backup.service")
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
	files, _ := filepath.Glob(filepath.Join(backups, "*"))
	named := regexp.MustCompile(`/forms-\d{4}-\d\d-\d\dT\d{4}Z\.db$`)
	if len(files) != 2 || !named.MatchString(files[0]) || files[1] != recent {
		t.Errorf("backups %q, want forms-YYYY-MM-DDTHHMMZ.db and the recent one", files)
	}
}

// TestReverseProxy runs docs/DEPLOY.md's Caddy and nginx recipes, over TLS, in front of three
// services: the client's Host reaches the service, so ALLOWED_HOSTS and API_TOKEN decide as
// without a proxy; a body over 1 MiB gets the service's 413 whole (nginx's own, configured
// so); the service's log names the proxy as the client, the proxy's log the client.
func TestReverseProxy(t *testing.T) {
	skipShort(t, "runs the service, Caddy and nginx as processes")
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
				req.Header.Set("Content-Type", "application/json") // ignored without a body
				if tc.auth != "" {
					req.Header.Set("Authorization", tc.auth)
				}
				res, err := client.Do(req)
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				body, err := io.ReadAll(res.Body)
				res.Body.Close()
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
			// Caddy's X-Forwarded-For names the client, 127.0.0.2: the log names the TCP peer.
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
	re := "(?s)\n## Reverse proxy\n.*?" + regexp.QuoteMeta(after) + ".*?```\n(.*?)```\n"
	m := regexp.MustCompile(re).FindSubmatch(readDoc(t, "docs/DEPLOY.md"))
	ok := m != nil
	for _, want := range wants {
		ok = ok && bytes.Contains(m[1], []byte(want))
	}
	if !ok {
		t.Fatalf("docs/DEPLOY.md's Reverse proxy section has no code block after %q holding %q:\n%s",
			after, wants, m)
	}
	return string(m[1])
}

// startCaddy runs caddy with docs/DEPLOY.md's Caddyfile, its site block repeated for each
// of upstreams, and answers a client that trusts Caddy's root as DEPLOY.md says, and its log.
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
	return runProxy(t, start, trust, upstreams)
}

// startNginx runs nginx with docs/DEPLOY.md's server block, repeated for each of upstreams,
// and answers a client that trusts its certificate, and its log, the request log included.
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
	return runProxy(t, start, func() (*x509.CertPool, bool) { return pool, true }, upstreams)
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

// runProxy starts the proxy that start makes for a free HTTPS port and answers, once it
// serves /healthz for each name of upstreams, a client from 127.0.0.2 that trusts the pool trust
// gives, and the proxy's output. A port taken meanwhile is tried again with others.
func runProxy(t *testing.T, start func(httpsPort string) *exec.Cmd,
	trust func() (*x509.CertPool, bool), upstreams map[string]*child) (*http.Client, *syncBuffer) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		cmd := start(port)
		log, exited := startCmd(t, cmd)
		client, err := proxyReady(port, trust, upstreams, exited)
		switch {
		case err == nil:
			return client, log
		case attempt < 3 && strings.Contains(log.String(), "address already in use"):
			continue
		}
		t.Fatalf("%s: %v\n%s", filepath.Base(cmd.Path), err, log)
	}
}

// proxyReady polls the proxy at 127.0.0.1:port until it serves /healthz for each name of
// upstreams, for 30 s at most or until exited is closed.
func proxyReady(port string, trust func() (*x509.CertPool, bool), upstreams map[string]*child,
	exited <-chan struct{}) (*http.Client, error) {
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
		for host := range upstreams {
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

// TestDatabaseFolderNotWritable: the service with DATABASE_PATH in a folder its user may
// not write (0555; as root, run as nobody) exits 1 with one line naming the variable, the
// folder and why (SQLite's own error named no folder), and creates nothing.
func TestDatabaseFolderNotWritable(t *testing.T) {
	skipShort(t, "builds the service")
	bin := serviceBinary(t)
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
	ci := readDoc(t, ".ci/run")
	command := regexp.MustCompile(`(?m)^FORMSVC_CI=1 go test .*$`).Find(ci)
	pages, _ := filepath.Glob("docs/*.md")
	links := 0
	for _, page := range append(pages, "README.md") {
		text := readDoc(t, page)
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

// skipShort skips t under -short: it runs processes for seconds.
func skipShort(t *testing.T, what string) {
	t.Helper()
	if testing.Short() {
		t.Skip(what + " (seconds); -short skips it")
	}
}

// readDoc is the content of the repository's file at path.
func readDoc(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
