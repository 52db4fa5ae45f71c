package main

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/bidi"
)

// The unit tests of pdf.go's text shaping and bidirectional text, beside the layout
// tests in pdf_test.go (and pdftext_test.go, pdfpages_test.go, pdfbounds_test.go, which
// read whole documents back): line breaking, Arabic joining, and the bidirectional
// algorithm against Unicode's own test data.

// FuzzPDFText: whatever goes in, what reaches the layout is valid UTF-8 without control
// characters (newlines only where kept); FuzzPDF's whole documents, under the fuzzer's
// instrumentation, come a few a second.
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
			if unicode.IsControl(r) && !(keepNewlines && r == '\n') {
				t.Fatalf("pdfText(%q, %v) = %q holds %U", s, keepNewlines, out, r)
			}
		}
	})
}

// TestBreakLines: with every glyph 1 wide, lines break after spaces, between Chinese
// and Japanese characters (not before closing punctuation nor after opening), and inside
// a word only when it does not fit on a line alone; a line that fits exactly is not
// broken, and spaces at a break are dropped; a soft hyphen prints only at a break; Thai
// breaks between characters but not after a leading vowel; a mark stays with its base.
func TestBreakLines(t *testing.T) {
	t.Parallel()
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
		{"a bc de", 4, []string{"a bc", "de"}},        // the space after a full line is no overflow
		{"\u0E48ก", 5, []string{"\u0E48ก"}},           // a tone mark first (no base: never from glyphs)
		{"ab  \u0301c", 3, []string{"ab", "\u0301c"}}, // the break between two spaces: neither is kept
		{"ab ＡＡＡ", 4, []string{"ab Ａ", "ＡＡ"}},         // full-width forms break like ideographs
		{"ab ！！！", 4, []string{"ab", "！！！"}},          // but not before closing punctuation
		{"東京です。", 4, []string{"東京で", "す。"}},           // a line never starts with 。
		{"東京「大阪」", 3, []string{"東京", "「大", "阪」"}},
		{"hy\u00ADphen", 4, []string{"hy-", "phen"}}, // a soft hyphen prints where the line breaks
		{"hy\u00ADphen", 6, []string{"hyphen"}},      // and nowhere else
		{"end\u00AD", 6, []string{"end"}},            // not at the end of the text
		{"ab hy\u00ADphen", 4, []string{"ab", "hy-", "phen"}},
		{"ab cd\u00ADef", 5, []string{"ab", "cdef"}},                                // only where its hyphen fits
		{"abc\u0301d", 3, []string{"abc\u0301", "d"}},                               // a mark stays with its base
		{"a\u093E\u093E\u093E\u093E", 3, []string{"a\u093E\u093E", "\u093E\u093E"}}, // a spacing mark (Mc) may be parted, when a word is too long
		{"กินแมว", 4, []string{"กิน", "แมว"}},                                       // Thai: never a break after a leading vowel (แ)
		{"กา ปั้น", 5, []string{"กา", "ปั้น"}},                                      // nor before the final consonant after ั (and a tone mark)
	} {
		if got := lines(tc.text, tc.width); !slices.Equal(got, tc.want) {
			t.Errorf("breakLines(%q, %v) = %q, want %q", tc.text, tc.width, got, tc.want)
		}
	}
}

// TestBreaksAnywhere: a line may break between any two characters of the Han, Hiragana
// and Katakana scripts, and of the blocks of Thai and of Chinese and Japanese punctuation
// as Unicode's Blocks.txt bounds them, but not of the blocks around them.
func TestBreaksAnywhere(t *testing.T) {
	t.Parallel()
	for _, script := range []*unicode.RangeTable{unicode.Han, unicode.Hiragana, unicode.Katakana} {
		for _, rg := range script.R16 {
			for r := rune(rg.Lo); r <= rune(rg.Hi); r += rune(rg.Stride) {
				if !breaksAnywhere(r) {
					t.Errorf("%U %q: no break beside it", r, r)
				}
			}
		}
	}
	blocks := map[string]bool{"Thai": true, "CJK Symbols and Punctuation": true,
		"Halfwidth and Fullwidth Forms": true}
	seen := 0
	sc := openTestData(t, "/usr/share/unicode/Blocks.txt")
	for sc.Scan() {
		var lo, hi rune
		if _, err := fmt.Sscanf(sc.Text(), "%X..%X;", &lo, &hi); err != nil {
			continue // a comment
		}
		_, name, _ := strings.Cut(sc.Text(), "; ")
		for r := lo; r <= hi; r++ {
			switch want := blocks[name]; {
			case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana):
			case want && !unicode.IsGraphic(r): // not assigned: either
			case breaksAnywhere(r) != want:
				t.Errorf("%U in %s: breaks anywhere %v, want %v", r, name, !want, want)
			}
		}
		seen += int(hi - lo + 1)
	}
	if seen < 0x10000 {
		t.Fatalf("Blocks.txt: %d characters in blocks, not every block", seen)
	}
}

