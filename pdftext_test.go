package main

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/text/unicode/norm"
)

// exportValue is the document of a form T of one field, of fieldType, holding value.
func exportValue(t *testing.T, fonts *fontIndex, fieldType, value string) pdfDoc {
	t.Helper()
	form, values := oneFieldForm("T", fieldType, value)
	return readPDF(t, writePDF(t, form, values, fonts))
}

// writePDF is the PDF of a response to form, exported at testNow.
func writePDF(t *testing.T, form FormDetail, values map[int64]*string, fonts *fontIndex) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := writeResponsePDF(&buf, form, values, testNow, fonts); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestExportPDFBreakCharacters: in a textarea CR, LS and PS break lines as LF does;
// elsewhere they, and a tab, are a space. An unbroken soft hyphen, joiners, byte-order
// marks and bidi marks are invisible (not names); decomposed letters print composed.
func TestExportPDFBreakCharacters(t *testing.T) {
	t.Parallel()
	fonts := newFontIndex(nil)
	for _, tc := range []struct {
		fieldType, value string
		want             []string
	}{
		{"textarea", "one\u2028two\u2029three\rfour\r\nfive",
			[]string{"one", "two", "three", "four", "five"}},
		{"text", "one\rtwo\u2028three\u2029four\tfive", []string{"one two three four five"}},
		{"text", "co\u00ADoperate", []string{"cooperate"}},
		{"text", "Zoe\u0308 Cafe\u0301", []string{"Zoë Café"}},
		{"text", "a\u200Db\uFEFFc\u200Ed", []string{"abcd"}},
		{"text", "   ", nil},
	} {
		got := exportValue(t, fonts, tc.fieldType, tc.value).lines()
		if want := append([]string{"T", "Value:"}, tc.want...); !slices.Equal(got, want) {
			t.Errorf("%s %q: lines %q, want %q", tc.fieldType, tc.value, got, want)
		}
	}
}

// TestExportPDFMarks: a mark's ink is centred over its base (a keycap's frame exactly),
// whatever place its font gives it; a Thai tone over an upper vowel, and stacked accents,
// clear the mark below; a mark starting a line sits on a no-break space, not the margin.
func TestExportPDFMarks(t *testing.T) {
	t.Parallel()
	fonts := needFallbackFonts(t)
	for _, tc := range []struct {
		name, value string
		base        rune
		marks       []rune // over base, in the order they stack
		centred     bool   // a frame, which encloses rather than stacks
	}{
		{"Thai tone over an upper vowel", "ปั้น", 'ป', []rune{'\u0E31', '\u0E49'}, false},
		{"Thai tone over a consonant", "กี่", 'ก', []rune{'\u0E35', '\u0E48'}, false},
		{"stacked accents", "q\u0308\u0304", 'q', []rune{'\u0308', '\u0304'}, false},
		{"Hebrew point", "שָׁלוֹם", 'ש', []rune{'\u05B8'}, false},
		{"lone mark", "\u0301abc", '\u00A0', []rune{'\u0301'}, false},
		{"keycap", "1\uFE0F\u20E3", '1', []rune{'\u20E3'}, true},
		// ☀'s font has no keycap.
		{"keycap after ☀", "\u2600 1\uFE0F\u20E3", '1', []rune{'\u20E3'}, true},
		{"keycap and a circle", "1\u20E3\u20DD", '1', []rune{'\u20E3', '\u20DD'}, true},
		{"keycap and an accent", "1\u20E3\u0301", '1', []rune{'\u20E3', '\u0301'}, true},
	} {
		gs := exportValue(t, fonts, "text", tc.value).Pages[0].Glyphs
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
			inkLeft, inkMid := g.x+box.minX*g.size, g.x+(box.minX+box.maxX)/2*g.size
			narrow := (box.maxX-box.minX)*g.size <= base.endX-base.x
			if inkMid <= base.x || inkMid >= base.endX || narrow && inkLeft < base.x-0.01 {
				t.Errorf("%s: %U's ink from x %.2f, middle %.2f, not over %q, %.2f to %.2f",
					tc.name, m, inkLeft, inkMid, tc.base, base.x, base.endX)
			}
			if baseMid := (base.x + base.endX) / 2; tc.centred && math.Abs(inkMid-baseMid) > 0.1 {
				t.Errorf("%s: %U's ink centred at x %.2f, its base's middle at %.2f", tc.name, m, inkMid, baseMid)
			}
			bottom, top := g.y-base.y+box.bottom*g.size, g.y-base.y+box.top*g.size
			if !tc.centred && bottom < below {
				t.Errorf("%s: %U from %.2f pt overprints the mark below, up to %.2f",
					tc.name, m, bottom, below)
			}
			below = top
		}
	}
}

