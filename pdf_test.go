package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"mime"
	"net/http/httptest"
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

	"golang.org/x/text/unicode/norm"

	"github.com/go-pdf/fpdf"
)

// The tests of pdf.go's document: the export endpoint and SPEC §4's layout (the page,
// title, categories, fields by type, the textarea frame, page breaks), the fonts it
// embeds and finds, and whole documents under fuzzing. pdftext_test.go,
// pdfpages_test.go and pdfbounds_test.go read more documents back; the unit tests of
// text shaping and bidirectional text are in bidi_test.go.

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
	// The Go fonts' 8-bit faces, but Go Bold's UTF-8 face alone: its first text, the
	// title, has Ж and Ω.
	fonts := []string{"goitalic", "gomedium", "goregular", "utf8goboldunicode"}
	if !slices.Equal(doc.Fonts, fonts) {
		t.Errorf("embedded fonts %q, want %q", doc.Fonts, fonts)
	}

	checkContentStyles(t, doc.Pages[0])
	checkContentRules(t, doc.Pages[0])
	t.Run("poppler", func(t *testing.T) { checkContentPoppler(t, pdf, want) })
}

// checkContentStyles checks TestExportPDFContent's lines against docs/SPEC.md §4's
// layout, in points: the margin 50, the content 500 wide (50 to 550). Title 18 pt bold
// and centred, category names 14 pt bold, labels 12 pt semi-bold, descriptions 9 pt
// italic, values 11 pt regular.
func checkContentStyles(t *testing.T, page pdfPage) {
	t.Helper()
	style := map[string]struct {
		font string
		size float64
	}{
		"Café Inspection Straße Ж Ω ’": {"utf8goboldunicode", 18},
		"General":                      {"utf8goboldunicode", 14},
		"Inspector:":                   {"gomedium", 12},
		"Full name":                    {"goitalic", 9},
		"Zoë Ærø":                      {"goregular", 11},
		"Notes:":                       {"gomedium", 12},
		"First line":                   {"goregular", 11},
		"Yes":                          {"goregular", 11},
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
}

// checkContentRules checks TestExportPDFContent's rules and frame.
func checkContentRules(t *testing.T, page pdfPage) {
	t.Helper()
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
}

// checkContentPoppler checks TestExportPDFContent's document with poppler's tools.
func checkContentPoppler(t *testing.T, pdf []byte, want []string) {
	t.Helper()
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
	for _, name := range []string{"gomedium", "goitalic", "goregular", "utf8goboldunicode"} {
		kind := `TrueType\s+WinAnsi`
		if strings.HasPrefix(name, "utf8") {
			kind = `CID TrueType\s+Identity-H`
		}
		if !regexp.MustCompile(`(?m)^` + name + `\s+` + kind + `\s+yes`).MatchString(fonts) {
			t.Errorf("font %s not embedded:\n%s", name, fonts)
		}
	}
}

// TestExportPDFOnlyUsedFonts: a form without descriptions embeds no italic, nor does one
// whose description is empty (it prints nothing), a form without fields only the bold of
// its title, and Latin text no UTF-8 font; Chinese is drawn in Droid Sans Fallback, the
// font made for it, not in a Korean font that happens to cover some Han characters. Its
// 8-bit faces are flagged nonsymbolic, so that readers map their codes by WinAnsiEncoding.
func TestExportPDFOnlyUsedFonts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		fields   []Field
		value    string // the field's
		fallback bool   // drawn from the fallback fonts
		want     []string
	}{
		{"no fields", nil, "", false, []string{"gobold"}},
		{"no descriptions", []Field{{ID: 1, Label: "a", Type: "text"}}, "", false, []string{"gobold", "gomedium", "goregular"}},
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
			var buf bytes.Buffer
			if err := writeResponsePDF(&buf, form, map[int64]*string{1: &tc.value}, time.Now(), fonts); err != nil {
				t.Fatal(err)
			}
			pdf := buf.Bytes()
			if fonts := readPDF(t, pdf).Fonts; !slices.Equal(fonts, tc.want) {
				t.Errorf("fonts embedded %q, want %q", fonts, tc.want)
			}
			objs, _, err := pdfObjects(pdf)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				d, ok := o.(pdfDict)
				if name, _ := d["FontName"].(pdfName); ok && d["Type"] == pdfName("FontDescriptor") && !strings.HasPrefix(string(name), "utf8") {
					if flags, _ := d["Flags"].(float64); int(flags)&(4|32) != 32 {
						t.Errorf("%s flags %v, want nonsymbolic (32), not symbolic (4)", d["FontName"], d["Flags"])
					}
				}
			}
			t.Run("poppler", func(t *testing.T) {
				fonts := popplerTool(t, pdf, "pdffonts")
				for _, name := range []string{"gobold", "gomedium", "goitalic", "goregular"} {
					if got, want := strings.Contains(fonts, name), slices.Contains(tc.want, name); got != want {
						t.Errorf("font %s embedded = %v, want %v:\n%s", name, got, want, fonts)
					}
				}
			})
		})
	}
}