// TestShapeArabic: each letter takes the form its neighbours call for; hamza joins to
// nothing, marks are skipped over, lam-alef is one ligature, final after a joining letter.
func TestShapeArabic(t *testing.T) {
	t.Parallel()
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
		{"پی", []rune{0xFB58, 0xFBFD}},           // Persian: peh initial, Farsi yeh final (Forms-A)
		{"ڤا", []rune{0xFB6C, 0xFE8E}},           // veh: Forms-A, from Unicode's data
		{"بـ", []rune{0xFE91, 0x0640}},           // tatweel joins: beh initial before it
		{"ـب", []rune{0x0640, 0xFE90}},           // and final after it
	} {
		if got, _ := shapeArabic([]rune(tc.text)); !slices.Equal(got, tc.want) {
			t.Errorf("shapeArabic(%q) = %U, want %U", tc.text, got, tc.want)
		}
	}
}

// TestArabicFormsAsUnicodeData: the presentation forms shapeArabic gives each letter, and
// whose glyphs its joined variants take (arabicForms, lamAlef), are those UnicodeData.txt
// decomposes to it: isolated, then final, then initial and medial, as many as it has.
func TestArabicFormsAsUnicodeData(t *testing.T) {
	t.Parallel()
	forms := map[string][]rune{} // by decomposition: "<final> 0628" is U+FE90
	sc := openTestData(t, "/usr/share/unicode/UnicodeData.txt")
	for sc.Scan() {
		f := strings.Split(sc.Text(), ";")
		code, err := strconv.ParseUint(f[0], 16, 32)
		if err == nil && strings.HasPrefix(f[5], "<") {
			forms[f[5]] = append(forms[f[5]], rune(code))
		}
	}
	kinds := []string{"isolated", "final", "initial", "medial"}
	isForm := func(kind int, letters string, r rune) bool {
		return kind < len(kinds) && slices.Contains(forms["<"+kinds[kind]+"> "+letters], r)
	}
	for letter := range arabicForms[0] {
		hex, n := fmt.Sprintf("%04X", letter), 0
		for n < 4 && arabicForms[n][letter] != 0 {
			n++
		}
		for kind := range 4 {
			got, ok := arabicForms[kind][letter]
			want := forms["<"+kinds[kind]+"> "+hex]
			if ok != (kind < n) || ok != (want != nil) || ok && !slices.Contains(want, got) {
				t.Errorf("%U: %s form %U (%v), UnicodeData.txt has %U",
					letter, kinds[kind], got, ok, want)
			}
		}
		if n == 3 {
			t.Errorf("%U: a medial form without an initial one, or the reverse", letter)
		}
	}
	for alef, lig := range lamAlef {
		pair := fmt.Sprintf("0644 %04X", alef)
		if !isForm(0, pair, lig) || !isForm(1, pair, lig+1) {
			t.Errorf("lam with %U: ligature %U, not its isolated form before its final", alef, lig)
		}
	}
	// U+0677 decomposes further (to U+06C7 U+0674): NFKC cannot tell its one form, isolated.
	for r := rune(0x0621); r <= 0x06FF; r++ {
		_, ok := arabicForms[0][r]
		if !ok && r != 0x0677 && forms[fmt.Sprintf("<isolated> %04X", r)] != nil {
			t.Errorf("%U has presentation forms but is not joined", r)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// bidiClassNames are the class names of the test data.
var bidiClassNames = map[string]bidi.Class{
	"L": bidi.L, "R": bidi.R, "AL": bidi.AL, "EN": bidi.EN, "ES": bidi.ES, "ET": bidi.ET,
	"AN": bidi.AN, "CS": bidi.CS, "NSM": bidi.NSM, "BN": bidi.BN, "B": bidi.B, "S": bidi.S,
	"WS": bidi.WS, "ON": bidi.ON, "LRE": bidi.LRE, "LRO": bidi.LRO, "RLE": bidi.RLE,
	"RLO": bidi.RLO, "PDF": bidi.PDF, "LRI": bidi.LRI, "RLI": bidi.RLI, "FSI": bidi.FSI, "PDI": bidi.PDI,
}

// explicit reports a class of the explicit embeddings, overrides and isolates, which the
// service drops and the tests leave out.
func explicit(c bidi.Class) bool {
	switch c {
	case bidi.LRE, bidi.LRO, bidi.RLE, bidi.RLO, bidi.PDF, bidi.LRI, bidi.RLI, bidi.FSI, bidi.PDI:
		return true
	}
	return false
}

// openTestData opens one of Unicode's data files as Debian's unicode-data package installs
// them (.ci/run installs it), skipping the test where it is absent.
func openTestData(t *testing.T, path string) *bufio.Scanner {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		notInstalled(t, "%s not installed (install unicode-data): %v", path, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return bufio.NewScanner(f)
}

// parseLevels reads a levels field: a level per character, -1 for x (removed by X9).
func parseLevels(field string) []int8 {
	var levels []int8
	for _, f := range strings.Fields(field) {
		n, err := strconv.Atoi(f)
		if err != nil {
			n = -1
		}
		levels = append(levels, int8(n))
	}
	return levels
}

// checkLevels compares resolved levels and visual order with the expected ones: levels
// only where they are not x, and the order of the characters not x.
func checkLevels(got, want []int8, order string) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d levels, want %d", len(got), len(want))
	}
	var kept []int
	var keptLevels []int8
	for i, w := range want {
		if w < 0 {
			continue
		}
		if got[i] != w {
			return fmt.Errorf("levels %v, want %v", got, want)
		}
		kept, keptLevels = append(kept, i), append(keptLevels, w)
	}
	var gotOrder []string
	for _, k := range visualOrder(keptLevels) {
		gotOrder = append(gotOrder, strconv.Itoa(kept[k]))
	}
	if g, w := strings.Join(gotOrder, " "), strings.Join(strings.Fields(order), " "); g != w {
		return fmt.Errorf("order %s, want %s", g, w)
	}
	return nil
}

// TestBidiConformance runs BidiTest.txt: classes in each paragraph direction its bitset
// names (1 auto, 2 left to right, 4 right to left), every line without explicit
// embeddings, overrides or isolates.
func TestBidiConformance(t *testing.T) {
	t.Parallel()
	sc := openTestData(t, "/usr/share/unicode/BidiTest.txt")
	var levels []int8
	var order string
	ran, failed := 0, 0
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if v, ok := strings.CutPrefix(text, "@Levels:"); ok {
			levels = parseLevels(v)
			continue
		}
		if v, ok := strings.CutPrefix(text, "@Reorder:"); ok {
			order = v
			continue
		}
		input, bits, ok := strings.Cut(text, ";")
		if !ok || strings.HasPrefix(text, "#") {
			continue
		}
		var classes []bidi.Class
		for _, name := range strings.Fields(input) {
			classes = append(classes, bidiClassNames[name])
		}
		if slices.ContainsFunc(classes, explicit) {
			continue
		}
		set, _ := strconv.Atoi(strings.TrimSpace(bits))
		for bit, level := range map[int]int8{1: paragraphLevel(classes, 0), 2: 0, 4: 1} {
			if set&bit == 0 {
				continue
			}
			ran++
			got := resolveLevels(make([]rune, len(classes)), classes, level)
			if err := checkLevels(got, levels, order); err != nil {
				if failed++; failed <= 10 {
					t.Errorf("BidiTest.txt line %d %q, paragraph %d: %v", line, input, bit, err)
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if failed > 0 || ran < 100000 {
		t.Errorf("%d of %d cases failed (want 0 of more than 100,000)", failed, ran)
	}
}

// TestBidiCharacterConformance runs BidiCharacterTest.txt: characters (bracket pairs
// among them) in a given or found paragraph direction, every line without explicit
// embeddings, overrides or isolates.
func TestBidiCharacterConformance(t *testing.T) {
	t.Parallel()
	sc := openTestData(t, "/usr/share/unicode/BidiCharacterTest.txt")
	ran, failed := 0, 0
	for line := 1; sc.Scan(); line++ {
		// Code points; the paragraph direction asked (0, 1, or 2 for the first strong
		// character's); the paragraph level; the levels; the visual order.
		fields := strings.Split(sc.Text(), ";")
		if strings.HasPrefix(sc.Text(), "#") || len(fields) != 5 {
			continue
		}
		var rs []rune
		var classes []bidi.Class
		for _, cp := range strings.Fields(fields[0]) {
			n, _ := strconv.ParseUint(cp, 16, 32)
			p, _ := bidi.LookupRune(rune(n))
			rs, classes = append(rs, rune(n)), append(classes, p.Class())
		}
		if slices.ContainsFunc(classes, explicit) {
			continue
		}
		ran++
		level := int8(fields[1][0] - '0')
		if level == 2 {
			level = paragraphLevel(classes, 0)
		}
		err := checkLevels(resolveLevels(rs, classes, level), parseLevels(fields[3]), fields[4])
		if want := int8(fields[2][0] - '0'); level != want {
			err = fmt.Errorf("paragraph level %d, want %d", level, want)
		}
		if err != nil {
			if failed++; failed <= 10 {
				t.Errorf("BidiCharacterTest.txt line %d %q: %v", line, string(rs), err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if failed > 0 || ran < 50000 {
		t.Errorf("%d of %d cases failed (want 0 of more than 50,000)", failed, ran)
	}
}

// TestBracketPairsBounded: a run of unmatched closing brackets (hostile text) costs no
// allocation each (not parallel: AllocsPerRun). BD16's pairing itself, canonical
// equivalents included, is BidiCharacterTest.txt's.
func TestBracketPairsBounded(t *testing.T) {
	rs := []rune(strings.Repeat("[", 63) + strings.Repeat(")", 1000))
	if allocs := testing.AllocsPerRun(3, func() { bracketPairsOf(rs) }); allocs > 50 {
		t.Errorf("1,000 unmatched closing brackets: %.0f allocations, want a few", allocs)
	}
}