// TestExportPDFMarkLimits: keycaps side by side keep a space between their frames; only
// an enclosing mark widens its base (not IPA's tie bar in "t͡s", 0.77 em over a t of 0.3);
// 500 marks on one base are raised only so far, and the grapheme joiners NFC puts after
// every 30 are not drawn (a font that has one draws a dashed box).
func TestExportPDFMarkLimits(t *testing.T) {
	t.Parallel()
	fonts := needFallbackFonts(t)
	var frames [][2]float64 // each keycap frame's ink
	for _, g := range exportValue(t, fonts, "text", "1\uFE0F\u20E3 2\uFE0F\u20E3").Pages[0].Glyphs {
		if g.text == "\u20E3" {
			box := markBoxOf(t, fonts, g.font, '\u20E3')
			frames = append(frames, [2]float64{g.x + box.minX*g.size, g.x + box.maxX*g.size})
		}
	}
	if len(frames) != 2 || frames[1][0]-frames[0][1] < 0.2*11 {
		t.Errorf("keycap frames' ink %v, want two at least a space (%.1f pt) apart", frames, 0.2*11)
	}
	at := map[string]pdfGlyph{}
	for _, g := range exportValue(t, fonts, "text", "t\u0361s").Pages[0].Glyphs {
		at[g.text] = g
	}
	if gap := at["s"].x - at["t"].endX; at["s"].size == 0 || math.Abs(gap) > 0.01 {
		t.Errorf("s begins %.2f pt after the t ends, want 0: the tie bar widened its base", gap)
	}
	var base float64
	marks := exportValue(t, fonts, "text", "q"+strings.Repeat("\u0301", 500))
	for _, g := range marks.Pages[0].Glyphs {
		switch {
		case g.text == "q":
			base = g.y
		case g.text == "\u034F":
			t.Fatalf("a combining grapheme joiner drawn in %s", g.font)
		case g.text == "\u0301" && g.y-base > markStack*g.size:
			t.Fatalf("a mark raised %.1f pt over its base's baseline, more than %v em", g.y-base, markStack)
		}
	}
}

func markBoxOf(t *testing.T, fonts *fontIndex, font string, m rune) markBox {
	t.Helper()
	for _, f := range fonts.fallbacks {
		if strings.HasSuffix(font, "utf8"+strings.ToLower(f.family)) {
			if box, ok := f.measured().marks[m]; ok {
				return box
			}
		}
	}
	t.Fatalf("%U: no mark box in font %s", m, font)
	return markBox{}
}

// TestExportPDFFallbackStyles: characters the Go fonts lack are drawn in their place's
// style where installed: bold in the title, headings and (no semi-bold) labels, italic in
// descriptions; regular otherwise (Thai has no italic, Droid Sans Fallback no bold).
func TestExportPDFFallbackStyles(t *testing.T) {
	t.Parallel()
	fonts := needFallbackFonts(t)
	form := FormDetail{Form: Form{ID: 1, Title: "Tiếng ไทย"}, Categories: []Category{{ID: 1, Name: "한국어 עברית", Fields: []Field{
		{ID: 1, Label: "标签 मराठी", Type: "text", Description: ptr("ảnh ภาษา")},
		{ID: 2, Label: "Value", Type: "text"},
	}}}}
	values := map[int64]*string{2: ptr("ảnh ภาษา")}
	drawn := map[string][]string{}
	for _, g := range readPDF(t, writePDF(t, form, values, fonts)).Pages[0].Glyphs {
		if !slices.Contains(drawn[g.text], g.font) {
			drawn[g.text] = append(drawn[g.text], g.font)
		}
	}
	for char, want := range map[string][]string{
		"ế": {"utf8notosansbold"},
		"ไ": {"utf8notosansthaibold"},
		"한": {"utf8nanumgothicbold"},
		"ע": {"utf8notosanshebrewbold"},
		"标": {"utf8droidsansfallbackfull"},
		"म": {"utf8notosansdevanagaribold"},
		"ả": {"utf8notosansitalic", "utf8notosansregular"},
		"ภ": {"utf8notosansthairegular"},
	} {
		if got := drawn[char]; !slices.Equal(got, want) {
			t.Errorf("%s drawn in %q, want %q", char, got, want)
		}
	}
}