func TestExportPDFHostileText(t *testing.T) {
	t.Parallel()
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
}

// TestExportPDFKeepsTypedTextOutOfItsBytes: what a respondent types reaches the PDF's
// text, never its bytes as typed (a byte scanner or a mail gateway would flag them): a
// value that spells PDF syntax, an object whose /OpenAction runs /JavaScript, is read back
// whole by the Go reader and by poppler, and stands nowhere in the file, whose
// cross-reference table poppler and MuPDF read without a repair.
func TestExportPDFKeepsTypedTextOutOfItsBytes(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(map[string]any{"title": "t", "categories": []any{map[string]any{"fields": []any{
		map[string]any{"label": "Text", "type": "text"}, map[string]any{"label": "Area", "type": "textarea"}}}}})
	typed := "endstream endobj 9 0 obj << /OpenAction << /S /JavaScript /JS (app.alert(1)) >> >>"
	pdf, _ := e.exportPDF(e.submit(f.ID, map[string]any{
		itoa(f.Categories[0].Fields[0].ID): typed, itoa(f.Categories[0].Fields[1].ID): typed}))
	for _, raw := range []string{"/JavaScript", "OpenAction", "app.alert", "endstream endobj"} {
		if bytes.Contains(pdf, []byte(raw)) {
			t.Errorf("the file's bytes hold %q as typed", raw)
		}
	}
	if text := strings.Join(textLines(t, pdf), " "); strings.Count(text, "/OpenAction") != 2 {
		t.Errorf("the Go reader's text lacks the two values:\n%s", text)
	}
	checkPopplerAgrees(t, pdf)
	t.Run("structure", func(t *testing.T) {
		if out := popplerTool(t, pdf, "pdfinfo"); strings.Contains(out, "rror") {
			t.Errorf("pdfinfo: %s", out)
		}
		if _, err := exec.LookPath("mutool"); err != nil {
			notInstalled(t, "mutool not installed: %v (install mupdf-tools for the MuPDF checks)", err)
		}
		path := filepath.Join(t.TempDir(), "doc.pdf")
		os.WriteFile(path, pdf, 0o600)
		if out, err := exec.Command("mutool", "info", path).CombinedOutput(); err != nil || bytes.Contains(out, []byte("warning")) || bytes.Contains(out, []byte("error")) {
			t.Errorf("mutool info: %v\n%s", err, out)
		}
	})
}

