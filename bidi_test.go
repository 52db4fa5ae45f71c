package main

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/text/unicode/bidi"
)

// The Unicode bidirectional algorithm's own test data, as Debian's unicode-data package
// installs it (.ci/run installs it).
const (
	bidiTestFile          = "/usr/share/unicode/BidiTest.txt"
	bidiCharacterTestFile = "/usr/share/unicode/BidiCharacterTest.txt"
)

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

// openTestData opens one of the test files, skipping the test where it is absent.
func openTestData(t *testing.T, path string) *bufio.Scanner {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		t.Skipf("%s not installed (install unicode-data): %v", path, err)
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
	sc := openTestData(t, bidiTestFile)
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
		for _, dir := range []struct {
			bit   int
			level func() int8
		}{
			{1, func() int8 { return paragraphLevel(classes, 0) }}, {2, func() int8 { return 0 }}, {4, func() int8 { return 1 }},
		} {
			if set&dir.bit == 0 {
				continue
			}
			ran++
			if err := checkLevels(resolveLevels(nil, classes, dir.level()), levels, order); err != nil {
				if failed++; failed <= 10 {
					t.Errorf("BidiTest.txt line %d %q, paragraph %d: %v", line, input, dir.bit, err)
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
	sc := openTestData(t, bidiCharacterTestFile)
	ran, failed := 0, 0
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		fields := strings.Split(text, ";")
		if strings.HasPrefix(text, "#") || len(fields) != 5 {
			continue
		}
		var rs []rune
		var classes []bidi.Class
		for _, cp := range strings.Fields(fields[0]) {
			n, err := strconv.ParseUint(cp, 16, 32)
			if err != nil {
				t.Fatalf("line %d: %v", line, err)
			}
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