// TestExportPDFTextLayer: every script prints as itself, from fallback fonts where the Go
// fonts end (Arabic from variants whose character maps give each letter its joined form),
// an emoji as its name; left-to-right values start at the margin, right-to-left ones end
// at the right edge. The text layer (/ActualText) is what was typed: logical order,
// brackets as typed (drawn mirrored), letters not presentation forms (NFKC), the emoji.
// pdftotext, MuPDF and pdf.js are checked on the lines and words they read right.
func TestExportPDFTextLayer(t *testing.T) {
	t.Parallel()
	fonts := needFallbackFonts(t)
	rows := []struct {
		label, value string
		dir          int // 1: left to right; -1: right to left; 0: mixed
	}{
		{"Chinese", "今天天气很好，我们去公园散步。北京是中国的首都。", 1},
		{"Japanese", "東京は日本の首都です。ひらがなとカタカナも使います。", 1},
		{"Korean", "대한민국의 수도는 서울입니다.", 1},
		{"Hebrew", "ירושלים היא בירת ישראל", -1},
		{"Arabic", "السلام عليكم، مرحبا بالعالم", -1},
		{"Devanagari", "भारत एक विशाल देश है, ठीक।", 1},
		{"Greek", "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας.", 1},
		{"Cyrillic", "Москва — столица России.", 1},
		{"Mixed", "Invoice 发票 number 42 for the 北京 office", 1},
		{"Emoji", "Thanks 🙂 a lot", 1},
		{"Thai", "ไปเที่ยว ปั้น", 0},
		{"Latin", "Œuvre “naïve” – 5 € ‰ ™ … Ÿ š, Gdańsk Ωmega", 1}, // the Go fonts' 8-bit and UTF-8 faces
		{"Signed", "(ID 42) signed דוד כהן", 0},
		{"Hello", "שלום (עולם) 12", 0},
		{"Price", "מחיר 50% [הנחה]", 0},
	}
	form := FormDetail{Form: Form{ID: 1, Title: "Text layer"}, Categories: []Category{{ID: 1}}}
	vals, value := map[int64]*string{}, map[string]string{} // by field id; by label
	for i, r := range rows {
		form.Categories[0].Fields = append(form.Categories[0].Fields, Field{ID: int64(i + 1), Label: r.label, Type: "text"})
		vals[int64(i+1)], value[r.label] = &rows[i].value, r.value
	}
	pdf := writePDF(t, form, vals, fonts)
	doc := readPDF(t, pdf)
	lines := doc.textLines()
	for _, r := range rows {
		i := slices.IndexFunc(lines, func(l pdfTextLine) bool { return l.Text == r.label+":" })
		if i < 0 || i+1 >= len(lines) {
			t.Errorf("no label %q in:\n%s", r.label, strings.Join(doc.lines(), "\n"))
			continue
		}
		l, shown := lines[i+1], strings.ReplaceAll(r.value, "🙂", "[SLIGHTLY SMILING FACE]")
		logical := []rune(l.Text)
		slices.Reverse(logical)
		if norm.NFKC.String(l.Typed) != norm.NFKC.String(r.value) {
			t.Errorf("%s: text layer %q, want %q", r.label, l.Typed, r.value)
		}
		switch {
		case r.dir == 1 && (l.Text != shown || math.Abs(l.X-50) > 0.5):
			t.Errorf("%s: %q from x %.2f, want %q from the margin, 50", r.label, l.Text, l.X, shown)
		case r.dir == -1 && (norm.NFKC.String(string(logical)) != shown || math.Abs(l.EndX-550) > 0.5):
			t.Errorf("%s: %q (reversed) to x %.2f, want %q right-aligned at 550",
				r.label, string(logical), l.EndX, shown)
		}
	}
	text := strings.Join(doc.lines(), "\n")
	if strings.ContainsFunc(text, func(r rune) bool { return r >= 0xFE80 && r <= 0xFEF4 }) {
		t.Errorf("Arabic letters in the text layer as presentation forms:\n%s", text)
	}
	for _, font := range []string{"utf8droidsansfallbackfull", "utf8nanumgothic", "utf8notosanshebrewregular",
		"utf8notosansarabicregular", "utf8notosansarabicregularinit", "utf8notosansarabicregularmedi",
		"utf8notosansarabicregularfina", "utf8notosansdevanagariregular", "goregular"} {
		if !slices.Contains(doc.Fonts, font) {
			t.Errorf("font %s not embedded: %q", font, doc.Fonts)
		}
	}
	mirrored := 0
	for _, g := range doc.Pages[0].Glyphs {
		if strings.HasSuffix(g.font, "mirrored") && strings.Contains("()[]", g.text) {
			mirrored++
		}
		// ASCII other than spaces is the Go fonts', also after a mirrored bracket.
		goFont := strings.HasPrefix(strings.TrimPrefix(g.font, "utf8"), "go")
		if g.text != " " && g.text < "\u0080" && !goFont {
			t.Errorf("%q shown in %s, not in a Go font", g.text, g.font)
		}
	}
	if mirrored != 4 {
		t.Errorf("%d brackets drawn mirrored, want the 4 of the right-to-left values", mirrored)
	}
	t.Run("pdftotext", func(t *testing.T) {
		// pdftotext orders mixed right-to-left lines by its own rules and moves the
		// Arabic comma: the other lines, and words.
		text := strings.Join(popplerLines(t, pdf), "\n")
		for _, r := range rows {
			if r.dir != 0 {
				words := strings.Fields(strings.ReplaceAll(r.value, "،", ""))
				checkReaderText(t, "pdftotext", text, words...)
			}
		}
		checkReaderText(t, "pdftotext", readerTool(t, pdf, "pdftotext"),
			value["Signed"], value["Emoji"], value["Devanagari"], value["Thai"], value["Latin"])
	})
	t.Run("mutool", func(t *testing.T) {
		// MuPDF reads the order shown; it does not read /ActualText (the emoji's name).
		checkReaderText(t, "MuPDF", readerTool(t, pdf, "mutool", "draw", "-q", "-F", "txt"),
			value["Signed"], value["Hello"], value["Price"], value["Arabic"], value["Devanagari"],
			value["Thai"], value["Latin"])
	})
	t.Run("pdf.js", func(t *testing.T) {
		// pdf.js reads neither /ActualText nor spaces between right-to-left words.
		checkReaderText(t, "pdf.js", pdfjsText(t, pdf), "(ID 42) signed דוד", "כהן",
			"שלום", "(עולם)", "12", "מחיר", "50%", "[הנחה]", "السلام", "عليكم،", "مرحبا", "بالعالم",
			"Thanks ", " a lot", value["Devanagari"], value["Thai"], value["Latin"])
	})
}

