package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
)

// listedResponse is one element of GET /forms/{id}/responses as a client decodes it.
type listedResponse struct {
	ID          int64                  `json:"id"`
	SubmittedAt string                 `json:"submittedAt"`
	Values      map[string]listedValue `json:"values"`
}

type listedValue struct {
	Label string  `json:"label"`
	Type  string  `json:"type"`
	Value *string `json:"value"`
}

func TestSubmitStoresJavaScriptStrings(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	field := itoa(f.Categories[0].Fields[0].ID)
	// Each row of docs/DESIGN.md's String(value) table, sent as raw JSON; a line of that
	// table is a line here. The text stored is as show writes it: quoted, or NULL.
	for _, tc := range []struct{ json, want string }{
		{`"abc"`, `"abc"`}, {`""`, `""`},
		{`true`, `"true"`}, {`false`, `"false"`},
		{`42`, `"42"`}, {`1.0`, `"1"`}, {`1.50`, `"1.5"`}, {`-0`, `"0"`},
		{`1e21`, `"1e+21"`}, {`1e-7`, `"1e-7"`}, {`123456789012`, `"123456789012"`},
		{`[1, "a", [2, 3]]`, `"1,a,2,3"`}, {`[]`, `""`}, {`[null]`, `""`},
		{`{"a": 1}`, `"[object Object]"`},
		{`null`, `NULL`},
		{`"'); DROP TABLE responses; --"`, `"'); DROP TABLE responses; --"`},
		{`"\u0000 %s ? $1 \\ \""`, `"\x00 %s ? $1 \\ \""`},
	} {
		got := e.storedValue(e.submitRaw(f.ID, `{"values": {"`+field+`": `+tc.json+`}}`))
		if show(got) != tc.want {
			t.Errorf("String(%s) stored as %s, want %s", tc.json, show(got), tc.want)
		}
	}
}

// submitRaw posts a raw JSON body to a form and returns the new response id.
func (e *testEnv) submitRaw(formID int64, body string) int64 {
	e.t.Helper()
	var out struct{ ResponseID int64 }
	if status := e.doJSON("POST", "/api/forms/"+itoa(formID)+"/responses", body, &out); status != 201 {
		e.t.Fatalf("submit %s = %d", body, status)
	}
	return out.ResponseID
}

// storedValue is the one value stored for a response, read straight from the database;
// none or more fail the test.
func (e *testEnv) storedValue(responseID int64) *string {
	e.t.Helper()
	var v *string
	var n int
	err := e.store.read.QueryRow(`SELECT max(value), count(*) FROM response_values
		WHERE responseId = ?`, responseID).Scan(&v, &n)
	if err != nil || n != 1 {
		e.t.Fatalf("response %d has %d values (%v), want one", responseID, n, err)
	}
	return v
}

func ptr(s string) *string { return &s }

func show(p *string) string {
	if p == nil {
		return "NULL"
	}
	return fmt.Sprintf("%q", *p)
}

func TestSubmitErrors(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	path := "/api/forms/" + itoa(f.ID) + "/responses"
	const required = "Response values are required"
	cases := []struct{ name, path, body, msg string }{
		{"no values", path, `{}`, required},
		{"empty body", path, ``, required},
		{"null values", path, `{"values": null}`, required},
		{"empty object", path, `{"values": {}}`, required},
		{"array", path, `{"values": [1, 2]}`, required},
		{"array body", path, `[{"values": {"1": "x"}}]`, required},
		{"string", path, `{"values": "1"}`, required},
		{"number", path, `{"values": 1}`, required},
		{"string body", path, `"values"`, "Invalid JSON body: expected an object"},
		{"invalid JSON", path, `{"values": {"1": }`, "Invalid JSON body"},
		{"values checked before the form", "/api/forms/999/responses", `{"values": {}}`, required},
	}
	for _, tc := range cases {
		before := e.snapshot()
		e.wantError("POST", tc.path, tc.body, 400, tc.msg)
		if e.snapshot() != before {
			t.Errorf("%s: the rejected submit changed the database", tc.name)
		}
	}
}

