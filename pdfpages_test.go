package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/image/font"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
)

// keepForm is a form whose fields fall at many heights of its pages: 40 categories H<c>
// of one to four fields L<n> (even ones described, D<n>), of each kind in turn, each
// category after a textarea of filler lines, their number by the category and seed.
// follows gives what follows each label on its page: D<n>, then its value's first line,
// or "" for an empty textarea's frame.
func keepForm(seed int64) (form FormDetail, values map[int64]*string, follows map[string][]string) {
	form = FormDetail{Form: Form{ID: 1, Title: "Keep"}}
	values, follows = map[int64]*string{}, map[string][]string{}
	kinds := []struct{ typ, value, shown string }{{"text", "V", "V"},
		{"textarea", "V\nsecond line\nthird line", "V"}, {"date", "V", "V"}, {"textarea", "", ""},
		{"boolean", "true", "Yes"}}
	n := int64(0)
	for c := range int64(40) {
		values[-c-1] = ptr(strings.Repeat("filler\n", int((c*7+seed)%19)))
		form.Categories = append(form.Categories,
			Category{Fields: []Field{{ID: -c - 1, Label: "Filler", Type: "textarea"}}},
			Category{ID: c + 1, Name: fmt.Sprintf("H%d", c)})
		cat := &form.Categories[len(form.Categories)-1]
		for range c%4 + 1 {
			n++
			k, label := kinds[(n-1)%5], "L"+itoa(n)
			cat.Fields = append(cat.Fields, Field{ID: n, Label: label, Type: k.typ})
			if n%2 == 0 {
				cat.Fields[len(cat.Fields)-1].Description = ptr("D" + itoa(n))
				follows[label+":"] = []string{"D" + itoa(n)}
			}
			values[n] = ptr(strings.Replace(k.value, "V", "V"+itoa(n), 1))
			shown := strings.Replace(k.shown, "V", "V"+itoa(n), 1)
			follows[label+":"] = append(follows[label+":"], shown)
		}
	}
	return form, values, follows
}

// TestExportPDFKeepWithNext: a label is on the page of its description and its value's
// first line (an empty textarea's frame top), a heading on its first label's page. No
// line is in the margins (50 pt; an 11 pt descender reaches 3 pt below its baseline).
func TestExportPDFKeepWithNext(t *testing.T) {
	t.Parallel()
	fonts := newFontIndex(nil)
	for seed := range int64(4) {
		form, values, follows := keepForm(seed)
		doc := readPDF(t, writePDF(t, form, values, fonts))
		type pagedLine struct {
			pdfTextLine
			page int
		}
		var lines []pagedLine
		for i, p := range doc.Pages {
			for _, l := range p.TextLines {
				lines = append(lines, pagedLine{l, i + 1})
				if l.Y < 53 || l.Y > 841.89-50 {
					t.Errorf("seed %d: page %d: %q at y %.2f, in the margins", seed, i+1, l.Text, l.Y)
				}
			}
		}
		for i, l := range lines {
			want := follows[l.Text]
			if strings.HasPrefix(l.Text, "H") {
				want = []string{"L"}
			}
			for j, w := range want {
				if w == "" { // a frame's top within two lines under the label's baseline
					under := func(r [4]float64) bool { return r[1] < l.Y && r[1] > l.Y-30 }
					if !slices.ContainsFunc(doc.Pages[l.page-1].Rects, under) {
						t.Errorf("seed %d: %q on page %d, its empty frame not under it there",
							seed, l.Text, l.page)
					}
					continue
				}
				next := i + 1 + j
				if next >= len(lines) || !strings.HasPrefix(lines[next].Text, w) || lines[next].page != l.page {
					t.Errorf("seed %d: %q on page %d, not followed there by %q: %v",
						seed, l.Text, l.page, w, lines[i+1:min(i+3, len(lines))])
				}
			}
		}
	}
}

