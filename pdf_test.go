package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/go-pdf/fpdf"
)

// The export endpoint, SPEC §4's layout, the fonts embedded and whole documents fuzzed;
// pdftext_test.go, pdfpages_test.go and pdfbounds_test.go read more documents back.

func TestExportPDFContent(t *testing.T) {
	t.Parallel()
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

	doc := readPDF(t, pdf)
	got := doc.lines()
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
	if len(doc.Pages) != 1 || doc.Pages[0].MediaBox != [4]float64{0, 0, 595.28, 841.89} {
		t.Errorf("%d pages, first %v; want one A4 page (595.28 x 841.89)", len(doc.Pages), doc.Pages[0].MediaBox)
	}
	// Go Bold's UTF-8 face alone: its first text, the title, has Ж and Ω.
	fonts := []string{"goitalic", "gomedium", "goregular", "utf8goboldunicode"}
	if !slices.Equal(doc.Fonts, fonts) {
		t.Errorf("embedded fonts %q, want %q", doc.Fonts, fonts)
	}

	// docs/SPEC.md §4's fonts, sizes and places (the content from x 50 to 550; the title
	// centred, as TestExportPDFTitle checks).
	style := map[string]struct {
		font    string
		size, x float64
	}{
		"Café Inspection Straße Ж Ω ’": {"utf8goboldunicode", 18, 0},
		"General":                      {"utf8goboldunicode", 14, 50},
		"Inspector:":                   {"gomedium", 12, 50},
		"Full name":                    {"goitalic", 9, 50},
		"Zoë Ærø":                      {"goregular", 11, 50},
		"First line":                   {"goregular", 11, 55},
		"Yes":                          {"goregular", 11, 50},
	}
	for _, l := range doc.Pages[0].TextLines {
		want, ok := style[l.Text]
		if !ok {
			continue
		}
		delete(style, l.Text)
		if l.Font != want.font || l.Size != want.size {
			t.Errorf("%q set in %s %v pt, want %s %v pt", l.Text, l.Font, l.Size, want.font, want.size)
		}
		if want.x != 0 && math.Abs(l.X-want.x) > 0.5 {
			t.Errorf("%q starts at x %.2f, want %v", l.Text, l.X, want.x)
		}
	}
	for text := range style {
		t.Errorf("no line %q on the page", text)
	}
	rules := 0 // under every value but the textarea's, 500 wide
	for _, sg := range doc.Pages[0].Segments {
		if sg[1] == sg[3] && math.Abs(sg[0]-50) < 0.01 && math.Abs(sg[2]-550) < 0.01 {
			rules++
		}
	}
	if segs := doc.Pages[0].Segments; rules != 10 || len(segs) != 10 {
		t.Errorf("%d lines drawn, %d of them 500 wide from x 50 to 550; want 10 such lines: %v",
			len(segs), rules, segs)
	}
	// The Go reader reads the fonts' encodings as pdffonts would, and the page as pdfinfo.
	t.Run("poppler", func(t *testing.T) {
		if got := popplerLines(t, pdf); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("pdftotext:\n%s\n\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		info := readerTool(t, pdf, "pdfinfo")
		if !strings.Contains(info, "Title:           Café Inspection Straße Ж Ω ’") {
			t.Errorf("pdfinfo lacks the title:\n%s", info)
		}
	})
}

// TestExportPDFOnlyUsedFonts: only the faces drawn are embedded (an empty description
// draws none), Latin text no UTF-8 font; Chinese is Droid Sans Fallback's, not a Korean
// font's. (readPDF fails on an 8-bit face that is symbolic, whose codes readers would not
// map by WinAnsiEncoding.)
func TestExportPDFOnlyUsedFonts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		fields   []Field
		value    string
		fallback bool
		want     []string
	}{
		{"no fields", nil, "", false, []string{"gobold"}},
		{"an empty description", []Field{{ID: 1, Label: "a", Type: "text", Description: ptr("")}}, "", false,
			[]string{"gobold", "gomedium", "goregular"}},
		{"Chinese", []Field{{ID: 1, Label: "Weather", Type: "text"}}, "今天天气很好", true,
			[]string{"gobold", "gomedium", "goregular", "utf8droidsansfallbackfull"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fonts := newFontIndex(nil)
			if tc.fallback {
				fonts = needFallbackFonts(t)
			}
			form := FormDetail{Form: Form{ID: 1, Title: "T"}, Categories: []Category{{ID: 1, Fields: tc.fields}}}
			pdf := writePDF(t, form, map[int64]*string{1: &tc.value}, fonts)
			if fonts := readPDF(t, pdf).Fonts; !slices.Equal(fonts, tc.want) {
				t.Errorf("fonts embedded %q, want %q", fonts, tc.want)
			}
		})
	}
}