func TestSubmitSkipsUnknownKeys(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	e.createForm(fullForm()) // another form, of fields 6 to 10
	own, foreign := "1", "6"
	// Junk around one of the form's own field ids is not that id: parseInt would read
	// "<id>abc" as the id, the strict rule does not.
	id := e.submit(f.ID, map[string]any{"abc": "x", "12abc": "x", "": "x", foreign: "x", "999999": "x",
		own + "abc": "x", " " + own: "x", own + " ": "x", "+" + own: "x", "-" + own: "x", own + ".0": "x", "0x" + own: "x"})
	if n := e.count("response_values"); n != 0 || id == 0 {
		t.Errorf("skipped keys stored %d values (response %d)", n, id)
	}
	// A key written twice keeps the later value, as a JavaScript object would.
	twice := `{"values": {"` + own + `": "first", "` + own + `": "second"}}`
	if v := e.storedValue(e.submitRaw(f.ID, twice)); show(v) != `"second"` {
		t.Errorf("duplicate key stored %s, want second", show(v))
	}
	// Two spellings of one id resolve the same way every time: keys are visited in
	// sorted order, so the plain "7" (sorted after "07" and "007") wins, whatever the
	// order in the body.
	for _, body := range []string{
		`{"values": {"` + own + `": "plain", "0` + own + `": "padded", "00` + own + `": "more"}}`,
		`{"values": {"00` + own + `": "more", "0` + own + `": "padded", "` + own + `": "plain"}}`,
	} {
		if v := e.storedValue(e.submitRaw(f.ID, body)); show(v) != `"plain"` {
			t.Errorf("%s stored %s, want plain", body, show(v))
		}
	}
}

// TestListResponsesBytes: the list writes every value byte for byte as encoding/json
// does (HTML-safe, U+2028 and U+2029 escaped, invalid UTF-8 as U+FFFD), as stored: NUL,
// spaces and digits inside a value, "" apart from null.
func TestListResponsesBytes(t *testing.T) {
	t.Parallel()
	e := newTestEnvAt(t, func() time.Time { return time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC) })
	values := []*string{ptr(""), nil, ptr(" "), ptr("1 2 -1 3"), ptr("<b>&amp;</b>"),
		ptr("\u2028\u2029"), ptr("a\x00b"), ptr("\"\\\b\f\n\r\t\x01\x1f\x7f"), ptr("é€𝄞"),
		ptr("\xff\xfe"), ptr("\xed\xa0\x80z")}
	fields := make([]any, len(values))
	for i := range values {
		fields[i] = map[string]any{"label": fmt.Sprintf("<%d> & \u2028", i), "type": "text"}
	}
	f := e.createForm(map[string]any{"title": "T", "categories": []any{
		map[string]any{"fields": fields}}})
	id := e.submit(f.ID, map[string]any{"none": 1})
	// The values go in around the store, whose JSON would make invalid UTF-8 U+FFFD.
	for i, fd := range f.Categories[0].Fields {
		var raw any // NULL for nil
		if values[i] != nil {
			raw = []byte(*values[i])
		}
		e.exec(`INSERT INTO response_values (responseId, fieldId, value)
			VALUES (?, ?, CAST(? AS TEXT))`, id, fd.ID, raw)
	}
	quote := func(v any) string { // as JSON.stringify: <, > and & as they are
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.Encode(v)
		return strings.TrimSuffix(b.String(), "\n")
	}
	var want strings.Builder
	fmt.Fprintf(&want, `[{"id":%d,"submittedAt":"2026-11-26T09:00:00.000Z","values":{`, id)
	for i, fd := range f.Categories[0].Fields {
		if i > 0 {
			want.WriteByte(',')
		}
		fmt.Fprintf(&want, `"%d":{"label":%s,"type":"text","value":%s}`,
			fd.ID, quote(fd.Label), quote(values[i]))
	}
	want.WriteString("}}]")
	e.wantReply("GET", "/api/forms/"+itoa(f.ID)+"/responses", nil, 200, want.String())
}