// checkReaderText: a reader's text, less bidi controls, holds each of want (NFKC).
func checkReaderText(t *testing.T, reader, text string, want ...string) {
	t.Helper()
	text = norm.NFKC.String(strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Bidi_Control, r) {
			return -1
		}
		return r
	}, text))
	for _, w := range want {
		if !strings.Contains(text, norm.NFKC.String(w)) {
			t.Errorf("%s lacks %q:\n%s", reader, w, text)
		}
	}
}

// pdfjsScript prints the text pdf.js (Firefox's reader) gives a PDF, as Firefox copies it.
const pdfjsScript = `
console.log = console.error; // pdf.js's warnings (no canvas package: not needed for text)
const [lib, file] = process.argv.slice(1);
const { getDocument } = await import(lib);
const { readFileSync } = await import("node:fs");
const doc = await getDocument({ data: new Uint8Array(readFileSync(file)), verbosity: 0 }).promise;
let out = "";
for (let p = 1; p <= doc.numPages; p++) {
  const { items } = await (await doc.getPage(p)).getTextContent();
  for (const it of items) out += it.str + (it.hasEOL ? "\n" : "");
  out += "\n";
}
process.stdout.write(out);
`

// pdfjsText is pdf.js's text of a PDF, read by node with the pdfjs-dist in PDFJS_DIST
// (.ci/run installs 4.10.38 and sets it).
func pdfjsText(t *testing.T, pdf []byte) string {
	t.Helper()
	dist := os.Getenv("PDFJS_DIST")
	lib := filepath.Join(dist, "legacy", "build", "pdf.mjs")
	if _, err := os.Stat(lib); dist == "" || err != nil {
		notInstalled(t, "pdf.js not found (PDFJS_DIST=%q): set it to an installed pdfjs-dist folder for the pdf.js checks", dist)
	}
	return readerTool(t, pdf, "node", "--input-type=module", "-e", pdfjsScript, lib)
}

