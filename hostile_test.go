package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The hostile suite runs the service, built as a user builds it (no race detector), as a
// child process, attacks it, and checks the bounds docs/DESIGN.md promises: peak memory
// (VmHWM) within hostileRSSBudget, /healthz within a second and another client's
// ordinary request within two while the attack runs, and every acknowledged write kept.
const hostileRSSBudget = 256 << 20

// hostileChild is the built service under attack.
type hostileChild struct {
	*child
	t     *testing.T
	addr  string
	conns []net.Conn // the attack's raw connections, closed when it ends
}

func startHostileChild(t *testing.T, env ...string) *hostileChild {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("peak memory is read from /proc (Linux)")
	}
	bin := serviceBinary(t)
	cmd := exec.Command(bin)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "ADDR=127.0.0.1:0", "DATABASE_PATH="+filepath.Join(cmd.Dir, "forms.db"))
	cmd.Env = append(cmd.Env, env...)
	c := startProcess(t, cmd)
	return &hostileChild{child: c, t: t, addr: strings.TrimPrefix(c.base, "http://")}
}

// peakRSS is the child's VmHWM.
func (c *hostileChild) peakRSS() int64 {
	c.t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		c.t.Fatal(err)
	}
	m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(status)
	if m == nil {
		c.t.Fatalf("no VmHWM in /proc status")
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10
}

// send sends a JSON body (none when body is nil) and returns the reply's status and body.
func (c *hostileChild) send(method, path string, body any) (int, []byte) {
	c.t.Helper()
	var r io.Reader = http.NoBody
	if raw, ok := body.(json.RawMessage); ok { // as written: Marshal would escape <, > and &
		r = bytes.NewReader(raw)
	} else if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, c.base+path, r)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatalf("%s %s: reading the reply: %v", method, path, err)
	}
	return res.StatusCode, raw
}

// call sends a JSON body, fails the test unless the reply's status is want, and decodes
// the reply into out (when not nil).
func (c *hostileChild) call(method, path string, body any, want int, out any) {
	c.t.Helper()
	status, raw := c.send(method, path, body)
	if status != want {
		c.t.Fatalf("%s %s = %d, want %d: %.300s", method, path, status, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			c.t.Fatalf("%s %s: decoding %.300s: %v", method, path, raw, err)
		}
	}
}

// read GETs path into out. Right after an attack the service may still rightly refuse
// with 503 (its heavy slots held by the attack's unread replies); read asks again until
// limit has passed, and fails the test on any other status.
func (c *hostileChild) read(path string, out any, limit time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		status, raw := c.send("GET", path, nil)
		if status == http.StatusServiceUnavailable && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if status != http.StatusOK {
			c.t.Fatalf("GET %s = %d, want 200: %.300s", path, status, raw)
		}
		if err := json.Unmarshal(raw, out); err != nil {
			c.t.Fatalf("GET %s: decoding %.300s: %v", path, raw, err)
		}
		return
	}
}

// within reports how long a GET took and fails it past limit or on an unexpected status.
func (c *hostileChild) within(path string, want int, limit time.Duration) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", c.base+path, nil)
	start := time.Now()
	res, err := (&http.Client{Transport: &http.Transport{}}).Do(req) // a connection of its own
	if err != nil {
		c.t.Errorf("GET %s during the attack: %v after %v", path, err, time.Since(start))
		return
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != want {
		c.t.Errorf("GET %s during the attack = %d, want %d", path, res.StatusCode, want)
	}
}

// rawConn opens a connection and writes head; the attack decides what follows.
func (c *hostileChild) rawConn(head string) net.Conn {
	c.t.Helper()
	conn, err := net.Dial("tcp", c.addr)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { conn.Close() })
	c.conns = append(c.conns, conn)
	io.WriteString(conn, head)
	return conn
}

