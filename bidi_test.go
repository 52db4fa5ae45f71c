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

	"golang.org/x/text/unicode/bidi"
)

// The unit tests of pdf.go's line breaking, Arabic joining and bidirectional text, the
// last two against Unicode's own data.

// TestBreakLines, every glyph 1 wide: after spaces (dropped at a break), between Chinese
// and Japanese characters (not before closing punctuation nor after opening), inside a
// word only when it alone does not fit; a soft hyphen prints only at a break.
func TestBreakLines(t *testing.T) {
	t.Parallel()
	lines := func(s string, width float64) (out []string) {
		var gs []glyph
		for _, r := range s {
			gs = append(gs, glyph{r: r, w: 1})
		}
		for _, line := range breakLines(gs, width) {
			var rs []rune
			for _, g := range line {
				rs = append(rs, g.r)
			}
			out = append(out, string(rs))
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
		{"ปากกา", 4, []string{"ปาก", "กา"}},                                         // Thai (pen): before a consonant
		{"กินแมว", 4, []string{"กิน", "แมว"}},                                       // Thai: never a break after a leading vowel (แ)
		{"กา ปั้น", 5, []string{"กา", "ปั้น"}},                                      // nor before the final consonant after ั (and a tone mark)
	} {
		if got := lines(tc.text, tc.width); !slices.Equal(got, tc.want) {
			t.Errorf("breakLines(%q, %v) = %q, want %q", tc.text, tc.width, got, tc.want)
		}
	}
}

// TestBreaksAnywhere: a line may break between any two characters of Han, Hiragana and
// Katakana, and of the Thai and CJK punctuation blocks as Blocks.txt bounds them, only.
func TestBreaksAnywhere(t *testing.T) {
	t.Parallel()
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
			want := blocks[name] || unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana)
			if breaksAnywhere(r) != want && (!want || unicode.IsGraphic(r)) { // unassigned: either
				t.Errorf("%U in %s: breaks anywhere %v, want %v", r, name, !want, want)
			}
		}
		seen += int(hi - lo + 1)
	}
	if seen < 0x10000 {
		t.Fatalf("Blocks.txt: %d characters in blocks, not every block", seen)
	}
}

// TestShapeArabic: each letter takes the form its neighbours call for.
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

// TestArabicFormsAsUnicodeData: the presentation forms of each letter (arabicForms,
// lamAlef) are those UnicodeData.txt decomposes to it, as many as it has.
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
		pair := fmt.Sprintf("> 0644 %04X", alef)
		isolated, final := forms["<isolated"+pair], forms["<final"+pair]
		if !slices.Contains(isolated, lig) || !slices.Contains(final, lig+1) {
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
}

var bidiClassNames = map[string]bidi.Class{
	"L": bidi.L, "R": bidi.R, "AL": bidi.AL, "EN": bidi.EN, "ES": bidi.ES, "ET": bidi.ET,
	"AN": bidi.AN, "CS": bidi.CS, "NSM": bidi.NSM, "BN": bidi.BN, "B": bidi.B, "S": bidi.S,
	"WS": bidi.WS, "ON": bidi.ON, "LRE": bidi.LRE, "LRO": bidi.LRO, "RLE": bidi.RLE,
	"RLO": bidi.RLO, "PDF": bidi.PDF, "LRI": bidi.LRI, "RLI": bidi.RLI, "FSI": bidi.FSI, "PDI": bidi.PDI,
}

// explicit reports the classes of embeddings, overrides and isolates (x/text numbers them
// LRO to PDI), which the service drops and the tests leave out.
func explicit(c bidi.Class) bool { return c >= bidi.LRO && c <= bidi.PDI }

