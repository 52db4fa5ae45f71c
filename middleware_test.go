package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// newBareServer is a server without a database, for tests that never reach a route.
func newBareServer(t *testing.T, change func(*config)) (*server, *syncBuffer) {
	t.Helper()
	cfg := testConfig(t, nil)
	if change != nil {
		change(&cfg)
	}
	logs := &syncBuffer{}
	return newServer(cfg, nil, slog.New(slog.NewTextHandler(logs, nil)), time.Now, &http.Client{}), logs
}

// okHandler replies 200 "ok" and reports that it ran.
func okHandler(ran *bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*ran = true
		io.WriteString(w, "ok")
	})
}

// TestCheckHost: without a token, API requests for a Host name the service does not
// know are refused 403 (DNS rebinding); localhost, IP addresses and ALLOWED_HOSTS pass,
// and with a token every Host does.
func TestCheckHost(t *testing.T) {
	t.Parallel()
	// Host names are case-insensitive (RFC 9110 4.2.3): the entries are written in capitals
	// and one with the root's dot, as an operator may, in a list with blanks and empty items.
	open, _ := newBareServer(t, func(c *config) {
		c.AllowedHosts = testConfig(t, map[string]string{"ALLOWED_HOSTS": " Forms.Internal , WIKI.internal.,, "}).AllowedHosts
	})
	guarded, _ := newBareServer(t, func(c *config) { c.APIToken = "t" })
	for _, tc := range []struct {
		s          *server
		host, path string
		want       int
	}{
		{open, "localhost:8080", "/api/forms", 200},
		{open, "LOCALHOST", "/api/forms", 200},
		{open, "app.localhost", "/api/forms", 200},
		{open, "127.0.0.1:8080", "/api/forms", 200},
		{open, "[::1]:8080", "/api/forms", 200},
		{open, "192.168.1.20", "/api/forms", 200},
		{open, "forms.internal:8080", "/api/forms", 200},
		{open, "FORMS.internal.", "/api/forms", 200},
		{open, "wiki.INTERNAL", "/api/forms", 200},
		{open, "attacker.example", "/api/forms", 403},
		{open, "forms.internal.attacker.example", "/api/forms", 403},
		{open, "localhost.attacker.example", "/api/forms", 403},
		{open, "attacker.example", "/healthz", 200},
		{guarded, "attacker.example", "/api/forms", 200},
	} {
		var ran bool
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", tc.path, nil)
		r.Host = tc.host
		r.Header.Set("Authorization", "Bearer t") // guarded's token: only the Host is tried
		tc.s.guardAPI(okHandler(&ran)).ServeHTTP(w, r)
		if w.Code != tc.want || ran != (tc.want == 200) {
			t.Errorf("Host %q %s (token %v) = %d, want %d", tc.host, tc.path, tc.s.cfg.APIToken != "", w.Code, tc.want)
		}
		if tc.want == 403 && strings.TrimSpace(w.Body.String()) != `{"error":"Host not allowed"}` {
			t.Errorf("Host %q: reply %s", tc.host, w.Body)
		}
	}
}