// TestExportPDFLongTextarea: a long textarea, Latin or Arabic, breaks across two pages in
// a frame on each, every word kept in order, each line 5 pt inside its frame: a Latin one
// starts at 55, an Arabic one, right-aligned, ends at 545. The field after it follows.
func TestExportPDFLongTextarea(t *testing.T) {
	t.Parallel()
	var words []string
	for i := 0; len(strings.Join(words, " ")) < 5000; i++ {
		words = append(words, fmt.Sprintf("w%04d", i))
	}
	sentence := "اللغة العربية هي لغة رسمية في أكثر من عشرين دولة، ويتحدث بها الملايين."
	for _, tc := range []struct {
		name, essay string
		rtl         bool
	}{
		{"Latin", strings.Join(words, " "), false},
		{"Arabic", strings.Join(slices.Repeat([]string{sentence}, 90), " "), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.rtl {
				needFallbackFonts(t)
			}
			e := newTestEnv(t)
			f := e.createForm(map[string]any{"title": "Long", "categories": []any{map[string]any{"fields": []any{
				map[string]any{"label": "Essay", "type": "textarea"}, map[string]any{"label": "After", "type": "text"}}}}})
			pdf, _ := e.exportPDF(e.submit(f.ID, map[string]any{
				itoa(f.Categories[0].Fields[0].ID): tc.essay, itoa(f.Categories[0].Fields[1].ID): "tail"}))
			doc := readPDF(t, pdf)
			if len(doc.Pages) != 2 {
				t.Fatalf("%d pages, want the %d-character essay across two", len(doc.Pages), len(tc.essay))
			}
			var got []string
			for i, p := range doc.Pages {
				if n := len(p.Rects); n != 1 || p.Rects[0][0] != 50 || p.Rects[0][2] != 500 {
					t.Errorf("page %d: frames %v, want one from x 50, 500 wide", i+1, p.Rects)
				}
				for _, l := range p.TextLines {
					if l.Size != 11 || l.Text == "tail" {
						continue
					}
					text, edge, want := l.Text, l.X, 55.0
					if tc.rtl {
						text, edge, want = logicalRTL(l.Text), l.EndX, 545
					}
					got = append(got, strings.Fields(text)...)
					if math.Abs(edge-want) > 0.5 {
						t.Errorf("page %d: a line of the essay at x %.2f to %.2f, want it at %v", i+1, l.X, l.EndX, want)
					}
				}
			}
			if want := strings.Fields(tc.essay); !slices.Equal(got, want) {
				t.Errorf("essay lost or reordered words: got %d words, want %d:\n%.300s", len(got), len(want), strings.Join(got, " "))
			}
			if lines := doc.lines(); lines[len(lines)-1] != "tail" {
				t.Errorf("the field after the textarea is missing: last line %q", lines[len(lines)-1])
			}
			if !tc.rtl { // pdftotext's own reordering moves the Arabic comma and full stop
				checkPopplerAgrees(t, pdf)
			}
			t.Run("poppler", func(t *testing.T) {
				if info := popplerTool(t, pdf, "pdfinfo"); !strings.Contains(info, "Pages:           2") {
					t.Errorf("pdfinfo, of a %d-character textarea, not on two pages:\n%s", len(tc.essay), info)
				}
			})
		})
	}
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
	// A response whose form is gone by the time the form is read (a delete between the two
	// reads of ResponseExport) is not found either, not a PDF of an empty form. The schema's
	// cascade keeps such a row from lasting: it is made here with foreign keys off.
	conn, err := e.store.write.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, stmt := range []string{`PRAGMA foreign_keys = OFF`,
		`INSERT INTO responses (id, formId, submittedAt) VALUES (77, 999, '2026-11-25T10:00:00.000Z')`,
		`PRAGMA foreign_keys = ON`} {
		if _, err := conn.ExecContext(context.Background(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	e.wantError("GET", "/api/responses/77/export/pdf", nil, 404, "Response not found")
}

func TestContentDisposition(t *testing.T) {
	t.Parallel()
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
		got := pdfDisposition(7, tc.title)
		if got != tc.want {
			t.Errorf("pdfDisposition(%q) = %s, want %s", tc.title, got, tc.want)
		}
		disp, params, err := mime.ParseMediaType(got)
		if fallback, _, _ := strings.Cut(got, "filename*"); strings.Contains(fallback, "%") {
			t.Errorf("pdfDisposition(%q) = %s: a %% in filename", tc.title, got)
		}
		if err != nil || disp != "inline" || params["filename"] != tc.wantName {
			t.Errorf("ParseMediaType(%s) = %q %q %v, want inline with filename %q", got, disp, params, err, tc.wantName)
		}
	}
	// fileTitle leaves no space in a name; dispositionHeader still writes one as RFC 8187
	// does, %20, where url.QueryEscape writes +.
	if got, want := dispositionHeader("attachment", "a b+c.csv"),
		`attachment; filename="a_b+c.csv"; filename*=UTF-8''a%20b%2Bc.csv`; got != want {
		t.Errorf("dispositionHeader(a b+c.csv) = %s, want %s", got, want)
	}
}

// TestExportPDFHeaders: through the server, a PDF is application/pdf, under the name of
// its response's id (here not its form's) and title, as TestContentDisposition's rows
// give it for pdfDisposition.
func TestExportPDFHeaders(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	var first, created savedForm
	e.doJSON("POST", "/api/forms", map[string]any{"title": "First"}, &first)
	e.submit(first.ID, map[string]any{"1": "x"})
	e.submit(first.ID, map[string]any{"1": "x"}) // response ids now run ahead of form ids
	e.doJSON("POST", "/api/forms", map[string]any{"title": `"x";y`}, &created)
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

// benchmarkForm is a 50-field form: 5 categories of 10, all types (the form the
// Node comparison in docs/PERFORMANCE.md seeds).
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
// a one-line document (its page compressed, as fpdf does by default), with a core font and
// with the four Go fonts, so that the ratios show what the fonts cost and what the layout adds.
func BenchmarkExportPDF(b *testing.B) {
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
	// The four Go fonts in a one-line document, what fpdf costs before any layout: as UTF-8
	// fonts (as every document added them before the 8-bit faces), and as the 8-bit faces.
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
				var buf bytes.Buffer
				if err := pdf.Output(&buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// The 50-field document in Latin, which must cost what it did before fallback fonts; in
	// Greek, from the Go fonts' UTF-8 faces; in Chinese, from Droid Sans Fallback.
	for _, doc := range []struct {
		name string
		tr   []string // the title, a heading, a label, a description and a value (translated)
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
		form, values := translatedBenchmarkForm(doc.tr)
		b.Run(doc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var buf bytes.Buffer
				if err := writeResponsePDF(&buf, form, values, now, fonts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// translatedBenchmarkForm is benchmarkForm with the text of tr (see BenchmarkExportPDF),
// or as it is without.
func translatedBenchmarkForm(tr []string) (FormDetail, map[int64]*string) {
	form, values := benchmarkForm()
	if tr == nil {
		return form, values
	}
	form.Title = tr[0]
	for c := range form.Categories {
		form.Categories[c].Name = fmt.Sprintf(tr[1], c+1)
		for i := range form.Categories[c].Fields {
			fd := &form.Categories[c].Fields[i]
			fd.Label = fmt.Sprintf(tr[2], c+1, i+1)
			if fd.Description != nil {
				fd.Description = ptr(tr[3])
			}
			if fd.Type == "text" || fd.Type == "textarea" {
				v := strings.Repeat(tr[4], map[string]int{"text": 1, "textarea": 6}[fd.Type])
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

// needFallbackFonts skips the test when the machine lacks the fallback fonts it draws
// with (.ci/run installs them), and returns the index otherwise.
func needFallbackFonts(t *testing.T) *fontIndex {
	t.Helper()
	// Installed or not is read from Debian's packages' own files, not through the code
	// under test: a service that finds no font where they are is a failure, not a skip.
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
// and Cyrillic stay in the Go fonts; an emoji prints as its name. The glyphs of
// right-to-left lines, read left to right as the Go reader's lines do, are in visual
// order, so the test reverses them; pdftotext reorders them back to logical order
// itself, wrapped in bidi embedding controls (TestExportPDFTextLayer checks the text in
// the order it is written).
func TestExportPDFScripts(t *testing.T) {
	t.Parallel()
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
	checkScriptFonts(t, doc)
	t.Run("poppler", func(t *testing.T) {
		text := norm.NFKC.String(strings.Join(popplerLines(t, pdf), "\n"))
		for _, f := range fields {
			checkPopplerWords(t, text, f.label, f.value)
		}
	})
}

// checkScriptFonts checks TestExportPDFScripts' fonts: each script's fallback font, and
// Arabic letters in their joined forms, drawn as the letters typed from variants of the
// font whose character maps give each letter its form (final, initial, medial).
func checkScriptFonts(t *testing.T, doc pdfDoc) {
	t.Helper()
	if strings.ContainsFunc(doc.text(), func(r rune) bool { return r >= 0xFE80 && r <= 0xFEF4 }) {
		t.Errorf("Arabic letters in the text layer as presentation forms:\n%s", doc.text())
	}
	for _, font := range []string{"utf8droidsansfallbackfull", "utf8nanumgothic", "utf8notosanshebrewregular",
		"utf8notosansarabicregular", "utf8notosansarabicregularinit", "utf8notosansarabicregularmedi",
		"utf8notosansarabicregularfina", "utf8notosansdevanagariregular", "goregular"} {
		if !slices.Contains(doc.Fonts, font) {
			t.Errorf("font %s not embedded: %q", font, doc.Fonts)
		}
	}
}

// checkPopplerWords checks that pdftotext's text holds each word of a value as typed
// (NFKC), less the embedding controls pdftotext puts around right-to-left runs. Word by
// word: pdftotext's own reordering moves the Arabic comma.
func checkPopplerWords(t *testing.T, text, label, value string) {
	t.Helper()
	text = strings.Map(func(r rune) rune {
		if r >= '\u202A' && r <= '\u202E' {
			return -1
		}
		return r
	}, text)
	for _, w := range strings.Fields(norm.NFKC.String(value)) {
		if w = strings.Trim(w, "،"); !strings.Contains(text, w) {
			t.Errorf("pdftotext lacks %s %q:\n%s", label, w, text)
		}
	}
}

// TestExportPDFPageBreaks: fields continue on new pages without a line below the
// bottom margin, each label followed by its value; a textarea's frame holds its lines,
// blank ones included, and its padding.
func TestExportPDFPageBreaks(t *testing.T) {
	t.Parallel()
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

// TestPDFFontDirFirst: PDF_FONT_DIR's folders are searched before the system's: a copy
// of the system's Hebrew font put there under another name is the one embedded.
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

// TestExportPDFInvisibleAndEmpty: joiners, byte-order marks and bidi marks print as
// nothing (not as their names), an empty textarea still gets its 30 pt frame, and a value
// of blanks alone exports.
func TestExportPDFInvisibleAndEmpty(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(map[string]any{"title": "T", "categories": []any{map[string]any{"fields": []any{
		map[string]any{"label": "Text", "type": "text"},
		map[string]any{"label": "Notes", "type": "textarea"},
		map[string]any{"label": "Blank", "type": "text"},
	}}}})
	text, notes, blank := f.Categories[0].Fields[0].ID, f.Categories[0].Fields[1].ID, f.Categories[0].Fields[2].ID
	// A value of blanks alone is a line with nothing on it.
	id := e.submit(f.ID, map[string]any{itoa(text): "a\u200Db\uFEFFc\u200Ed", itoa(notes): "", itoa(blank): "   "})
	body, _ := e.exportPDF(id)
	doc := readPDF(t, body)
	if !slices.Contains(doc.lines(), "abcd") {
		t.Errorf("lines %q, want the line abcd", doc.lines())
	}
	if rects := doc.Pages[0].Rects; len(rects) != 1 || math.Abs(rects[0][3]) != 30 || rects[0][2] != 500 {
		t.Errorf("frames %v, want one 500 wide and 30 high", rects)
	}
}