// openTestData opens one of Unicode's data files from Debian's unicode-data package; a
// read error fails the test.
func openTestData(t *testing.T, path string) *bufio.Scanner {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		notInstalled(t, "%s not installed (install unicode-data): %v", path, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	t.Cleanup(func() {
		if err := sc.Err(); err != nil {
			t.Error(err)
		}
		f.Close()
	})
	return sc
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

// checkLevels compares levels and visual order with the test data's, leaving out x.
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

// conformance runs each line of one of Unicode's bidi test files through cases, which
// gives the line's cases' errors (nil where one passes); more than least must pass.
func conformance(t *testing.T, file string, least int, cases func(text string) []error) {
	t.Helper()
	sc := openTestData(t, "/usr/share/unicode/"+file)
	ran, failed := 0, 0
	for line := 1; sc.Scan(); line++ {
		for _, err := range cases(sc.Text()) {
			if ran++; err != nil {
				if failed++; failed <= 10 {
					t.Errorf("%s line %d %v", file, line, err)
				}
			}
		}
	}
	if failed > 0 || ran < least {
		t.Errorf("%d of %d cases failed (want 0 of more than %d)", failed, ran, least)
	}
}

// TestBidiConformance runs BidiTest.txt's lines without explicit classes, in each
// paragraph direction its bitset names (1 auto, 2 left to right, 4 right to left).
func TestBidiConformance(t *testing.T) {
	t.Parallel()
	var levels []int8
	var order string
	conformance(t, "BidiTest.txt", 100000, func(text string) []error {
		if v, ok := strings.CutPrefix(text, "@Levels:"); ok {
			levels = parseLevels(v)
		} else if v, ok := strings.CutPrefix(text, "@Reorder:"); ok {
			order = v
		}
		input, bits, ok := strings.Cut(text, ";")
		if !ok || strings.HasPrefix(text, "#") {
			return nil
		}
		var classes []bidi.Class
		for _, name := range strings.Fields(input) {
			classes = append(classes, bidiClassNames[name])
		}
		if slices.ContainsFunc(classes, explicit) {
			return nil
		}
		set, _ := strconv.Atoi(strings.TrimSpace(bits))
		var errs []error
		for bit, level := range map[int]int8{1: paragraphLevel(classes, 0), 2: 0, 4: 1} {
			if set&bit != 0 {
				got := resolveLevels(make([]rune, len(classes)), classes, level)
				err := checkLevels(got, levels, order)
				if err != nil {
					err = fmt.Errorf("%q, paragraph %d: %w", input, bit, err)
				}
				errs = append(errs, err)
			}
		}
		return errs
	})
}

// TestBidiCharacterConformance runs BidiCharacterTest.txt's lines without explicit
// classes (bracket pairs among them).
func TestBidiCharacterConformance(t *testing.T) {
	t.Parallel()
	conformance(t, "BidiCharacterTest.txt", 50000, func(text string) []error {
		// Code points; direction asked (2: auto); paragraph level; levels; order.
		fields := strings.Split(text, ";")
		if strings.HasPrefix(text, "#") || len(fields) != 5 {
			return nil
		}
		var rs []rune
		var classes []bidi.Class
		for _, cp := range strings.Fields(fields[0]) {
			n, _ := strconv.ParseUint(cp, 16, 32)
			p, _ := bidi.LookupRune(rune(n))
			rs, classes = append(rs, rune(n)), append(classes, p.Class())
		}
		if slices.ContainsFunc(classes, explicit) {
			return nil
		}
		level := int8(fields[1][0] - '0')
		if level == 2 {
			level = paragraphLevel(classes, 0)
		}
		err := checkLevels(resolveLevels(rs, classes, level), parseLevels(fields[3]), fields[4])
		if want := int8(fields[2][0] - '0'); level != want {
			err = fmt.Errorf("paragraph level %d, want %d", level, want)
		}
		if err != nil {
			err = fmt.Errorf("%q: %w", string(rs), err)
		}
		return []error{err}
	})
}

// TestBracketPairsBounded: unmatched closing brackets (hostile text) cost no allocation
// each (not parallel: AllocsPerRun).
func TestBracketPairsBounded(t *testing.T) {
	rs := []rune(strings.Repeat("[", 63) + strings.Repeat(")", 1000))
	if allocs := testing.AllocsPerRun(3, func() { bracketPairsOf(rs) }); allocs > 50 {
		t.Errorf("1,000 unmatched closing brackets: %.0f allocations, want a few", allocs)
	}
}