// TestErrorTable: a failure of ours never shows its cause, only logs it, and a busy store
// asks the client to retry.
func TestErrorTable(t *testing.T) {
	t.Parallel()
	s, logs := newBareServer(t, nil)
	for _, tc := range []struct {
		err        error
		status     int
		body       string
		retryAfter bool
	}{
		{missing("fetch form 7", errors.New("disk I/O error"), "Form not found"), 500, `{"error":"Failed to fetch form 7: internal error"}`, false},
		{during("submit response for form 7", ErrBusy), 503, `{"error":"Server busy, retry later"}`, true},
		// A cancelled context that is not the request's (a job's) is a failure like any other.
		{during("fetch forms", fmt.Errorf("run job: %w", context.Canceled)), 500, `{"error":"Failed to fetch forms: internal error"}`, false},
		{during("fetch forms", errors.New("dial tcp 10.0.0.1:5432: connection refused")), 500, `{"error":"Failed to fetch forms: internal error"}`, false},
		{fmt.Errorf("open /etc/secret/prompt.txt: no such file"), 500, `{"error":"Internal server error"}`, false},
		{&apiError{msg: internalError}, 500, `{"error":"Internal server error"}`, false}, // no status: ours
	} {
		w := httptest.NewRecorder()
		s.writeError(w, apiRequest("GET", "/api/x", nil), tc.err)
		if w.Code != tc.status || strings.TrimSpace(w.Body.String()) != tc.body || (w.Header().Get("Retry-After") != "") != tc.retryAfter {
			t.Errorf("writeError(%v) = %d %s (Retry-After %q), want %d %s", tc.err, w.Code, w.Body, w.Header().Get("Retry-After"), tc.status, tc.body)
		}
	}
	for _, cause := range []string{"10.0.0.1:5432", "/etc/secret/prompt.txt",
		`level=ERROR msg="request failed" method=GET path=/api/x err="Failed to fetch forms: internal error: run job: context canceled"`} {
		if !strings.Contains(logs.String(), cause) {
			t.Errorf("the log lacks %q:\n%s", cause, logs)
		}
	}
}

// TestConnectionLimit: past the cap, a connection is answered 503 and closed; once one
// closes, the next is served; the service's own server counts so.
func TestConnectionLimit(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	limit := &connLimit{max: 2}
	hs := &http.Server{Handler: okHandler(new(bool)), ConnState: limit.track}
	go hs.Serve(ln)
	defer hs.Close()
	var held []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if held = append(held, c); len(held) <= 2 { // the third counted only once two are
			waitFor(t, func() bool { return limit.open.Load() == int64(len(held)) })
		}
	}
	held[2].SetReadDeadline(time.Now().Add(5 * time.Second)) // reached only if the server keeps it open
	refused, err := http.ReadResponse(bufio.NewReader(held[2]), nil)
	if err != nil {
		t.Fatalf("a connection past the cap: %v", err)
	}
	reply, err := io.ReadAll(refused.Body)
	if err != nil || refused.StatusCode != 503 || refused.Header.Get("Retry-After") != "1" ||
		string(reply) != "{\"error\":\"Too many connections\"}\n" || !refused.Close {
		t.Errorf("a connection past the cap got %d %q (Retry-After %q), %v", refused.StatusCode, reply,
			refused.Header.Get("Retry-After"), err)
	}
	if n, err := held[2].Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("a connection past the cap is still open after its 503: read %d, %v", n, err)
	}
	held[0].Close()
	waitFor(t, func() bool { return limit.open.Load() == 1 })
	if res, err := testClient.Get("http://" + ln.Addr().String() + "/"); err != nil || res.StatusCode != 200 {
		t.Errorf("after a connection closed: %v %v", res, err)
	} else {
		res.Body.Close()
	}

	track := newHTTPServer(testConfig(t, nil), nil, slog.Default()).ConnState
	for range maxConnections {
		track(nil, http.StateNew) // a connection within the cap is left alone
	}
	client, server := net.Pipe()
	client.SetReadDeadline(time.Now().Add(5 * time.Second)) // a connection let in gets nothing
	go track(server, http.StateNew)
	reply, err = io.ReadAll(client)
	if err != nil || !strings.HasPrefix(string(reply), "HTTP/1.1 503 ") {
		t.Errorf("connection %d to the service's server got %q, %v; want a 503",
			maxConnections+1, reply, err)
	}
}