// submitWithin submits v to field of form and fails the test unless it is answered 201
// within limit: a write waits for the database only, whatever else clients hold.
func (c *hostileChild) submitWithin(form int64, field, v string, limit time.Duration) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	body := `{"values":{"` + field + `":"` + v + `"}}`
	req, _ := http.NewRequestWithContext(ctx, "POST", c.base+"/api/forms/"+itoa(form)+"/responses", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	res, err := (&http.Client{Transport: &http.Transport{}}).Do(req) // a connection of its own
	if err != nil {
		c.t.Errorf("submit during the attack: %v after %v", err, time.Since(start))
		return
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		c.t.Errorf("submit during the attack = %d %s, want 201", res.StatusCode, raw)
	}
}

// TestHostile runs each attack on a fresh service and checks the bounds meanwhile.
func TestHostile(t *testing.T) {
	if testing.Short() {
		t.Skip("the hostile suite builds and attacks the service (seconds); -short skips it")
	}
	type setup struct {
		form     FormDetail
		response int64
	}
	// The summaries' attacks need a tracker and a model: the fakes of mantis_test.go
	// and summaries_test.go, and a Maildir holding one message nested 14,000 deep.
	tracker := &fakeTracker{t: t, issues: []map[string]any{issue(1, mantisDate(time.Now()))}}
	// Keys that the data holds ("t" in every MantisBT answer, "x" in the summary): a key is
	// hidden in logs and errors, never in the data.
	tracker.token = "t"
	model := &fakeModel{t: t, key: "x", answer: "Next: fix the mailbox export."}
	ts, ms := httptest.NewServer(tracker), httptest.NewServer(model)
	defer ts.Close()
	defer ms.Close()
	prompts := t.TempDir()
	writeFile(t, filepath.Join(prompts, "tracker.txt"), "$DATE $TRACKER_TICKETS")
	writeFile(t, filepath.Join(prompts, "email.txt"), "$DATE $EMAILS")
	maildir := t.TempDir()
	for _, sub := range []string{"new", "cur", "tmp"} {
		os.Mkdir(filepath.Join(maildir, sub), 0o755)
	}
	writeFile(t, filepath.Join(maildir, "new", fmt.Sprintf("%d.M1P1.host", time.Now().Unix())), nestedMessage(14_000))
	summaryEnv := []string{"TRACKER_API_ENDPOINT=" + ts.URL + "/api/rest", "TRACKER_API_KEY=t",
		"GENAI_API_KEY=x", "GENAI_BASE_URL=" + ms.URL + "/v1", "GENAI_MODEL=test-model",
		"TRACKER_PROMPT_FILE=" + filepath.Join(prompts, "tracker.txt"), "EMAIL_PROMPT_FILE=" + filepath.Join(prompts, "email.txt"),
		"MAILDIR=" + maildir}

	attacks := []struct {
		name   string
		env    []string
		attack func(c *hostileChild, s setup) (stop func())
	}{
		{"PDF of characters that print as their names", nil, func(c *hostileChild, s setup) func() {
			var id struct{ ResponseID int64 }
			field := itoa(s.form.Categories[0].Fields[0].ID)
			c.call("POST", "/api/forms/"+itoa(s.form.ID)+"/responses", map[string]any{"values": map[string]any{field: strings.Repeat("\U0001FBA9", maxValueChars)}}, 201, &id)
			return repeatGETs(c, "/api/responses/"+itoa(id.ResponseID)+"/export/pdf", 4)
		}},
		{"clients that never read a large list and CSV", nil, func(c *hostileChild, s setup) func() {
			field := itoa(s.form.Categories[0].Fields[0].ID)
			for range 60 {
				c.call("POST", "/api/forms/"+itoa(s.form.ID)+"/responses", map[string]any{"values": map[string]any{field: strings.Repeat("v", 100_000)}}, 201, nil)
			}
			for i := range 80 {
				path := "/api/forms/" + itoa(s.form.ID) + "/responses"
				if i%2 == 1 {
					path += ".csv"
				}
				c.rawConn("GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n") // and never read
			}
			return func() {}
		}},
		{"a long label repeated in every listed response", nil, func(c *hostileChild, s setup) func() {
			var f FormDetail
			c.call("POST", "/api/forms", map[string]any{"title": "t", "categories": []any{map[string]any{"fields": []any{
				map[string]any{"label": strings.Repeat("L", maxLabelChars), "type": "text"}}}}}, 201, &f)
			c.call("GET", "/api/forms/"+itoa(f.ID), nil, 200, &f)
			for range 300 {
				c.call("POST", "/api/forms/"+itoa(f.ID)+"/responses", map[string]any{"values": map[string]any{itoa(f.Categories[0].Fields[0].ID): "a"}}, 201, nil)
			}
			return repeatGETs(c, "/api/forms/"+itoa(f.ID)+"/responses", 8)
		}},
		{"clients that never read a large form", nil, func(c *hostileChild, s setup) func() {
			// A body of 1 MiB, read at once by every client: the form is one statement, and
			// its answers are built and sent a heavy slot at a time.
			lt := strings.Repeat("<", maxDescriptionChars)
			var fields []string
			for i := range 95 {
				fields = append(fields, fmt.Sprintf(`{"label":"f%d","type":"text","description":"%s"}`, i, lt))
			}
			var f FormDetail
			c.call("POST", "/api/forms", json.RawMessage(`{"title":"t","categories":[{"name":"c","fields":[`+strings.Join(fields, ",")+`]}]}`), 201, &f)
			for range 300 {
				c.rawConn("GET /api/forms/" + itoa(f.ID) + " HTTP/1.1\r\nHost: localhost\r\n\r\n") // and never read
			}
			return func() {}
		}},
		{"clients that never read a large setting or form list", nil, func(c *hostileChild, s setup) func() {
			lt := strings.Repeat("<", maxDescriptionChars)
			c.call("PUT", "/api/settings/big", json.RawMessage(`{"value":"`+strings.Repeat("<", maxBodyBytes-100)+`"}`), 200, nil)
			for range listPageRows {
				c.call("POST", "/api/forms", json.RawMessage(`{"title":"t","description":"`+lt+`"}`), 201, nil)
			}
			for range 100 {
				for _, path := range []string{"/api/settings/big", "/api/forms"} {
					c.rawConn("GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n") // and never read
				}
			}
			return func() {}
		}},
		{"clients that never read hold every large answer they can, while 60 submit", nil, func(c *hostileChild, s setup) func() {
			c.call("PUT", "/api/settings/big", json.RawMessage(`{"value":"`+strings.Repeat("s", maxBodyBytes-100)+`"}`), 200, nil)
			big := strings.Repeat("a long line of text\n", 5000)
			field := itoa(s.form.Categories[1].Fields[0].ID)
			var id struct{ ResponseID int64 }
			c.call("POST", "/api/forms/"+itoa(s.form.ID)+"/responses", map[string]any{"values": map[string]any{field: big}}, 201, &id)
			paths := []string{"/api/settings/big", "/api/forms", "/api/forms/" + itoa(s.form.ID) + "/responses",
				"/api/forms/" + itoa(s.form.ID) + "/responses.csv", "/api/responses/" + itoa(id.ResponseID) + "/export/pdf"}
			for i := range 200 {
				c.rawConn("GET " + paths[i%len(paths)] + " HTTP/1.1\r\nHost: localhost\r\n\r\n") // and never read
			}
			// Large writes whose answers are never read either.
			put := fmt.Sprintf("PUT /api/settings/w HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", maxBodyBytes-50)
			for range 20 {
				c.rawConn(put + `{"value":"` + strings.Repeat("w", maxBodyBytes-50-12) + `"}`)
			}
			time.Sleep(500 * time.Millisecond) // every slot taken, the rest waiting
			for range 60 {
				c.submitWithin(s.form.ID, itoa(s.form.Categories[0].Fields[0].ID), "ack", 2*time.Second)
			}
			return func() {}
		}},
		{"the form list of many long titles, read at once", nil, func(c *hostileChild, s setup) func() {
			for range 100 {
				c.call("POST", "/api/forms", map[string]any{"title": strings.Repeat("T", maxTitleChars), "description": strings.Repeat("D", maxDescriptionChars)}, 201, nil)
			}
			return repeatGETs(c, "/api/forms", 8)
		}},
		{"thirty callers of the on-demand tracker summary at once", summaryEnv, func(c *hostileChild, s setup) func() {
			stop := repeatGETs(c, "/api/tracker-summary", 30)
			return func() {
				stop()
				var got struct{ Summary string }
				c.read("/api/tracker-summary", &got, 10*time.Second)
				if got.Summary != model.answer {
					c.t.Errorf("the summary = %q, want the model's %q whole", got.Summary, model.answer)
				}
				if n := len(model.calls()); n != 1 || len(tracker.requestedPages()) != 1 {
					c.t.Errorf("%d model calls and tracker pages %v for thirty callers within 30 s, want one walk and one call", n, tracker.requestedPages())
				}
			}
		}},
		{"an e-mail nested fourteen thousand multiparts deep", summaryEnv, func(c *hostileChild, s setup) func() {
			c.call("POST", "/api/email-summaries/generate", nil, 202, nil)
			return func() {
				deadline := time.Now().Add(10 * time.Second)
				for {
					var page struct{ Total int }
					c.read("/api/email-summaries", &page, 10*time.Second)
					if page.Total == 1 {
						return
					}
					if time.Now().After(deadline) {
						c.t.Error("the e-mail job did not finish within 10 s")
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
		}},
		{"a body of a hundred thousand empty categories", nil, func(c *hostileChild, s setup) func() {
			body := `{"title":"t","categories":[` + strings.Repeat("{},", 100_000) + `{}]}`
			return repeatRaw(c, "POST", "/api/forms", body, 6)
		}},
		{"a thousand PDF requests at once", nil, func(c *hostileChild, s setup) func() {
			var wg sync.WaitGroup
			for range 1000 {
				wg.Go(func() {
					res, err := http.Get(c.base + "/api/responses/" + itoa(s.response) + "/export/pdf")
					if err == nil {
						io.Copy(io.Discard, res.Body)
						res.Body.Close()
					}
				})
			}
			return wg.Wait
		}},
		{"two hundred writers of large forms at once", nil, func(c *hostileChild, s setup) func() {
			// Each form is 300 fields, a few milliseconds on the one write connection:
			// the writers wait for it (writeWait) while reads and /healthz go on.
			var fields strings.Builder
			for i := range 300 {
				fmt.Fprintf(&fields, `{"label":"field %d","type":"text","description":"%s"},`, i, strings.Repeat("d", 200))
			}
			body := `{"title":"t","categories":[{"name":"c","fields":[` + strings.TrimSuffix(fields.String(), ",") + `]}]}`
			return repeatRaw(c, "POST", "/api/forms", body, 200)
		}},
		{"uploads that stall short of their end", nil, func(c *hostileChild, s setup) func() {
			chunk := `{"title":"` + strings.Repeat("x", maxBodyBytes-100)
			for range 300 {
				conn := c.rawConn(fmt.Sprintf("POST /api/forms HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", maxBodyBytes))
				go io.WriteString(conn, chunk) // and stop short
			}
			return func() {}
		}},
		{"values nested ten thousand deep", nil, func(c *hostileChild, s setup) func() {
			deep := strings.Repeat("[", 9990) + strings.Repeat("1,", 200_000) + "1" + strings.Repeat("]", 9990)
			body := `{"values":{"` + itoa(s.form.Categories[0].Fields[0].ID) + `":` + deep + `}}`
			return repeatRaw(c, "POST", "/api/forms/"+itoa(s.form.ID)+"/responses", body, 4)
		}},
		{"headers sent a byte at a time", nil, func(c *hostileChild, s setup) func() {
			for range 400 {
				conn := c.rawConn("GET /api/forms HTTP/1.1\r\nHost: localhost\r\n")
				go func() {
					for range 10 {
						if _, err := io.WriteString(conn, "X: y\r\n"); err != nil {
							return
						}
						time.Sleep(time.Second)
					}
				}()
			}
			return func() {}
		}},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			c := startHostileChild(t, a.env...)
			var s setup
			c.call("POST", "/api/forms", fullForm(), 201, &s.form)
			c.call("GET", "/api/forms/"+itoa(s.form.ID), nil, 200, &s.form)
			field := itoa(s.form.Categories[0].Fields[0].ID)
			var first struct{ ResponseID int64 }
			c.call("POST", "/api/forms/"+itoa(s.form.ID)+"/responses", map[string]any{"values": map[string]any{field: "x"}}, 201, &first)
			s.response = first.ResponseID

			stop := a.attack(c, s)
			acked := 0
			for range 5 {
				time.Sleep(200 * time.Millisecond) // the attack under way
				c.within("/healthz", 200, time.Second)
				c.within("/api/forms/"+itoa(s.form.ID), 200, 2*time.Second)
				// A crowd of writers may rightly keep a submit past writeWait (503); any
				// other refusal is a failure.
				switch status, raw := c.send("POST", "/api/forms/"+itoa(s.form.ID)+"/responses", map[string]any{"values": map[string]any{field: "ack"}}); status {
				case http.StatusCreated:
					acked++
				case http.StatusServiceUnavailable:
					if !strings.HasPrefix(a.name, "two hundred writers") {
						t.Errorf("submit during the attack = 503: %.300s", raw)
					}
				default:
					t.Fatalf("submit during the attack = %d: %.300s", status, raw)
				}
			}
			stop()
			for _, conn := range c.conns { // the attack's clients go
				conn.Close()
			}
			if peak := c.peakRSS(); peak > hostileRSSBudget {
				t.Errorf("peak RSS %d MiB, budget %d MiB", peak>>20, hostileRSSBudget>>20)
			} else {
				t.Logf("peak RSS %d MiB", peak>>20)
			}
			var list []struct {
				Values map[string]struct{ Value *string }
			}
			c.read("/api/forms/"+itoa(s.form.ID)+"/responses", &list, 60*time.Second)
			kept := 0
			for _, r := range list {
				if v := r.Values[field].Value; v != nil && *v == "ack" {
					kept++
				}
			}
			if strings.Contains(a.name, "while 60 submit") {
				acked += 60
			}
			if acked == 0 || kept != acked {
				t.Errorf("%d submits acknowledged during the attack, %d kept", acked, kept)
			}
		})
	}
}

// nestedMessage is a message of depth multiparts, each holding the next, the last a
// plain-text part: the class of mail that once cost the reader time quadratic in depth.
func nestedMessage(depth int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "From: a@example.com\r\nTo: b@example.com\r\nSubject: deep\r\nDate: %s\r\nMIME-Version: 1.0\r\n",
		time.Now().Format(time.RFC1123Z))
	for i := range depth {
		fmt.Fprintf(&b, "Content-Type: multipart/mixed; boundary=b%d\r\n\r\n--b%d\r\n", i, i)
	}
	b.WriteString("Content-Type: text/plain\r\n\r\nthe bottom\r\n")
	for i := depth - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "--b%d--\r\n", i)
	}
	return b.String()
}

// repeatGETs runs n clients that GET path over and over until stopped.
func repeatGETs(c *hostileChild, path string, n int) func() {
	return repeatRaw(c, "GET", path, "", n)
}

// repeatRaw runs n clients sending the request over and over until stopped.
func repeatRaw(c *hostileChild, method, path, body string, n int) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			client := &http.Client{Transport: &http.Transport{}}
			for {
				select {
				case <-done:
					return
				default:
				}
				req, _ := http.NewRequest(method, c.base+path, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				if res, err := client.Do(req); err == nil {
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
			}
		})
	}
	return func() { close(done); wg.Wait() }
}