// TestExportPDFHostileText: control characters, emoji (as names) and a 300-letter word
// print within the margins. A value spelling PDF syntax (an /OpenAction of /JavaScript)
// reaches the text, never the file's bytes as typed (a mail gateway would flag them),
// and poppler and MuPDF read the file without a repair.
func TestExportPDFHostileText(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(map[string]any{"title": "Emoji 🙂 title\x07", "categories": []any{
		map[string]any{"name": "Cat 🚀", "fields": []any{
			map[string]any{"label": "Label 👍\ttab", "type": "text", "description": "desc 🎉\x00"},
			map[string]any{"label": "Area", "type": "textarea"},
			map[string]any{"label": "Word", "type": "text"},
			map[string]any{"label": "Syntax", "type": "text"},
			map[string]any{"label": "Syntax area", "type": "textarea"},
		}}}})
	long := strings.Repeat("x", 300)
	typed := "endstream endobj 9 0 obj << /OpenAction << /S /JavaScript /JS (app.alert(1)) >> >>"
	id := func(i int) string { return itoa(f.Categories[0].Fields[i].ID) }
	pdf, _ := e.exportPDF(e.submit(f.ID, map[string]any{
		id(0): "value 😀 \x1b[31m \u2028 end \xff", id(1): "area 🙃\r\nnext\x00line", id(2): long,
		id(3): typed, id(4): typed,
	}))
	doc := readPDF(t, pdf)
	text := strings.Join(doc.lines(), "\n")
	for _, want := range []string{"Emoji [SLIGHTLY SMILING FACE] title", "Cat [ROCKET]", "Label [THUMBS UP SIGN] tab:",
		"value [GRINNING FACE]", "end \uFFFD", "area [UPSIDE-DOWN FACE]", "next line"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	var word string
	for _, line := range strings.Split(text, "\n") {
		if strings.Trim(line, "x") == "" {
			word += line
		}
	}
	if word != long || strings.Contains(text, long) {
		t.Errorf("the 300-character word lost characters or did not wrap:\n%s", text)
	}
	for _, l := range doc.textLines() {
		if l.EndX > 550.5 { // the content's right edge: margin 50 + width 500
			t.Errorf("%.20q ends at x=%v, right of the content width", l.Text, l.EndX)
		}
	}
	for _, raw := range []string{"/JavaScript", "OpenAction", "app.alert", "endstream endobj"} {
		if bytes.Contains(pdf, []byte(raw)) {
			t.Errorf("the file's bytes hold %q as typed", raw)
		}
	}
	if n := strings.Count(strings.Join(strings.Fields(text), " "), "/OpenAction"); n != 2 {
		t.Errorf("the Go reader's text holds %d of the two values:\n%s", n, text)
	}
	t.Run("poppler and MuPDF", func(t *testing.T) {
		var typed []string // pdftotext reads /ActualText as the Go reader's Typed
		for _, l := range doc.textLines() {
			typed = append(typed, l.Typed)
		}
		if got, want := strings.Join(popplerLines(t, pdf), "\n"), strings.Join(typed, "\n"); got != want {
			t.Errorf("pdftotext reads:\n%s\n\nthe Go reader:\n%s", got, want)
		}
		if out := readerTool(t, pdf, "pdfinfo"); strings.Contains(out, "rror") {
			t.Errorf("pdfinfo: %s", out)
		}
		out := readerTool(t, pdf, "mutool", "info")
		if strings.Contains(out, "warning") || strings.Contains(out, "error") {
			t.Errorf("mutool info:\n%s", out)
		}
	})
}

func TestExportPDFErrors(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	for _, id := range []string{"abc", "1x", "-1", "1.0", "%201"} {
		e.wantError("GET", "/api/responses/"+id+"/export/pdf", nil, 400, "Invalid response ID")
	}
	for _, id := range []string{"42", "0", "99999999999999999999999999999999999999"} {
		e.wantError("GET", "/api/responses/"+id+"/export/pdf", nil, 404, "Response not found")
	}
	// A response whose form is gone when read (deleted between ResponseExport's two reads)
	// is not found either; the cascade forbids such a row, made here with foreign keys off
	// on the store's one writing connection.
	for _, stmt := range []string{`PRAGMA foreign_keys = OFF`,
		`INSERT INTO responses (id, formId, submittedAt) VALUES (77, 999, '2026-11-25T10:00:00.000Z')`,
		`PRAGMA foreign_keys = ON`} {
		if _, err := e.store.write.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	e.wantError("GET", "/api/responses/77/export/pdf", nil, 404, "Response not found")
}

// dispositionCases are titles and the Content-Disposition of response 7's PDF under each.
var dispositionCases = []struct{ title, want string }{
	{"Report", "inline; filename=response_7_Report.pdf"},
	{`a/b\c d`, "inline; filename=response_7_a_b_c_d.pdf"},
	{"   ", "inline; filename=response_7____.pdf"},
	{"", "inline; filename=response_7_form.pdf"},
	{"line\nbreak\r\nx", "inline; filename=response_7_line_break__x.pdf"},
	{`"x";y`, `inline; filename="response_7__x__y.pdf"; filename*=UTF-8''response_7_%22x%22%3By.pdf`},
	{"Café ü", `inline; filename="response_7_Caf___.pdf"; filename*=UTF-8''response_7_Caf%C3%A9_%C3%BC.pdf`},
	{"a,b", `inline; filename="response_7_a_b.pdf"; filename*=UTF-8''response_7_a%2Cb.pdf`},
	{"a=b", `inline; filename="response_7_a_b.pdf"; filename*=UTF-8''response_7_a%3Db.pdf`},
	// Control and format characters (Cc, Cf) are dropped from both (RFC 6266 appendix D).
	{"x\x00y\x7f", "inline; filename=response_7_xy.pdf"},
	{"a\u202Eb\u200Bc\u2066d\u2069", "inline; filename=response_7_abcd.pdf"},
	// ' and * are token characters but not RFC 8187 attr-chars: plain in filename,
	// percent-encoded in filename*. % is never in filename, which some programs decode.
	{"%2e%2e%2f%0d%0a", `inline; filename="response_7__2e_2e_2f_0d_0a.pdf"; ` +
		`filename*=UTF-8''response_7_%252e%252e%252f%250d%250a.pdf`},
	{"it's*", "inline; filename=response_7_it's*.pdf"},
	{`50% "off" it's*`, `inline; filename="response_7_50___off__it's*.pdf"; ` +
		`filename*=UTF-8''response_7_50%25_%22off%22_it%27s%2A.pdf`},
}

func TestContentDisposition(t *testing.T) {
	t.Parallel()
	for _, tc := range dispositionCases {
		if got := pdfDisposition(7, tc.title); got != tc.want {
			t.Errorf("pdfDisposition(%q) = %s, want %s", tc.title, got, tc.want)
		}
	}
}

// TestExportPDFHeaders: through the server, a PDF is application/pdf, named by its
// response's id (here not its form's) and title.
func TestExportPDFHeaders(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	created := e.createForm(map[string]any{"title": `"x";y`})
	e.submit(created.ID, map[string]any{"1": "x"}) // response ids now run ahead of form ids
	rid := e.submit(created.ID, map[string]any{"1": "y"})
	_, h := e.exportPDF(rid)
	want := fmt.Sprintf(`inline; filename="response_%[1]d__x__y.pdf"; filename*=UTF-8''response_%[1]d_%%22x%%22%%3By.pdf`, rid)
	if got := h.Values("Content-Disposition"); len(got) != 1 || got[0] != want || rid == created.ID {
		t.Errorf("Content-Disposition %q, want %q (response %d of form %d)", got, want, rid, created.ID)
	}
	// The type is the handler's: net/http would guess it from %PDF-, a recorder does not.
	w := httptest.NewRecorder()
	e.srv.ServeHTTP(w, apiRequest("GET", "/api/responses/1/export/pdf", nil))
	if h := w.Result().Header; !slices.Equal(h["Content-Type"], []string{"application/pdf"}) {
		t.Errorf("the handler's headers %q, want Content-Type application/pdf", h)
	}
}

// benchmarkForm is the 50-field form docs/PERFORMANCE.md's Node comparison seeds; tr
// translates its title, heading, label, description and value.
func benchmarkForm(tr ...string) (FormDetail, map[int64]*string) {
	translated := len(tr) > 0
	tr = append(tr, []string{"Site inspection report", "Section %d", "Question %d.%d",
		"Guidance for question %d.%d, shown in italics.", "A longer answer over several lines. "}[len(tr):]...)
	types := []string{"text", "number", "date", "textarea", "boolean"}
	f := FormDetail{Form: Form{ID: 1, Title: tr[0]}}
	values := map[int64]*string{}
	id := int64(0)
	for c := range 5 {
		cat := Category{ID: int64(c + 1), Name: fmt.Sprintf(tr[1], c+1)}
		for i := range 10 {
			id++
			typ := types[(c*10+i)%5]
			fd := Field{ID: id, Label: fmt.Sprintf(tr[2], c+1, i+1), Type: typ}
			if i%2 == 0 {
				fd.Description = ptr(fmt.Sprintf(tr[3], c+1, i+1))
			}
			cat.Fields = append(cat.Fields, fd)
			v := map[string]string{"text": "Answer text", "number": "42", "date": "2026-11-25",
				"textarea": strings.Repeat(tr[4], 6), "boolean": "true"}[typ]
			if translated && typ == "text" {
				v = tr[4]
			}
			values[id] = &v
		}
		f.Categories = append(f.Categories, cat)
	}
	return f, values
}

// BenchmarkExportPDF lays out the 50-field document in Latin, Greek (the Go fonts' UTF-8
// faces) and Chinese (Droid Sans Fallback). The baselines are fpdf alone writing the four
// Go fonts in a one-line document, as UTF-8 fonts and as 8-bit faces.
func BenchmarkExportPDF(b *testing.B) {
	fonts := newFontIndex(fontDirs(""))
	for _, bm := range []struct {
		name string
		add  func(pdf *fpdf.Fpdf, family string)
	}{
		{"baseline-fpdf-four-go-fonts-one-line", func(pdf *fpdf.Fpdf, family string) {
			pdf.AddUTF8FontFromBytes(family, "", pdfFonts[family])
		}},
		{"baseline-fpdf-four-go-faces-one-line", func(pdf *fpdf.Fpdf, family string) {
			def, z := fonts.byName[family].winAnsiFace()
			pdf.AddFontFromBytes(family, "", def, z)
		}},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				pdf := fpdf.New("P", "pt", "A4", "")
				pdf.AddPage()
				for family := range pdfFonts {
					bm.add(pdf, family)
					pdf.SetFont(family, "", 11)
					pdf.Cell(100, 12, "hello")
				}
				if err := pdf.Output(io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, doc := range []struct {
		name string
		tr   []string
	}{
		{"50-fields", nil},
		{"50-fields-greek", []string{"Αναφορά επιθεώρησης", "Ενότητα %d", "Ερώτηση %d.%d",
			"Οδηγίες για την ερώτηση, με πλάγια γράμματα.", "Μια απάντηση σε πολλές γραμμές. "}},
		{"50-fields-chinese", []string{"现场检查报告", "第%d部分", "问题 %d.%d", "本问题的说明，以斜体显示。",
			"今天天气很好，我们去公园散步。"}},
	} {
		if doc.name == "50-fields-chinese" && fonts.fallbackFor('中', nil) == nil {
			continue // no CJK font installed: nothing to measure
		}
		form, values := benchmarkForm(doc.tr...)
		b.Run(doc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var buf bytes.Buffer
				if err := writeResponsePDF(&buf, form, values, time.Now(), fonts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
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

// FuzzContentDisposition: the header parses, inline, without a line break, and names
// the file as docs/SPEC.md does; filename* holds only RFC 8187 attr-chars and %XX escapes
// (Go's mime package would pass a ' or * through undecoded).
func FuzzContentDisposition(f *testing.F) {
	for _, tc := range dispositionCases {
		f.Add(int64(7), tc.title)
	}
	f.Fuzz(func(t *testing.T, id int64, title string) {
		if id < 0 {
			id = -id
		}
		h := pdfDisposition(id, title)
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
		if params["filename"] != want {
			t.Errorf("title %q: filename %q, want %q (header %s)", title, params["filename"], want, h)
		}
		if _, ext, ok := strings.Cut(h, "filename*=UTF-8''"); ok {
			got, err := url.PathUnescape(ext)
			if !rfc8187Value.MatchString(ext) || err != nil || got != want {
				t.Errorf("title %q: filename* %q decodes to %q, %v; want %q", title, ext, got, err, want)
			}
		}
	})
}

// sanitisedTitle is docs/SPEC.md's rule for the title in the file name, written out apart
// from pdfDisposition's own.
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

// rfc8187Value is RFC 8187's value-chars: attr-chars and %XX escapes.
var rfc8187Value = regexp.MustCompile("^(?:[A-Za-z0-9!#$&+.^_`|~-]|%[0-9A-Fa-f]{2})*$")

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
			values[id] = &[]string{value, other}[i%2]
		}
		if pdf := writePDF(t, form, values, fonts); !bytes.HasPrefix(pdf, []byte("%PDF-")) {
			t.Fatal("not a PDF")
		}
	})
}

// needFallbackFonts skips the test when Debian's fallback font files are absent; a
// service that finds no font where they are fails it.
func needFallbackFonts(t *testing.T) *fontIndex {
	t.Helper()
	for _, file := range []string{"truetype/droid/DroidSansFallbackFull.ttf",
		"truetype/nanum/NanumGothic.ttf", "truetype/noto/NotoSansHebrew-Regular.ttf"} {
		if _, err := os.Stat("/usr/share/fonts/" + file); err != nil {
			notInstalled(t, "fallback fonts not installed: %v (install fonts-noto-core, fonts-droid-fallback and fonts-nanum)", err)
		}
	}
	ix := newFontIndex(fontDirs(""))
	for _, probe := range []rune{'们', 'あ', '한', 'ש', '\uFEDF', 'न'} {
		if ix.fallbackFor(probe, nil) == nil {
			t.Fatalf("the installed fallback fonts have %q %U, but the service finds no font for it", probe, probe)
		}
	}
	return ix
}

// TestPDFFontDirFirst: PDF_FONT_DIR is searched before the system's fonts.
func TestPDFFontDirFirst(t *testing.T) {
	t.Parallel()
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