func TestAPIToken(t *testing.T) {
	const token = "s3cret-token-value"
	e := newTestEnv(t, func(c *config) { c.APIToken = token })
	f := e.createFormWithToken(token)
	requests := []string{"GET /api/unknown", "GET /api"}
	for route := range e.srv.routes() {
		if strings.Contains(route, " /api/") {
			ids := strings.NewReplacer("{id}", itoa(f), "{responseId}", "1", "{key}", "k")
			requests = append(requests, ids.Replace(route))
		}
	}
	before := e.snapshot()
	for _, r := range requests {
		method, path, _ := strings.Cut(r, " ")
		for _, header := range []string{"", "Bearer wrong", "Bearer " + token + "x", "Basic " + token, token, "Bearer",
			"Bearer s3cret", "Bearer s3cret-token-valu", "Bearer S3CRET-TOKEN-VALUE", "Bearer  " + token} {
			status, raw := e.do(method, path, `{"title": "x", "value": "v", "values": {"1": 1}}`, "Authorization", header)
			if status != 401 || strings.TrimSpace(string(raw)) != `{"error":"Unauthorized"}` {
				t.Errorf("%s with %q = %d %s, want 401", r, header, status, raw)
			}
		}
	}
	if e.snapshot() != before {
		t.Errorf("unauthorized requests changed the database")
	}
	// The token is checked before the path's shape: an unclean path shows nothing either.
	addr := strings.TrimPrefix(e.http.URL, "http://")
	if status, body, _ := rawGET(t, addr, "/api//forms"); status != 401 {
		t.Errorf("GET /api//forms without the token = %d %s, want 401", status, body)
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

// TestCORS: with CORS_ORIGINS set, an allowed origin is named on replies and its
// preflights are answered with the route's methods, without the token; a foreign origin
// gets no CORS header; unset, nothing changes.
func TestCORS(t *testing.T) {
	const token, allowed, foreign = "cors-token", "https://forms.example.com", "https://evil.example.net"
	listed := newTestEnv(t, func(c *config) {
		// Written in capitals, as an operator may (browsers send lower case), in a list with
		// blanks and empty items.
		origins := " https://Forms.Example.com , https://other.example.com,, "
		c.CORSOrigins = testConfig(t, map[string]string{"CORS_ORIGINS": origins}).CORSOrigins
		c.APIToken = token
	})
	plain := newTestEnv(t)
	star := newTestEnv(t, func(c *config) { c.CORSOrigins = []string{"*"} })
	preflight := func(origin, method string) []string {
		return []string{"Origin", origin, "Access-Control-Request-Method", method,
			"Access-Control-Request-Headers", "authorization, content-type"}
	}
	withToken := func(origin string) []string {
		return []string{"Origin", origin, "Authorization", "Bearer " + token}
	}
	answered := func(origin, methods string) map[string]string {
		return map[string]string{"Access-Control-Allow-Origin": origin,
			"Access-Control-Allow-Methods": methods, "Access-Control-Allow-Headers": "Content-Type, Authorization",
			"Access-Control-Max-Age": "600", "Vary": "Origin"}
	}
	named := func(origin string, more ...string) map[string]string {
		h := map[string]string{"Access-Control-Allow-Origin": origin, "Vary": "Origin",
			"Access-Control-Expose-Headers": "Content-Disposition"} // a download's name
		for i := 0; i+1 < len(more); i += 2 {
			h[more[i]] = more[i+1]
		}
		return h
	}
	noRoute := map[string]string{"Access-Control-Allow-Origin": allowed}
	none := map[string]string{}
	for _, tc := range []struct {
		env    *testEnv
		req    string
		header []string
		status int
		want   map[string]string // and no other Access-Control- header
	}{
		{listed, "OPTIONS /api/forms/7", preflight(allowed, "PUT"), 204,
			answered(allowed, "GET, HEAD, PUT, DELETE")},
		{listed, "OPTIONS /api/forms", preflight(allowed, "POST"), 204, answered(allowed, "GET, HEAD, POST")},
		{listed, "GET /api/forms", withToken(allowed), 200, named(allowed)},
		// Without the token, 401 with the origin named, so that the page can read the error.
		{listed, "GET /api/forms", []string{"Origin", allowed}, 401,
			named(allowed, "WWW-Authenticate", "Bearer")},
		// Only a configured origin, in any case of its scheme and host (RFC 3986 6.2.2.1): a
		// longer host, another port or scheme, or a prefix gets no CORS header.
		{listed, "GET /api/forms", withToken("HTTPS://Forms.Example.COM"), 200,
			named("HTTPS://Forms.Example.COM")},
		{listed, "GET /api/forms", withToken("https://forms.example.com.evil.net"), 200, none},
		{listed, "GET /api/forms", withToken("https://forms.example.com:8443"), 200, none},
		{listed, "GET /api/forms", withToken("http://forms.example.com"), 200, none},
		{listed, "GET /api/forms", withToken("https://forms.example.co"), 200, none},
		{listed, "GET /api/forms", withToken("https://evil.forms.example.com"), 200, none},
		{listed, "GET /api/forms", withToken("null"), 200, none},
		{listed, "GET /api/forms", withToken(foreign), 200, none},
		{listed, "OPTIONS /api/forms/7", preflight(foreign, "PUT"), 401, none},
		// A preflight of a path no route serves is answered as any request to it.
		{listed, "OPTIONS /api/nothing", preflight(allowed, "GET"), 401, noRoute},
		{listed, "OPTIONS /api//forms", preflight(allowed, "GET"), 401, noRoute},
		{listed, "OPTIONS /api/x/../forms", preflight(allowed, "GET"), 401, noRoute},
		// An OPTIONS without Access-Control-Request-Method is no preflight: it is the 405 any
		// OPTIONS gets, token check and all.
		{listed, "OPTIONS /api/forms", withToken(allowed), 405,
			named(allowed, "Allow", "GET, HEAD, POST")},
		{plain, "OPTIONS /api/forms", preflight(allowed, "POST"), 405, map[string]string{"Vary": ""}},
		{plain, "GET /api/forms", []string{"Origin", allowed}, 200, none},
		{star, "OPTIONS /api/settings/x", preflight(foreign, "PUT"), 204,
			answered(foreign, "GET, HEAD, PUT")},
		// A request without Origin (not from a browser page) gets no CORS header, even with *.
		{star, "GET /api/forms", nil, 200, none},
	} {
		method, path, _ := strings.Cut(tc.req, " ")
		res, _ := tc.env.request(t.Context(), method, path, nil, tc.header...)
		got := map[string]string{}
		for name := range tc.want {
			got[name] = res.Header.Get(name)
		}
		for name := range res.Header {
			if strings.HasPrefix(name, "Access-Control-") {
				got[name] = res.Header.Get(name)
			}
		}
		if res.StatusCode != tc.status || !maps.Equal(got, tc.want) {
			t.Errorf("%s %q = %d %v, want %d %v",
				tc.req, tc.header, res.StatusCode, got, tc.status, tc.want)
		}
	}
}

// TestPanicEndsTheReply: a panic before anything is written is a JSON 500; a panic
// after part of the reply is out ends the connection, so the client sees an error and
// never a short reply that parses.
func TestPanicEndsTheReply(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	panicBefore := func(http.ResponseWriter, *http.Request) { panic("before") }
	e.srv.mux.HandleFunc("GET /test/panic-before", panicBefore)
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
	if logs := e.logs.String(); strings.Count(logs, "level=ERROR") != 1 || !strings.Contains(logs, "panic=before") ||
		!strings.Contains(logs, "path=/test/panic-before status=500") {
		t.Errorf("a panic before the reply: want one error line and the request logged 500:\n%s", logs)
	}

	res, err := e.http.Client().Get(e.http.URL + "/test/panic-after")
	if err != nil {
		t.Fatalf("the status line and the first bytes were flushed, yet: %v", err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err == nil {
		t.Errorf("a panic after the first bytes gave a complete reply: %d %q", res.StatusCode, body)
	}
	if !strings.Contains(e.logs.String(), `panic=after`) {
		t.Errorf("the panic was not logged:\n%s", e.logs)
	}
}