// TestConcurrentSubmits: 32 clients submitting 50 responses each are all acknowledged and
// all stored.
func TestConcurrentSubmits(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	body := `{"values": {"1": "a", "2": 3, "5": true}}` // three of its five fields
	const clients, each = 32, 50
	var g errgroup.Group
	for range clients {
		g.Go(func() error {
			for range each {
				res, err := e.http.Client().Post(e.http.URL+"/api/forms/"+itoa(f.ID)+"/responses",
					"application/json", strings.NewReader(body))
				if err != nil {
					return err
				}
				res.Body.Close()
				if res.StatusCode != http.StatusCreated {
					return fmt.Errorf("status %d", res.StatusCode)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Error(err)
	}
	if n, v := e.count("responses"), e.count("response_values"); n != clients*each || v != 3*n {
		t.Errorf("stored %d responses with %d values, want %d with 3 each", n, v, clients*each)
	}
}

func BenchmarkSubmit(b *testing.B) {
	e, f := benchEnv(b, 0)
	body := submitBody(f)
	b.ReportAllocs()
	for b.Loop() {
		serve(b, e.srv, "POST", "/api/forms/"+itoa(f.ID)+"/responses", body, 201)
	}
}

// BenchmarkListResponses shows the list's cost per call growing linearly with the
// number of responses (50 values each).
func BenchmarkListResponses(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("responses=%d", n), func(b *testing.B) {
			e, f := benchEnv(b, n)
			b.ReportAllocs()
			for b.Loop() {
				serve(b, e.srv, "GET", "/api/forms/"+itoa(f.ID)+"/responses", "", 200)
			}
		})
	}
}

// BenchmarkExportCSV: a form of 10,000 responses of 50 fields as CSV.
func BenchmarkExportCSV(b *testing.B) {
	e, f := benchEnv(b, 10000)
	b.ReportAllocs()
	for b.Loop() {
		serve(b, e.srv, "GET", "/api/forms/"+itoa(f.ID)+"/responses.csv", "", 200)
	}
}

// jsTable is testdata/js_strings.json: JSON inputs and node's String() of each.
func jsTable(tb testing.TB) []struct{ Input, String string } {
	tb.Helper()
	raw, err := os.ReadFile("testdata/js_strings.json")
	var table []struct{ Input, String string }
	if err := cmp.Or(err, json.Unmarshal(raw, &table)); err != nil {
		tb.Fatal(err)
	}
	return table
}

// TestJSStringTable compares jsText with JavaScript's own String() over node's table.
func TestJSStringTable(t *testing.T) {
	table := jsTable(t)
	if len(table) < 1000 {
		t.Fatalf("table has %d rows", len(table))
	}
	for _, row := range table {
		if got := jsText(decodeJS(t, row.Input)); got != row.String {
			t.Errorf("String(%s) = %q; JavaScript says %q", row.Input, got, row.String)
		}
	}
}

// jsNumberForm is the grammar of ECMAScript's Number::toString for finite numbers.
var jsNumberForm = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]*[1-9])?$|^-?0\.0*[1-9][0-9]*$|^-?[1-9](\.[0-9]*[1-9])?e[+-][1-9][0-9]*$`)

// FuzzJSString: every number's text reads back as the same number in JavaScript's
// grammar, and the table's rows hold as seeds.
func FuzzJSString(f *testing.F) {
	for _, row := range jsTable(f)[:120] { // the rest are TestJSStringTable's
		f.Add(row.Input)
	}
	f.Fuzz(func(t *testing.T, input string) {
		if !json.Valid([]byte(input)) {
			return // the handlers never pass invalid JSON on
		}
		v := decodeJS(t, input)
		got := jsText(v)
		num, isNumber := v.(json.Number)
		n, _ := strconv.ParseFloat(string(num), 64)
		if isNumber && !math.IsInf(n, 0) {
			back, perr := strconv.ParseFloat(got, 64)
			if perr != nil || back != n || !jsNumberForm.MatchString(got) {
				t.Errorf("String(%s) = %q, which does not read back as %v in JavaScript's form", input, got, n)
			}
		}
	})
}

// FuzzSubmitBody: any submit body answers JSON with 201 or 400 and stores only values
// of the form's own fields.
func FuzzSubmitBody(f *testing.F) {
	for _, s := range []string{`{"values": {"1": "a"}}`, `{"values": {"1": null, "2": [1, {}], "x": 1}}`, `{"values": []}`,
		`{"values": {}}`, `{}`, `{"values": {"1": 1e400}}`, `{"values": {"01": 1, "1": 2}}`, `{"values": "x"}`, `{"values": {"1": "\ud800"}}`} {
		f.Add(s)
	}
	e := newTestEnv(f)
	form := e.createForm(fullForm())
	e.createForm(fullForm()) // another form, whose field ids must never be stored
	f.Fuzz(func(t *testing.T, body string) {
		e.t = t
		status := fuzzServe(t, e.srv, "POST", "/api/forms/"+itoa(form.ID)+"/responses", body)
		if !slices.Contains([]int{201, 400, 413}, status) {
			t.Fatalf("submit %q: unexpected status %d", body, status)
		}
		e.wantNoOrphans()
	})
}

// TestListStopsWhenTheClientLeaves: a client that leaves after the first page of a list
// (the forms, a form's responses) ends the list there: nothing past that page is sent,
// the array is not closed, and the request is logged as the client's leaving (499), not
// as a failure.
func TestListStopsWhenTheClientLeaves(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(map[string]any{"title": "T"})
	for range listPageRows {
		e.createForm(map[string]any{"title": "T"})
		e.submit(f.ID, map[string]any{"none": 1})
	}
	e.submit(f.ID, map[string]any{"none": 1})
	for _, path := range []string{"/api/forms", "/api/forms/" + itoa(f.ID) + "/responses"} {
		ctx, cancel := context.WithCancel(context.Background())
		rec := httptest.NewRecorder()
		before := len(e.logs.String())
		within(t, 30*time.Second, path, func() { // a list stuck in the store fails, not hangs
			e.srv.ServeHTTP(&afterFirstWrite{ResponseWriter: rec, then: cancel},
				apiRequest("GET", path, nil).WithContext(ctx))
		})
		body := rec.Body.String()
		if n := strings.Count(body, `"id":`); n != listPageRows || strings.HasSuffix(body, "]\n") {
			t.Errorf("%s: %d items sent, the list closed: %v; want the first page alone, cut", path, n, strings.HasSuffix(body, "]\n"))
		}
		logs := e.logs.String()[before:]
		if !strings.Contains(logs, `msg="client gone"`) || !strings.Contains(logs, "status=499") || strings.Contains(logs, "level=ERROR") {
			t.Errorf("%s: log:\n%s\nwant the client's leaving, status 499, no error", path, logs)
		}
	}
}

// TestCSVCellFirstCharacters: of the ASCII characters, exactly OWASP's six (=, +, -, @,
// tab, CR) disarm a cell they start; a plain number starting with + or - stays a number,
// and an empty value an empty cell.
func TestCSVCellFirstCharacters(t *testing.T) {
	for c := range rune(0x80) {
		cell := string(c) + "x"
		want := cell
		if strings.ContainsRune("=+-@\t\r", c) {
			want = "'" + cell
		}
		if got := csvCell(cell); got != want {
			t.Errorf("csvCell(%q) = %q, want %q", cell, got, want)
		}
	}
	for _, n := range []string{"", "-5", "+1.5", "-2e3", ".5", "+.5e-3"} { // and the empty cell
		if got := csvCell(n); got != n {
			t.Errorf("csvCell(%q) = %q, want the number as it is", n, got)
		}
	}
}

// TestExportCSV reads the export back through encoding/csv, as a spreadsheet would: RFC
// 4180 quoting of commas, quotes and newlines, UTF-8 behind a byte-order mark, newest
// response first, labels in form order, null as an empty cell, formulas disarmed and
// plain numbers kept.
func TestExportCSV(t *testing.T) {
	t.Parallel()
	e := newTestEnvAt(t, func() time.Time { return time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC) })
	const at = "2026-11-26T09:00:00.000Z"
	f := e.createForm(map[string]any{"title": "Q3 survey", "categories": []any{
		map[string]any{"name": "b", "fields": []any{
			map[string]any{"label": "Name", "type": "text"},
			map[string]any{"label": "=1+1", "type": "text"}}},
		map[string]any{"name": "a", "fields": []any{
			map[string]any{"label": "Notes", "type": "textarea"},
			map[string]any{"label": "Amount", "type": "number"}}},
	}})
	id := func(c, i int) string { return itoa(f.Categories[c].Fields[i].ID) }
	before := e.createForm(map[string]any{"title": "before"}).ID
	for range 10 { // the ids below have two digits, written in base 10
		e.submit(before, map[string]any{"none": 1})
	}
	first := e.submit(f.ID, map[string]any{id(0, 0): `Smith, "Jo"`, id(0, 1): "=HYPERLINK(\"http://x\")",
		id(1, 0): "line one\nline two\r\nЖанна, привет", id(1, 1): -5})
	second := e.submit(f.ID, map[string]any{id(0, 0): "@SUM(A1)", id(0, 1): "\tx", id(1, 0): nil, id(1, 1): "+1.5"})
	third := e.submit(f.ID, map[string]any{id(0, 0): "-2e3", id(0, 1): "-1+HYPERLINK(\"x\")", id(1, 0): "+", id(1, 1): "\rcmd"})
	empty := e.submit(f.ID, map[string]any{"none": 1})

	res, body := e.getRaw("/api/forms/" + itoa(f.ID) + "/responses.csv")
	h := res.Header
	if res.StatusCode != 200 || h.Get("Content-Type") != "text/csv; charset=utf-8" ||
		h.Get("Content-Disposition") != "attachment; filename=responses_1_Q3_survey.csv" {
		t.Errorf("%d, headers %q; want 200 text/csv, responses_1_Q3_survey.csv", res.StatusCode, h)
	}
	rows, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatalf("read CSV: %v\n%s", err, body)
	}
	want := [][]string{
		{"\uFEFFid", "submittedAt", "Name", "'=1+1", "Notes", "Amount"}, // behind a byte-order mark
		{itoa(empty), at, "", "", "", ""},
		{itoa(third), at, "-2e3", `'-1+HYPERLINK("x")`, "'+", "'\rcmd"},
		{itoa(second), at, "'@SUM(A1)", "'\tx", "", "+1.5"},
		// encoding/csv's reader reads a CRLF inside a quoted field as LF; the bytes are
		// checked below.
		{itoa(first), at, `Smith, "Jo"`, `'=HYPERLINK("http://x")`, "line one\nline two\nЖанна, привет", "-5"},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("CSV rows:\n%q\nwant:\n%q", rows, want)
	}
	if !bytes.Contains(body, []byte("\"'\rcmd\"\n")) || !bytes.Contains(body, []byte("\"line one\nline two\r\nЖанна")) {
		t.Errorf("carriage returns in values not written as stored: %q", body)
	}
}

