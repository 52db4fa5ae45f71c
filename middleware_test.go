package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// newBareServer is a server without a database, for middleware tests that never reach
// a route.
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
		s    *server
		host string
		path string
		want int
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

// TestErrorTable: each kind of error gets its status and message shape, and a failure
// of ours never shows its cause.
func TestErrorTable(t *testing.T) {
	t.Parallel()
	s, logs := newBareServer(t, nil)
	for _, tc := range []struct {
		err        error
		status     int
		body       string
		retryAfter bool
	}{
		{invalid("Invalid form ID"), 400, `{"error":"Invalid form ID"}`, false},
		{during("update form 7", ErrNotFound), 404, `{"error":"update form 7: Record not found"}`, false},
		{missing("fetch form 7", ErrNotFound, "Form not found"), 404, `{"error":"Form not found"}`, false},
		{missing("fetch form 7", errors.New("disk I/O error"), "Form not found"), 500, `{"error":"Failed to fetch form 7: internal error"}`, false},
		{during("create form", RuleError("Field label is required")), 500, `{"error":"Failed to create form: Field label is required"}`, false},
		{during("generate PDF for response 1", rejected("PDF would be longer than 1000 pages")), 500, `{"error":"Failed to generate PDF for response 1: PDF would be longer than 1000 pages"}`, false},
		{during("submit response for form 7", ErrBusy), 503, `{"error":"Server busy, retry later"}`, true},
		// A cancelled context that is not the request's (a job's) is a failure like any other.
		{during("fetch forms", fmt.Errorf("run job: %w", context.Canceled)), 500, `{"error":"Failed to fetch forms: internal error"}`, false},
		{during("fetch forms", errors.New("dial tcp 10.0.0.1:5432: connection refused")), 500, `{"error":"Failed to fetch forms: internal error"}`, false},
		{fmt.Errorf("open /etc/secret/prompt.txt: no such file"), 500, `{"error":"Internal server error"}`, false},
		{errBodyTooLarge, 413, `{"error":"Request body too large"}`, false},
		{errBusy, 503, `{"error":"Server busy, retry later"}`, true},
		{&apiError{status: http.StatusUnsupportedMediaType, msg: "Content-Type must be application/json"}, 415, `{"error":"Content-Type must be application/json"}`, false},
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
// closes, the next is served.
func TestConnectionLimit(t *testing.T) {
	t.Parallel()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	limit := &connLimit{max: 2}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		ConnState: limit.track}
	go hs.Serve(inner)
	defer hs.Close()
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	waitFor(t, func() bool { return limit.open.Load() == 2 })
	c, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	refused, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("a connection past the cap: %v", err)
	}
	reply, err := io.ReadAll(refused.Body)
	c.SetReadDeadline(time.Now().Add(5 * time.Second)) // reached only if the server keeps it open
	if n, readErr := c.Read(make([]byte, 1)); n != 0 || readErr != io.EOF {
		t.Errorf("a connection past the cap is still open after its 503: read %d, %v", n, readErr)
	}
	c.Close()
	if err != nil || refused.StatusCode != 503 || refused.Header.Get("Retry-After") != "1" || string(reply) != "{\"error\":\"Too many connections\"}\n" {
		t.Errorf("a connection past the cap got %d %q (Retry-After %q), %v", refused.StatusCode, reply, refused.Header.Get("Retry-After"), err)
	}
	held[0].Close()
	waitFor(t, func() bool { return limit.open.Load() == 1 })
	res, err := http.Get("http://" + inner.Addr().String() + "/")
	if err != nil || res.StatusCode != 200 {
		t.Errorf("after a connection closed: %v %v", res, err)
	}
	if res != nil {
		res.Body.Close()
	}
	held[1].Close()

	// The service's own server counts its connections so: connection maxConnections+1
	// is refused.
	track := newHTTPServer(testConfig(t, nil), nil, slog.Default()).ConnState
	for range maxConnections {
		track(nil, http.StateNew) // a connection within the cap is left alone
	}
	client, server := net.Pipe()
	got := make(chan string, 1)
	go func() {
		reply, _ := io.ReadAll(client)
		got <- string(reply)
	}()
	track(server, http.StateNew)
	server.Close() // a connection left alone ends here, with nothing written
	if reply := <-got; !strings.HasPrefix(reply, "HTTP/1.1 503 ") {
		t.Errorf("connection %d to newHTTPServer's server got %q, want a 503", maxConnections+1, reply)
	}
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
		for _, header := range []string{"", "Bearer wrong", "Bearer " + token + "x", "Basic " + token, token, "Bearer",
			"Bearer s3cret", "Bearer s3cret-token-valu", "Bearer S3CRET-TOKEN-VALUE", "Bearer  " + token} {
			status, raw := e.do(p.method, p.path, `{"title": "x", "value": "v", "values": {"1": 1}}`, "Authorization", header)
			if status != 401 || strings.TrimSpace(string(raw)) != `{"error":"Unauthorized"}` {
				t.Errorf("%s %s with %q = %d %s, want 401", p.method, p.path, header, status, raw)
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
	const token = "cors-token"
	const allowed = "https://forms.example.com"
	e := newTestEnv(t, func(c *config) {
		// Written in capitals, as an operator may (browsers send lower case), in a list with
		// blanks and empty items.
		c.CORSOrigins = testConfig(t, map[string]string{"CORS_ORIGINS": " https://Forms.Example.com , https://other.example.com,, "}).CORSOrigins
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

	// Only a configured origin, in any case of its scheme and host (RFC 3986 6.2.2.1): a
	// longer host, another port or scheme, or a prefix gets no CORS header.
	for origin, want := range map[string]bool{"HTTPS://Forms.Example.COM": true, "https://forms.example.com.evil.net": false,
		"https://forms.example.com:8443": false, "http://forms.example.com": false, "https://forms.example.co": false,
		"https://evil.forms.example.com": false, "null": false} {
		res, _ := e.getRaw("/api/forms", "Origin", origin, "Authorization", "Bearer "+token)
		if got := res.Header.Get("Access-Control-Allow-Origin"); res.StatusCode != 200 || (got == origin) != want || !want && got != "" {
			t.Errorf("origin %q = %d, Access-Control-Allow-Origin %q, allowed should be %v", origin, res.StatusCode, got, want)
		}
	}
	// A foreign origin gets no CORS header at all, preflight or not.
	const foreign = "https://evil.example.net"
	if res := preflight(e, foreign, "/api/forms/7", "PUT"); res.StatusCode == 204 || len(corsHeaders(res.Header)) > 0 {
		t.Errorf("foreign preflight = %d with %v", res.StatusCode, corsHeaders(res.Header))
	}
	if res, _ := e.getRaw("/api/forms", "Origin", foreign, "Authorization", "Bearer "+token); len(corsHeaders(res.Header)) > 0 {
		t.Errorf("foreign GET carries %v", corsHeaders(res.Header))
	}
	// A preflight of a path no route serves is answered as any request to it: without
	// the token, 401.
	for _, path := range []string{"/api/nothing", "/api//forms", "/api/x/../forms"} {
		if res := preflight(e, allowed, path, "GET"); res.StatusCode != 401 {
			t.Errorf("preflight of %s = %d, want 401", path, res.StatusCode)
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

// TestPanicEndsTheReply: a panic before anything is written is a JSON 500; a panic
// after part of the reply is out ends the connection, so the client sees an error and
// never a short reply that parses.
func TestPanicEndsTheReply(t *testing.T) {
	t.Parallel()
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

// TestBodyReadOnlyAsJSON: a body is read only as application/json, in any case and with
// any parameters; any other type, or none, is 415 and stores nothing, which ends the
// "simple" requests a page on another site can send without a preflight.
func TestBodyReadOnlyAsJSON(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	created := 0
	for _, tc := range []struct {
		contentType string
		want        int
	}{
		{"application/json", 201},
		{"application/json; charset=utf-8", 201},
		{"Application/JSON", 201},
		{"text/plain", 415},
		{"application/x-www-form-urlencoded", 415},
		{"multipart/form-data; boundary=x", 415},
		{"", 415},
		{"application/jsonp", 415},
	} {
		res, raw := e.request(t.Context(), "POST", "/api/forms", `{"title":"x"}`, "Content-Type", tc.contentType)
		if res.StatusCode != tc.want || tc.want == 415 && strings.TrimSpace(string(raw)) != `{"error":"Content-Type must be application/json"}` {
			t.Errorf("Content-Type %q = %d %s, want %d", tc.contentType, res.StatusCode, raw, tc.want)
		}
		if res.StatusCode == 201 {
			created++
		}
	}
	if n := e.count("forms"); n != created {
		t.Errorf("%d forms stored, %d acknowledged", n, created)
	}
}