// writeFont writes dir/name, a copy of ttf whose character map is glyphOf alone.
func writeFont(t *testing.T, dir, name string, ttf []byte, glyphOf map[rune]rune) {
	t.Helper()
	font, err := withCmap(ttf, glyphOf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), font, 0o644); err != nil {
		t.Fatal(err)
	}
}

// glyphA maps each of chars to the glyph of A.
func glyphA(chars string) map[rune]rune {
	glyphOf := map[rune]rune{}
	for _, c := range chars {
		glyphOf[c] = 'A'
	}
	return glyphOf
}

// TestFontNeedsUnicodeMap: a font draws only through a format 4 Unicode map, the one fpdf
// reads, not a symbol font's (Windows encoding 0) nor a Macintosh one; only the maps the
// cmap header counts are read (a symbol map of 16 segments, read as records, would run
// past the table). The fonts are Go Regular with one map, relabelled.
func TestFontNeedsUnicodeMap(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		platform, encoding uint16
		segments           rune // क and every other character after it, a segment each
		draws              bool
	}{{3, 1, 1, true}, {0, 3, 1, true}, {3, 0, 1, false}, {1, 0, 1, false}, {3, 0, 16, false}} {
		chars := map[rune]rune{}
		for i := range tc.segments {
			chars['\u0915'+2*i] = 'A'
		}
		ttf, err := withCmap(goregular.TTF, chars)
		if err != nil {
			t.Fatal(err)
		}
		at := cmapOffset(ttf) + 4 // its one subtable's record
		binary.BigEndian.PutUint16(ttf[at:], tc.platform)
		binary.BigEndian.PutUint16(ttf[at+2:], tc.encoding)
		if got := (&fontFile{family: "T", ttf: ttf}).covers('क'); got != tc.draws {
			t.Errorf("a format 4 map of %d segments, platform %d, encoding %d: draws क %v, want %v",
				tc.segments, tc.platform, tc.encoding, got, tc.draws)
		}
	}
}