// TestExportPDFRuleBelowDescenders: the rule under a value, 1 pt thick, passes below
// every character's deepest point (final nun, meem, jeem, a Devanagari vowel sign below);
// under Latin it stays 3.3 pt below the baseline.
func TestExportPDFRuleBelowDescenders(t *testing.T) {
	t.Parallel()
	fonts := needFallbackFonts(t)
	// ج first: not measured for another value before, as the index is shared.
	for _, value := range []string{"ج", "gjpqy", "אמן", "محمد", "कुमार", "ปฎิฏุ"} {
		page := exportValue(t, fonts, "text", value).Pages[0]
		if len(page.Segments) != 1 {
			t.Fatalf("%s: lines drawn %v, want one rule", value, page.Segments)
		}
		ruleTop := page.Segments[0][1] + 0.5
		var baseline, lowest float64 = 0, math.Inf(1)
		for _, g := range page.Glyphs {
			if g.size != 11 {
				continue // the title and label
			}
			baseline = g.y
			lowest = min(lowest, g.y-glyphDepth(t, fonts, g)*g.size)
		}
		if ruleTop >= lowest {
			t.Errorf("%s: the rule's top at y %.2f, the lowest descender at %.2f", value, ruleTop, lowest)
		}
		if value == "gjpqy" && math.Abs(baseline-page.Segments[0][1]-3.3) > 0.05 {
			t.Errorf("%s: the rule %.2f pt below the baseline, want 3.3", value, baseline-page.Segments[0][1])
		}
	}
}

// glyphDepth is how far a character reaches below the baseline, in em, from its font
// file; for an Arabic letter (drawn from a variant, utf8<font>init ...), its deepest form.
func glyphDepth(t *testing.T, fonts *fontIndex, g pdfGlyph) float64 {
	t.Helper()
	var sf *sfnt.Font
	for _, f := range fonts.byName {
		family := strings.ToLower(f.family)
		variant, ok := strings.CutPrefix(strings.TrimPrefix(g.font, "utf8"), family)
		if ok && slices.Contains([]string{"", "unicode", "init", "medi", "fina"}, variant) {
			sf = f.parse()
		}
	}
	if sf == nil {
		t.Fatalf("%q: no font %s", g.text, g.font)
	}
	var sb sfnt.Buffer
	r, _ := utf8.DecodeRuneInString(g.text)
	chars := []rune{r}
	for _, forms := range arabicForms {
		if form, ok := forms[r]; ok {
			chars = append(chars, form)
		}
	}
	em := fixed.I(int(sf.UnitsPerEm()))
	depth := 0.0
	for _, c := range chars {
		gi, err := sf.GlyphIndex(&sb, c)
		if err != nil || gi == 0 {
			continue
		}
		b, _, err := sf.GlyphBounds(&sb, gi, em, font.HintingNone)
		if err != nil {
			t.Fatal(err)
		}
		depth = max(depth, float64(b.Max.Y)/float64(em))
	}
	return depth
}

// TestExportPDFValueDirection: a value without letters takes its label's direction:
// right-aligned under a Hebrew label, at the margin under a Latin one or one without
// letters.
func TestExportPDFValueDirection(t *testing.T) {
	t.Parallel()
	fonts := needFallbackFonts(t)
	for _, tc := range []struct {
		label, fieldType, value, want string
		endX                          float64 // where the value's line ends; 0: starts at the margin
	}{
		{"מספר", "number", "12", "12", 550},
		{"תאריך", "date", "2026-11-25", "25/11/2026", 550},
		{"تم", "boolean", "true", "Yes", 550},
		{"הערות", "textarea", "12", "12", 545},
		{"Number", "number", "12", "12", 0},
		{"7.", "number", "12", "12", 0},
	} {
		form, values := oneFieldForm("T", tc.fieldType, tc.value)
		form.Categories[0].Fields[0].Label = tc.label
		lines := readPDF(t, writePDF(t, form, values, fonts)).textLines()
		i := slices.IndexFunc(lines, func(l pdfTextLine) bool { return l.Text == tc.want })
		switch {
		case i < 0:
			t.Errorf("%s %q: no line %q in %v", tc.label, tc.value, tc.want, lines)
		case tc.endX == 0 && math.Abs(lines[i].X-50) > 0.5:
			t.Errorf("%s %q: starts at x %.2f, want the margin, 50", tc.label, tc.value, lines[i].X)
		case tc.endX != 0 && math.Abs(lines[i].EndX-tc.endX) > 0.5:
			t.Errorf("%s %q: ends at x %.2f, want %v", tc.label, tc.value, lines[i].EndX, tc.endX)
		}
	}
}

