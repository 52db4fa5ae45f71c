package main

import (
	"bytes"
	"cmp"
	"compress/zlib"
	"fmt"
	"io"
	"math"
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
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/go-pdf/fpdf"
)

// popplerTool runs one of poppler-utils' programs on a PDF and returns its output. The
// Go reader below (readPDF) carries the core checks everywhere; poppler's programs are an
// extra layer, run where they are installed (.ci/run installs them) and skipped elsewhere.
func popplerTool(t *testing.T, pdf []byte, tool string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		t.Skipf("%s not installed: %v (install poppler-utils for the poppler checks)", tool, err)
	}
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
		t.Fatalf("%s %v: %v\n%s", tool, args, err, out)
	}
	return string(out)
}

// exportPDF fetches the PDF of a response and checks that it is one.
func (e *testEnv) exportPDF(responseID int64) ([]byte, http.Header) {
	e.t.Helper()
	res, body := e.getRaw("/api/responses/" + itoa(responseID) + "/export/pdf")
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/pdf" || !bytes.HasPrefix(body, []byte("%PDF-")) {
		e.t.Fatalf("export %d = %d %s %.200q, want 200 and a PDF", responseID, res.StatusCode, res.Header.Get("Content-Type"), body)
	}
	return body, res.Header
}

// textLines is the document's text as the Go reader finds it: non-empty lines, top to
// bottom, page after page, white space runs made one space.
func textLines(t *testing.T, pdf []byte) []string {
	t.Helper()
	return readPDF(t, pdf).lines()
}