// TestExportPDFFallbackChoice: the font each character is drawn in, from fallback fonts
// made here: copies of Go Regular (or Noto Sans) with the character maps listed.
func TestExportPDFFallbackChoice(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		noto  bool
		fonts map[string]map[rune]rune // file name: character map
		gone  rune                     // found in the fonts, which are then removed
		value string
		want  []string // the value's glyphs, in runs of one font: "font:text"
	}{
		// A private-use or unassigned character prints as its code point though a font
		// has it; a run stays in the font of the one before where it can (ख).
		{name: "code points, and a run in one font", value: "\uE000 \u0378 कख",
			fonts: map[string]map[rune]rune{"Zza.ttf": glyphA("\uE000\u0378ख"), "Zzb.ttf": glyphA("कख")},
			want:  []string{"goregular:[U+E000] [U+0378] ", "utf8zzb:कख"}},
		// A letter whose font has only its isolated form (U+FE8D) is drawn as that form.
		{name: "presentation form only", value: "\u0627",
			fonts: map[string]map[rune]rune{"Zza.ttf": glyphA("\uFE8D")}, want: []string{"utf8zza:\uFE8D"}},
		// A font removed while the service runs (uninstalled) prints the name.
		{name: "font gone", value: "क", gone: 'क',
			fonts: map[string]map[rune]rune{"Zza.ttf": glyphA("क")}, want: []string{"goregular:[DEVANAGARI LETTER KA]"}},
		// A space after a fallback glyph is in its font (one text operation a run); after a
		// Go font's glyph, or an invisible character dropped, in the Go font.
		{name: "space in a fallback run", value: "क ख a b",
			fonts: map[string]map[rune]rune{"Zza.ttf": glyphA("कख ")}, want: []string{"utf8zza:क ख ", "goregular:a b"}},
		{name: "space after an invisible character", value: "क\u200B a",
			fonts: map[string]map[rune]rune{"Zza.ttf": glyphA("कख ")}, want: []string{"utf8zza:क", "goregular: a"}},
		// A mark whose glyph in its letter's font has no ink (Zzb maps it to U+200B's)
		// is drawn from a font that has it.
		{name: "mark without ink", value: "क\u0301", noto: true, fonts: map[string]map[rune]rune{
			"Zza.ttf": {'\u0301': '\u0301'}, "Zzb.ttf": {'क': 'a', '\u0301': '\u200B'}},
			want: []string{"utf8zzb:क", "utf8zza:\u0301"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base, dir := goregular.TTF, t.TempDir()
			if tc.noto {
				var err error // needFallbackFonts has fonts-noto-core's Noto Sans
				if base, err = needFallbackFonts(t).byName["NotoSansRegular"].file(); err != nil {
					t.Fatal(err)
				}
			}
			for name, glyphOf := range tc.fonts {
				writeFont(t, dir, name, base, glyphOf)
			}
			fonts := newFontIndex([]string{dir})
			if tc.gone != 0 {
				if fonts.fallbackFor(tc.gone, nil) == nil {
					t.Fatalf("the fonts made have no %c", tc.gone)
				}
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
			}
			var runs []string
			for _, g := range exportValue(t, fonts, "text", tc.value).Pages[0].Glyphs {
				font := g.font + ":"
				switch n := len(runs); {
				case g.size != 11: // the title and label
				case n > 0 && strings.HasPrefix(runs[n-1], font):
					runs[n-1] += g.text
				default:
					runs = append(runs, font+g.text)
				}
			}
			if !slices.Equal(runs, tc.want) {
				t.Errorf("%q drawn as %q, want %q", tc.value, runs, tc.want)
			}
		})
	}
}

// TestFontIndexNames: a font file reached twice (a link) is indexed once; files of one
// name in two folders get families of their own; FooBar-Bold.ttf is FooBar.ttf's bold but
// not Foo-Bar.ttf's.
func TestFontIndexNames(t *testing.T) {
	t.Parallel()
	first, second := t.TempDir(), t.TempDir()
	writeFont(t, first, "Zza.ttf", goregular.TTF, glyphA("क"))
	writeFont(t, second, "Zza.ttf", goregular.TTF, glyphA("ख"))
	if err := os.Symlink(filepath.Join(first, "Zza.ttf"), filepath.Join(second, "Zzb.ttf")); err != nil {
		t.Fatal(err)
	}
	var families []string
	for _, f := range newFontIndex([]string{first, second}).fallbacks {
		families = append(families, f.family)
	}
	if want := []string{"Zza", "Zza2"}; !slices.Equal(families, want) {
		t.Errorf("fallback fonts %q, want %q", families, want)
	}
	dir := t.TempDir()
	for _, name := range []string{"Foo-Bar.ttf", "FooBar-Bold.ttf", "Zz_Sans.ttf", "Zz_Sans_Bold.ttf"} {
		writeFont(t, dir, name, goregular.TTF, glyphA("क"))
	}
	ix := newFontIndex([]string{dir})
	for _, tc := range []struct{ regular, want string }{
		{"FooBar", "FooBar"},     // Foo-Bar.ttf: no bold of its own
		{"ZzSans", "ZzSansBold"}, // the separators trimmed before the style
	} {
		if got := ix.styled(ix.byName[tc.regular], "GoBold", 'क').family; got != tc.want {
			t.Errorf("bold of %s: %s, want %s", tc.regular, got, tc.want)
		}
	}
}

func cmapOffset(ttf []byte) uint32 {
	for i := range int(binary.BigEndian.Uint16(ttf[4:])) {
		if rec := ttf[12+16*i:]; string(rec[:4]) == "cmap" {
			return binary.BigEndian.Uint32(rec[8:])
		}
	}
	return 0
}