// TestExportPDFContinuedFrame: a textarea continued on a new page is in a frame there
// too, starting with its next line of text, not the blank lines at the break.
func TestExportPDFContinuedFrame(t *testing.T) {
	t.Parallel()
	// 51 lines fill the first page's frame (see TestExportPDFTooLong); then blank lines.
	value := strings.Repeat("x\n", 50) + "last on page one\n\n\n\nfirst on page two\n\nthird"
	doc := exportValue(t, newFontIndex(nil), "textarea", value)
	if len(doc.Pages) != 2 {
		t.Fatalf("%d pages, want 2", len(doc.Pages))
	}
	for i, p := range doc.Pages {
		if len(p.Rects) != 1 || p.Rects[0][0] != 50 || p.Rects[0][2] != 500 {
			t.Errorf("page %d: frames %v, want one from x 50, 500 wide", i+1, p.Rects)
		}
	}
	page := doc.Pages[1]
	if len(page.TextLines) == 0 || page.TextLines[0].Text != "first on page two" {
		t.Fatalf("page 2 lines %v, want to start with \"first on page two\"", page.TextLines)
	}
	top := 841.89 - 50 // the frame's top; its first line 5 pt inside
	if first := page.TextLines[0]; first.Y < top-5-13.2 {
		t.Errorf("page 2's first line at y %.2f, below the frame's first line (%.2f to %.2f)", first.Y, top-5-13.2, top-5)
	}
	if third := page.TextLines[1]; third.Text != "third" || page.TextLines[0].Y-third.Y < 2*13.2-0.01 {
		t.Errorf("the blank line inside page 2 is lost: %v", page.TextLines)
	}
}

// TestExportPDFLinesFillTheWidth: prose fills each line to within a word of the right
// edge, 500 pt in a text value, 490 pt inside a textarea's frame.
func TestExportPDFLinesFillTheWidth(t *testing.T) {
	t.Parallel()
	// Article 1 of the Universal Declaration of Human Rights, three times.
	prose := strings.Repeat("All human beings are born free and equal in dignity and rights. "+
		"They are endowed with reason and conscience and should act towards one another in a "+
		"spirit of brotherhood. ", 3)
	for _, tc := range []struct {
		fieldType   string
		left, right float64
	}{{"text", 50, 550}, {"textarea", 55, 545}} {
		// The value's lines, after the title's and the label's.
		lines := exportValue(t, newFontIndex(nil), tc.fieldType, prose).textLines()[2:]
		if len(lines) < 4 {
			t.Fatalf("%s: %d lines of the value, want 4 at least", tc.fieldType, len(lines))
		}
		for _, l := range lines[:len(lines)-1] {
			if math.Abs(l.X-tc.left) > 0.01 || l.EndX > tc.right+0.01 || l.EndX < tc.right-60 {
				t.Errorf("%s: line %q spans x %.2f to %.2f, want %v to within a word of %v",
					tc.fieldType, l.Text, l.X, l.EndX, tc.left, tc.right)
			}
		}
	}
}

// TestExportPDFLineSpacing: the baselines in points from the top: a line of size s is
// 1.2 s high, its baseline 0.9 s down; after the title a blank line of its size, after a
// heading half a line, after a rule a line of 11 pt, after a category half of one. These
// are the original's moveDown steps (pdfkit's lines are the font's own, so points differ).
func TestExportPDFLineSpacing(t *testing.T) {
	t.Parallel()
	fields := []Field{
		{ID: 1, Label: "Label", Type: "text", Description: ptr("Description")},
		{ID: 2, Label: "Next", Type: "text"},
	}
	form := FormDetail{Form: Form{ID: 1, Title: "Title"}, Categories: []Category{{ID: 1, Name: "Heading", Fields: fields},
		{ID: 2, Name: "Second", Fields: []Field{{ID: 3, Label: "Last", Type: "text"}}}}}
	values := map[int64]*string{1: ptr("Value"), 2: ptr("Other")}
	page := readPDF(t, writePDF(t, form, values, newFontIndex(nil))).Pages[0]
	want := map[string]float64{
		"Title":       50 + 0.9*18,                          // 66.2
		"Heading":     50 + 2*21.6 + 0.9*14,                 // 105.8
		"Label:":      50 + 2*21.6 + 16.8 + 8.4 + 0.9*12,    // 129.2
		"Description": 129.2 + 0.3*12 + 0.9*9,               // 140.9
		"Value":       140.9 + 0.3*9 + 0.9*11,               // 153.5
		"Next:":       153.5 + 0.3*11 + 13.2 + 0.9*12,       // 180.8
		"Other":       180.8 + 0.3*12 + 0.9*11,              // 194.3
		"Second":      194.3 + 0.3*11 + 13.2 + 6.6 + 0.9*14, // 230.0
	}
	for _, l := range page.TextLines {
		if y, ok := want[l.Text]; ok {
			delete(want, l.Text)
			if got := page.MediaBox[3] - l.Y; math.Abs(got-y) > 0.01 {
				t.Errorf("%q: baseline %.2f pt from the top, want %.2f", l.Text, got, y)
			}
		}
	}
	for text := range want {
		t.Errorf("no line %q", text)
	}
}

