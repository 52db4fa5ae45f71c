package main

import (
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

type hostileChild struct {
	*child
	t     *testing.T
	conns []net.Conn // the attack's raw connections, closed when it ends
}

func (c *hostileChild) peakRSS() int64 {
	c.t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(status)
	if m == nil {
		c.t.Fatalf("no VmHWM in /proc status (%v)", err)
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10
}

// request sends body (a string as written, anything else as JSON) on a connection of its
// own, and answers the reply's status and body, or why it was not read whole within limit.
func (c *hostileChild) request(method, path string, body any, limit time.Duration) (int, []byte, error) {
	c.t.Helper()
	raw, ok := body.(string)
	if !ok && body != nil {
		b, _ := json.Marshal(body) // maps of strings: cannot fail
		raw = string(b)
	}
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(raw))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	client := &http.Client{Timeout: limit, Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := client.Do(req)
	if err == nil {
		defer res.Body.Close()
		var out []byte
		if out, err = io.ReadAll(res.Body); err == nil {
			return res.StatusCode, out, nil
		}
	}
	return 0, nil, fmt.Errorf("%s %s: %v after %v", method, path, err, time.Since(start))
}

// call sends body, fails the test unless the reply's status is want, and decodes the
// reply into out (when not nil). Right after an attack the service may still rightly
// refuse with 503 (its heavy slots held by unread replies): call asks again for a minute.
func (c *hostileChild) call(method, path string, body any, want int, out any) {
	c.t.Helper()
	deadline := time.Now().Add(time.Minute)
	status, raw, err := c.request(method, path, body, 30*time.Second)
	for err == nil && status == http.StatusServiceUnavailable && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		status, raw, err = c.request(method, path, body, 30*time.Second)
	}
	if err != nil || status != want {
		c.t.Fatalf("%s %s = %d %v, want %d: %.300s", method, path, status, err, want, raw)
	}
	if err := json.Unmarshal(raw, out); out != nil && err != nil {
		c.t.Fatalf("%s %s: decoding %.300s: %v", method, path, raw, err)
	}
}

func (c *hostileChild) submit(form int64, field, v string) int64 {
	c.t.Helper()
	var out struct{ ResponseID int64 }
	body := map[string]any{"values": map[string]any{field: v}}
	c.call("POST", "/api/forms/"+itoa(form)+"/responses", body, 201, &out)
	return out.ResponseID
}

// within fails the test unless the request is answered want within limit.
func (c *hostileChild) within(method, path string, body any, want int, limit time.Duration) {
	c.t.Helper()
	if status, raw, err := c.request(method, path, body, limit); err != nil || status != want {
		c.t.Errorf("%s %s during the attack = %d %v %.300s, want %d", method, path, status, err, raw, want)
	}
}

// rawConn opens a connection and writes head; the attack decides what follows.
func (c *hostileChild) rawConn(head string) net.Conn {
	c.t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(c.base, "http://"))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { conn.Close() })
	c.conns = append(c.conns, conn)
	io.WriteString(conn, head)
	return conn
}

