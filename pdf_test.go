package main

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-pdf/fpdf"
)

// popplerTool runs one of poppler-utils' programs on a PDF and returns its output.
// The tools are a requirement of the tests (README, .ci/run), so their absence fails.
func popplerTool(t *testing.T, pdf []byte, tool string, args ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "doc.pdf")
	if err := os.WriteFile(path, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	args = append(args, path)
	if tool == "pdftotext" {
		args = append(args, "-") // to standard output
	}
	out, err := exec.Command(tool, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s (install poppler-utils to run the PDF tests)", tool, args, err, out)
	}
	return string(out)
}

// exportPDF fetches the PDF of a response and checks that it is one.
func (e *testEnv) exportPDF(responseID int64) ([]byte, http.Header) {
	e.t.Helper()
	res, err := e.http.Client().Get(e.http.URL + "/api/responses/" + itoa(responseID) + "/export/pdf")
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/pdf" || !bytes.HasPrefix(body, []byte("%PDF-")) {
		e.t.Fatalf("export %d = %d %s %.200q, want 200 and a PDF", responseID, res.StatusCode, res.Header.Get("Content-Type"), body)
	}
	return body, res.Header
}

// textLines is pdftotext -layout's output as trimmed, non-empty lines.
func textLines(t *testing.T, pdf []byte) []string {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(popplerTool(t, pdf, "pdftotext", "-layout"), "\n") {
		if l = strings.TrimSpace(strings.Trim(l, "\f")); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

func TestExportPDFContent(t *testing.T) {
	e := newTestEnv(t)
	f := e.createForm(map[string]any{
		"title": "Café Inspection Straße Ж Ω ’",
		"categories": []any{
			map[string]any{"name": "General", "fields": []any{
				map[string]any{"label": "Inspector", "type": "text", "description": "Full name"},
				map[string]any{"label": "Rooms", "type": "number"},
				map[string]any{"label": "Visited", "type": "date"},
				map[string]any{"label": "Not a date", "type": "date"},
				map[string]any{"label": "Impossible", "type": "date"},
			}},
			map[string]any{"name": "", "fields": []any{
				map[string]any{"label": "Notes", "type": "textarea"},
				map[string]any{"label": "Passed", "type": "boolean"},
				map[string]any{"label": "Failed", "type": "boolean"},
				map[string]any{"label": "Unsure", "type": "boolean"},
				map[string]any{"label": "Never answered", "type": "text"},
				map[string]any{"label": "Null", "type": "text"},
			}},
		},
	})
	id := func(c, i int) string { return itoa(f.Categories[c].Fields[i].ID) }
	rid := e.submit(f.ID, map[string]any{
		id(0, 0): "Zoë Ærø", id(0, 1): 12, id(0, 2): "2026-11-05", id(0, 3): "next week", id(0, 4): "2026-02-30",
		id(1, 0): "First line\nSecond line", id(1, 1): true, id(1, 2): false, id(1, 3): "maybe", id(1, 5): nil,
	})
	pdf, _ := e.exportPDF(rid)

	got := textLines(t, pdf)
	want := []string{
		"Café Inspection Straße Ж Ω ’",
		"General",
		"Inspector:", "Full name", "Zoë Ærø",
		"Rooms:", "12",
		"Visited:", "05/11/2026",
		"Not a date:", "next week",
		"Impossible:", "2026-02-30",
		// The unnamed category prints no heading: Notes follows directly.
		"Notes:", "First line", "Second line",
		"Passed:", "Yes",
		"Failed:", "No",
		"Unsure:", // "maybe" prints blank
		"Never answered:",
		"Null:",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("PDF text:\n%s\n\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	info := popplerTool(t, pdf, "pdfinfo")
	for _, want := range []string{"Title:           Café Inspection Straße Ж Ω ’", "Pages:           1", "Page size:       595.28 x 841.89 pts (A4)"} {
		if !strings.Contains(info, want) {
			t.Errorf("pdfinfo lacks %q:\n%s", want, info)
		}
	}
	fonts := popplerTool(t, pdf, "pdffonts")
	for _, name := range []string{"gobold", "gomedium", "goitalic", "goregular"} {
		if !regexp.MustCompile(`(?m)^\S*` + name + `\s+CID TrueType\s+Identity-H\s+yes`).MatchString(fonts) {
			t.Errorf("font %s not embedded:\n%s", name, fonts)
		}
	}
}

// TestExportPDFOnlyUsedFonts: a form without descriptions embeds no italic, a form
// without fields only the bold of its title.
func TestExportPDFOnlyUsedFonts(t *testing.T) {
	e := newTestEnv(t)
	cases := []struct {
		form map[string]any
		want []string
	}{
		{map[string]any{"title": "Empty"}, []string{"gobold"}},
		{map[string]any{"title": "Plain", "categories": []any{map[string]any{"fields": []any{map[string]any{"label": "a", "type": "text"}}}}},
			[]string{"gobold", "gomedium", "goregular"}},
	}
	for _, tc := range cases {
		var created formAnswer
		e.doJSON("POST", "/api/forms", tc.form, &created)
		rid := e.submit(created.ID, map[string]any{"x": 1})
		pdf, _ := e.exportPDF(rid)
		fonts := popplerTool(t, pdf, "pdffonts")
		for _, name := range []string{"gobold", "gomedium", "goitalic", "goregular"} {
			if got, want := strings.Contains(fonts, name), slices.Contains(tc.want, name); got != want {
				t.Errorf("%s: font %s embedded = %v, want %v:\n%s", tc.form["title"], name, got, want, fonts)
			}
		}
	}
}

func TestExportPDFHostileText(t *testing.T) {
	e := newTestEnv(t)
	f := e.createForm(map[string]any{"title": "Emoji 🙂 title\x07", "categories": []any{
		map[string]any{"name": "Cat 🚀", "fields": []any{
			map[string]any{"label": "Label 👍\ttab", "type": "text", "description": "desc 🎉\x00"},
			map[string]any{"label": "Area", "type": "textarea"},
			map[string]any{"label": "Word", "type": "text"},
		}}}})
	long := strings.Repeat("x", 300)
	rid := e.submit(f.ID, map[string]any{
		itoa(f.Categories[0].Fields[0].ID): "value 😀 \x1b[31m \u2028 end \xff",
		itoa(f.Categories[0].Fields[1].ID): "area 🙃\r\nnext\x00line",
		itoa(f.Categories[0].Fields[2].ID): long,
	})
	pdf, _ := e.exportPDF(rid)
	text := strings.Join(textLines(t, pdf), "\n")
	for _, want := range []string{"Emoji \uFFFD title", "Cat \uFFFD", "Label \uFFFD tab:", "value \uFFFD", "end", "area \uFFFD", "next line"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	// The 300-character word wraps: all of it is there, and no word runs past the right margin.
	var word string
	for _, line := range strings.Split(text, "\n") {
		if strings.Trim(line, "x") == "" {
			word += line
		}
	}
	if word != long || strings.Contains(text, long) {
		t.Errorf("the 300-character word lost characters or did not wrap:\n%s", text)
	}
	bbox := popplerTool(t, pdf, "pdftotext", "-bbox")
	for _, m := range regexp.MustCompile(`xMax="([0-9.]+)"`).FindAllStringSubmatch(bbox, -1) {
		if x, _ := strconv.ParseFloat(m[1], 64); x > pdfMargin+pdfContentWidth+0.5 {
			t.Errorf("a word ends at x=%v, right of the content width", x)
		}
	}
}

func TestExportPDFLongTextarea(t *testing.T) {
	e := newTestEnv(t)
	f := e.createForm(map[string]any{"title": "Long", "categories": []any{
		map[string]any{"fields": []any{map[string]any{"label": "Essay", "type": "textarea"}, map[string]any{"label": "After", "type": "text"}}}}})
	var words []string
	for i := 0; len(strings.Join(words, " ")) < 5000; i++ {
		words = append(words, fmt.Sprintf("w%04d", i))
	}
	essay := strings.Join(words, " ")
	rid := e.submit(f.ID, map[string]any{itoa(f.Categories[0].Fields[0].ID): essay, itoa(f.Categories[0].Fields[1].ID): "tail"})
	pdf, _ := e.exportPDF(rid)
	if info := popplerTool(t, pdf, "pdfinfo"); !strings.Contains(info, "Pages:           2") {
		t.Errorf("a %d-character textarea should span two pages:\n%s", len(essay), info)
	}
	got := strings.Fields(strings.Join(textLines(t, pdf), " "))
	var inEssay []string
	for _, w := range got {
		if strings.HasPrefix(w, "w") && len(w) == 5 {
			inEssay = append(inEssay, w)
		}
	}
	if strings.Join(inEssay, " ") != essay {
		t.Errorf("textarea text lost or reordered: got %d words, want %d", len(inEssay), len(words))
	}
	if got[len(got)-1] != "tail" {
		t.Errorf("the field after the textarea is missing: last word %q", got[len(got)-1])
	}
}

func TestExportPDFErrors(t *testing.T) {
	e := newTestEnv(t)
	for _, id := range []string{"abc", "1x", "-1", "1.0", "99999999999999999999999999999999999999"} {
		e.wantError("GET", "/api/responses/"+id+"/export/pdf", nil, 400, "Invalid response ID")
	}
	e.wantError("GET", "/api/responses/42/export/pdf", nil, 404, "Response not found")
}

func TestContentDisposition(t *testing.T) {
	cases := []struct {
		title, want, wantName string
	}{
		{"Report", "inline; filename=response_7_Report.pdf", "response_7_Report.pdf"},
		{`a/b\c d`, "inline; filename=response_7_a_b_c_d.pdf", "response_7_a_b_c_d.pdf"},
		{"   ", "inline; filename=response_7____.pdf", "response_7____.pdf"},
		{"", "inline; filename=response_7_form.pdf", "response_7_form.pdf"},
		{"line\nbreak\r\nx", "inline; filename=response_7_line_break__x.pdf", "response_7_line_break__x.pdf"},
		{`"x";y`, `inline; filename="response_7__x__y.pdf"; filename*=UTF-8''response_7_%22x%22%3By.pdf`, `response_7_"x";y.pdf`},
		{"Café ü", `inline; filename="response_7_Caf___.pdf"; filename*=UTF-8''response_7_Caf%C3%A9_%C3%BC.pdf`, "response_7_Café_ü.pdf"},
		{"a,b", `inline; filename="response_7_a_b.pdf"; filename*=UTF-8''response_7_a%2Cb.pdf`, "response_7_a,b.pdf"},
		{"x\x00y\x7f", `inline; filename="response_7_x_y_.pdf"; filename*=UTF-8''response_7_x%00y%7F.pdf`, "response_7_x\x00y\x7f.pdf"},
	}
	for _, tc := range cases {
		got := contentDisposition(7, tc.title)
		if got != tc.want {
			t.Errorf("contentDisposition(%q) = %s, want %s", tc.title, got, tc.want)
		}
		disp, params, err := mime.ParseMediaType(got)
		if err != nil || disp != "inline" || params["filename"] != tc.wantName {
			t.Errorf("ParseMediaType(%s) = %q %q %v, want inline with filename %q", got, disp, params, err, tc.wantName)
		}
	}
}

// TestExportPDFHeaders goes through the server for the hostile titles of the issue.
func TestExportPDFHeaders(t *testing.T) {
	e := newTestEnv(t)
	for _, title := range []string{`a/b\c d`, `"x";y`, "Café ü", "new\nline", "   "} {
		var created formAnswer
		e.doJSON("POST", "/api/forms", map[string]any{"title": title + "t"}, &created)
		rid := e.submit(created.ID, map[string]any{"1": "x"})
		_, h := e.exportPDF(rid)
		got := h.Values("Content-Disposition")
		if len(got) != 1 || got[0] != contentDisposition(rid, title+"t") {
			t.Errorf("title %q: Content-Disposition %q, want %q", title, got, contentDisposition(rid, title+"t"))
		}
		if _, _, err := mime.ParseMediaType(got[0]); err != nil {
			t.Errorf("title %q: header does not parse: %v", title, err)
		}
	}
}

// benchmarkForm is the 50-field form of compare.sh: 5 categories of 10, all types.
func benchmarkForm() (FormDetail, map[int64]*string) {
	types := []string{"text", "number", "date", "textarea", "boolean"}
	f := FormDetail{Form: Form{ID: 1, Title: "Site inspection report"}}
	values := map[int64]*string{}
	id := int64(0)
	for c := range 5 {
		cat := Category{ID: int64(c + 1), Name: fmt.Sprintf("Section %d", c+1)}
		for i := range 10 {
			id++
			typ := types[(c*10+i)%5]
			fd := Field{ID: id, Label: fmt.Sprintf("Question %d.%d", c+1, i+1), Type: typ}
			if i%2 == 0 {
				fd.Description = ptr(fmt.Sprintf("Guidance for question %d.%d, shown in italics.", c+1, i+1))
			}
			cat.Fields = append(cat.Fields, fd)
			v := map[string]string{"text": "Answer text", "number": "42", "date": "2026-11-25",
				"textarea": strings.Repeat("A longer answer over several lines. ", 6), "boolean": "true"}[typ]
			values[id] = &v
		}
		f.Categories = append(f.Categories, cat)
	}
	return f, values
}

// BenchmarkExportPDF lays out the 50-field document. The baselines are fpdf alone writing
// a one-line document, with a core font and with the four Go fonts, so that the ratios
// show what the fonts cost and what the layout adds.
func BenchmarkExportPDF(b *testing.B) {
	form, values := benchmarkForm()
	now := time.Now()
	b.Run("baseline-fpdf-one-line", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			pdf := fpdf.New("P", "pt", "A4", "")
			pdf.AddPage()
			pdf.SetFont("Helvetica", "", 11)
			pdf.Cell(100, 12, "hello")
			var buf bytes.Buffer
			if err := pdf.Output(&buf); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The four Go fonts in a one-line document: what fpdf costs before any layout.
	b.Run("baseline-fpdf-four-go-fonts-one-line", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			pdf := fpdf.New("P", "pt", "A4", "")
			for _, f := range pdfFonts {
				pdf.AddUTF8FontFromBytes(f.family, "", f.ttf)
			}
			pdf.AddPage()
			for _, f := range pdfFonts {
				pdf.SetFont(f.family, "", 11)
				pdf.Cell(100, 12, "hello")
			}
			var buf bytes.Buffer
			if err := pdf.Output(&buf); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("50-fields", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var buf bytes.Buffer
			if err := writeResponsePDF(&buf, form, values, now); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkExportPDFEndpoint(b *testing.B) {
	e, f := benchEnv(b, 1)
	var list []listedResponse
	e.doJSON("GET", "/api/forms/"+itoa(f.ID)+"/responses", nil, &list)
	b.ReportAllocs()
	for b.Loop() {
		serve(b, e.srv, "GET", "/api/responses/"+itoa(list[0].ID)+"/export/pdf", "", 200)
	}
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
