package main

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// exportDoc writes a form's PDF with the given fonts and reads it back.
func exportDoc(t *testing.T, form FormDetail, values map[int64]*string, fonts *fontIndex) pdfDoc {
	t.Helper()
	var buf bytes.Buffer
	if err := writeResponsePDF(&buf, form, values, time.Now(), fonts); err != nil {
		t.Fatal(err)
	}
	return readPDF(t, buf.Bytes())
}

// TestExportPDFBreakCharacters: in a textarea the line and paragraph separators break
// lines as a newline does; a soft hyphen inside a line that does not break there is
// invisible; decomposed letters print composed.
func TestExportPDFBreakCharacters(t *testing.T) {
	t.Parallel()
	fonts := newFontIndex(nil)
	for _, tc := range []struct {
		fieldType, value string
		want             []string
	}{
		{"textarea", "one\u2028two\u2029three", []string{"one", "two", "three"}},
		{"text", "co\u00ADoperate", []string{"cooperate"}},
		{"text", "Zoe\u0308 Cafe\u0301", []string{"Zoë Café"}},
	} {
		form, values := oneFieldForm("T", tc.fieldType, tc.value)
		got := exportDoc(t, form, values, fonts).lines()
		if want := append([]string{"T", "Value:"}, tc.want...); !slices.Equal(got, want) {
			t.Errorf("%s %q: lines %q, want %q", tc.fieldType, tc.value, got, want)
		}
	}
}

// TestExportPDFMarks: a mark is centred over its base, whatever the default place its
// font gives it; a Thai tone mark over an upper vowel, and stacked accents, are raised
// clear of the mark below; a mark at the start of a line is drawn over a no-break space
// right of the margin, not over the margin.
func TestExportPDFMarks(t *testing.T) {
	t.Parallel()
	fonts := needFallbackFonts(t)
	for _, tc := range []struct {
		name, value string
		base        rune
		marks       []rune // over base, in the order they stack
	}{
		{"Thai tone over an upper vowel", "ปั้น", 'ป', []rune{'\u0E31', '\u0E49'}},
		{"Thai tone over a consonant", "กี่", 'ก', []rune{'\u0E35', '\u0E48'}},
		{"stacked accents", "q\u0308\u0304", 'q', []rune{'\u0308', '\u0304'}},
		{"Hebrew point", "שָׁלוֹם", 'ש', []rune{'\u05B8'}},
		{"lone mark", "\u0301abc", '\u00A0', []rune{'\u0301'}},
	} {
		form, values := oneFieldForm("T", "text", tc.value)
		doc := exportDoc(t, form, values, fonts)
		gs := doc.Pages[0].Glyphs
		bi := slices.IndexFunc(gs, func(g pdfGlyph) bool { return g.text == string(tc.base) })
		if bi < 0 {
			t.Errorf("%s: no base %q drawn: %v", tc.name, tc.base, gs)
			continue
		}
		base := gs[bi]
		if base.x < 50-0.01 {
			t.Errorf("%s: base drawn at x %.2f, left of the margin", tc.name, base.x)
		}
		below := math.Inf(-1) // the top of the mark below, in points above the baseline
		for _, m := range tc.marks {
			mi := slices.IndexFunc(gs, func(g pdfGlyph) bool { return g.text == string(m) })
			if mi < 0 {
				t.Errorf("%s: no mark %U drawn", tc.name, m)
				continue
			}
			g := gs[mi]
			box := markBoxOf(t, fonts, g.font, m)
			inkMid := g.x + (box.minX+box.maxX)/2*g.size
			if mid := (base.x + base.endX) / 2; math.Abs(inkMid-mid) > 0.05 {
				t.Errorf("%s: %U centred at x %.2f, its base %q at %.2f", tc.name, m, inkMid, tc.base, mid)
			}
			bottom, top := g.y-base.y+box.bottom*g.size, g.y-base.y+box.top*g.size
			if bottom < below {
				t.Errorf("%s: %U from %.2f pt above the baseline overprints the mark below, up to %.2f", tc.name, m, bottom, below)
			}
			below = top
		}
	}
}

// markBoxOf is a mark's box in the fallback font whose BaseFont is font.
func markBoxOf(t *testing.T, fonts *fontIndex, font string, m rune) markBox {
	t.Helper()
	for _, f := range fonts.fallbacks {
		if strings.HasSuffix(font, "utf8"+strings.ToLower(f.family)) {
			if box, ok := f.marks[m]; ok {
				return box
			}
		}
	}
	t.Fatalf("%U: no mark box in font %s", m, font)
	return markBox{}
}

// TestExportPDFFallbackStyles: characters the Go fonts lack are drawn in the style of
// their place where the system has it beside the regular face: bold in the title and
// headings, bold for the semi-bold labels (no semi-bold is installed), italic in
// descriptions, regular in values; regular where no such face is installed (Thai has no
// italic, Droid Sans Fallback no bold).
func TestExportPDFFallbackStyles(t *testing.T) {
	t.Parallel()
	fonts := needFallbackFonts(t)
	form := FormDetail{Form: Form{ID: 1, Title: "Tiếng ไทย"}, Categories: []Category{{ID: 1, Name: "한국어 עברית", Fields: []Field{
		{ID: 1, Label: "标签 मराठी", Type: "text", Description: ptr("ảnh ภาษา")},
		{ID: 2, Label: "Value", Type: "text"},
	}}}}
	values := map[int64]*string{2: ptr("ảnh ภาษา")}
	doc := exportDoc(t, form, values, fonts)
	drawn := map[string][]string{} // the fonts each character is drawn in
	for _, g := range doc.Pages[0].Glyphs {
		font := g.font[strings.IndexByte(g.font, '+')+1:]
		if !slices.Contains(drawn[g.text], font) {
			drawn[g.text] = append(drawn[g.text], font)
		}
	}
	for _, tc := range []struct {
		char  string
		fonts []string
	}{
		{"ế", []string{"utf8notosansbold"}},
		{"ไ", []string{"utf8notosansthaibold"}},
		{"한", []string{"utf8nanumgothicbold"}},
		{"ע", []string{"utf8notosanshebrewbold"}},
		{"标", []string{"utf8droidsansfallbackfull"}},
		{"म", []string{"utf8notosansdevanagaribold"}},
		{"ả", []string{"utf8notosansitalic", "utf8notosansregular"}},
		{"ภ", []string{"utf8notosansthairegular"}},
	} {
		if got := drawn[tc.char]; !slices.Equal(got, tc.fonts) {
			t.Errorf("%s drawn in %q, want %q", tc.char, got, tc.fonts)
		}
	}
}