// popplerLines is pdftotext -layout's output in textLines' form; it skips the test when
// pdftotext is missing.
func popplerLines(t *testing.T, pdf []byte) []string {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(popplerTool(t, pdf, "pdftotext", "-layout"), "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// checkPopplerAgrees checks, in a subtest that skips without poppler, that pdftotext
// reads the same lines as the Go reader.
func checkPopplerAgrees(t *testing.T, pdf []byte) {
	t.Helper()
	t.Run("pdftotext agrees", func(t *testing.T) {
		want := strings.Join(textLines(t, pdf), "\n")
		if got := strings.Join(popplerLines(t, pdf), "\n"); got != want {
			t.Errorf("pdftotext reads:\n%s\n\nthe Go reader:\n%s", got, want)
		}
	})
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

	doc := readPDF(t, pdf)
	if doc.Title != "Café Inspection Straße Ж Ω ’" {
		t.Errorf("title %q", doc.Title)
	}
	if len(doc.Pages) != 1 || doc.Pages[0].MediaBox != [4]float64{0, 0, 595.28, 841.89} {
		t.Errorf("%d pages, first %v; want one A4 page (595.28 x 841.89)", len(doc.Pages), doc.Pages[0].MediaBox)
	}
	if want := []string{"utf8gobold", "utf8goitalic", "utf8gomedium", "utf8goregular"}; !slices.Equal(doc.Fonts, want) {
		t.Errorf("embedded fonts %q, want %q", doc.Fonts, want)
	}

	// docs/SPEC.md §4's layout, in points: the margin 50, the content 500 wide (50 to
	// 550). Title 18 pt bold and centred, category names 14 pt bold, labels
	// 12 pt semi-bold, descriptions 9 pt italic, values 11 pt regular.
	page := doc.Pages[0]
	style := map[string]struct {
		font string
		size float64
	}{
		"Café Inspection Straße Ж Ω ’": {"utf8gobold", 18},
		"General":                      {"utf8gobold", 14},
		"Inspector:":                   {"utf8gomedium", 12},
		"Full name":                    {"utf8goitalic", 9},
		"Zoë Ærø":                      {"utf8goregular", 11},
		"Notes:":                       {"utf8gomedium", 12},
		"First line":                   {"utf8goregular", 11},
		"Yes":                          {"utf8goregular", 11},
	}
	for _, l := range page.TextLines {
		want, ok := style[l.Text]
		if !ok {
			continue
		}
		delete(style, l.Text)
		if l.Font != want.font || l.Size != want.size {
			t.Errorf("%q set in %s %v pt, want %s %v pt", l.Text, l.Font, l.Size, want.font, want.size)
		}
		switch l.Text {
		case "Café Inspection Straße Ж Ω ’":
			// Centred in the content box, 50 to 550 (which is 4.72 pt right of the A4
			// page's centre: a 50 pt margin and a 500 pt width leave 45.28 on the right).
			if centre := (l.X + l.EndX) / 2; math.Abs(centre-300) > 0.5 {
				t.Errorf("title spans x %.2f to %.2f, centred on %.2f, want 300", l.X, l.EndX, centre)
			}
		case "First line": // inside the textarea's frame, 5 pt from its edge
			if math.Abs(l.X-55) > 0.5 {
				t.Errorf("%q starts at x %.2f, want 55", l.Text, l.X)
			}
		default:
			if math.Abs(l.X-50) > 0.5 {
				t.Errorf("%q starts at x %.2f, want the margin, 50", l.Text, l.X)
			}
		}
	}
	for text := range style {
		t.Errorf("no line %q on the page", text)
	}
	// A line 500 wide under every value but the textarea's: ten of the eleven fields.
	rules := 0
	for _, sg := range page.Segments {
		if sg[1] == sg[3] && math.Abs(sg[0]-50) < 0.01 && math.Abs(sg[2]-550) < 0.01 {
			rules++
		}
	}
	if rules != 10 || len(page.Segments) != 10 {
		t.Errorf("%d lines drawn, %d of them 500 wide from x 50 to 550; want 10 such lines: %v", len(page.Segments), rules, page.Segments)
	}
	// The textarea's frame: 500 wide from the margin, at least 30 high.
	if len(page.Rects) != 1 || page.Rects[0][0] != 50 || page.Rects[0][2] != 500 || math.Abs(page.Rects[0][3]) < 30 {
		t.Errorf("frames %v, want one at x 50, 500 wide, at least 30 high", page.Rects)
	}

	t.Run("poppler", func(t *testing.T) {
		if got := popplerLines(t, pdf); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("pdftotext:\n%s\n\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
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
	})
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
		fonts := readPDF(t, pdf).Fonts
		for _, name := range []string{"gobold", "gomedium", "goitalic", "goregular"} {
			if got, want := slices.Contains(fonts, "utf8"+name), slices.Contains(tc.want, name); got != want {
				t.Errorf("%s: font %s embedded = %v, want %v: %q", tc.form["title"], name, got, want, fonts)
			}
		}
		t.Run("poppler", func(t *testing.T) {
			fonts := popplerTool(t, pdf, "pdffonts")
			for _, name := range []string{"gobold", "gomedium", "goitalic", "goregular"} {
				if got, want := strings.Contains(fonts, name), slices.Contains(tc.want, name); got != want {
					t.Errorf("%s: font %s embedded = %v, want %v:\n%s", tc.form["title"], name, got, want, fonts)
				}
			}
		})
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
	for _, want := range []string{"Emoji [SLIGHTLY SMILING FACE] title", "Cat [ROCKET]", "Label [THUMBS UP SIGN] tab:",
		"value [GRINNING FACE]", "end \uFFFD", "area [UPSIDE-DOWN FACE]", "next line"} {
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
	for i, p := range readPDF(t, pdf).Pages {
		if p.Right > 550.5 { // the content's right edge: margin 50 + width 500
			t.Errorf("page %d: text ends at x=%v, right of the content width", i+1, p.Right)
		}
	}
	checkPopplerAgrees(t, pdf)
	t.Run("poppler", func(t *testing.T) {
		bbox := popplerTool(t, pdf, "pdftotext", "-bbox")
		for _, m := range regexp.MustCompile(`xMax="([0-9.]+)"`).FindAllStringSubmatch(bbox, -1) {
			if x, _ := strconv.ParseFloat(m[1], 64); x > 550.5 {
				t.Errorf("a word ends at x=%v, right of the content width", x)
			}
		}
	})
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
	if n := len(readPDF(t, pdf).Pages); n != 2 {
		t.Errorf("a %d-character textarea should span two pages, not %d", len(essay), n)
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
	checkPopplerAgrees(t, pdf)
	t.Run("poppler", func(t *testing.T) {
		if info := popplerTool(t, pdf, "pdfinfo"); !strings.Contains(info, "Pages:           2") {
			t.Errorf("a %d-character textarea should span two pages:\n%s", len(essay), info)
		}
	})
}

func TestExportPDFErrors(t *testing.T) {
	e := newTestEnv(t)
	for _, id := range []string{"abc", "1x", "-1", "1.0", "%201"} {
		e.wantError("GET", "/api/responses/"+id+"/export/pdf", nil, 400, "Invalid response ID")
	}
	for _, id := range []string{"42", "0", "99999999999999999999999999999999999999"} {
		e.wantError("GET", "/api/responses/"+id+"/export/pdf", nil, 404, "Response not found")
	}
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
		{"a;b", `inline; filename="response_7_a_b.pdf"; filename*=UTF-8''response_7_a%3Bb.pdf`, "response_7_a;b.pdf"},
		{"a=b", `inline; filename="response_7_a_b.pdf"; filename*=UTF-8''response_7_a%3Db.pdf`, "response_7_a=b.pdf"},
		// Control and format characters (Cc, Cf: bidi overrides and isolates, zero-width
		// spaces) are dropped from both names (RFC 6266 appendix D).
		{"x\x00y\x7f", "inline; filename=response_7_xy.pdf", "response_7_xy.pdf"},
		{"a\u202Eb\u200Bc\u2066d\u2069", "inline; filename=response_7_abcd.pdf", "response_7_abcd.pdf"},
		// ' and * are token characters but not RFC 8187 attr-chars: plain in filename,
		// percent-encoded in filename*. % is never in filename, which some programs decode.
		{`50% "off"`, `inline; filename="response_7_50___off_.pdf"; filename*=UTF-8''response_7_50%25_%22off%22.pdf`, `response_7_50%_"off".pdf`},
		{"%2e%2e%2f%0d%0a", `inline; filename="response_7__2e_2e_2f_0d_0a.pdf"; filename*=UTF-8''response_7_%252e%252e%252f%250d%250a.pdf`, "response_7_%2e%2e%2f%0d%0a.pdf"},
		{"it's*", "inline; filename=response_7_it's*.pdf", "response_7_it's*.pdf"},
		{`50% "off" it's*`, `inline; filename="response_7_50___off__it's*.pdf"; filename*=UTF-8''response_7_50%25_%22off%22_it%27s%2A.pdf`, `response_7_50%_"off"_it's*.pdf`},
	}
	for _, tc := range cases {
		got := contentDisposition(7, tc.title)
		if got != tc.want {
			t.Errorf("contentDisposition(%q) = %s, want %s", tc.title, got, tc.want)
		}
		disp, params, err := mime.ParseMediaType(got)
		if fallback, _, _ := strings.Cut(got, "filename*"); strings.Contains(fallback, "%") {
			t.Errorf("contentDisposition(%q) = %s: a %% in filename", tc.title, got)
		}
		if err != nil || disp != "inline" || params["filename"] != tc.wantName {
			t.Errorf("ParseMediaType(%s) = %q %q %v, want inline with filename %q", got, disp, params, err, tc.wantName)
		}
	}
}

// TestExportPDFHeaders goes through the server for the hostile titles of the issue.
func TestExportPDFHeaders(t *testing.T) {
	e := newTestEnv(t)
	var first formAnswer
	e.doJSON("POST", "/api/forms", map[string]any{"title": "First"}, &first)
	e.submit(first.ID, map[string]any{"1": "x"}) // response ids now run ahead of form ids
	for _, tc := range []struct{ title, want string }{
		{"Report", "inline; filename=response_%d_Report.pdf"},
		{`a/b\c dt`, "inline; filename=response_%d_a_b_c_dt.pdf"},
		{`"x";yt`, `inline; filename="response_%[1]d__x__yt.pdf"; filename*=UTF-8''response_%[1]d_%%22x%%22%%3Byt.pdf`},
		{"Café üt", `inline; filename="response_%[1]d_Caf___t.pdf"; filename*=UTF-8''response_%[1]d_Caf%%C3%%A9_%%C3%%BCt.pdf`},
		{"new\nline", "inline; filename=response_%d_new_line.pdf"},
		{"   t", "inline; filename=response_%d____t.pdf"},
	} {
		var created formAnswer
		e.doJSON("POST", "/api/forms", map[string]any{"title": tc.title}, &created)
		e.submit(created.ID, map[string]any{"1": "x"})
		rid := e.submit(created.ID, map[string]any{"1": "y"})
		_, h := e.exportPDF(rid)
		got, want := h.Values("Content-Disposition"), fmt.Sprintf(tc.want, rid)
		if len(got) != 1 || got[0] != want || rid == created.ID {
			t.Errorf("title %q: Content-Disposition %q, want %q (response %d of form %d)", tc.title, got, want, rid, created.ID)
		}
		if _, _, err := mime.ParseMediaType(got[0]); err != nil {
			t.Errorf("title %q: header does not parse: %v", tc.title, err)
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
	fonts := newFontIndex(fontDirs(""))
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
	// The 50-field document is Latin only: it must cost what it did before fallback fonts.
	b.Run("50-fields", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var buf bytes.Buffer
			if err := writeResponsePDF(&buf, form, values, now, fonts); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The same document in Chinese: every value and label from Droid Sans Fallback.
	zhForm, zhValues := chineseBenchmarkForm()
	if fonts.fallbackFor('中', nil) == nil {
		return // no CJK font installed: nothing to measure
	}
	b.Run("50-fields-chinese", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var buf bytes.Buffer
			if err := writeResponsePDF(&buf, zhForm, zhValues, now, fonts); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// chineseBenchmarkForm is benchmarkForm in Chinese.
func chineseBenchmarkForm() (FormDetail, map[int64]*string) {
	form, values := benchmarkForm()
	form.Title = "现场检查报告"
	for c := range form.Categories {
		form.Categories[c].Name = fmt.Sprintf("第%d部分", c+1)
		for i := range form.Categories[c].Fields {
			fd := &form.Categories[c].Fields[i]
			fd.Label = fmt.Sprintf("问题 %d.%d", c+1, i+1)
			if fd.Description != nil {
				fd.Description = ptr("本问题的说明，以斜体显示。")
			}
			if fd.Type == "text" || fd.Type == "textarea" {
				v := strings.Repeat("今天天气很好，我们去公园散步。", map[string]int{"text": 1, "textarea": 6}[fd.Type])
				values[fd.ID] = &v
			}
		}
	}
	return form, values
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

// FuzzContentDisposition: the header always parses, names the file inline, never holds a
// line break, and its filename decodes to exactly the name docs/SPEC.md gives: the title with
// white space, slashes and backslashes made underscores, "form" when empty. filename*
// holds only RFC 8187 attr-chars and %XX escapes, so an unescaped %, ' or * fails (Go's
// mime package would pass a ' or * through undecoded).
func FuzzContentDisposition(f *testing.F) {
	for _, s := range []string{"Report", `a/b\c d`, `"x";y`, "Café ü", "new\nline", "   ", "", "%41", "a*b'c", "\x00\x7f", "🙂", "\xff", `50% "off" it's*`, "a\u202Eb\u200B", "%2e%2e%2f"} {
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
		want := "response_" + strconv.FormatInt(id, 10) + "_" + sanitisedTitle(title) + ".pdf"
		if fallback, _, _ := strings.Cut(h, "filename*"); strings.Contains(fallback, "%") {
			t.Errorf("title %q: a %% in filename: %s", title, h)
		}
		if strings.IndexFunc(params["filename"], func(r rune) bool { return unicode.In(r, unicode.Cc, unicode.Cf) }) >= 0 {
			t.Errorf("title %q: a control or format character in the name %q", title, params["filename"])
		}
		if params["filename"] != want {
			t.Errorf("title %q: filename %q, want %q (header %s)", title, params["filename"], want, h)
		}
		if _, ext, ok := strings.Cut(h, "filename*=UTF-8''"); ok {
			got, err := decodeExtValue(ext)
			if err != nil || got != want {
				t.Errorf("title %q: filename* %q decodes to %q, %v; want %q", title, ext, got, err, want)
			}
		}
	})
}

// sanitisedTitle is docs/SPEC.md's rule for the title in the file name, written out apart
// from contentDisposition's own.
func sanitisedTitle(title string) string {
	var b strings.Builder
	for _, r := range title {
		switch {
		case unicode.IsSpace(r) && r != '\u0085' || r == '\uFEFF' || r == '/' || r == '\\':
			r = '_'
		case unicode.In(r, unicode.Cc, unicode.Cf):
			continue
		}
		b.WriteRune(r)
	}
	if b.Len() == 0 {
		return "form"
	}
	return b.String()
}

// decodeExtValue decodes an RFC 8187 value-chars string strictly: attr-chars
// (ALPHA / DIGIT / "!#$&+-.^_`|~") stand for themselves and %XX for a byte; anything
// else, % ' and * included, is an error.
func decodeExtValue(s string) (string, error) {
	var out []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%':
			if i+3 > len(s) {
				return "", fmt.Errorf("truncated escape at %d", i)
			}
			b, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				return "", fmt.Errorf("bad escape %q", s[i:i+3])
			}
			out = append(out, byte(b))
			i += 2
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("!#$&+-.^_`|~", c) >= 0:
			out = append(out, c)
		default:
			return "", fmt.Errorf("%q at %d is not an attr-char", c, i)
		}
	}
	return string(out), nil
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
	fonts := newFontIndex(fontDirs(""))
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
		if err := writeResponsePDF(&buf, form, values, time.Now(), fonts); err != nil {
			t.Fatalf("export failed: %v", err)
		}
		if !bytes.HasPrefix(buf.Bytes(), []byte("%PDF-")) {
			t.Fatal("not a PDF")
		}
	})
}

// A reader of the PDFs this service writes, so that the core checks need nothing but Go.
// It knows what fpdf writes: objects one after another (no object streams, no
// encryption), zlib FlateDecode streams, Type0 fonts with Identity-H, a ToUnicode CMap and
// a /W widths array, and text shown with Tj/TJ strings placed by Td/Tm inside BT/ET. It
// is not a general PDF reader and fails the test on anything it does not know.

// pdfDoc is what readPDF finds in a document.
type pdfDoc struct {
	Title string    // of the document information dictionary
	Pages []pdfPage // in page-tree order
	// Fonts are the BaseFont names of the fonts the document embeds (FontFile2).
	Fonts []string
}

// pdfPage is one page: its media box and its text, line by line from the top, each line's
// pieces ordered left to right (for right-to-left scripts this is visual order).
type pdfPage struct {
	MediaBox [4]float64
	Lines    []string
	// Fonts are the BaseFont names of the fonts text on this page is shown in.
	Fonts []string
	// Right is where the rightmost character other than a space ends.
	Right float64
	// Rects are the rectangles drawn (re), as x, y, width, height in PDF space.
	Rects [][4]float64
	// Segments are the straight lines drawn (m, l), as x1, y1, x2, y2 in PDF space.
	Segments [][4]float64
	// TextLines are Lines with where and how each is set.
	TextLines []pdfTextLine
}

// pdfTextLine is one line of text on a page: where it starts and ends (x, in points from
// the left edge) and the font and size of its first character.
type pdfTextLine struct {
	Text    string
	X, EndX float64
	Y       float64 // the baseline, in points from the bottom edge
	Font    string  // BaseFont without its subset prefix, e.g. utf8gobold
	Size    float64
}

// text is the page's lines joined with newlines.
func (p pdfPage) text() string { return strings.Join(p.Lines, "\n") }

// text is every page's lines joined with newlines.
func (d pdfDoc) text() string {
	var pages []string
	for _, p := range d.Pages {
		pages = append(pages, p.text())
	}
	return strings.Join(pages, "\n")
}

// textLines is every page's text lines, in order.
func (d pdfDoc) textLines() []pdfTextLine {
	var lines []pdfTextLine
	for _, p := range d.Pages {
		lines = append(lines, p.TextLines...)
	}
	return lines
}

// lines is every page's lines, in order.
func (d pdfDoc) lines() []string {
	var lines []string
	for _, p := range d.Pages {
		lines = append(lines, p.Lines...)
	}
	return lines
}

// PDF values as the reader holds them: float64, bool, nil, pdfName, pdfRef, pdfString,
// []any, pdfDict and *pdfStream.
type (
	pdfName   string
	pdfString []byte
	pdfRef    int // object number; fpdf writes generation 0 only
	pdfDict   map[string]any
	pdfStream struct {
		dict pdfDict
		data []byte // decoded
	}
	pdfKeyword string // an operator of a content stream, or obj, endobj, R ...
)

// readPDF reads a document fpdf wrote; a document it cannot read fails the test.
func readPDF(t *testing.T, data []byte) pdfDoc {
	t.Helper()
	doc, err := parsePDF(data)
	if err != nil {
		t.Fatalf("read PDF: %v", err)
	}
	return doc
}

func parsePDF(data []byte) (doc pdfDoc, err error) {
	objs, trailer, err := pdfObjects(data)
	if err != nil {
		return doc, err
	}
	r := pdfReader{objs: objs, fonts: map[string]*pdfFont{}}
	if info, ok := r.resolve(trailer["Info"]).(pdfDict); ok {
		if s, ok := r.resolve(info["Title"]).(pdfString); ok {
			doc.Title = pdfTextString(s)
		}
	}
	root, ok := r.resolve(trailer["Root"]).(pdfDict)
	if !ok {
		return doc, fmt.Errorf("no document catalog")
	}
	if err := r.walkPages(root["Pages"], nil, &doc); err != nil {
		return doc, err
	}
	for _, o := range objs {
		d, ok := o.(pdfDict)
		if !ok || d["Type"] != pdfName("FontDescriptor") {
			continue
		}
		if d["FontFile2"] != nil || d["FontFile"] != nil || d["FontFile3"] != nil {
			name, _ := d["FontName"].(pdfName)
			doc.Fonts = append(doc.Fonts, string(name))
		}
	}
	slices.Sort(doc.Fonts)
	return doc, nil
}

// pdfObjects reads the numbered objects in file order up to the cross-reference table,
// and the trailer dictionary after it.
func pdfObjects(data []byte) (map[int]any, pdfDict, error) {
	objs := map[int]any{}
	lx := &pdfLexer{data: data}
	if !bytes.HasPrefix(data, []byte("%PDF-")) {
		return nil, nil, fmt.Errorf("no %%PDF- header")
	}
	for {
		lx.skipSpace()
		if lx.pos >= len(data) {
			return nil, nil, fmt.Errorf("no trailer")
		}
		if bytes.HasPrefix(data[lx.pos:], []byte("xref")) {
			i := bytes.Index(data[lx.pos:], []byte("trailer"))
			if i < 0 {
				return nil, nil, fmt.Errorf("no trailer")
			}
			lx.pos += i + len("trailer")
			v, err := lx.value()
			if err != nil {
				return nil, nil, fmt.Errorf("trailer: %w", err)
			}
			d, ok := v.(pdfDict)
			if !ok {
				return nil, nil, fmt.Errorf("trailer is %T", v)
			}
			return objs, d, nil
		}
		num, err := lx.value()
		if err != nil {
			return nil, nil, err
		}
		gen, err := lx.value()
		if err != nil {
			return nil, nil, err
		}
		kw, err := lx.value()
		n, ok1 := num.(float64)
		_, ok2 := gen.(float64)
		if err != nil || !ok1 || !ok2 || kw != pdfKeyword("obj") {
			return nil, nil, fmt.Errorf("at byte %d: want an object header, got %v %v %v", lx.pos, num, gen, kw)
		}
		v, err := lx.value()
		if err != nil {
			return nil, nil, fmt.Errorf("object %v: %w", n, err)
		}
		lx.skipSpace()
		if d, ok := v.(pdfDict); ok && bytes.HasPrefix(data[lx.pos:], []byte("stream")) {
			s, err := lx.stream(d)
			if err != nil {
				return nil, nil, fmt.Errorf("object %v: %w", n, err)
			}
			v = s
		}
		if end, err := lx.value(); err != nil || end != pdfKeyword("endobj") {
			return nil, nil, fmt.Errorf("object %v: no endobj (%v, %v)", n, end, err)
		}
		objs[int(n)] = v
	}
}

// pdfLexer reads PDF values from data (the file, or a content stream).
type pdfLexer struct {
	data []byte
	pos  int
}

func isPDFSpace(c byte) bool { return strings.IndexByte("\x00\t\n\f\r ", c) >= 0 }

func isPDFDelim(c byte) bool { return strings.IndexByte("()<>[]{}/%", c) >= 0 }

func (lx *pdfLexer) skipSpace() {
	for lx.pos < len(lx.data) {
		c := lx.data[lx.pos]
		switch {
		case isPDFSpace(c):
			lx.pos++
		case c == '%':
			for lx.pos < len(lx.data) && lx.data[lx.pos] != '\n' && lx.data[lx.pos] != '\r' {
				lx.pos++
			}
		default:
			return
		}
	}
}

// errPDFEnd is the end of the data where a value was expected.
var errPDFEnd = fmt.Errorf("unexpected end of data")

// value reads the next value; a reference N G R is folded into a pdfRef.
func (lx *pdfLexer) value() (any, error) {
	v, err := lx.token()
	if err != nil {
		return nil, err
	}
	switch v {
	case pdfKeyword("<<"):
		d := pdfDict{}
		for {
			k, err := lx.value()
			if err != nil {
				return nil, err
			}
			if k == pdfKeyword(">>") {
				return d, nil
			}
			name, ok := k.(pdfName)
			if !ok {
				return nil, fmt.Errorf("dictionary key %v", k)
			}
			if d[string(name)], err = lx.value(); err != nil {
				return nil, err
			}
		}
	case pdfKeyword("["):
		var a []any
		for {
			e, err := lx.value()
			if err != nil {
				return nil, err
			}
			if e == pdfKeyword("]") {
				return a, nil
			}
			a = append(a, e)
		}
	}
	// A number may be the start of a reference: look ahead for "G R".
	if n, ok := v.(float64); ok {
		save := lx.pos
		if g, err := lx.token(); err == nil {
			if _, ok := g.(float64); ok {
				if r, err := lx.token(); err == nil && r == pdfKeyword("R") {
					return pdfRef(n), nil
				}
			}
		}
		lx.pos = save
	}
	return v, nil
}

// token reads one lexical token: a number, name, string, keyword or delimiter.
func (lx *pdfLexer) token() (any, error) {
	lx.skipSpace()
	if lx.pos >= len(lx.data) {
		return nil, errPDFEnd
	}
	d := lx.data
	c := d[lx.pos]
	switch {
	case c == '/':
		lx.pos++
		start := lx.pos
		for lx.pos < len(d) && !isPDFSpace(d[lx.pos]) && !isPDFDelim(d[lx.pos]) {
			lx.pos++
		}
		return pdfName(d[start:lx.pos]), nil
	case c == '(':
		return lx.literal()
	case c == '<' && lx.pos+1 < len(d) && d[lx.pos+1] == '<', c == '>' && lx.pos+1 < len(d) && d[lx.pos+1] == '>':
		lx.pos += 2
		return pdfKeyword(d[lx.pos-2 : lx.pos]), nil
	case c == '<':
		end := bytes.IndexByte(d[lx.pos:], '>')
		if end < 0 {
			return nil, errPDFEnd
		}
		hex := strings.Map(func(r rune) rune {
			if isPDFSpace(byte(r)) {
				return -1
			}
			return r
		}, string(d[lx.pos+1:lx.pos+end]))
		lx.pos += end + 1
		if len(hex)%2 == 1 {
			hex += "0"
		}
		var s pdfString
		for i := 0; i < len(hex); i += 2 {
			b, err := strconv.ParseUint(hex[i:i+2], 16, 8)
			if err != nil {
				return nil, fmt.Errorf("hex string: %w", err)
			}
			s = append(s, byte(b))
		}
		return s, nil
	case c == '[', c == ']', c == '{', c == '}':
		lx.pos++
		return pdfKeyword(d[lx.pos-1 : lx.pos]), nil
	}
	start := lx.pos
	for lx.pos < len(d) && !isPDFSpace(d[lx.pos]) && !isPDFDelim(d[lx.pos]) {
		lx.pos++
	}
	word := string(d[start:lx.pos])
	if word == "" {
		return nil, fmt.Errorf("unexpected %q at byte %d", c, start)
	}
	switch word {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "null":
		return nil, nil
	}
	if f, err := strconv.ParseFloat(word, 64); err == nil && strings.Trim(word, "+-.0123456789") == "" {
		return f, nil
	}
	return pdfKeyword(word), nil
}

// literal reads a (string) with its escapes and balanced parentheses.
func (lx *pdfLexer) literal() (pdfString, error) {
	d := lx.data
	lx.pos++ // (
	var s pdfString
	depth := 1
	for lx.pos < len(d) {
		c := d[lx.pos]
		lx.pos++
		switch c {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return s, nil
			}
		case '\\':
			if lx.pos >= len(d) {
				return nil, errPDFEnd
			}
			e := d[lx.pos]
			lx.pos++
			switch e {
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case '\r', '\n': // a line continuation
				if e == '\r' && lx.pos < len(d) && d[lx.pos] == '\n' {
					lx.pos++
				}
				continue
			default:
				if e >= '0' && e <= '7' {
					v := int(e - '0')
					for i := 0; i < 2 && lx.pos < len(d) && d[lx.pos] >= '0' && d[lx.pos] <= '7'; i++ {
						v = v*8 + int(d[lx.pos]-'0')
						lx.pos++
					}
					c = byte(v)
				} else {
					c = e // \( \) \\ and unknown escapes stand for the character
				}
			}
		}
		s = append(s, c)
	}
	return nil, errPDFEnd
}

// stream reads the stream after its dictionary d and decodes FlateDecode.
func (lx *pdfLexer) stream(d pdfDict) (*pdfStream, error) {
	lx.pos += len("stream")
	if lx.pos < len(lx.data) && lx.data[lx.pos] == '\r' {
		lx.pos++
	}
	if lx.pos < len(lx.data) && lx.data[lx.pos] == '\n' {
		lx.pos++
	}
	n, ok := d["Length"].(float64)
	if !ok || lx.pos+int(n) > len(lx.data) {
		return nil, fmt.Errorf("stream length %v", d["Length"])
	}
	raw := lx.data[lx.pos : lx.pos+int(n)]
	lx.pos += int(n)
	lx.skipSpace()
	if !bytes.HasPrefix(lx.data[lx.pos:], []byte("endstream")) {
		return nil, fmt.Errorf("no endstream")
	}
	lx.pos += len("endstream")
	switch d["Filter"] {
	case nil:
		return &pdfStream{d, raw}, nil
	case pdfName("FlateDecode"):
		zr, err := zlib.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(zr)
		if err != nil {
			return nil, fmt.Errorf("inflate: %w", err)
		}
		return &pdfStream{d, data}, nil
	}
	return nil, fmt.Errorf("filter %v", d["Filter"])
}

// pdfTextString decodes a text string: UTF-16BE after a byte-order mark, else bytes as
// Latin-1 (close enough to PDFDocEncoding for the tests).
func pdfTextString(s pdfString) string {
	if len(s) >= 2 && s[0] == 0xFE && s[1] == 0xFF {
		u := make([]uint16, 0, len(s)/2)
		for i := 2; i+1 < len(s); i += 2 {
			u = append(u, uint16(s[i])<<8|uint16(s[i+1]))
		}
		return string(utf16.Decode(u))
	}
	r := make([]rune, len(s))
	for i, b := range s {
		r[i] = rune(b)
	}
	return string(r)
}

// pdfReader resolves references and remembers the fonts it has read.
type pdfReader struct {
	objs  map[int]any
	fonts map[string]*pdfFont // by resource name
}

func (r *pdfReader) resolve(v any) any {
	for i := 0; i < 10; i++ {
		ref, ok := v.(pdfRef)
		if !ok {
			return v
		}
		v = r.objs[int(ref)]
	}
	return nil
}

// walkPages appends the pages under node to doc; inherited carries the media box down.
func (r *pdfReader) walkPages(node any, inherited []any, doc *pdfDoc) error {
	d, ok := r.resolve(node).(pdfDict)
	if !ok {
		return fmt.Errorf("page tree node %v is not a dictionary", node)
	}
	if mb, ok := r.resolve(d["MediaBox"]).([]any); ok {
		inherited = mb
	}
	switch d["Type"] {
	case pdfName("Pages"):
		kids, _ := r.resolve(d["Kids"]).([]any)
		for _, k := range kids {
			if err := r.walkPages(k, inherited, doc); err != nil {
				return err
			}
		}
		return nil
	case pdfName("Page"):
		var page pdfPage
		if len(inherited) != 4 {
			return fmt.Errorf("page without a media box")
		}
		for i, v := range inherited {
			page.MediaBox[i], _ = r.resolve(v).(float64)
		}
		var content []byte
		contents := r.resolve(d["Contents"])
		if a, ok := contents.([]any); ok {
			for _, c := range a {
				if s, ok := r.resolve(c).(*pdfStream); ok {
					content = append(append(content, s.data...), '\n')
				}
			}
		} else if s, ok := contents.(*pdfStream); ok {
			content = s.data
		}
		res, _ := r.resolve(d["Resources"]).(pdfDict)
		fontRes, _ := r.resolve(res["Font"]).(pdfDict)
		glyphs, fonts, rects, segments, err := r.showText(content, fontRes)
		if err != nil {
			return fmt.Errorf("page %d: %w", len(doc.Pages)+1, err)
		}
		page.TextLines = pdfLines(glyphs)
		for _, l := range page.TextLines {
			page.Lines = append(page.Lines, l.Text)
		}
		for _, g := range glyphs {
			if g.text != " " {
				page.Right = max(page.Right, g.endX)
			}
		}
		page.Fonts = fonts
		page.Rects = rects
		page.Segments = segments
		doc.Pages = append(doc.Pages, page)
		return nil
	}
	return fmt.Errorf("page tree node of type %v", d["Type"])
}

// pdfFont is what the reader needs of a font: its name, how many bytes a character code
// takes, the code's text (ToUnicode) and its width (in 1/1000 of the font size).
type pdfFont struct {
	name      string
	codeBytes int
	toUnicode map[int]string
	ranges    []pdfCMapRange
	widths    map[int]float64
	dw        float64
}

type pdfCMapRange struct {
	lo, hi int
	dst    []rune // the text of lo; the last rune counts up for the rest of the range
}

func (f *pdfFont) text(code int) string {
	if s, ok := f.toUnicode[code]; ok {
		return s
	}
	for _, rg := range f.ranges {
		if code >= rg.lo && code <= rg.hi && len(rg.dst) > 0 {
			rs := slices.Clone(rg.dst)
			rs[len(rs)-1] += rune(code - rg.lo)
			return string(rs)
		}
	}
	if f.codeBytes == 1 {
		return string(rune(code))
	}
	return "\uFFFD"
}

func (f *pdfFont) width(code int) float64 {
	if w, ok := f.widths[code]; ok {
		return w
	}
	return f.dw
}

// font reads the font of resource name res from the page's font resources.
func (r *pdfReader) font(fontRes pdfDict, res string) (*pdfFont, error) {
	if f, ok := r.fonts[res]; ok {
		return f, nil
	}
	d, ok := r.resolve(fontRes[res]).(pdfDict)
	if !ok {
		return nil, fmt.Errorf("font resource %s missing", res)
	}
	name, _ := d["BaseFont"].(pdfName)
	f := &pdfFont{name: string(name), codeBytes: 1, toUnicode: map[int]string{}, widths: map[int]float64{}, dw: 1000}
	if d["Subtype"] == pdfName("Type0") {
		if d["Encoding"] != pdfName("Identity-H") {
			return nil, fmt.Errorf("font %s: encoding %v", name, d["Encoding"])
		}
		f.codeBytes = 2
		desc, _ := r.resolve(d["DescendantFonts"]).([]any)
		if len(desc) != 1 {
			return nil, fmt.Errorf("font %s: descendant fonts %v", name, desc)
		}
		cid, _ := r.resolve(desc[0]).(pdfDict)
		if dw, ok := r.resolve(cid["DW"]).(float64); ok {
			f.dw = dw
		}
		// /W: c [w1 w2 ...] gives widths from c on; c1 c2 w gives one width to c1..c2.
		w, _ := r.resolve(cid["W"]).([]any)
		for i := 0; i < len(w); {
			first, ok := r.resolve(w[i]).(float64)
			if !ok || i+1 >= len(w) {
				return nil, fmt.Errorf("font %s: bad /W at %d", name, i)
			}
			if a, ok := r.resolve(w[i+1]).([]any); ok {
				for j, v := range a {
					f.widths[int(first)+j], _ = r.resolve(v).(float64)
				}
				i += 2
				continue
			}
			last, ok1 := r.resolve(w[i+1]).(float64)
			if i+2 >= len(w) || !ok1 {
				return nil, fmt.Errorf("font %s: bad /W at %d", name, i)
			}
			width, _ := r.resolve(w[i+2]).(float64)
			for c := int(first); c <= int(last); c++ {
				f.widths[c] = width
			}
			i += 3
		}
	} else {
		first, _ := r.resolve(d["FirstChar"]).(float64)
		ws, _ := r.resolve(d["Widths"]).([]any)
		for i, v := range ws {
			f.widths[int(first)+i], _ = r.resolve(v).(float64)
		}
		f.dw = 500
	}
	if s, ok := r.resolve(d["ToUnicode"]).(*pdfStream); ok {
		if err := f.readCMap(s.data); err != nil {
			return nil, fmt.Errorf("font %s ToUnicode: %w", name, err)
		}
	}
	r.fonts[res] = f
	return f, nil
}

// readCMap reads the bfchar and bfrange sections of a ToUnicode CMap.
func (f *pdfFont) readCMap(data []byte) error {
	lx := &pdfLexer{data: data}
	code := func(v any) int {
		n := 0
		for _, b := range v.(pdfString) {
			n = n<<8 | int(b)
		}
		return n
	}
	utf16Of := func(v any) []rune {
		s := v.(pdfString)
		u := make([]uint16, 0, len(s)/2)
		for i := 0; i+1 < len(s); i += 2 {
			u = append(u, uint16(s[i])<<8|uint16(s[i+1]))
		}
		return utf16.Decode(u)
	}
	var stack []any
	for {
		v, err := lx.value()
		if err == errPDFEnd {
			return nil
		}
		if err != nil {
			return err
		}
		switch v {
		case pdfKeyword("endbfchar"):
			for i := 0; i+1 < len(stack); i += 2 {
				f.toUnicode[code(stack[i])] = string(utf16Of(stack[i+1]))
			}
		case pdfKeyword("endbfrange"):
			for i := 0; i+2 < len(stack); i += 3 {
				lo, hi := code(stack[i]), code(stack[i+1])
				if a, ok := stack[i+2].([]any); ok {
					for j, s := range a {
						f.toUnicode[lo+j] = string(utf16Of(s))
					}
				} else {
					f.ranges = append(f.ranges, pdfCMapRange{lo, hi, utf16Of(stack[i+2])})
				}
			}
		}
		if _, ok := v.(pdfKeyword); ok {
			stack = stack[:0]
		} else {
			stack = append(stack, v)
		}
	}
}

// pdfGlyph is one shown character: its text, where it starts and ends on the baseline,
// and the font size.
type pdfGlyph struct {
	text       string
	x, y, endX float64
	size       float64
	font       string
}

// pdfMatrix is [a b c d e f] of PDF's transformation matrices.
type pdfMatrix [6]float64

var pdfIdentity = pdfMatrix{1, 0, 0, 1, 0, 0}

// mul is m × n (m applied first).
func (m pdfMatrix) mul(n pdfMatrix) pdfMatrix {
	return pdfMatrix{
		m[0]*n[0] + m[1]*n[2], m[0]*n[1] + m[1]*n[3],
		m[2]*n[0] + m[3]*n[2], m[2]*n[1] + m[3]*n[3],
		m[4]*n[0] + m[5]*n[2] + n[4], m[4]*n[1] + m[5]*n[3] + n[5],
	}
}

// showText runs a content stream's text and path operators and returns the glyphs it
// shows, the names of the fonts it shows them in, and the rectangles and straight lines
// it draws.
func (r *pdfReader) showText(content []byte, fontRes pdfDict) ([]pdfGlyph, []string, [][4]float64, [][4]float64, error) {
	var (
		rects    [][4]float64
		segments [][4]float64
		pathX    float64 // the current point of a path
		pathY    float64
		glyphs   []pdfGlyph
		used     []string
		stack    []any
		ctm      = pdfIdentity
		saved    []pdfMatrix
		tm, tlm  = pdfIdentity, pdfIdentity
		font     *pdfFont
		size     float64
		leading  float64
		charSp   float64
		wordSp   float64
		hScale   = 1.0
		numberAt = func(i int) float64 { f, _ := stack[i].(float64); return f }
	)
	show := func(s pdfString) error {
		if font == nil {
			return fmt.Errorf("text shown without a font")
		}
		if !slices.Contains(used, font.name) {
			used = append(used, font.name)
		}
		for i := 0; i+font.codeBytes <= len(s); i += font.codeBytes {
			c := 0
			for _, b := range s[i : i+font.codeBytes] {
				c = c<<8 | int(b)
			}
			adv := font.width(c)/1000*size + charSp
			if font.codeBytes == 1 && c == ' ' {
				adv += wordSp
			}
			adv *= hScale
			m := tm.mul(ctm)
			end := pdfMatrix{1, 0, 0, 1, adv, 0}.mul(tm).mul(ctm)
			glyphs = append(glyphs, pdfGlyph{text: font.text(c), x: m[4], y: m[5], endX: end[4], size: size * m[3], font: font.name})
			tm = pdfMatrix{1, 0, 0, 1, adv, 0}.mul(tm)
		}
		return nil
	}
	nextLine := func(tx, ty float64) {
		tlm = pdfMatrix{1, 0, 0, 1, tx, ty}.mul(tlm)
		tm = tlm
	}
	lx := &pdfLexer{data: content}
	for {
		v, err := lx.value()
		if err == errPDFEnd {
			return glyphs, used, rects, segments, nil
		}
		if err != nil {
			return nil, nil, nil, nil, err
		}
		op, ok := v.(pdfKeyword)
		if !ok {
			stack = append(stack, v)
			continue
		}
		need := map[pdfKeyword]int{"m": 2, "l": 2, "cm": 6, "Tm": 6, "Td": 2, "TD": 2, "Tf": 2, "TL": 1, "Tc": 1, "Tw": 1, "Tz": 1, "Tj": 1, "TJ": 1, "'": 1, "\"": 3}[op]
		if len(stack) < need {
			return nil, nil, nil, nil, fmt.Errorf("operator %s with %d operands", op, len(stack))
		}
		switch op {
		case "m", "l":
			p := pdfMatrix{1, 0, 0, 1, numberAt(len(stack) - 2), numberAt(len(stack) - 1)}.mul(ctm)
			if op == "l" {
				segments = append(segments, [4]float64{pathX, pathY, p[4], p[5]})
			}
			pathX, pathY = p[4], p[5]
		case "re":
			if len(stack) >= 4 {
				rects = append(rects, [4]float64{numberAt(len(stack) - 4), numberAt(len(stack) - 3), numberAt(len(stack) - 2), numberAt(len(stack) - 1)})
			}
		case "q":
			saved = append(saved, ctm)
		case "Q":
			if len(saved) > 0 {
				ctm, saved = saved[len(saved)-1], saved[:len(saved)-1]
			}
		case "cm":
			var m pdfMatrix
			for i := range m {
				m[i] = numberAt(len(stack) - 6 + i)
			}
			ctm = m.mul(ctm)
		case "BT":
			tm, tlm = pdfIdentity, pdfIdentity
		case "Tm":
			for i := range tlm {
				tlm[i] = numberAt(len(stack) - 6 + i)
			}
			tm = tlm
		case "Td":
			nextLine(numberAt(len(stack)-2), numberAt(len(stack)-1))
		case "TD":
			leading = -numberAt(len(stack) - 1)
			nextLine(numberAt(len(stack)-2), numberAt(len(stack)-1))
		case "T*":
			nextLine(0, -leading)
		case "TL":
			leading = numberAt(len(stack) - 1)
		case "Tc":
			charSp = numberAt(len(stack) - 1)
		case "Tw":
			wordSp = numberAt(len(stack) - 1)
		case "Tz":
			hScale = numberAt(len(stack)-1) / 100
		case "Tf":
			name, _ := stack[len(stack)-2].(pdfName)
			if font, err = r.font(fontRes, string(name)); err != nil {
				return nil, nil, nil, nil, err
			}
			size = numberAt(len(stack) - 1)
		case "Tj", "'", "\"":
			if op != "Tj" {
				nextLine(0, -leading)
			}
			s, _ := stack[len(stack)-1].(pdfString)
			if err := show(s); err != nil {
				return nil, nil, nil, nil, err
			}
		case "TJ":
			a, _ := stack[len(stack)-1].([]any)
			for _, e := range a {
				switch e := e.(type) {
				case pdfString:
					if err := show(e); err != nil {
						return nil, nil, nil, nil, err
					}
				case float64:
					tm = pdfMatrix{1, 0, 0, 1, -e / 1000 * size * hScale, 0}.mul(tm)
				}
			}
		}
		stack = stack[:0]
	}
}

// pdfLines groups glyphs into lines by their baseline, top to bottom, and orders each
// line's glyphs left to right. A gap wider than a fifth of the font size between two
// glyphs is a space, as pdftotext reads it. Lines of only spaces are left out.
func pdfLines(glyphs []pdfGlyph) []pdfTextLine {
	type line struct {
		y      float64
		glyphs []pdfGlyph
	}
	var lines []*line
	for _, g := range glyphs {
		var into *line
		for _, l := range lines {
			if math.Abs(l.y-g.y) < g.size*0.3 {
				into = l
				break
			}
		}
		if into == nil {
			into = &line{y: g.y}
			lines = append(lines, into)
		}
		into.glyphs = append(into.glyphs, g)
	}
	slices.SortStableFunc(lines, func(a, b *line) int { return cmp.Compare(b.y, a.y) })
	var out []pdfTextLine
	for _, l := range lines {
		slices.SortStableFunc(l.glyphs, func(a, b pdfGlyph) int { return cmp.Compare(a.x, b.x) })
		var b strings.Builder
		tl := pdfTextLine{X: -1, Y: l.y}
		for i, g := range l.glyphs {
			if i > 0 {
				prev := l.glyphs[i-1]
				if g.x-prev.endX > g.size*0.2 && prev.text != " " && g.text != " " {
					b.WriteByte(' ')
				}
			}
			b.WriteString(g.text)
			if g.text != " " {
				if tl.X < 0 {
					tl.X, tl.Font, tl.Size = g.x, g.font, g.size
				}
				tl.EndX = g.endX
			}
		}
		if tl.Text = strings.Join(strings.Fields(b.String()), " "); tl.Text != "" {
			tl.Font = tl.Font[strings.IndexByte(tl.Font, '+')+1:] // drop the subset prefix
			out = append(out, tl)
		}
	}
	return out
}

// needFallbackFonts skips the test when the machine lacks the fallback fonts it draws
// with (.ci/run installs them), and returns the index otherwise.
func needFallbackFonts(t *testing.T) *fontIndex {
	t.Helper()
	ix := newFontIndex(fontDirs(""))
	for _, probe := range []rune{'们', 'あ', '한', 'ש', '\uFEDF', 'न'} {
		if ix.fallbackFor(probe, nil) == nil {
			t.Skipf("fallback fonts not installed: no font has %q %U (install fonts-noto-core, fonts-droid-fallback and fonts-nanum)", probe, probe)
		}
	}
	return ix
}

// logicalRTL turns a right-to-left line as the Go reader gives it (visual order: the
// characters as drawn from left to right, Arabic in its presentation forms) back into
// the text as typed: reversed, and NFKC-normalised, which maps presentation forms and
// the lam-alef ligatures to the plain letters.
func logicalRTL(visual string) string {
	rs := []rune(visual)
	slices.Reverse(rs)
	return norm.NFKC.String(string(rs))
}

// TestExportPDFScripts: every script prints as itself. Chinese, Japanese, Korean,
// Devanagari, Hebrew and Arabic come from fallback fonts where the Go fonts end; Greek
// and Cyrillic stay in the Go fonts; an emoji prints as its name. The text layer of
// right-to-left lines is in visual order (the glyphs are drawn left to right after the
// bidirectional algorithm reordered them), so the test reverses it; pdftotext instead
// reorders it back to logical order itself, wrapped in bidi embedding controls.
func TestExportPDFScripts(t *testing.T) {
	needFallbackFonts(t)
	fields := []struct{ label, value string }{
		{"Chinese", "今天天气很好，我们去公园散步。北京是中国的首都。"},
		{"Japanese", "東京は日本の首都です。ひらがなとカタカナも使います。"},
		{"Korean", "대한민국의 수도는 서울입니다."},
		{"Hebrew", "ירושלים היא בירת ישראל"},
		{"Arabic", "السلام عليكم، مرحبا بالعالم"},
		{"Devanagari", "भारत एक विशाल देश है।"},
		{"Greek", "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας."},
		{"Cyrillic", "Москва — столица России."},
		{"Mixed", "Invoice 发票 number 42 for the 北京 office"},
		{"Emoji", "Thanks 🙂 a lot"},
	}
	e := newTestEnv(t)
	var defs []any
	for _, f := range fields {
		defs = append(defs, map[string]any{"label": f.label, "type": "text"})
	}
	form := e.createForm(map[string]any{"title": "Scripts", "categories": []any{map[string]any{"fields": defs}}})
	values := map[string]any{}
	for i, f := range fields {
		values[itoa(form.Categories[0].Fields[i].ID)] = f.value
	}
	pdf, _ := e.exportPDF(e.submit(form.ID, values))
	doc := readPDF(t, pdf)
	lines := doc.lines()
	want := map[string]string{
		"Hebrew": "ירושלים היא בירת ישראל", "Arabic": "السلام عليكم، مرحبا بالعالم",
		"Emoji": "Thanks [SLIGHTLY SMILING FACE] a lot",
	}
	for _, f := range fields {
		i := slices.Index(lines, f.label+":")
		if i < 0 || i+1 >= len(lines) {
			t.Errorf("no label %q in:\n%s", f.label, strings.Join(lines, "\n"))
			continue
		}
		got, wantText := lines[i+1], cmp.Or(want[f.label], f.value)
		at := doc.textLines()[i+1]
		if f.label == "Hebrew" || f.label == "Arabic" {
			got = logicalRTL(got)
			// Right to left: right-aligned at the content's edge, x 550.
			if math.Abs(at.EndX-550) > 0.5 {
				t.Errorf("%s: the value ends at x %.2f, want right-aligned at 550", f.label, at.EndX)
			}
		} else if math.Abs(at.X-50) > 0.5 {
			t.Errorf("%s: the value starts at x %.2f, want the margin, 50", f.label, at.X)
		}
		if got != wantText {
			t.Errorf("%s: text layer %q, want %q", f.label, got, wantText)
		}
	}
	if strings.Contains(doc.text(), "\uFE8D") == false || strings.Contains(doc.text(), "\u0627") {
		t.Errorf("Arabic is not in its presentation forms:\n%s", doc.text())
	}
	for _, font := range []string{"utf8droidsansfallbackfull", "utf8nanumgothic", "utf8notosanshebrewregular",
		"utf8notosansarabicregular", "utf8notosansdevanagariregular", "utf8goregular"} {
		if !slices.Contains(doc.Fonts, font) {
			t.Errorf("font %s not embedded: %q", font, doc.Fonts)
		}
	}
	t.Run("poppler", func(t *testing.T) {
		text := strings.Map(func(r rune) rune {
			if r >= '\u202A' && r <= '\u202E' {
				return -1 // the embedding controls pdftotext adds around runs
			}
			return r
		}, norm.NFKC.String(strings.Join(popplerLines(t, pdf), "\n")))
		// Word by word: pdftotext's own reordering moves the Arabic comma.
		for _, f := range fields {
			for _, w := range strings.Fields(norm.NFKC.String(cmp.Or(want[f.label], f.value))) {
				if w = strings.Trim(w, "،"); !strings.Contains(text, w) {
					t.Errorf("pdftotext lacks %s %q:\n%s", f.label, w, text)
				}
			}
		}
	})
}

// TestExportPDFPageBreaks: fields continue on new pages without a line below the
// bottom margin, each label followed by its value; a textarea's frame holds its lines,
// blank ones included, and its padding.
func TestExportPDFPageBreaks(t *testing.T) {
	e := newTestEnv(t)
	var fields []any
	values := map[string]any{}
	for i := range 40 {
		fields = append(fields, map[string]any{"label": fmt.Sprintf("Field %d", i), "type": "text"})
	}
	f := e.createForm(map[string]any{"title": "Long", "categories": []any{map[string]any{"fields": fields}}})
	for i, fd := range f.Categories[0].Fields {
		values[itoa(fd.ID)] = fmt.Sprintf("value %d", i)
	}
	pdf, _ := e.exportPDF(e.submit(f.ID, values))
	doc := readPDF(t, pdf)
	if len(doc.Pages) != 3 {
		t.Errorf("%d pages, want 40 fields on 3", len(doc.Pages))
	}
	for i, p := range doc.Pages {
		for _, l := range p.TextLines {
			// The bottom margin is 50 pt; a descender of an 11 pt line reaches about 3 pt
			// below its baseline.
			if l.Y < 53 || l.Y > 841.89-50 {
				t.Errorf("page %d: %q at y %.2f, outside the margins", i+1, l.Text, l.Y)
			}
		}
	}
	lines := doc.lines()
	for i := range 40 {
		j := slices.Index(lines, fmt.Sprintf("Field %d:", i))
		if j < 0 || j+1 >= len(lines) || lines[j+1] != fmt.Sprintf("value %d", i) {
			t.Errorf("Field %d is not followed by its value", i)
		}
	}

	// Three lines, the middle one blank: 3 × 13.2 (11 pt × 1.2) + 2 × 5 of padding.
	ta := e.createForm(map[string]any{"title": "T", "categories": []any{map[string]any{"fields": []any{
		map[string]any{"label": "Notes", "type": "textarea"}}}}})
	pdf, _ = e.exportPDF(e.submit(ta.ID, map[string]any{itoa(ta.Categories[0].Fields[0].ID): "a\n\nb"}))
	if rects := readPDF(t, pdf).Pages[0].Rects; len(rects) != 1 || math.Abs(math.Abs(rects[0][3])-49.6) > 0.01 {
		t.Errorf("frames %v, want one 49.6 high", rects)
	}
}

// TestGoFontsParse: the four Go fonts, compiled in, parse, so that their own character
// maps decide which characters need a fallback font.
func TestGoFontsParse(t *testing.T) {
	ix := newFontIndex(nil)
	for _, family := range []string{"GoBold", "GoMedium", "GoItalic", "GoRegular"} {
		if ix.goFonts[family] == nil {
			t.Errorf("Go font %s did not parse", family)
		}
	}
}

// TestPDFFontDirFirst: PDF_FONT_DIR's folders are searched before the system's: a copy
// of the system's Hebrew font put there under another name is the one embedded.
func TestPDFFontDirFirst(t *testing.T) {
	system := needFallbackFonts(t).fallbackFor('ש', nil)
	dir := t.TempDir()
	copyFile(t, system.path, filepath.Join(dir, "Zz-Hebrew-Copy.ttf"))
	e := newTestEnv(t, func(c *config) { c.PDFFontDir = "/nonexistent:" + dir })
	form := e.createForm(map[string]any{"title": "T", "categories": []any{map[string]any{"fields": []any{
		map[string]any{"label": "Name", "type": "text"}}}}})
	pdf, _ := e.exportPDF(e.submit(form.ID, map[string]any{itoa(form.Categories[0].Fields[0].ID): "שלום"}))
	doc := readPDF(t, pdf)
	if !slices.Contains(doc.Fonts, "utf8zzhebrewcopy") || slices.Contains(doc.Fonts, "utf8"+strings.ToLower(system.family)) {
		t.Errorf("embedded fonts %q, want the copy in PDF_FONT_DIR (utf8zzhebrewcopy), not %s", doc.Fonts, system.family)
	}
}

// TestExportPDFArabicTextarea: a long Arabic textarea breaks across pages in a frame on
// each, every word kept in order, each line right-aligned inside its frame.
func TestExportPDFArabicTextarea(t *testing.T) {
	needFallbackFonts(t)
	sentence := "اللغة العربية هي لغة رسمية في أكثر من عشرين دولة، ويتحدث بها الملايين."
	var sentences []string
	for range 90 {
		sentences = append(sentences, sentence)
	}
	essay := strings.Join(sentences, " ")
	e := newTestEnv(t)
	form := e.createForm(map[string]any{"title": "مقال", "categories": []any{map[string]any{"fields": []any{
		map[string]any{"label": "Essay", "type": "textarea"}, map[string]any{"label": "After", "type": "text"}}}}})
	pdf, _ := e.exportPDF(e.submit(form.ID, map[string]any{
		itoa(form.Categories[0].Fields[0].ID): essay, itoa(form.Categories[0].Fields[1].ID): "tail"}))
	doc := readPDF(t, pdf)
	if len(doc.Pages) != 2 {
		t.Fatalf("%d pages, want the essay across two", len(doc.Pages))
	}
	var words []string
	for i, p := range doc.Pages {
		if n := len(p.Rects); n != 1 || p.Rects[0][0] != 50 || p.Rects[0][2] != 500 {
			t.Errorf("page %d: frames %v, want one from x 50, 500 wide", i+1, p.Rects)
		}
		for _, line := range p.TextLines {
			if line.Text == "Essay:" || line.Text == "After:" || line.Text == "tail" || logicalRTL(line.Text) == "مقال" {
				continue
			}
			words = append(words, strings.Fields(logicalRTL(line.Text))...)
			// Right-aligned inside the frame, 5 pt from its right edge at 550.
			if math.Abs(line.EndX-545) > 0.5 {
				t.Errorf("page %d: a line of the essay ends at x %.2f, want 545", i+1, line.EndX)
			}
		}
	}
	if got := strings.Join(words, " "); got != essay {
		t.Errorf("essay lost or reordered words: got %d words, want %d:\n%.300s", len(words), len(strings.Fields(essay)), got)
	}
	if lines := doc.lines(); lines[len(lines)-1] != "tail" {
		t.Errorf("the field after the textarea is missing: %q", lines[len(lines)-1])
	}
}

// TestBidiLevels: the embedding levels of the rules implemented (W1–W7, N1–N2, I1–I2)
// on short lines that each need one of them.
func TestBidiLevels(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []int8
	}{
		{"abc", []int8{0, 0, 0}},
		{"שלום abc", []int8{1, 1, 1, 1, 1, 2, 2, 2}},         // I2: Latin in RTL is level 2
		{"מחיר 50%", []int8{1, 1, 1, 1, 1, 2, 2, 2}},         // W5: % joins the number
		{"خصم 50%", []int8{1, 1, 1, 1, 2, 2, 1}},             // W2: digits after Arabic letters are AN, % stays neutral
		{"a 1 אב", []int8{0, 0, 0, 0, 1, 1}},                 // W7: a number after Latin is Latin
		{"אב cd.", []int8{1, 1, 1, 2, 2, 1}},                 // N2: the final period takes the paragraph's direction
		{"abc אב def", []int8{0, 0, 0, 0, 1, 1, 0, 0, 0, 0}}, // N1: neutrals between L are L
		{"אב cd ef", []int8{1, 1, 1, 2, 2, 2, 2, 2}},         // N1: the space between two Latin words is Latin
		{"خصم 1,5", []int8{1, 1, 1, 1, 2, 2, 2}},             // W4: a comma between Arabic numbers joins them
	} {
		got, _ := bidiLevels([]rune(tc.text))
		if !slices.Equal(got, tc.want) {
			t.Errorf("bidiLevels(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

// TestShapeArabic: each letter takes the form its neighbours call for; hamza joins to
// nothing, marks are skipped over, lam-alef is one ligature, final after a joining letter.
func TestShapeArabic(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []rune
	}{
		{"ب", []rune{0xFE8F}},                    // isolated
		{"بيت", []rune{0xFE91, 0xFEF4, 0xFE96}},  // initial, medial, final
		{"با", []rune{0xFE91, 0xFE8E}},           // alef takes its final form
		{"بء", []rune{0xFE8F, 0xFE80}},           // hamza joins to nothing
		{"بَت", []rune{0xFE91, 0x064E, 0xFE96}},  // the mark is skipped over
		{"لا", []rune{0xFEFB}},                   // lam-alef, isolated
		{"سلام", []rune{0xFEB3, 0xFEFC, 0xFEE1}}, // lam-alef, final
		{"abc", []rune("abc")},                   // nothing to shape
		{"دب", []rune{0xFEA9, 0xFE8F}},           // dal does not join to the letter after it
	} {
		if got := shapeArabic([]rune(tc.text)); !slices.Equal(got, tc.want) {
			t.Errorf("shapeArabic(%q) = %U, want %U", tc.text, got, tc.want)
		}
	}
}

// TestBreakLines: with every glyph 1 wide, lines break after spaces, between Chinese
// and Japanese characters, and inside a word only when it does not fit on a line alone;
// a line that fits exactly is not broken, and spaces at a break are dropped.
func TestBreakLines(t *testing.T) {
	lines := func(s string, width float64) []string {
		var gs []glyph
		for _, r := range s {
			gs = append(gs, glyph{r: r, w: 1})
		}
		var out []string
		for _, line := range breakLines(gs, width) {
			var b strings.Builder
			for _, g := range line {
				b.WriteRune(g.r)
			}
			out = append(out, b.String())
		}
		return out
	}
	for _, tc := range []struct {
		text  string
		width float64
		want  []string
	}{
		{"abcde", 5, []string{"abcde"}},
		{"ab cd", 3, []string{"ab", "cd"}},
		{"ab cd", 5, []string{"ab cd"}},
		{"abcdefg", 3, []string{"abc", "def", "g"}},
		{"a カタカナ", 4, []string{"a カタ", "カナ"}},
		{"a 北京北京", 4, []string{"a 北京", "北京"}},
		{"a bc de", 4, []string{"a bc", "de"}}, // the space after a full line is no overflow
		{"ab ！！！", 4, []string{"ab ！", "！！"}},  // full-width forms break like ideographs
	} {
		if got := lines(tc.text, tc.width); !slices.Equal(got, tc.want) {
			t.Errorf("breakLines(%q, %v) = %q, want %q", tc.text, tc.width, got, tc.want)
		}
	}
}

// TestRuneNames: a character without a name of its own prints as its code point; a
// named one as its name.
func TestRuneNames(t *testing.T) {
	for r, want := range map[rune]string{
		0x1F642: "[SLIGHTLY SMILING FACE]",
		0x20000: "[U+20000]", // runenames says "<CJK Ideograph Extension B>"
		0x1F600: "[GRINNING FACE]",
	} {
		if got := runeName(r); got != want {
			t.Errorf("runeName(%U) = %q, want %q", r, got, want)
		}
	}
}

// TestPDFTextLineBreaks: a lone carriage return is a line break in a textarea and a
// space elsewhere, as are the Unicode line and paragraph separators.
func TestPDFTextLineBreaks(t *testing.T) {
	for _, tc := range []struct {
		in           string
		keepNewlines bool
		want         string
	}{
		{"one\rtwo", true, "one\ntwo"},
		{"one\r\ntwo", true, "one\ntwo"},
		{"one\rtwo", false, "one two"},
		{"a\u2028b\u2029c", false, "a b c"},
		{"a\tb", true, "a b"},
	} {
		if got := pdfText(tc.in, tc.keepNewlines); got != tc.want {
			t.Errorf("pdfText(%q, %v) = %q, want %q", tc.in, tc.keepNewlines, got, tc.want)
		}
	}
}

// TestUsedFontsEmptyDescription: an empty description prints nothing, so it does not
// make the document embed Go Italic.
func TestUsedFontsEmptyDescription(t *testing.T) {
	empty := ""
	form := FormDetail{Categories: []Category{{Fields: []Field{{Label: "l", Type: "text", Description: &empty}}}}}
	if used := usedFonts(form); used["GoItalic"] {
		t.Errorf("usedFonts = %v, want no GoItalic for an empty description", used)
	}
}

// TestExportPDFInvisibleAndEmpty: joiners, byte-order marks and bidi marks print as
// nothing (not as their names), and an empty textarea still gets its 30 pt frame.
func TestExportPDFInvisibleAndEmpty(t *testing.T) {
	e := newTestEnv(t)
	f := e.createForm(map[string]any{"title": "T", "categories": []any{map[string]any{"fields": []any{
		map[string]any{"label": "Text", "type": "text"},
		map[string]any{"label": "Notes", "type": "textarea"},
	}}}})
	text, notes := f.Categories[0].Fields[0].ID, f.Categories[0].Fields[1].ID
	id := e.submit(f.ID, map[string]any{itoa(text): "a\u200Db\uFEFFc\u200Ed", itoa(notes): ""})
	body, _ := e.exportPDF(id)
	doc := readPDF(t, body)
	if !slices.Contains(doc.lines(), "abcd") {
		t.Errorf("lines %q, want the line abcd", doc.lines())
	}
	if rects := doc.Pages[0].Rects; len(rects) != 1 || math.Abs(rects[0][3]) != 30 || rects[0][2] != 500 {
		t.Errorf("frames %v, want one 500 wide and 30 high", rects)
	}
}

// TestExportPDFChineseFont: Chinese is drawn in Droid Sans Fallback, the font made for
// it, not in a Korean font that happens to cover some Han characters.
func TestExportPDFChineseFont(t *testing.T) {
	needFallbackFonts(t)
	e := newTestEnv(t)
	f := e.createForm(map[string]any{"title": "T", "categories": []any{map[string]any{"fields": []any{
		map[string]any{"label": "Weather", "type": "text"}}}}})
	id := e.submit(f.ID, map[string]any{itoa(f.Categories[0].Fields[0].ID): "今天天气很好"})
	body, _ := e.exportPDF(id)
	fonts := strings.ToLower(strings.Join(readPDF(t, body).Fonts, " "))
	if !strings.Contains(fonts, "droidsansfallback") || strings.Contains(fonts, "nanum") {
		t.Errorf("embedded fonts %s, want Droid Sans Fallback and no Nanum", fonts)
	}
}
