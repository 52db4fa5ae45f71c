package main

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/image/font"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
)

// keepForm is a form whose fields fall at many heights of its pages: 40 categories H0,
// H1 ... of one to four fields labelled L1, L2 ... (every other one with a description
// D<n>), of every kind of value in turn (a text V<n>, a textarea whose first line is
// V<n>, a date, an empty textarea, a boolean), each category after a textarea of
// filler lines, fewer or more by the category and seed.
func keepForm(seed int) (FormDetail, map[int64]*string) {
	form := FormDetail{Form: Form{ID: 1, Title: "Keep"}}
	values := map[int64]*string{}
	n := int64(0)
	for c := range 40 {
		fill := strings.Repeat("filler\n", (c*7+seed)%19)
		values[-int64(c)-1] = &fill
		form.Categories = append(form.Categories, Category{Fields: []Field{{ID: -int64(c) - 1, Label: "Filler", Type: "textarea"}}})
		cat := Category{ID: int64(c + 1), Name: fmt.Sprintf("H%d", c)}
		for range c%4 + 1 {
			n++
			kind := (n - 1) % 5
			fd := Field{ID: n, Label: fmt.Sprintf("L%d", n), Type: []string{"text", "textarea", "date", "textarea", "boolean"}[kind]}
			if n%2 == 0 {
				fd.Description = ptr(fmt.Sprintf("D%d", n))
			}
			v := fmt.Sprintf("V%d", n)
			switch kind {
			case 1:
				v += "\nsecond line\nthird line"
			case 3:
				v = ""
			case 4:
				v = "true"
			}
			values[n] = &v
			cat.Fields = append(cat.Fields, fd)
		}
		form.Categories = append(form.Categories, cat)
	}
	return form, values
}