func TestHostile(t *testing.T) {
	skipShort(t, "the hostile suite builds and attacks the service")
	if runtime.GOOS != "linux" {
		t.Skip("peak memory is read from /proc (Linux)")
	}
	type setup struct {
		form      FormDetail
		field     string         // the form's first field
		responses string         // the form's responses
		ack       map[string]any // a submit of "ack" to field
	}
	// The summaries' attacks need the fakes of mantis_test.go and summaries_test.go, and a
	// Maildir holding one message nested 14,000 deep. Their keys are ones the data holds
	// ("t" in every MantisBT answer, "x" in the summary): a key is hidden in logs, not data.
	tracker := &fakeTracker{t: t, token: "t",
		issues: []map[string]any{issue(1, mantisDate(time.Now()))}}
	model := &fakeModel{t: t, key: "x", answer: "Next: fix the mailbox export."}
	ts, ms := httptest.NewServer(tracker), httptest.NewServer(model)
	defer ts.Close()
	defer ms.Close()
	maildir := newMaildir(t)
	message := fmt.Sprintf("%d.M1P1.host", time.Now().Unix())
	writeFile(t, filepath.Join(maildir, "new", message), nestedMessage(14_000))
	summaryEnv := []string{"TRACKER_API_ENDPOINT=" + ts.URL + "/api/rest", "TRACKER_API_KEY=t",
		"GENAI_API_KEY=x", "GENAI_BASE_URL=" + ms.URL + "/v1", "GENAI_MODEL=test-model",
		"TRACKER_PROMPT_FILE=", "EMAIL_PROMPT_FILE=", "MAILDIR=" + maildir}
	upload := "%s %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" +
		"Content-Length: %d\r\n\r\n"

	attacks := []struct {
		name   string
		env    []string
		attack func(c *hostileChild, s setup) (stop func())
	}{
		{"PDF of characters that print as their names", nil, func(c *hostileChild, s setup) func() {
			id := c.submit(s.form.ID, s.field, strings.Repeat("\U0001FBA9", maxValueChars))
			return repeatRaw(c, "GET", "/api/responses/"+itoa(id)+"/export/pdf", "", 4)
		}},
		{"clients that never read hold every large answer there is, while 60 submit", nil, func(c *hostileChild, s setup) func() {
			// A setting and descriptions of "<" (sixfold, were JSON to escape it), a form of
			// 1 MiB, a list and a CSV of 6 MB, a PDF.
			lt := strings.Repeat("<", maxDescriptionChars)
			c.call("PUT", "/api/settings/big", `{"value":"`+strings.Repeat("<", maxBodyBytes-100)+`"}`, 200, nil)
			for range listPageRows {
				c.call("POST", "/api/forms", `{"title":"t","description":"`+lt+`"}`, 201, nil)
			}
			var fields []string
			for i := range 95 {
				fields = append(fields, fmt.Sprintf(`{"label":"f%d","type":"text","description":"%s"}`, i, lt))
			}
			var f FormDetail
			body := `{"title":"t","categories":[{"name":"c","fields":[` + strings.Join(fields, ",") + `]}]}`
			c.call("POST", "/api/forms", body, 201, &f)
			for range 60 {
				c.submit(s.form.ID, s.field, strings.Repeat("v", 100_000))
			}
			big := strings.Repeat("a long line of text\n", 5000)
			id := c.submit(s.form.ID, itoa(s.form.Categories[1].Fields[0].ID), big)
			paths := []string{"/api/settings/big", "/api/forms", "/api/forms/" + itoa(f.ID),
				s.responses, s.responses + ".csv", "/api/responses/" + itoa(id) + "/export/pdf"}
			for i := range 300 {
				c.rawConn("GET " + paths[i%len(paths)] + " HTTP/1.1\r\nHost: localhost\r\n\r\n")
			}
			for range 20 {
				c.rawConn(fmt.Sprintf(upload, "PUT", "/api/settings/w", maxBodyBytes-50) +
					`{"value":"` + strings.Repeat("w", maxBodyBytes-50-12) + `"}`)
			}
			time.Sleep(500 * time.Millisecond) // every slot taken, the rest waiting
			// A write waits for the database only, whatever else clients hold.
			for range 60 {
				c.within("POST", s.responses, s.ack, 201, 2*time.Second)
			}
			return func() {}
		}},
		{"a long label repeated in every listed response", nil, func(c *hostileChild, s setup) func() {
			var f FormDetail
			label := map[string]any{"label": strings.Repeat("L", maxLabelChars), "type": "text"}
			c.call("POST", "/api/forms", map[string]any{"title": "t",
				"categories": []any{map[string]any{"fields": []any{label}}}}, 201, &f)
			c.call("GET", "/api/forms/"+itoa(f.ID), nil, 200, &f)
			for range 300 {
				c.submit(f.ID, itoa(f.Categories[0].Fields[0].ID), "a")
			}
			return repeatRaw(c, "GET", "/api/forms/"+itoa(f.ID)+"/responses", "", 8)
		}},
		{"the form list of many long titles, read at once", nil, func(c *hostileChild, s setup) func() {
			form := map[string]any{"title": strings.Repeat("T", maxTitleChars),
				"description": strings.Repeat("D", maxDescriptionChars)}
			for range 100 {
				c.call("POST", "/api/forms", form, 201, nil)
			}
			return repeatRaw(c, "GET", "/api/forms", "", 8)
		}},
		// The service runs away from its checkout, with no prompt file: the built-in
		// template is the one sent.
		{"thirty callers of the on-demand tracker summary at once", summaryEnv, func(c *hostileChild, s setup) func() {
			stop := repeatRaw(c, "GET", "/api/tracker-summary", "", 30)
			return func() {
				stop()
				var got struct{ Summary string }
				c.call("GET", "/api/tracker-summary", nil, 200, &got)
				if got.Summary != model.answer {
					c.t.Errorf("the summary = %q, want the model's %q whole", got.Summary, model.answer)
				}
				calls, pages := model.calls(), tracker.requestedPages()
				if len(calls) != 1 || len(pages) != 1 {
					c.t.Fatalf("%d model calls and tracker pages %v for thirty callers within 30 s, "+
						"want one walk and one call", len(calls), pages)
				}
				if !strings.HasPrefix(calls[0], "You are writing the daily briefing of a software team for ") {
					c.t.Errorf("prompt sent = %.200q, want the built-in tracker template", calls[0])
				}
			}
		}},
		{"an e-mail nested fourteen thousand multiparts deep", summaryEnv, func(c *hostileChild, s setup) func() {
			c.call("POST", "/api/email-summaries/generate", nil, 202, nil)
			return func() { // the e-mail job finishes within waitFor's 10 s
				waitFor(c.t, func() bool {
					var page struct{ Total int }
					c.call("GET", "/api/email-summaries", nil, 200, &page)
					return page.Total == 1
				})
			}
		}},
		{"a body of a hundred thousand empty categories", nil, func(c *hostileChild, s setup) func() {
			body := `{"title":"t","categories":[` + strings.Repeat("{},", 100_000) + `{}]}`
			return repeatRaw(c, "POST", "/api/forms", body, 6)
		}},
		{"a thousand PDF requests at once", nil, func(c *hostileChild, s setup) func() {
			pdf := "/api/responses/" + itoa(c.submit(s.form.ID, s.field, "x")) + "/export/pdf"
			var wg sync.WaitGroup
			for range 1000 {
				wg.Go(func() {
					res, err := testClient.Get(c.base + pdf)
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
			var fields []string
			for i := range 300 {
				fields = append(fields, fmt.Sprintf(`{"label":"field %d","type":"text","description":"%s"}`,
					i, strings.Repeat("d", 200)))
			}
			body := `{"title":"t","categories":[{"name":"c","fields":[` + strings.Join(fields, ",") + `]}]}`
			return repeatRaw(c, "POST", "/api/forms", body, 200)
		}},
		{"uploads that stall short of their end", nil, func(c *hostileChild, s setup) func() {
			chunk := `{"title":"` + strings.Repeat("x", maxBodyBytes-100)
			for range 300 {
				conn := c.rawConn(fmt.Sprintf(upload, "POST", "/api/forms", maxBodyBytes))
				go io.WriteString(conn, chunk) // and stop short
			}
			return func() {}
		}},
		{"values nested ten thousand deep", nil, func(c *hostileChild, s setup) func() {
			deep := strings.Repeat("[", 9990) + strings.Repeat("1,", 200_000) + "1" + strings.Repeat("]", 9990)
			body := `{"values":{"` + s.field + `":` + deep + `}}`
			return repeatRaw(c, "POST", s.responses, body, 4)
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
			cmd := exec.Command(serviceBinary(t))
			cmd.Dir = t.TempDir()
			cmd.Env = append(os.Environ(), append([]string{"ADDR=127.0.0.1:0",
				"DATABASE_PATH=" + filepath.Join(cmd.Dir, "forms.db")}, a.env...)...)
			c := &hostileChild{child: startProcess(t, cmd), t: t}
			var s setup
			c.call("POST", "/api/forms", fullForm(), 201, &s.form)
			c.call("GET", "/api/forms/"+itoa(s.form.ID), nil, 200, &s.form)
			s.field = itoa(s.form.Categories[0].Fields[0].ID)
			s.responses = "/api/forms/" + itoa(s.form.ID) + "/responses"
			s.ack = map[string]any{"values": map[string]any{s.field: "ack"}}

			stop := a.attack(c, s)
			crowd := strings.HasPrefix(a.name, "two hundred writers")
			acked := 0
			for range 5 {
				time.Sleep(200 * time.Millisecond) // the attack under way
				c.within("GET", "/healthz", nil, 200, time.Second)
				c.within("GET", "/api/forms/"+itoa(s.form.ID), nil, 200, 2*time.Second)
				// A crowd of writers may rightly keep a submit past writeWait (503); any
				// other refusal is a failure.
				status, raw, err := c.request("POST", s.responses, s.ack, 30*time.Second)
				switch {
				case status == http.StatusCreated:
					acked++
				case status != http.StatusServiceUnavailable || !crowd:
					t.Fatalf("submit during the attack = %d %v: %.300s", status, err, raw)
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
			var list json.RawMessage
			c.call("GET", s.responses, nil, 200, &list)
			kept := strings.Count(string(list), `"ack"`) // no other value is "ack"
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

// repeatRaw runs n clients sending the request over and over until stopped.
func repeatRaw(c *hostileChild, method, path, body string, n int) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{}}
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
