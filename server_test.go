package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

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
	// Just under the limit is accepted.
	ok := `{"value": "` + strings.Repeat("z", maxBodyBytes-20) + `"}`
	if status, _ := e.do("PUT", "/api/settings/k", ok); status != 200 {
		t.Errorf("body just under 1 MiB = %d, want 200", status)
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
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n", target)
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
		{"/api/forms/" + strings.Repeat("9", 40), 400, `{"error":"Invalid form ID"}`},
		{"/api/responses/" + strings.Repeat("1", 40) + "/export/pdf", 400, `{"error":"Invalid response ID"}`},
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
	request := "GET /api/forms HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 200) + "\r\n\r\n"
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
	fmt.Fprintf(conn, "POST /api/forms HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"title\": \"", 100<<20)
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