// TestWithCmapTable: withCmap's table starts on a 4-byte boundary, as OpenType wants,
// and its format 4 subtable's header is the specification's ("cmap — Character to Glyph
// Index Mapping Table": searchRange 2 × 2^⌊log2 segCount⌋, entrySelector its log2), and
// its closing segment maps U+FFFF to glyph 0.
func TestWithCmapTable(t *testing.T) {
	t.Parallel()
	orig, err := sfnt.Parse(goregular.TTF)
	if err != nil {
		t.Fatal(err)
	}
	glyphs := map[rune]rune{'क': 'A', 'ख': 'B', 'ग': 'C'} // 3 segments and the last
	// format, length, language, segCountX2, searchRange, entrySelector, rangeShift
	header := []byte{0, 4, 0, 16 + 8*4, 0, 0, 0, 2 * 4, 0, 8, 0, 2, 0, 0}
	for extra := range 4 {
		ttf := append(slices.Clip(goregular.TTF), make([]byte, extra)...)
		out, err := withCmap(ttf, glyphs)
		if err != nil {
			t.Fatal(err)
		}
		at := cmapOffset(out)
		sub := out[at+binary.BigEndian.Uint32(out[at+8:]):] // the one subtable, by its record
		if at%4 != 0 || !bytes.Equal(sub[:len(header)], header) {
			t.Errorf("a font of %d bytes: its new cmap at %d, format 4 header % x, want % x",
				len(ttf), at, sub[:len(header)], header)
		}
		sf, err := sfnt.Parse(out)
		if err != nil {
			t.Fatal(err)
		}
		var sb sfnt.Buffer
		for c, glyphOf := range glyphs {
			got, _ := sf.GlyphIndex(&sb, c)
			want, _ := orig.GlyphIndex(&sb, glyphOf)
			if got != want || got == 0 {
				t.Errorf("%c maps to glyph %d, want %c's, %d", c, got, glyphOf, want)
			}
		}
		if got, _ := sf.GlyphIndex(&sb, 0xFFFF); got != 0 {
			t.Errorf("U+FFFF, the closing segment, maps to glyph %d, want 0", got)
		}
	}
}

// TestExportPDFTypedText: the text layer, line by line, is the text typed, in pdftotext
// too: an emoji whose name breaks stands once, a soft hyphen printed at a break is the
// soft hyphen (right to left too), bidi controls inside a cell are left out.
func TestExportPDFTypedText(t *testing.T) {
	t.Parallel()
	fonts := needFallbackFonts(t)
	for _, tc := range []struct {
		value, typed string
		lines        int // the value's lines, at least
	}{
		{strings.Repeat("\U0001F642", 12), "", 2}, // 276 letters of names, some broken
		{strings.Repeat("abcdefgh\u00AD", 30), "", 2},
		{strings.Repeat("אבגדהוזח\u00AD", 30), "", 2},
		{"\U0001F642\u200E\U0001F642", "\U0001F642\U0001F642", 1},
	} {
		form, values := oneFieldForm("T", "text", tc.value)
		pdf := writePDF(t, form, values, fonts)
		var typed strings.Builder
		lines := readPDF(t, pdf).textLines()[2:] // after the title and label
		soft := strings.Contains(tc.value, "\u00AD")
		for i, l := range lines {
			typed.WriteString(l.Typed)
			hyphen := strings.Contains(l.Text, "-")
			if hyphen && !strings.Contains(l.Typed, "\u00AD") || strings.Contains(l.Typed, "-") ||
				soft && i < len(lines)-1 && !hyphen {
				t.Errorf("%.20q…: line %q stands for %q, want a break at a soft hyphen, the soft hyphen",
					tc.value, l.Text, l.Typed)
			}
		}
		want := cmp.Or(tc.typed, tc.value)
		got := strings.ReplaceAll(typed.String(), "\u00AD", "")
		if got != strings.ReplaceAll(want, "\u00AD", "") || len(lines) < tc.lines {
			t.Errorf("%d lines standing for %q, want %d at least, standing for %q",
				len(lines), got, tc.lines, want)
		}
		text := readerTool(t, pdf, "pdftotext")
		if got, want := strings.Count(text, "\U0001F642"), strings.Count(want, "\U0001F642"); got != want {
			t.Errorf("%.20q…: pdftotext reads %d emoji, want %d", tc.value, got, want)
		}
	}
}