// TestExportPDFKeepWithNext: wherever a field falls on a page, its label is on the page of
// its description and of its value's first line (the top of its frame for an empty
// textarea), and a category heading is on the page of its first field's label. No line
// is set in the margins (50 pt; a descender of an 11 pt line reaches about 3 pt below its
// baseline).
func TestExportPDFKeepWithNext(t *testing.T) {
	t.Parallel()
	fonts := newFontIndex(nil)
	// The filler before each category moves its fields to another height of the page;
	// the seed changes the fillers.
	for seed := range 4 {
		form, values := keepForm(seed)
		doc := exportDoc(t, form, values, fonts)
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
			var want []string
			var n int
			if _, err := fmt.Sscanf(l.Text, "L%d:", &n); err == nil {
				want = valueLines(n)
			} else if strings.HasPrefix(l.Text, "H") {
				want = []string{"L"}
			}
			for j, w := range want {
				if w == "" {
					if !frameUnder(doc.Pages[l.page-1], l.Y) {
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

// valueLines is what follows label L<n> on its page: its description D<n> when n is
// even, then its value: V<n>, Yes, or "" for an empty textarea's frame.
func valueLines(n int) []string {
	var want []string
	if n%2 == 0 {
		want = append(want, fmt.Sprintf("D%d", n))
	}
	switch (n - 1) % 5 {
	case 3:
		return append(want, "")
	case 4:
		return append(want, "Yes")
	}
	return append(want, fmt.Sprintf("V%d", n))
}

// frameUnder reports a frame on the page whose top edge is just under a label's baseline
// y (PDF space, y up): within a label's and a description's line.
func frameUnder(p pdfPage, y float64) bool {
	for _, r := range p.Rects {
		if top := r[1]; top < y && top > y-30 {
			return true
		}
	}
	return false
}

// TestExportPDFRuleBelowDescenders: the rule under a value passes below the deepest
// point of every character on the value's line (Hebrew final nun, Arabic meem and jeem,
// a Devanagari vowel sign below), its 1 pt thickness included; under Latin it stays
// where it was, 3.3 pt below the baseline.
func TestExportPDFRuleBelowDescenders(t *testing.T) {
	t.Parallel()
	fonts := needFallbackFonts(t)
	// ج alone (an answer: option c), first: its font's only character, not measured
	// for another value before, as the index is shared.
	for _, value := range []string{"ج", "gjpqy", "אמן", "محمد", "कुमार", "ปฎิฏุ"} {
		form, values := oneFieldForm("T", "text", value)
		doc := exportDoc(t, form, values, fonts)
		page := doc.Pages[0]
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
			t.Errorf("%s: the rule's top edge at y %.2f, the lowest descender at %.2f: not below it", value, ruleTop, lowest)
		}
		if value == "gjpqy" && math.Abs(baseline-page.Segments[0][1]-3.3) > 0.05 {
			t.Errorf("%s: the rule %.2f pt below the baseline, want 3.3", value, baseline-page.Segments[0][1])
		}
	}
}

// glyphDepth is how far a drawn character reaches below the baseline, in em, read from
// its font file; for an Arabic letter, drawn in one of its forms from a variant of the
// font (utf8<font>init ...), the deepest of its forms.
func glyphDepth(t *testing.T, fonts *fontIndex, g pdfGlyph) float64 {
	t.Helper()
	var sf *sfnt.Font
	for _, f := range fonts.byName {
		name, font := strings.ToLower(f.family), strings.TrimPrefix(g.font, "utf8")
		if font == name || font == name+"unicode" || font == name+"init" ||
			font == name+"medi" || font == name+"fina" {
			ttf, err := f.file()
			if err != nil {
				t.Fatal(err)
			}
			if sf, err = sfnt.Parse(ttf); err != nil {
				t.Fatal(err)
			}
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

// TestExportPDFValueDirection: a value without letters (a number, a date, Yes) takes
// its label's direction: right-aligned under a Hebrew label, in a frame too; at the
// margin under a Latin one, and under one without letters (a question's number), which
// is left to right.
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
		lines := exportDoc(t, form, values, fonts).textLines()
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

// TestExportPDFContinuedFrame: a textarea continued on a new page is in a frame there too
// and starts with its next line of text, not with the blank lines at the break; blank
// lines inside a page stay.
func TestExportPDFContinuedFrame(t *testing.T) {
	t.Parallel()
	// 51 lines fill the first page's frame (see TestExportPDFTooLong); then blank lines.
	value := strings.Repeat("x\n", 50) + "last on page one\n\n\n\nfirst on page two\n\nthird"
	form, values := oneFieldForm("Long", "textarea", value)
	doc := exportDoc(t, form, values, newFontIndex(nil))
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
	// The frame's top is 50 pt from the top of the page, its first line 5 pt inside it.
	top := 841.89 - 50
	if first := page.TextLines[0]; first.Y < top-5-13.2 {
		t.Errorf("page 2's first line at y %.2f, below the frame's first line (%.2f to %.2f)", first.Y, top-5-13.2, top-5)
	}
	if third := page.TextLines[1]; third.Text != "third" || page.TextLines[0].Y-third.Y < 2*13.2-0.01 {
		t.Errorf("the blank line inside page 2 is lost: %v", page.TextLines)
	}
}

// TestExportPDFLinesFillTheWidth: prose fills each line from the margin to the right
// edge less a word at most, 500 pt in a text value, 490 pt inside a textarea's frame.
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
		form, values := oneFieldForm("T", tc.fieldType, prose)
		var lines []pdfTextLine
		for _, l := range exportDoc(t, form, values, newFontIndex(nil)).textLines() {
			if l.Size == 11 {
				lines = append(lines, l)
			}
		}
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

// TestExportPDFLineSpacing: the baselines down a page, in points from its top edge: a
// line of size s is 1.2 s high with its baseline 0.9 s down; the title is followed by a
// blank line of its size, a heading by half a line, a value's rule by a line of 11 pt and a
// category by half a line of 11 pt. These are the original's moveDown steps, in this
// layout's lines (1.2 times the size; pdfkit's are the font's own line height, so the
// points differ).
func TestExportPDFLineSpacing(t *testing.T) {
	t.Parallel()
	fields := []Field{
		{ID: 1, Label: "Label", Type: "text", Description: ptr("Description")},
		{ID: 2, Label: "Next", Type: "text"},
	}
	form := FormDetail{Form: Form{ID: 1, Title: "Title"}, Categories: []Category{{ID: 1, Name: "Heading", Fields: fields},
		{ID: 2, Name: "Second", Fields: []Field{{ID: 3, Label: "Last", Type: "text"}}}}}
	values := map[int64]*string{1: ptr("Value"), 2: ptr("Other")}
	page := exportDoc(t, form, values, newFontIndex(nil)).Pages[0]
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

// TestExportPDFTextareaFrame: a textarea's frame, 500 wide, holds its lines, blank ones
// included, 5 pt inside it: the first line's top 5 pt below the frame's top (its baseline
// 0.9 × 11 pt further), the frame's bottom 5 pt below the last line's foot. An empty
// textarea's frame is 30 pt high.
func TestExportPDFTextareaFrame(t *testing.T) {
	t.Parallel()
	for _, value := range []string{"first\nsecond", "a\n\nb", ""} {
		form, values := oneFieldForm("T", "textarea", value)
		page := exportDoc(t, form, values, newFontIndex(nil)).Pages[0]
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

// TestPDFFlowExactFit: as many lines as exactly fill the rest of a page are drawn on it,
// whatever the rounding of their heights, in a frame (5 pt of padding, 30 pt high at
// least) or not; one line too.
func TestPDFFlowExactFit(t *testing.T) {
	t.Parallel()
	form, _ := oneFieldForm("T", "text", "")
	l := newPDFLayout(form, time.Now(), newFontIndex(nil))
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

// TestExportPDFTitle: a title broken at a soft hyphen ends its line with a hyphen, and
// each of its lines, hyphen included, is centred. The document's title is the form's as
// typed, emoji included (as UTF-16 surrogate pairs), without bidi controls or names; it
// says it was made and last changed at the export, by the service's clock.
func TestExportPDFTitle(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("Inter\u00ADnationali\u00ADsation ", 4)
	title := long + "Report \u202Eשלום\u202C 🙂 (draft)\x07"
	form, values := oneFieldForm(title, "text", "v")
	var buf bytes.Buffer
	at := time.Date(2026, 11, 25, 10, 30, 0, 0, time.UTC)
	if err := writeResponsePDF(&buf, form, values, at, newFontIndex(nil)); err != nil {
		t.Fatal(err)
	}
	doc := readPDF(t, buf.Bytes())
	lines := 0
	for _, l := range doc.Pages[0].TextLines {
		if l.Size != 18 {
			continue
		}
		lines++
		if !strings.HasSuffix(l.Text, "-") && lines == 1 {
			t.Errorf("first title line %q, want it broken at a soft hyphen", l.Text)
		}
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
	if doc.Dates != [2]string{"D:20261125103000", "D:20261125103000"} {
		t.Errorf("CreationDate, ModDate = %q, want the export's time twice", doc.Dates)
	}
}