// TestExportPDFTextareaFrame: a textarea's frame holds its lines, blank ones included,
// 5 pt inside it, top and bottom; an empty one is 30 pt high.
func TestExportPDFTextareaFrame(t *testing.T) {
	t.Parallel()
	for _, value := range []string{"first\nsecond", "a\n\nb", ""} {
		page := exportValue(t, newFontIndex(nil), "textarea", value).Pages[0]
		if len(page.Rects) != 1 || page.Rects[0][2] != 500 {
			t.Fatalf("%q: frames %v, want one 500 wide", value, page.Rects)
		}
		r := page.Rects[0] // x, y, width, height in PDF space, y up
		top, bottom := max(r[1], r[1]+r[3]), min(r[1], r[1]+r[3])
		lines := strings.Split(value, "\n")
		for _, l := range page.TextLines {
			want := top - 5 - 0.9*11 - float64(slices.Index(lines, l.Text))*13.2
			if l.Size == 11 && math.Abs(l.Y-want) > 0.01 {
				t.Errorf("%q: %q at baseline %.2f, want %.2f: 5 pt inside the frame's top at %.2f",
					value, l.Text, l.Y, want, top)
			}
		}
		want := top - 5 - float64(len(lines))*13.2 - 5 // the last line's foot, and the padding
		if value == "" {
			want = top - 30
		}
		if math.Abs(bottom-want) > 0.01 {
			t.Errorf("%q: frame's bottom at %.2f, want %.2f", value, bottom, want)
		}
	}
}

// TestPDFFlowExactFit: lines that exactly fill the rest of a page are drawn on it,
// whatever the rounding of their heights, framed or not.
func TestPDFFlowExactFit(t *testing.T) {
	t.Parallel()
	form, _ := oneFieldForm("T", "text", "")
	l := newPDFLayout(form, testNow, newFontIndex(nil))
	l.newPage()
	line := l.paragraph("GoRegular", 11, "x", 0, false).lines[0]
	for _, framed := range []bool{false, true} {
		for n := 1; n <= 55; n++ {
			padding, least := 0.0, 0.0
			if framed {
				padding, least = pdfPadding, pdfMinBoxHeight
			}
			l.pdf.SetY(pdfBottom - max(least, float64(n)*lineHeight(11)+2*padding))
			l.print(paragraph{lines: slices.Repeat([]textLine{line}, n), size: 11, framed: framed})
			if l.pdf.PageNo() != 1 {
				t.Fatalf("%d lines of 11 pt, framed %v, exactly filling the page: page %d, want 1",
					n, framed, l.pdf.PageNo())
			}
		}
	}
}

// TestExportPDFTitle: a title broken at a soft hyphen shows the hyphen, each line
// centred. The metadata title is as typed, emoji included, less bidi controls; the
// creation and change dates are the export's.
func TestExportPDFTitle(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("Inter\u00ADnationali\u00ADsation ", 4)
	title := long + "Report \u202Eשלום\u202C 🙂 (draft)\x07"
	form, values := oneFieldForm(title, "text", "v")
	doc := readPDF(t, writePDF(t, form, values, newFontIndex(nil)))
	lines := 0
	for _, l := range doc.Pages[0].TextLines {
		if l.Size != 18 {
			continue
		}
		lines++
		if !strings.HasSuffix(l.Text, "-") && lines == 1 {
			t.Errorf("first title line %q, want it broken at a soft hyphen", l.Text)
		}
		// 300: the content box's centre, 4.72 pt right of the A4 page's.
		if centre := (l.X + l.EndX) / 2; math.Abs(centre-300) > 0.1 {
			t.Errorf("title line %q spans x %.2f to %.2f, centred on %.2f, want 300",
				l.Text, l.X, l.EndX, centre)
		}
	}
	if lines < 2 {
		t.Errorf("%d title lines, want the title broken", lines)
	}
	if want := long + "Report שלום 🙂 (draft) "; doc.Title != want {
		t.Errorf("metadata title %q, want %q", doc.Title, want)
	}
	if doc.Dates != [2]string{"D:20261125100000", "D:20261125100000"} {
		t.Errorf("CreationDate, ModDate = %q, want the export's time twice", doc.Dates)
	}
}