// TestFileTitle: white space as JavaScript's \s sees it (U+FEFF yes, U+0085 no), and
// tabs, become underscores; U+0085 is a control character, so it goes. TestContentDisposition
// has the other rules, with their headers.
func TestFileTitle(t *testing.T) {
	for _, tc := range []struct{ title, want string }{
		{"a/b\\c\td", "a_b_c_d"},
		{"\uFEFF", "_"},
		{"a\u0085b", "ab"},
		{"a\u00a0b\u2003c", "a_b_c"},
	} {
		if got := fileTitle(tc.title); got != tc.want {
			t.Errorf("fileTitle(%q) = %q, want %q", tc.title, got, tc.want)
		}
	}
}

// TestListCutIsIncomplete: a list whose second page fails once the first is out (its
// table dropped meanwhile) ends its connection before its body's end, so that the client
// reads it as incomplete: the CSV too, which cut between two pages still parses.
func TestListCutIsIncomplete(t *testing.T) {
	for _, path := range []string{"/responses.csv", "/responses"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			e := newTestEnv(t)
			f := e.createForm(fullForm())
			for range listPageRows + 1 {
				// Values long enough that the first page passes net/http's buffer and is sent.
				e.submit(f.ID, map[string]any{itoa(f.Categories[0].Fields[0].ID): strings.Repeat("v", 200)})
			}
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				e.srv.ServeHTTP(&afterFirstWrite{ResponseWriter: w, then: func() {
					if _, err := e.store.write.Exec(`DROP TABLE response_values`); err != nil {
						t.Error(err)
					}
				}}, r)
			}))
			defer hs.Close()
			res, err := hs.Client().Get(hs.URL + "/api/forms/" + itoa(f.ID) + path)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("%d, %d bytes, read error %v; want 200 and the body cut (unexpected EOF)",
					res.StatusCode, len(body), err)
			}
			// The log says why, and the request as aborted, with no panic logged.
			logs := e.logs.String()
			if !strings.Contains(logs, `level=ERROR msg="reply cut" method=GET path=/api/forms/`+itoa(f.ID)+path+` err=`) ||
				!strings.Contains(logs, "status=200") || !strings.Contains(logs, "aborted=true") || strings.Contains(logs, "panic") {
				t.Errorf("log lacks the cut reply, or logs a panic:\n%s", logs)
			}
		})
	}
}

