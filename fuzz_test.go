package main

import (
	"bytes"
	"encoding/json"
	"math"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// jsTable is testdata/js_strings.json: JSON inputs and node's String() of each.
func jsTable(tb testing.TB) []struct{ Input, String string } {
	tb.Helper()
	raw, err := os.ReadFile("testdata/js_strings.json")
	if err != nil {
		tb.Fatal(err)
	}
	var table []struct{ Input, String string }
	if err := json.Unmarshal(raw, &table); err != nil {
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
		if got, err := jsText(json.RawMessage(row.Input)); err != nil || got != row.String {
			t.Errorf("String(%s) = %q, %v; JavaScript says %q", row.Input, got, err, row.String)
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
		got, err := jsText(json.RawMessage(input))
		if !json.Valid([]byte(input)) {
			return // the handlers never pass invalid JSON on
		}
		if err != nil {
			t.Fatalf("jsText(%s): %v", input, err)
		}
		v, _ := decodeAny(json.RawMessage(input))
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

// FuzzContentDisposition: the header always parses, names the file inline and carries
// the sanitised title exactly, and never holds a line break.
func FuzzContentDisposition(f *testing.F) {
	for _, s := range []string{"Report", `a/b\c d`, `"x";y`, "Café ü", "new\nline", "   ", "", "%41", "a*b'c", "\x00\x7f", "🙂", "\xff"} {
		f.Add(int64(7), s)
	}
	f.Fuzz(func(t *testing.T, id int64, title string) {
		if id < 0 {
			id = -id
		}
		h := contentDisposition(id, title)
		if strings.ContainsAny(h, "\r\n\x00") {
			t.Fatalf("header holds a control character: %q", h)
		}
		disp, params, err := mime.ParseMediaType(h)
		if err != nil || disp != "inline" {
			t.Fatalf("ParseMediaType(%q) = %q, %v", h, disp, err)
		}
		if utf8.ValidString(title) && !strings.HasPrefix(params["filename"], "response_"+strconv.FormatInt(id, 10)+"_") {
			t.Errorf("filename %q for title %q", params["filename"], title)
		}
	})
}

// FuzzParseEmail: any bytes either parse to valid UTF-8 fields within the body cap, or
// give an error; never a panic.
func FuzzParseEmail(f *testing.F) {
	for _, dir := range []string{"new", "cur"} {
		entries, _ := os.ReadDir("testdata/maildir/" + dir)
		for _, e := range entries {
			if b, err := os.ReadFile("testdata/maildir/" + dir + "/" + e.Name()); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := parseEmail(bytes.NewReader(raw))
		if err != nil {
			return
		}
		for _, s := range []string{m.From, m.To, m.Subject, m.Date, m.Body} {
			if !utf8.ValidString(s) {
				t.Errorf("invalid UTF-8 in %+v", m)
			}
		}
		if utf8.RuneCountInString(m.Body) > maxEmailBodyChars {
			t.Errorf("body of %d characters", utf8.RuneCountInString(m.Body))
		}
	})
}

// FuzzPDFText: whatever goes in, what reaches fpdf is valid UTF-8 of the Basic
// Multilingual Plane without control characters (newlines only where kept), the input
// fpdf's UTF-8 fonts handle. FuzzPDF below renders whole documents, but fpdf under the
// fuzzer's instrumentation manages only a few a second; this runs the sanitiser fast.
func FuzzPDFText(f *testing.F) {
	for _, s := range []string{"plain", "🙂 emoji", "a\r\nb\rc\n", "\x00\x1f\x7f\u0085\u2028", "\xff\xfe", "ß Ж Ω ’"} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, keepNewlines bool) {
		out := pdfText(s, keepNewlines)
		if !utf8.ValidString(out) {
			t.Fatalf("pdfText(%q) = %q: invalid UTF-8", s, out)
		}
		for _, r := range out {
			if r > 0xFFFF || (unicode.IsControl(r) && !(keepNewlines && r == '\n')) {
				t.Fatalf("pdfText(%q, %v) = %q holds %U", s, keepNewlines, out, r)
			}
		}
	})
}

// FuzzPDF: any strings in any place of a form export to a PDF without an error.
func FuzzPDF(f *testing.F) {
	f.Add("Title", "Category", "Label", "Description", "value", "2026-11-25")
	f.Add("🙂\x00", "", "\u2028\t", "ß Ж Ω ’", strings.Repeat("x", 400), "true")
	f.Add("", "\xff\xfe", "a\r\nb", "", "line\n\n\nline", "2026-02-30")
	f.Fuzz(func(t *testing.T, title, category, label, description, value, other string) {
		form := FormDetail{Form: Form{ID: 1, Title: title}, Categories: []Category{{ID: 1, Name: category}}}
		values := map[int64]*string{}
		for i, typ := range []string{"text", "number", "date", "textarea", "boolean"} {
			id := int64(i + 1)
			form.Categories[0].Fields = append(form.Categories[0].Fields,
				Field{ID: id, Label: label, Type: typ, Description: &description})
			v := value
			if i%2 == 1 {
				v = other
			}
			values[id] = &v
		}
		var buf bytes.Buffer
		if err := writeResponsePDF(&buf, form, values, time.Now()); err != nil {
			t.Fatalf("export failed: %v", err)
		}
		if !bytes.HasPrefix(buf.Bytes(), []byte("%PDF-")) {
			t.Fatal("not a PDF")
		}
	})
}

// fuzzServe runs one request through the handler and checks the rules every answer
// keeps: JSON, and a 500 only for SPEC.md's validation failures.
func fuzzServe(t *testing.T, h http.Handler, method, path, body string) int {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if ct := w.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" || !json.Valid(w.Body.Bytes()) {
		t.Fatalf("%s %s %q: answer %d %q is not JSON (%s)", method, path, body, w.Code, w.Body, ct)
	}
	if w.Code == 500 {
		var e struct{ Error string }
		json.Unmarshal(w.Body.Bytes(), &e)
		if !regexp.MustCompile(`^Failed to (create|update) form( \d+)?: (Invalid field type: |Field label is required$)`).MatchString(e.Error) {
			t.Fatalf("%s %s %q: unexpected 500 %s", method, path, body, w.Body)
		}
	}
	return w.Code
}

// FuzzFormBody: any body for create and update answers JSON, never an unexpected 500,
// and leaves the database consistent.
func FuzzFormBody(f *testing.F) {
	for _, s := range []string{
		`{"title": "T"}`, `{"title": "T", "categories": [{"name": "c", "fields": [{"label": "l", "type": "text"}]}]}`,
		`{"title": "T", "categories": [{"fields": [{"label": "l", "type": "bad"}]}]}`, `{"title": ""}`, `[]`, `null`, `{"title": 1}`,
		`{"title": "T", "categories": [null, {"fields": [null]}]}`, `{"title": "T", "description": null, "categories": null}`, `{`, ``,
		`{"title": "x", "categories": [{"fields": [{"label": "a", "type": ["text"]}]}]}`,
	} {
		f.Add(s)
	}
	e := newTestEnv(f)
	existing := e.createForm(fullForm())
	e.submit(existing.ID, map[string]any{itoa(existing.Categories[0].Fields[0].ID): "v"})
	f.Fuzz(func(t *testing.T, body string) {
		e.t = t
		switch fuzzServe(t, e.srv, "POST", "/api/forms", body) {
		case 201, 400, 413, 500:
		default:
			t.Fatalf("create %q: unexpected status", body)
		}
		switch fuzzServe(t, e.srv, "PUT", "/api/forms/"+itoa(existing.ID), body) {
		case 200, 400, 413, 500:
		default:
			t.Fatalf("update %q: unexpected status", body)
		}
		e.wantNoOrphans()
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
		switch fuzzServe(t, e.srv, "POST", "/api/forms/"+itoa(form.ID)+"/responses", body) {
		case 201, 400, 413:
		default:
			t.Fatalf("submit %q: unexpected status", body)
		}
		e.wantNoOrphans()
	})
}