// TestSlowReaders: a list read at a modest pace is sent whole, however long it takes, since
// each page has the whole write timeout of its own. Clients that stop reading (one in each
// heavy slot, more than the read pool has connections) hold no connection and no snapshot:
// reads, writes and a full WAL checkpoint go on while they stall, and each is cut once one
// page stalls past the write timeout. Both ends' socket buffers are small, so that the
// server waits on the reader as over a slow link.
func TestSlowReaders(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, func(c *config) { c.WriteTimeout = 2 * time.Second })
	f := e.createForm(fullForm())
	field := itoa(f.Categories[0].Fields[0].ID)
	for range 900 { // 3.6 MB: 3.6 s at 1 MB/s, 0.27 s a page
		e.submit(f.ID, map[string]any{field: strings.Repeat("v", 4000)})
	}
	hs := httptest.NewUnstartedServer(e.srv)
	hs.Listener = smallBufferListener{hs.Listener}
	hs.Config.WriteTimeout = e.srv.cfg.WriteTimeout
	hs.Start()
	defer hs.Close()
	get := func(path string) net.Conn {
		conn, err := net.Dial("tcp", hs.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		conn.(*net.TCPConn).SetReadBuffer(64 << 10)
		conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // a broken test fails, not hangs
		fmt.Fprintf(conn, "GET /api/forms/%d%s HTTP/1.1\r\nHost: localhost\r\n\r\n", f.ID, path)
		return conn
	}
	end := []byte("]\n\r\n0\r\n\r\n") // the chunked body's end
	conn, start := get("/responses"), time.Now()
	var got bytes.Buffer
	buf := make([]byte, 64<<10)
	for !bytes.HasSuffix(got.Bytes(), end) {
		n, err := conn.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			break
		}
		time.Sleep(time.Duration(n) * time.Microsecond) // 1 MB/s
	}
	took := time.Since(start)
	if !bytes.HasSuffix(got.Bytes(), end) || took < e.srv.cfg.WriteTimeout {
		t.Errorf("a slow reader got %d bytes in %v; want the whole list, past the write timeout\n%s",
			got.Len(), took, e.logs)
	}

	var stalled []*bufio.Reader
	for i := range heavySlots {
		// Read the status line and stop: the server is left writing into a full socket.
		r := bufio.NewReader(get([]string{"/responses", "/responses.csv"}[i%2]))
		if line, err := r.ReadString('\n'); err != nil || !strings.Contains(line, "200") {
			t.Fatalf("stalled reader: %q, %v", line, err)
		}
		stalled = append(stalled, r)
	}
	for _, r := range []struct{ method, path, body string }{{"GET", "/healthz", ""},
		{"GET", "/api/forms/" + itoa(f.ID), ""}, {"PUT", "/api/settings/k", `{"value": 1}`}} {
		if status, _ := e.do(r.method, r.path, r.body); status != 200 {
			t.Errorf("%s %s = %d while readers stall", r.method, r.path, status)
		}
	}
	var busy, logFrames, checkpointed int
	err := e.store.write.QueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logFrames, &checkpointed)
	if err != nil || busy != 0 {
		t.Errorf("wal_checkpoint(TRUNCATE) = busy %d (%v): a reader still holds a snapshot", busy, err)
	}
	// Each stalled list stops once a page waits past the write timeout, and the log says why.
	waitFor(t, func() bool { return strings.Count(e.logs.String(), "status=499") == len(stalled) })
	if rest, _ := io.ReadAll(stalled[0]); bytes.HasSuffix(rest, end) {
		t.Errorf("a client that stopped reading got the whole list")
	}
}

// smallBufferListener gives every connection a small send buffer, as a slow link has.
type smallBufferListener struct{ net.Listener }

func (l smallBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tcp, ok := c.(*net.TCPConn); ok {
		tcp.SetWriteBuffer(64 << 10)
	}
	return c, err
}

// afterFirstWrite runs then after the first Write of a reply.
type afterFirstWrite struct {
	http.ResponseWriter
	then  func()
	wrote bool
}

func (w *afterFirstWrite) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	if !w.wrote {
		w.wrote = true
		w.then()
	}
	return n, err
}
