package main

import (
	"bytes"
	"cmp"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/bits"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-pdf/fpdf"
	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goitalic"
	"golang.org/x/image/font/gofont/gomedium"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
	"golang.org/x/text/encoding/charmap"
	xunicode "golang.org/x/text/encoding/unicode"
	"golang.org/x/text/unicode/bidi"
	"golang.org/x/text/unicode/norm"
	"golang.org/x/text/unicode/runenames"
)

// pdf.go writes a response as the PDF of docs/SPEC.md §4 (docs/PDF.md). fpdf draws code
// point by code point, one font to a text operation, so pdf.go lays out, shapes and orders
// (bidi) the text itself, and keeps the text layer what was typed for the PDF readers.

// Page geometry of docs/SPEC.md, in points.
const (
	pdfMargin       = 50.0
	pdfBottom       = 841.89 - pdfMargin // of an A4 page as fpdf has it
	pdfContentWidth = 500.0
	pdfPadding      = 5.0  // inside a textarea frame
	pdfMinBoxHeight = 30.0 // of a textarea frame
	pdfLineSpacing  = 1.2  // line height as a multiple of the font size
)

// Bounds of a document, so that its cost follows its input (docs/DESIGN.md, PDF).
const (
	pdfMaxPages = 1000 // far beyond any real form (hundreds of fields: tens of pages)
	// pdfNameBudget bounds the letters of the names printed for characters no font draws,
	// per document (about 80 emoji names); past it such a character prints as U+FFFD.
	pdfNameBudget = 2000
	pdfMaxLines   = pdfMaxPages * 60 // more 11 pt lines than pdfMaxPages pages hold (56 a page)
)

// The Go fonts: title and categories bold, labels medium, descriptions italic, values regular.
var pdfFonts = map[string][]byte{
	"GoBold":    gobold.TTF,
	"GoMedium":  gomedium.TTF,
	"GoItalic":  goitalic.TTF,
	"GoRegular": goregular.TTF,
}

var errPDFTooLong = rejected(fmt.Sprintf("PDF would be longer than %d pages", pdfMaxPages))

func (s *server) handleExportPDF(w http.ResponseWriter, r *http.Request) error {
	responseID, ok := parseID(r.PathValue("responseId"))
	if !ok {
		return invalid("Invalid response ID")
	}
	// Built in memory (in a heavy slot: routes), so that a failure is still a clean JSON error.
	form, values, err := s.store.ResponseExport(r.Context(), responseID)
	var raw, doc bytes.Buffer
	if err == nil {
		err = writeResponsePDF(&raw, form, values, s.now(), s.fonts)
	}
	if err == nil {
		err = s.compressPages(raw.Bytes(), &doc)
	}
	if err != nil {
		op := fmt.Sprintf("generate PDF for response %d", responseID)
		return missing(op, err, "Response not found")
	}
	h := w.Header()
	h.Set("Content-Type", "application/pdf")
	h.Set("Content-Disposition", pdfDisposition(responseID, form.Title))
	h.Set("Content-Length", fmt.Sprint(doc.Len()))
	_, err = w.Write(doc.Bytes()) // once out, docs/SPEC.md ends the stream, no JSON error
	return clientGone(err)
}

// contentStream is the start of an object as fpdf writes a page's content without
// compression; its fonts carry a /Filter already.
var contentStream = regexp.MustCompile(`^\d+ 0 obj\n<</Length (\d+)>>\nstream\n`)

// compressPages writes doc, a PDF that fpdf wrote without compression, to out with its
// page content compressed, so that no typed text stands in the file's bytes as typed
// (byte scanners and mail gateways flag "endstream … /JavaScript" in a value). fpdf
// compresses too, but makes a new zlib writer, a megabyte, for every page: a document
// took 3.5 times as long (BenchmarkExportPDFEndpoint: 8.0 ms and 6.0 MB a document, where
// this takes 2.7 ms and 1.6 MB, and none 2.2 ms). Here the writers are reused (s.zlibs).
// The objects are found through the cross-reference table, which is written again with
// their new offsets.
func (s *server) compressPages(doc []byte, out *bytes.Buffer) error {
	xref, head, entries, trailer, err := xrefTable(doc)
	if err != nil {
		return err
	}
	offsets := map[int]int{} // of each object, in doc and then in out
	for e := entries; len(e) > 0; e = e[20:] {
		if o, err := strconv.Atoi(string(e[:10])); err == nil && e[17] == 'n' {
			offsets[o] = o
		}
	}
	zw, _ := s.zlibs.Get().(*zlib.Writer)
	if zw == nil {
		zw, _ = zlib.NewWriterLevel(nil, zlib.BestSpeed) // a valid level: no error
	}
	defer s.zlibs.Put(zw)
	var packed bytes.Buffer
	out.Grow(len(doc)) // at most what it was: the fonts are most of it
	pos := 0
	for _, o := range slices.Sorted(maps.Keys(offsets)) {
		out.Write(doc[pos:o])
		offsets[o], pos = out.Len(), o
		m := contentStream.FindSubmatchIndex(doc[o:min(o+64, xref)])
		if m == nil {
			continue
		}
		length, _ := strconv.Atoi(string(doc[o+m[2] : o+m[3]])) // digits: the pattern's
		start := o + m[1]
		if start+length > xref {
			return errors.New("pdf: a stream past the cross-reference table")
		}
		packed.Reset()
		zw.Reset(&packed)
		zw.Write(doc[start : start+length]) // into a bytes.Buffer: no error
		zw.Close()
		out.Write(doc[o : o+m[2]-len("<</Length ")])
		fmt.Fprintf(out, "<</Filter /FlateDecode /Length %d>>\nstream\n", packed.Len())
		out.Write(packed.Bytes())
		pos = start + length
	}
	out.Write(doc[pos:xref])
	newXref := out.Len()
	out.Write(head)
	for e := entries; len(e) > 0; e = e[20:] {
		o, _ := strconv.Atoi(string(e[:10]))
		if e[17] == 'n' {
			o = offsets[o]
		}
		fmt.Fprintf(out, "%010d%s", o, e[10:20])
	}
	out.Write(trailer)
	fmt.Fprintf(out, "startxref\n%d\n%%%%EOF\n", newXref)
	return nil
}

// xrefTable finds fpdf's cross-reference table in doc: where it begins, its two header
// lines ("xref", "0 n"), its n entries of 20 bytes (a 10-digit offset, a generation, n or
// f) and the trailer up to "startxref".
func xrefTable(doc []byte) (at int, head, entries, trailer []byte, err error) {
	at = bytes.LastIndex(doc, []byte("\nxref\n")) + 1
	lines := bytes.SplitAfterN(doc[at:], []byte("\n"), 3)
	if at == 0 || len(lines) < 3 {
		return 0, nil, nil, nil, errors.New("pdf: no cross-reference table")
	}
	count, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(string(lines[1]), "0 ")))
	end := bytes.Index(lines[2], []byte("startxref\n"))
	if err != nil || count < 0 || 20*count > end {
		return 0, nil, nil, nil, errors.New("pdf: cross-reference table not as fpdf writes it")
	}
	head = doc[at : at+len(lines[0])+len(lines[1])]
	return at, head, lines[2][:20*count], lines[2][20*count : end], nil
}

// pdfDisposition is the PDF's Content-Disposition: shown in the browser, under a file name.
func pdfDisposition(responseID int64, title string) string {
	return dispositionHeader("inline", fmt.Sprintf("response_%d_%s.pdf", responseID, fileTitle(title)))
}

// writeResponsePDF writes the form with the response's values to buf; a document that
// would pass pdfMaxPages is not finished: the error is errPDFTooLong.
func writeResponsePDF(buf *bytes.Buffer, form FormDetail, values map[int64]*string, now time.Time, fonts *fontIndex) (err error) {
	// Sanitised text should not make fpdf panic; a panic left is an error, not a dead request.
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("pdf layout: %v", v)
		}
	}()
	l := newPDFLayout(form, now, fonts)
	l.newPage()
	title := l.paragraph("GoBold", 18, form.Title, 0, false)
	title.centred = true
	l.print(title)
	l.moveDown(18)
	for _, c := range form.Categories {
		fields := make([]fieldBlock, len(c.Fields))
		for i, fd := range c.Fields {
			value := ""
			if v := values[fd.ID]; v != nil {
				value = *v
			}
			fields[i] = l.layoutField(fd, value)
		}
		if c.Name != "" {
			heading := l.paragraph("GoBold", 14, c.Name, 0, false)
			// A heading stays on the page of its first field's label and value.
			keep := heading.height()
			if len(fields) > 0 {
				keep += lineHeight(14.0/2) + fields[0].keepHeight()
			}
			l.keepTogether(keep)
			l.print(heading)
			l.moveDown(14.0 / 2)
		}
		for _, f := range fields {
			l.field(f)
			l.moveDown(11)
		}
		l.moveDown(11.0 / 2) // half a line (11 / 2 would be the integer 5)
		if l.err != nil {
			return l.err // past pdfMaxPages: the rest would not be drawn
		}
	}
	if err := l.pdf.Output(buf); err != nil {
		return fmt.Errorf("pdf output: %w", err)
	}
	return nil
}

func newPDFLayout(form FormDetail, now time.Time, fonts *fontIndex) *pdfLayout {
	pdf := fpdf.NewCustom(&fpdf.InitType{OrientationStr: "P", UnitStr: "pt", SizeStr: "A4"})
	pdf.SetMargins(pdfMargin, pdfMargin, pdfMargin)
	pdf.SetTitle(utf16BE(pdfText(form.Title, false)), false)
	pdf.SetCreator("formsvc", true)
	// Page content is compressed after, by compressPages: fpdf's zlib writer for every page
	// is a megabyte of garbage, more than the rest of a document costs.
	pdf.SetCompression(false)
	pdf.SetCreationDate(now)
	pdf.SetModificationDate(now)
	pdf.SetLineWidth(1)
	return &pdfLayout{
		pdf:       pdf,
		fonts:     fonts,
		files:     map[string][]byte{},
		drawnFrom: map[string]*fontFile{},
	}
}

// utf16BE is s as a PDF text string (fpdf's own conversion is wrong above U+FFFF).
func utf16BE(s string) string {
	t, _ := xunicode.UTF16(xunicode.BigEndian, xunicode.UseBOM).NewEncoder().String(s)
	return t // s is valid UTF-8 (pdfText's): no error
}

type fieldBlock struct{ label, description, value paragraph }

// layoutField lays out a field, its value as docs/SPEC.md shows it; a value or description
// without letters ("12", a date, "Yes") follows its label's direction.
func (l *pdfLayout) layoutField(fd Field, value string) fieldBlock {
	b := fieldBlock{label: l.paragraph("GoMedium", 12, fd.Label+":", 0, false)}
	level := b.label.lines[0].level
	if fd.Description != nil && *fd.Description != "" {
		b.description = l.paragraph("GoItalic", 9, *fd.Description, level, false)
	}
	switch fd.Type {
	case "date":
		if t, err := time.Parse("2006-01-02", value); err == nil {
			value = t.Format("02/01/2006")
		}
	case "boolean":
		value = map[string]string{"true": "Yes", "false": "No"}[value]
	}
	b.value = l.paragraph("GoRegular", 11, value, level, fd.Type == "textarea")
	if fd.Type == "boolean" {
		b.value.lines[0].level = level // Yes and No stand where the label's direction puts a value
	}
	return b
}

// keepHeight is what must share a page: label, description, the value's first line or frame.
func (b fieldBlock) keepHeight() float64 {
	h := b.label.height() + b.description.height()
	if b.value.framed {
		return h + pdfMinBoxHeight
	}
	return h + lineHeight(11)
}

func (l *pdfLayout) field(b fieldBlock) {
	l.keepTogether(b.keepHeight())
	l.print(b.label)
	if b.description.lines != nil {
		l.print(b.description)
	}
	l.print(b.value)
	if b.value.framed {
		return
	}
	// The 1 pt rule goes at the foot of the value's last line, or below its fonts' descenders.
	y, size, depth := l.pdf.GetY(), b.value.size, 0.0
	for _, g := range b.value.lines[len(b.value.lines)-1].glyphs {
		depth = max(depth, l.drawnFrom[g.font].measured().depth)
	}
	y = max(y, baselineBelow(y-lineHeight(size), size)+depth*size+1)
	l.pdf.Line(pdfMargin, y, pdfMargin+pdfContentWidth, y)
}

// pdfLayout draws a document down its pages. It breaks lines itself: a line may mix
// fonts (fpdf's MultiCell measures with one) and right-to-left text is reordered per line.
type pdfLayout struct {
	pdf       *fpdf.Fpdf
	fonts     *fontIndex
	files     map[string][]byte    // the font files added to the document, by family
	drawnFrom map[string]*fontFile // a family's font (a variant's too; nil if it failed)
	names     int                  // letters of character names printed
	font      string               // the font selected (setFont), and its size
	size      float64
	at        []float64 // drawLine's, kept for the next line
	pos       []int
	err       error // errPDFTooLong once a page past the bound was asked for
}

type paragraph struct {
	lines   []textLine
	size    float64
	centred bool // else a line goes by its direction
	framed  bool // a textarea's value
}

func (p paragraph) height() float64        { return float64(len(p.lines)) * lineHeight(p.size) }
func lineHeight(size float64) float64      { return size * pdfLineSpacing }
func (l *pdfLayout) moveDown(size float64) { l.pdf.Ln(lineHeight(size)) }

// setFont selects a font unless it is selected: fpdf writes every selection into the page.
func (l *pdfLayout) setFont(family string, size float64) {
	if family != l.font || size != l.size {
		l.pdf.SetFont(family, "", size)
		l.font, l.size = family, size
	}
}

// newPage starts a page, or past pdfMaxPages records errPDFTooLong and reports false.
func (l *pdfLayout) newPage() bool {
	if l.pdf.PageNo() >= pdfMaxPages {
		l.err = errPDFTooLong
		return false
	}
	l.pdf.AddPage()
	return true
}

// keepTogether starts a new page when height no longer fits on this one, unless the page
// is still empty (what does not fit on an empty page breaks where it must).
func (l *pdfLayout) keepTogether(height float64) {
	if y := l.pdf.GetY(); y+height > pdfBottom && y > pdfMargin {
		l.newPage()
	}
}

// paragraph lays out text of one font and size over the content width, a line at least for
// each of its lines, text without letters at level (1: right to left). A framed one (a
// textarea's value) keeps its newlines, lies inside the padding, has no lines when empty.
func (l *pdfLayout) paragraph(font string, size float64,
	s string, level int8, framed bool) paragraph {
	l.addFont(l.fonts.byName[font], s)
	p, width := paragraph{size: size, framed: framed}, pdfContentWidth
	if framed {
		if s == "" {
			return p
		}
		width -= 2 * pdfPadding
	}
	for para := range strings.SplitSeq(pdfText(s, framed), "\n") {
		if len(p.lines) > pdfMaxLines {
			break // drawing fails with errPDFTooLong
		}
		n := len(p.lines)
		if p.lines = l.layout(p.lines, font, para, size, width, level); len(p.lines) == n {
			p.lines = append(p.lines, textLine{level: level})
		}
	}
	return p
}

// print draws a paragraph in pieces that fit above the bottom margin, each after the
// first on a new page, a framed one in a frame round each piece. A piece that cannot
// hold its least height here starts on a new page; blank lines at a page break are dropped.
func (l *pdfLayout) print(p paragraph) {
	pad, minHeight, lh := 0.0, 0.0, lineHeight(p.size)
	if p.framed {
		pad, minHeight = pdfPadding, pdfMinBoxHeight
	}
	lines := p.lines
	for first := true; first || len(lines) > 0; first = false {
		least := max(minHeight, float64(min(len(lines), 1))*lh+2*pad)
		if (!first || l.pdf.GetY()+least > pdfBottom) && !l.newPage() {
			return
		}
		y := l.pdf.GetY()
		n := min(len(lines), int((pdfBottom-y-2*pad)/lh+1e-9)) // 1e-9: a line that fits exactly
		height := max(minHeight, float64(n)*lh+2*pad)
		if p.framed {
			l.pdf.Rect(pdfMargin, y, pdfContentWidth, height, "D")
		}
		for i, line := range lines[:n] {
			x, free := pdfMargin+pad, pdfContentWidth-2*pad-line.width
			if p.centred {
				x += free / 2
			} else if line.level == 1 {
				x += free
			}
			l.drawLine(line, x, y+pad+float64(i)*lh, p.size)
		}
		for lines = lines[n:]; len(lines) > 0 && len(lines[0].glyphs) == 0; {
			lines = lines[1:]
		}
		l.pdf.SetXY(pdfMargin, y+height)
	}
}

// pdfText cleans text for layout: composed (NFC: a letter and its accent one glyph where
// the font has it), invalid UTF-8 as U+FFFD, controls and line breaks as a space (breaks as
// LF where keepNewlines is set), without the bidi controls, which the layout does not apply.
func pdfText(s string, keepNewlines bool) string {
	s = norm.NFC.String(strings.ReplaceAll(s, "\r\n", "\n"))
	return strings.Map(func(r rune) rune {
		switch {
		case keepNewlines && (r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029'):
			return '\n'
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
			return ' '
		case unicode.Is(unicode.Bidi_Control, r):
			return -1
		}
		return r
	}, s)
}

// glyph is one character as laid out; a mark over its base, and a base widened for a
// keycap's frame, is moved by dx, and a stacked mark raised by rise.
type glyph struct {
	w        float64
	font     string
	r        rune
	src      int32 // the index in its paragraph as typed of the first character it stands for
	chars    int8  // how many: 2 for lam-alef, 0 for a lone mark's base or a name's later letters
	level    int8  // bidi embedding level: odd is right to left
	dx, rise float32
}

// textLine is one line of glyphs in logical order.
type textLine struct {
	glyphs []glyph
	width  float64
	level  int8   // the paragraph's: 1 (right to left) is aligned to the right
	typed  []rune // the paragraph as typed, which glyphs' src index
}

// layout appends to lines one paragraph (pdfText's, without newlines), broken to width.
func (l *pdfLayout) layout(lines []textLine, family, para string, size, width float64,
	level int8) []textLine {
	typed := []rune(para)
	gs := l.glyphs(family, typed)
	rs := make([]rune, len(gs))
	for i, g := range gs {
		rs[i] = g.r
	}
	levels, paraLevel := bidiLevels(rs, level)
	for i := range gs {
		gs[i].level = levels[i]
		gs[i].font = l.face(gs[i].font, winAnsiByte(gs[i].r) == 0)
		r := gs[i].r
		if r == softHyphen {
			r = '-' // its width where it prints
		}
		// fpdf measures only in the font selected (setFont): an 8-bit face by its own widths.
		if font := gs[i].font; pdfFonts[font] != nil {
			gs[i].w = float64(l.drawnFrom[font].winAnsiWidths[winAnsiByte(r)]) * size / 1000
		} else {
			l.setFont(font, size)
			gs[i].w = l.pdf.GetStringWidth(string(r))
		}
	}
	l.placeMarks(gs, size)
	for _, line := range breakLines(gs, width) {
		tl := textLine{glyphs: line, level: paraLevel, typed: typed}
		for _, g := range line {
			tl.width += g.w
		}
		lines = append(lines, tl)
	}
	return lines
}

// glyphs turns a paragraph's characters into glyphs, Arabic letters joined. A character
// is drawn in the Go family where it has it; a space after a fallback font's glyph stays
// in that font (one text operation for a run of words); an invisible one is dropped; any
// other is drawn from a fallback font, the run's first, in the family's style, or named.
func (l *pdfLayout) glyphs(family string, typed []rune) []glyph {
	rs, src := shapeArabic(typed)
	gs := make([]glyph, 0, len(rs))
	var run *fontFile // the fallback font of the characters before
	for i, r := range rs {
		g := glyph{r: r, font: family, src: src[i], chars: int8(src[i+1] - src[i])}
		if face := l.spaceFace(gs, g); face != nil {
			g.font = face.family
		} else if !(r < utf8.RuneSelf || l.fonts.byName[family].covers(r)) {
			if invisible(r) {
				continue
			}
			if unicode.In(r, unicode.Mn, unicode.Me) && (len(gs) == 0 || gs[len(gs)-1].r == ' ') {
				// A lone mark is drawn over a no-break space, not the margin or the space before.
				gs = append(gs, glyph{r: '\u00A0', font: family, src: g.src})
			}
			font := l.fonts.fallbackFor(r, run)
			face := l.fonts.styled(font, family, r)
			if face == nil || !l.addFont(face, "") {
				// The name's first letter stands for the character, so that a name broken
				// over two lines gives it to the first.
				for _, c := range l.missing(r) {
					gs = append(gs, glyph{r: c, font: g.font, src: g.src, chars: g.chars})
					g.chars = 0
				}
				continue
			}
			run, g.font = font, face.family
			g = l.joinedForm(face, g, typed)
		}
		gs = append(gs, g)
	}
	return gs
}

// spaceFace is the fallback face of the glyph before the space g, where it stands for
// the character just before and has a space; else nil.
func (l *pdfLayout) spaceFace(gs []glyph, g glyph) *fontFile {
	if g.r != ' ' || len(gs) == 0 {
		return nil
	}
	before := gs[len(gs)-1]
	face := l.drawnFrom[before.font]
	if before.font == g.font || before.src+int32(before.chars) != g.src || !face.covers(' ') {
		return nil
	}
	return face
}

// invisible reports a character that has no glyph of its own and only steers others.
// Among them is the combining grapheme joiner (U+034F), which NFC inserts after every 30
// marks on a base (UAX #15's stream-safe format) and fonts draw as a dashed box.
func invisible(r rune) bool {
	return unicode.In(r, unicode.Variation_Selector, unicode.Join_Control) ||
		r == '\u200B' || r == '\u2060' || r == '\uFEFF' || r == '\u034F'
}

// missing is what prints for a character no font draws: its name, U+FFFD past pdfNameBudget.
func (l *pdfLayout) missing(r rune) string {
	name := runeName(r)
	if l.names+len(name) > pdfNameBudget {
		return "\uFFFD"
	}
	l.names += len(name)
	return name
}

// runeName is a character's Unicode name in brackets, or its code point without one.
func runeName(r rune) string {
	if name := runenames.Name(r); name != "" && !strings.HasPrefix(name, "<") {
		return "[" + name + "]"
	}
	return fmt.Sprintf("[U+%04X]", r)
}

// joinedForm makes g, a presentation form from face f, the letter typed, drawn from the
// variant of f that maps each letter to that form's glyph, so that the text layer holds the
// letter; g stays where there is no such form (a lam-alef ligature) or variant.
func (l *pdfLayout) joinedForm(f *fontFile, g glyph, typed []rune) glyph {
	letter := typed[g.src]
	kind := slices.IndexFunc(arabicForms[:], func(forms map[rune]rune) bool {
		return forms[letter] == g.r
	})
	if kind < 0 {
		return g
	}
	variant := f.family + joinedKinds[kind]
	if kind == 0 && f.covers(letter) { // isolated: the letter's own glyph
		g.r = letter
	} else if kind > 0 && l.addVariant(variant, f.family, arabicForms[kind]) {
		g.r, g.font = letter, variant
	}
	return g
}

// arabicForms gives, by kind (isolated, final, initial, medial), each Arabic letter's
// presentation form, as Unicode's data has them (Forms-A and -B): a letter joins to the one
// before it where it has a final form, to the one after where it has an initial form.
var arabicForms = func() (forms [4]map[rune]rune) {
	kinds := []string{" ISOLATED FORM", " FINAL FORM", " INITIAL FORM", " MEDIAL FORM"}
	for kind := range forms {
		forms[kind] = map[rune]rune{}
	}
	for r := rune(0xFB50); r <= 0xFEFC; r++ {
		letter := []rune(norm.NFKC.String(string(r))) // a ligature's is more than one
		for kind, suffix := range kinds {
			if len(letter) == 1 && strings.HasSuffix(runenames.Name(r), suffix) {
				forms[kind][letter[0]] = r
			}
		}
	}
	return forms
}()

// joinedKinds name a font's variants for the final, initial and medial forms.
var joinedKinds = [4]string{"", "fina", "init", "medi"}

// lamAlef gives the isolated lam-alef ligature of lam and each alef; the final follows.
var lamAlef = map[rune]rune{0x0622: 0xFEF5, 0x0623: 0xFEF7, 0x0625: 0xFEF9, 0x0627: 0xFEFB}

const tatweel = 0x0640 // joins on both sides and has no forms of its own

// shapeArabic replaces the Arabic letters of a paragraph by the form their neighbours call
// for, marks skipped over, and lam followed by alef by their ligature. src gives the index in
// rs of the character each out stands for (the lam's, for a ligature), then len(rs).
func shapeArabic(rs []rune) (out []rune, src []int32) {
	out, src = make([]rune, 0, len(rs)), make([]int32, 0, len(rs)+1)
	neighbour := func(i, step int) rune {
		for i += step; i >= 0 && i < len(rs); i += step {
			if !unicode.Is(unicode.Mn, rs[i]) {
				return rs[i]
			}
		}
		return 0
	}
	for i := 0; i < len(rs); i++ {
		out, src = append(out, rs[i]), append(src, int32(i))
		letter := rs[i]
		if arabicForms[0][letter] == 0 {
			continue
		}
		before, after := neighbour(i, -1), neighbour(i, 1)
		kind := 0 // isolated; 1 final, 2 initial, 3 medial
		if arabicForms[1][letter] != 0 && (before == tatweel || arabicForms[2][before] != 0) {
			kind = 1
		}
		if letter == 0x0644 && i+1 < len(rs) && lamAlef[rs[i+1]] != 0 {
			// The ligature, final after a joining letter.
			out[len(out)-1] = lamAlef[rs[i+1]] + rune(kind)
			i++
			continue
		}
		if arabicForms[2][letter] != 0 && (after == tatweel || arabicForms[1][after] != 0) {
			kind += 2
		}
		out[len(out)-1] = arabicForms[kind][letter]
	}
	return out, append(src, int32(len(rs)))
}

// Stacked marks, in em: the gap between two, and how high above the baseline they stack
// at most (a long run of marks on one base does not climb over the lines above).
const (
	markGap   = 0.05
	markStack = 1.5
)

// placeMarks puts each mark without an advance over its base, as fpdf cannot read a font's
// positioning tables: where its font draws it if its ink's middle is over the base, not
// starting before it (Noto's Latin, Thai, Hebrew), else centred (on a widened base always);
// one that would overprint the mark below (a Thai tone over an upper vowel) is raised.
func (l *pdfLayout) placeMarks(gs []glyph, size float64) {
	base, widened, stackTop := -1, false, 0.0 // stackTop: the top of the base's marks so far, in em
	for i := range gs {
		box, ok := l.markBox(gs[i])
		if !ok {
			base, stackTop = i, 0
			widened = l.widenForFrame(gs, i, size)
			continue
		}
		if base < 0 || gs[i].w != 0 {
			continue
		}
		// The pen is at the base's end, or its start in right-to-left text (marks first).
		pen := gs[base].w
		if gs[base].level%2 == 1 {
			pen = 0
		}
		left, centre := pen+box.minX*size, pen+(box.minX+box.maxX)/2*size
		if widened || left < 0 || centre >= gs[base].w {
			gs[i].dx = float32(gs[base].w/2 - centre)
		}
		if box.bottom < 0 {
			continue // below the baseline or through it: not stacked
		}
		rise := 0.0
		if stackTop > 0 && stackTop+markGap > box.bottom && stackTop < markStack {
			rise = stackTop + markGap - box.bottom
		}
		gs[i].rise = float32(rise * size)
		stackTop = box.top + rise
	}
}

// widenForFrame widens the base gs[b] to its widest enclosing mark (a keycap's frame),
// centred in it, so that frames side by side keep their space. It reports whether it did.
func (l *pdfLayout) widenForFrame(gs []glyph, b int, size float64) bool {
	widest := gs[b].w
	for j := b + 1; j < len(gs) && unicode.In(gs[j].r, unicode.Mn, unicode.Me); j++ {
		if box, ok := l.markBox(gs[j]); ok && gs[j].w == 0 && unicode.Is(unicode.Me, gs[j].r) {
			widest = max(widest, (box.maxX-box.minX)*size)
		}
	}
	widened := widest > gs[b].w
	gs[b].dx += float32((widest - gs[b].w) / 2)
	gs[b].w = widest
	return widened
}

// markBox is the ink box of a mark with no advance of its own, in em, y up.
type markBox struct{ minX, maxX, bottom, top float64 }

// markBox measures a glyph's font only for a mark: a CJK font takes a second to measure.
func (l *pdfLayout) markBox(g glyph) (markBox, bool) {
	f := l.drawnFrom[g.font]
	if f == nil || !unicode.In(g.r, unicode.Mn, unicode.Me) {
		return markBox{}, false
	}
	box, ok := f.measured().marks[g.r]
	return box, ok
}

// softHyphen prints only at the end of a line that breaks there, as a hyphen.
const softHyphen = '\u00AD'

// breakLines breaks glyphs into lines no wider than width: where canBreakAt allows, or,
// in a word longer than the line, before the character that would overflow (never a mark).
// Spaces at a break are dropped; soft hyphens too, but one at a break becomes a hyphen.
func breakLines(gs []glyph, width float64) [][]glyph {
	var lines [][]glyph
	for len(gs) > 0 {
		w, brk, n := 0.0, 0, 0 // brk: the last break opportunity, before gs[brk]
		for ; n < len(gs); n++ {
			if n > 0 && canBreakAt(gs, n) && (gs[n-1].r != softHyphen || w+gs[n-1].w <= width) {
				brk = n
			}
			if w+gs[n].w > width && n > 0 && gs[n].r != ' ' && gs[n].r != softHyphen && !unicode.In(gs[n].r, unicode.Mn, unicode.Me) {
				n = cmp.Or(brk, n) // the line ends at its last break opportunity, else here
				break
			}
			if gs[n].r != softHyphen {
				w += gs[n].w
			}
		}
		line := gs[:n]
		for len(line) > 0 && line[len(line)-1].r == ' ' {
			line = line[:len(line)-1]
		}
		if n < len(gs) && len(line) > 0 && line[len(line)-1].r == softHyphen {
			line[len(line)-1].r = '-'
		}
		lines = append(lines, slices.DeleteFunc(line, func(g glyph) bool { return g.r == softHyphen }))
		for gs = gs[n:]; len(gs) > 0 && gs[0].r == ' '; {
			gs = gs[1:]
		}
	}
	return lines
}

// canBreakAt reports whether a line may break before gs[n]: after a space or soft hyphen,
// and beside a character of a script written without spaces, but never before a mark,
// closing punctuation or a Thai following vowel, after opening punctuation or a Thai leading
// vowel (UAX #14 without a dictionary), nor before a Thai consonant after ั or ็ (ปั้|น).
func canBreakAt(gs []glyph, n int) bool {
	a, b := gs[n-1].r, gs[n].r
	switch {
	case a != ' ' && a != softHyphen && !breaksAnywhere(a) && !breaksAnywhere(b),
		unicode.In(b, unicode.Mn, unicode.Me, unicode.Mc):
		return false
	case a == ' ' || a == softHyphen:
		return true
	case b == ' ' || noBreakBefore(b) || unicode.In(a, unicode.Ps, unicode.Pi) || a >= 0x0E40 && a <= 0x0E44:
		return false
	case b >= 0x0E01 && b <= 0x0E2E: // a Thai consonant
		k := n - 1
		if k > 0 && gs[k].r >= 0x0E48 && gs[k].r <= 0x0E4B { // a tone mark
			k--
		}
		return gs[k].r != '\u0E31' && gs[k].r != '\u0E47'
	}
	return true
}

// breaksAnywhere reports Chinese, Japanese (with their punctuation) and Thai.
func breaksAnywhere(r rune) bool {
	return r >= 0x2E80 && unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana) ||
		r >= 0x3000 && r <= 0x303F || r >= 0xFF00 && r <= 0xFFEF || r >= 0x0E01 && r <= 0x0E5B
}

// noBreakBefore reports a character a line does not start with (UAX #14's CL, CP, EX, IS
// and NS; Thai's following vowels and repetition marks).
func noBreakBefore(r rune) bool {
	return unicode.In(r, unicode.Pe, unicode.Pf) ||
		strings.ContainsRune("!%),.:;?、。〃〆〻ゝゞ゠ーヽヾ・ぁぃぅぇぉっゃゅょゎゕゖァィゥェォッャュョヮヵヶ！％），．：；？｡､ｰ"+"ะาำๅๆฯ", r)
}

// drawLine draws a line from x: each glyph where the visual order puts it, but in
// logical order in the content, so that pdf.js and MuPDF, which read text in the order
// drawn, read it as typed (poppler orders it by position). Left-to-right glyphs of one
// font share a cell; a right-to-left glyph, a placed mark and a widened base have their own.
func (l *pdfLayout) drawLine(line textLine, x, y, size float64) {
	gs, levels := line.glyphs, make([]int8, len(line.glyphs))
	for i, g := range gs {
		levels[i] = g.level
	}
	l.at = slices.Grow(l.at[:0], len(gs))[:len(gs)]
	l.pos = slices.Grow(l.pos[:0], len(gs))[:len(gs)]
	for v, i := range visualOrder(levels) {
		l.at[i], l.pos[i] = x, v
		x += gs[i].w
	}
	for i := 0; i < len(gs); {
		n := 1
		for i+n < len(gs) && !ownCell(gs[i]) && !ownCell(gs[i+n]) && gs[i+n].font == gs[i].font &&
			l.pos[i+n] == l.pos[i]+n {
			n++
		}
		l.drawCell(gs[i:i+n], line.typed, l.at[i], y, size)
		i += n
	}
}

// baselineBelow is the baseline of a line whose top is at y, where fpdf's cells put it.
func baselineBelow(y, size float64) float64 { return y + lineHeight(size)/2 + 0.3*size }

func ownCell(g glyph) bool { return g.level%2 == 1 || g.dx != 0 || g.rise != 0 }

// drawCell draws glyphs in a row from x as one text operation, a bracket in right-to-left
// text with its partner's glyph (L4) from the font's mirrored variant; where the glyphs are
// not the characters typed (a name, U+FFFD, a hyphen), /ActualText has them (poppler, Acrobat).
func (l *pdfLayout) drawCell(gs []glyph, typed []rune, x, y, size float64) {
	var run strings.Builder
	for _, g := range gs {
		run.WriteRune(g.r)
	}
	font := gs[0].font
	if gs[0].level%2 == 1 && mirrorOf[gs[0].r] != 0 && l.addVariant(font+"mirrored", font, mirrorOf) {
		font += "mirrored"
	}
	l.setFont(font, size)
	// A right-to-left lam-alef ligature keeps its two letters: poppler spreads an
	// /ActualText over the glyph's width and reorders it as if drawn, reversing the pair.
	if gs[0].level%2 == 0 || gs[0].chars < 2 {
		first, end := int32(len(typed)), int32(0)
		for _, g := range gs {
			if g.chars > 0 {
				first, end = min(first, g.src), max(end, g.src+int32(g.chars))
			}
		}
		if text := string(typed[first:max(first, end)]); text != run.String() {
			l.pdf.RawWriteStr(fmt.Sprintf("/Span <</ActualText <%X>>> BDC", utf16BE(text)))
			defer l.pdf.RawWriteStr("EMC")
		}
	}
	text := run.String()
	if pdfFonts[font] != nil {
		text, _ = charmap.Windows1252.NewEncoder().String(text) // face gave it only such text
	}
	// Text is fpdf's plainest way to show a string: a cell costs five times as much.
	l.pdf.Text(x+float64(gs[0].dx), baselineBelow(y, size)-float64(gs[0].rise), text)
}

// fontIndex knows the Go fonts and the font folders' TrueType fonts, once per server; what
// it learns of a font later, for all the server's exports, is kept under a sync.Once.
type fontIndex struct {
	fallbacks []*fontFile             // in the order they are tried
	byName    map[string]*fontFile    // the Go fonts and the fallbacks, by family
	faces     map[[2]string]*fontFile // the fallbacks by stem and style, the first of each
}

// fontFile is one TrueType font: a Go font (ttf) or a fallback's file (path), read when a
// character is first looked up in it and by each document that embeds it (as fpdf parses a
// UTF-8 font afresh for each anyway).
type fontFile struct {
	family  string // the fpdf family name, unique in the index
	path    string
	ttf     []byte
	stem    string // its folder and family's stem (newFontIndex)
	unicode string // a Go font's UTF-8 face's family (face)

	coverOnce sync.Once
	cover     []uint64 // a bit per Basic Multilingual Plane character (8 KiB); nil if unusable

	measureOnce sync.Once
	marks       map[rune]markBox // its combining marks without an advance, for placeMarks
	depth       float64          // how far its letters and marks reach below the baseline, in em

	winAnsiOnce          sync.Once
	winAnsiDef, winAnsiZ []byte // a Go font's 8-bit face (winAnsiFace)
	winAnsiWidths        []int  // its advances by code, in 1/1000 em
}

// fontDirs is the folders to search: PDF_FONT_DIR's (":"-separated), then the usual ones.
func fontDirs(pdfFontDir string) []string {
	dirs := append(splitList(pdfFontDir, ":"), "/usr/share/fonts", "/usr/local/share/fonts")
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".local/share/fonts"), filepath.Join(home, ".fonts"))
	}
	return dirs
}

// newFontIndex indexes the Go fonts and the TrueType files under dirs, each folder's in
// fallbackRank's order, by their names only.
func newFontIndex(dirs []string) *fontIndex {
	ix := &fontIndex{byName: map[string]*fontFile{}, faces: map[[2]string]*fontFile{}}
	for family, ttf := range pdfFonts {
		ix.byName[family] = &fontFile{family: family, ttf: ttf, unicode: family + "Unicode"}
	}
	seen := map[string]bool{}
	for _, dir := range dirs {
		var paths []string
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			// .otf files are nearly always CFF, which fpdf cannot embed: parse refuses those.
			if ext := strings.ToLower(filepath.Ext(path)); err == nil && !d.IsDir() && (ext == ".ttf" || ext == ".otf") {
				paths = append(paths, path)
			}
			return nil
		})
		slices.SortStableFunc(paths, func(a, b string) int {
			return cmp.Or(cmp.Compare(fallbackRank(a), fallbackRank(b)), strings.Compare(a, b))
		})
		for _, p := range paths {
			real, err := filepath.EvalSymlinks(p)
			if err != nil || seen[real] {
				continue
			}
			seen[real] = true
			name := notInFamily.ReplaceAllString(filepath.Base(p), "")
			family := name
			for i := 2; ix.byName[family] != nil; i++ {
				family = fmt.Sprintf("%s%d", name, i)
			}
			// NotoSansThai-Bold.ttf is notosansthai, bold; NanumGothic.ttf is nanumgothic, "";
			// Foo-Bar.ttf is foo-bar, not FooBar-Bold.ttf's foobar.
			base := strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))
			m := fontStyleName.FindStringSubmatch(strings.ToLower(base))
			stem := filepath.Join(filepath.Dir(p), strings.TrimRight(m[1], "-_ "))
			f := &fontFile{path: p, family: family, stem: stem}
			ix.fallbacks, ix.byName[family] = append(ix.fallbacks, f), f
			style := strings.TrimSuffix(m[2], "regular")
			if key := [2]string{f.stem, style}; ix.faces[key] == nil {
				ix.faces[key] = f
			}
		}
	}
	return ix
}

// fontStyles are the styles a Go family asks of a fallback font, in the order tried (as
// CSS matches a weight above 500, the labels take bold where there is no semi-bold).
var fontStyles = map[string][]string{"GoBold": {"bold"}, "GoMedium": {"semibold", "bold"}, "GoItalic": {"italic"}}

// styled is fallback font f's face in the Go family's style where one beside f draws r, else f.
func (ix *fontIndex) styled(f *fontFile, family string, r rune) *fontFile {
	if f == nil {
		return nil
	}
	for _, style := range fontStyles[family] {
		if v := ix.faces[[2]string{f.stem, style}]; v != nil && v.covers(r) {
			return v
		}
	}
	return f
}

// fallbackRank orders the fonts of a folder: regular Noto Sans (sans serif like the Go
// fonts) first; then Droid Sans Fallback (Chinese and Japanese) before Nanum Gothic
// (Korean, with fewer ideographs); then other regular faces; the styled faces last.
func fallbackRank(path string) int {
	name := strings.ToLower(strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
	switch {
	case styledFontName.MatchString(name):
		return 5
	case strings.HasPrefix(name, "notosans"):
		return 0
	case name == "droidsansfallbackfull" || name == "droidsansfallback":
		return 1
	case strings.HasPrefix(name, "nanumgothic"):
		return 2
	case strings.HasPrefix(name, "noto"), strings.HasPrefix(name, "dejavusans"):
		return 3
	}
	return 4
}

var styledFontName = regexp.MustCompile("bold|italic|oblique|light|thin|black|medium|semi|extra|condensed|narrow|mono|coding|display")

// fontStyleName splits a lower-case family name into its stem and style.
var fontStyleName = regexp.MustCompile("^(.*?)((?:semi)?bold(?:italic)?|italic|regular)?$")

// notInFamily matches a file name's extension and every character but ASCII letters and digits.
var notInFamily = regexp.MustCompile(`\.[^.]*$|[^A-Za-z0-9]`)

// fallbackFor returns the fallback font that draws r: prefer where it has r (as a mark
// without an advance, for a mark: the keycap U+20E3 is one in Noto Sans Symbols, a symbol
// in Noto Sans Symbols2), else the first that has it, else nil.
func (ix *fontIndex) fallbackFor(r rune, prefer *fontFile) *fontFile {
	if !unicode.IsGraphic(r) {
		return nil
	}
	if prefer != nil && prefer.covers(r) {
		if _, mark := prefer.measured().marks[r]; mark || !unicode.In(r, unicode.Mn, unicode.Me) {
			return prefer
		}
	}
	for _, f := range ix.fallbacks {
		if f.covers(r) {
			return f
		}
	}
	return nil
}

func (f *fontFile) file() ([]byte, error) {
	if f.ttf != nil {
		return f.ttf, nil
	}
	return os.ReadFile(f.path)
}

// covers reports whether the font has a glyph for r; a file fpdf cannot embed has none.
func (f *fontFile) covers(r rune) bool {
	f.coverOnce.Do(func() {
		sf := f.parse()
		if sf == nil {
			return
		}
		var sb sfnt.Buffer
		f.cover = make([]uint64, 0x10000/64)
		for c := rune(0x20); c <= 0xFFFF; c++ {
			if g, err := sf.GlyphIndex(&sb, c); err == nil && g != 0 {
				f.cover[c/64] |= 1 << (c % 64)
			}
		}
	})
	return f.cover != nil && r >= 0 && r <= 0xFFFF && f.cover[r/64]&(1<<(r%64)) != 0
}

// measured takes the font's depth and marks, once; of blocks whose glyphs fill one square
// (CJK ideographs, Hangul) one character in 64: all of Droid Sans Fallback's take a second.
func (f *fontFile) measured() *fontFile {
	f.measureOnce.Do(func() {
		f.marks = map[rune]markBox{}
		sf := f.parse()
		if sf == nil {
			return
		}
		var sb sfnt.Buffer
		em := fixed.I(int(sf.UnitsPerEm()))
		u := float64(em)
		for c := rune(0x20); c <= 0xFFFF; c++ {
			square := c >= 0x3400 && c <= 0x9FFF || c >= 0xAC00 && c <= 0xD7A3 || c >= 0xF900 && c <= 0xFAFF
			if !f.covers(c) || !unicode.In(c, unicode.L, unicode.M) || square && c%64 != 0 {
				continue
			}
			g, _ := sf.GlyphIndex(&sb, c)                               // found, as covers(c)
			b, adv, err := sf.GlyphBounds(&sb, g, em, font.HintingNone) // y grows downwards
			if err != nil {
				continue
			}
			f.depth = max(f.depth, float64(b.Max.Y)/u)
			if unicode.In(c, unicode.Mn, unicode.Me) && adv == 0 && b.Max.X > b.Min.X {
				f.marks[c] = markBox{float64(b.Min.X) / u, float64(b.Max.X) / u, float64(-b.Max.Y) / u, float64(-b.Min.Y) / u}
			}
		}
	})
	return f
}

// parse reads and parses the font, nil where fpdf could not embed it: one TrueType font
// (glyf, not CFF) with the tables fpdf reads and a format 4 Unicode character map.
func (f *fontFile) parse() *sfnt.Font {
	ttf, err := f.file()
	if err != nil {
		return nil
	}
	sf, err := sfnt.Parse(ttf) // one font, its tables inside the file
	if err != nil {
		return nil
	}
	be16, be32 := binary.BigEndian.Uint16, binary.BigEndian.Uint32
	tables := map[string][]byte{}
	for i := range int(be16(ttf[4:])) {
		rec := ttf[12+16*i:]
		tables[string(rec[:4])] = ttf[be32(rec[8:]):][:be32(rec[12:])]
	}
	for _, t := range []string{"head", "hhea", "hmtx", "maxp", "name", "OS/2", "post", "cmap", "glyf", "loca"} {
		if tables[t] == nil {
			return nil
		}
	}
	cmap := tables["cmap"] // with its header and records, as sfnt.Parse checks
	for i := range int(be16(cmap[2:])) {
		rec := cmap[4+8*i:]
		platform, encoding, off := be16(rec), be16(rec[2:]), int(be32(rec[4:]))
		if (platform == 3 && encoding == 1 || platform == 0) && off+2 <= len(cmap) && be16(cmap[off:]) == 4 {
			return sf
		}
	}
	return nil
}

// addFont adds a font to the document once; one that can no longer be read reports false.
// A Go font is added as its 8-bit face, or as its UTF-8 face alone (face) where s, the first
// text it draws, has characters beyond the 8-bit face's that it has (another script).
func (l *pdfLayout) addFont(f *fontFile, s string) bool {
	if l.files[f.family] != nil {
		return true
	}
	ttf, err := f.file()
	if err != nil {
		return false
	}
	l.files[f.family], l.drawnFrom[f.family] = ttf, f
	switch {
	case f.ttf == nil:
		l.pdf.AddUTF8FontFromBytes(f.family, "", ttf)
	case strings.ContainsFunc(s, func(r rune) bool { return winAnsiByte(r) == 0 && f.covers(r) }):
		l.face(f.family, true)
	default:
		def, z := f.winAnsiFace()
		l.pdf.AddFontFromBytes(f.family, "", def, z)
	}
	return true
}

// winAnsiFace returns a Go font's 8-bit face, made once: the font cut to WinAnsiEncoding and
// compressed, with fpdf's definition (the whole font's widths and descriptor). A document adds
// it for the cost of reading that; a UTF-8 font costs fpdf a parse and a subset per document.
func (f *fontFile) winAnsiFace() (def, z []byte) {
	f.winAnsiOnce.Do(func() {
		pdf := fpdf.New("P", "pt", "A4", "")
		pdf.AddUTF8FontFromBytes(f.family, "", f.ttf)
		pdf.SetFont(f.family, "", 10)
		cutset, widths := []rune{}, make([]int, 256)
		for b := range 256 {
			if r := charmap.Windows1252.DecodeByte(byte(b)); winAnsiByte(r) != 0 {
				cutset, widths[b] = append(cutset, r), pdf.GetStringSymbolWidth(string(r))
			}
		}
		ttf := fpdf.UTF8CutFont(f.ttf, string(cutset))
		var buf bytes.Buffer
		zw := zlib.NewWriter(&buf)
		_, _ = zw.Write(ttf)
		_ = zw.Close()
		desc := pdf.GetFontDesc(f.family, "")
		desc.Flags = desc.Flags&^4 | 32 // not symbolic: readers map codes by WinAnsiEncoding
		f.winAnsiDef, _ = json.Marshal(map[string]any{"Tp": "TrueType", "Desc": desc, "Cw": widths,
			"Name": strings.ToLower(f.family), "File": f.family + ".z", "OriginalSize": len(ttf)})
		f.winAnsiZ, f.winAnsiWidths = buf.Bytes(), widths
	})
	return f.winAnsiDef, f.winAnsiZ
}

// winAnsiByte is r's code in the Go fonts' 8-bit faces (Windows-1252, PDF's WinAnsiEncoding),
// or 0: a control, or the no-break space, which readers copy as a space (a soft hyphen: "-").
func winAnsiByte(r rune) byte {
	if b, ok := charmap.Windows1252.EncodeRune(r); ok && !unicode.IsControl(r) && r != '\u00A0' {
		return b
	}
	return 0
}

// face is the face of font that draws a character: a Go font's 8-bit face, unless the
// character is beyond it (wide) or its UTF-8 face is in already (fewer text operations).
func (l *pdfLayout) face(font string, wide bool) string {
	f := l.drawnFrom[font]
	if f == nil || f.ttf == nil || !wide && l.files[f.unicode] == nil {
		return font
	}
	if l.files[f.unicode] == nil {
		l.pdf.AddUTF8FontFromBytes(f.unicode, "", f.ttf)
		l.files[f.unicode], l.drawnFrom[f.unicode] = f.ttf, f
	}
	return f.unicode
}

// addVariant adds, once, the font name: family's font with a character map (withCmap) giving
// each character of glyphOf the glyph of the one it maps to, so that the text layer holds the
// characters drawn (a bracket mirrored, an Arabic joined form); it reports if it is there.
func (l *pdfLayout) addVariant(name, family string, glyphOf map[rune]rune) bool {
	if f, seen := l.drawnFrom[name]; seen {
		return f != nil
	}
	variant, err := withCmap(l.files[family], glyphOf)
	if err != nil {
		l.drawnFrom[name] = nil // tried: not again
		return false
	}
	l.pdf.AddUTF8FontFromBytes(name, "", variant)
	l.drawnFrom[name] = l.drawnFrom[family]
	return true
}

// withCmap returns ttf with a character map, the format 4 one fpdf reads, of glyphOf's
// characters only, a segment each, appended to the file: fpdf does not check checksums.
func withCmap(ttf []byte, glyphOf map[rune]rune) ([]byte, error) {
	sf, err := sfnt.Parse(ttf)
	if err != nil {
		return nil, err
	}
	var sb sfnt.Buffer
	u16 := binary.BigEndian.AppendUint16
	var codes, deltas []byte // a segment per character: its code, its glyph less its code
	for _, c := range slices.Sorted(maps.Keys(glyphOf)) {
		if g, err := sf.GlyphIndex(&sb, glyphOf[c]); err == nil && g != 0 && c < 0xFFFF {
			codes, deltas = u16(codes, uint16(c)), u16(deltas, uint16(g)-uint16(c)) // modulo 65536
		}
	}
	codes, deltas = u16(codes, 0xFFFF), u16(deltas, 1) // the closing segment, to glyph 0
	n := len(codes) / 2
	e := bits.Len(uint(n)) - 1                           // 2^e: the largest power of two ≤ n
	searchRange := 2 << e                                // 2 × 2^e
	table := []byte{0, 0, 0, 1, 0, 3, 0, 1, 0, 0, 0, 12} // version, a subtable: Windows, Unicode, at 12
	for _, v := range []int{4, 16 + 8*n, 0, 2 * n, searchRange, e, 2*n - searchRange} {
		table = u16(table, uint16(v)) // format, length, language, segments×2, search range ...
	}
	// End codes, a reserved 0, start codes (the same), deltas, no range offsets.
	table = slices.Concat(table, codes, []byte{0, 0}, codes, deltas, make([]byte, 2*n))
	out := slices.Concat(ttf, make([]byte, (4-len(ttf)%4)%4)) // the new table 4-byte aligned
	for i := range int(binary.BigEndian.Uint16(out[4:])) {
		if rec := out[12+16*i:]; string(rec[:4]) == "cmap" {
			binary.BigEndian.PutUint32(rec[8:], uint32(len(out)))
			binary.BigEndian.PutUint32(rec[12:], uint32(len(table)))
		}
	}
	return append(out, table...), nil
}

// The Unicode bidirectional algorithm (UAX #9), pdf.go's own for text without explicit
// embeddings, overrides or isolates (pdfText drops their controls): x/text's bidi supplies the
// classes and brackets, but its Ordering reports runs without their levels, pairs brackets
// wrongly and panics on an empty paragraph (v0.44.0). bidi_test.go runs Unicode's tests on it.

// bidiLevels resolves the embedding levels of one paragraph, as one line.
func bidiLevels(rs []rune, fallback int8) (levels []int8, paraLevel int8) {
	classes, rtl := make([]bidi.Class, len(rs)), false
	for i, r := range rs {
		p, _ := bidi.LookupRune(r)
		classes[i] = p.Class()
		rtl = rtl || classes[i] == bidi.R || classes[i] == bidi.AL || classes[i] == bidi.AN
	}
	if paraLevel = paragraphLevel(classes, fallback); paraLevel == 0 && !rtl {
		return make([]int8, len(rs)), 0 // nothing right to left: every level is 0
	}
	return resolveLevels(rs, classes, paraLevel), paraLevel
}

// paragraphLevel is 0 (left to right) or 1 by the first strong character (P2, P3).
func paragraphLevel(classes []bidi.Class, fallback int8) int8 {
	for _, c := range classes {
		switch c {
		case bidi.L:
			return 0
		case bidi.R, bidi.AL:
			return 1
		}
	}
	return fallback
}

// resolveLevels resolves, as one line, the levels at paraLevel of characters rs (runes of no
// bracket will do) of the given classes, none explicit: BN, which X9 removes, takes the level
// before it (at the start paraLevel's), the others go through W1–W7, N0–N2, I1, I2 and L1.
func resolveLevels(rs []rune, classes []bidi.Class, paraLevel int8) []int8 {
	types, keptRunes := []bidi.Class{}, []rune{}
	for i, c := range classes {
		if c != bidi.BN {
			types, keptRunes = append(types, c), append(keptRunes, rs[i])
		}
	}
	e := [2]bidi.Class{bidi.L, bidi.R}[paraLevel] // the embedding direction, sos and eos
	orig := slices.Clone(types)
	resolveWeak(types, e)
	resolveBrackets(keptRunes, types, orig, e)
	resolveNeutrals(types, e)
	// I1 and I2 on types now L, R, EN or AN, then L1: separators, and the white space before
	// them or at the line's end, take the paragraph's level.
	keptLevels, trailing := make([]int8, len(types)), true
	for i := len(types) - 1; i >= 0; i-- {
		switch {
		case orig[i] == bidi.S || orig[i] == bidi.B:
			keptLevels[i], trailing = paraLevel, true
		case orig[i] == bidi.WS && trailing:
			keptLevels[i] = paraLevel
		case types[i] == bidi.L:
			keptLevels[i], trailing = 2*paraLevel, false
		case types[i] == bidi.R:
			keptLevels[i], trailing = 1, false
		default:
			keptLevels[i], trailing = 2, false
		}
	}
	levels, level := make([]int8, len(classes)), paraLevel
	for i, c := range classes {
		if c != bidi.BN {
			level, keptLevels = keptLevels[0], keptLevels[1:]
		}
		levels[i] = level
	}
	return levels
}

// resolveWeak applies W1–W7; sos is the type before the start.
func resolveWeak(types []bidi.Class, sos bidi.Class) {
	prev, lastStrong := sos, sos
	for i, t := range types {
		if t == bidi.NSM { // W1: a mark takes the type of the character before it
			t = prev
		}
		prev = t
		if t == bidi.L || t == bidi.R || t == bidi.AL {
			lastStrong = t
		}
		// W2: European numbers after Arabic letters are Arabic numbers; W3: Arabic letters are R.
		if t == bidi.EN && lastStrong == bidi.AL {
			t = bidi.AN
		} else if t == bidi.AL {
			t = bidi.R
		}
		types[i] = t
	}
	// W4: one separator between two numbers of the same kind joins them.
	for i := 1; i+1 < len(types); i++ {
		prev, next := types[i-1], types[i+1]
		if prev == next && (types[i] == bidi.ES && prev == bidi.EN || types[i] == bidi.CS && (prev == bidi.EN || prev == bidi.AN)) {
			types[i] = prev
		}
	}
	// W5: terminators (%, $, °) next to European numbers are numbers, before them and after.
	for i, t := range types {
		if t != bidi.EN {
			continue
		}
		for j := i - 1; j >= 0 && types[j] == bidi.ET; j-- {
			types[j] = bidi.EN
		}
		for j := i + 1; j < len(types) && types[j] == bidi.ET; j++ {
			types[j] = bidi.EN
		}
	}
	// W6: other separators and terminators are neutral; W7: European numbers after L are L.
	lastStrong = sos
	for i, t := range types {
		switch t {
		case bidi.ES, bidi.ET, bidi.CS:
			types[i] = bidi.ON
		case bidi.L, bidi.R:
			lastStrong = t
		case bidi.EN:
			if lastStrong == bidi.L {
				types[i] = bidi.L
			}
		}
	}
}

// strongDir is a type's direction for N0–N2 (numbers are R), ON for a neutral.
func strongDir(t bidi.Class) bidi.Class {
	switch t {
	case bidi.L:
		return bidi.L
	case bidi.R, bidi.AL, bidi.EN, bidi.AN:
		return bidi.R
	}
	return bidi.ON
}

// mirrorOf maps each character drawn mirrored in right-to-left text (L4), the paired
// brackets and the angle quotation marks, to the one whose glyph it takes.
var mirrorOf = func() map[rune]rune {
	mirror := map[rune]rune{'<': '>', '>': '<', '«': '»', '»': '«', '‹': '›', '›': '‹'}
	for r := range rune(0x10000) {
		if p, _ := bidi.LookupRune(r); p.IsBracket() {
			// Its partner (BidiBrackets.txt): x/text's ReverseString mirrors a paired bracket.
			mirror[r] = []rune(bidi.ReverseString(string(r)))[0]
		}
	}
	return mirror
}()

// canonicalBracket maps the brackets with a canonical decomposition to it (BD16).
var canonicalBracket = map[rune]rune{'\u2329': '\u3008', '\u232A': '\u3009'}

// bracketPairsOf finds the bracket pairs (BD16: at most 63 open at once), canonical
// equivalents paired (U+2329 with U+3009), in the order of their opening brackets. Every
// bracket is still ON, as BD16 asks: only an override, dropped here, changes its class.
func bracketPairsOf(rs []rune) [][2]int {
	stack, pairs := []int{}, [][2]int{} // stack: the opening brackets still open
	for i, r := range rs {
		p, _ := bidi.LookupRune(r)
		if !p.IsBracket() {
			continue
		}
		if p.IsOpeningBracket() {
			if len(stack) == 63 {
				break
			}
			stack = append(stack, i)
			continue
		}
		opener := mirrorOf[r] // a paired bracket's partner
		opener = cmp.Or(canonicalBracket[opener], opener)
		for k := len(stack) - 1; k >= 0; k-- {
			if o := rs[stack[k]]; cmp.Or(canonicalBracket[o], o) == opener {
				pairs, stack = append(pairs, [2]int{stack[k], i}), stack[:k]
				break
			}
		}
	}
	slices.SortFunc(pairs, func(a, b [2]int) int { return cmp.Compare(a[0], b[0]) })
	return pairs
}

// resolveBrackets applies N0: a bracket pair takes the embedding direction e where the text
// inside has it; else the other one found inside if the text before the pair has it, else e.
func resolveBrackets(rs []rune, types, orig []bidi.Class, e bidi.Class) {
	for _, p := range bracketPairsOf(rs) {
		dir := bidi.ON
		for _, t := range types[p[0]+1 : p[1]] {
			if d := strongDir(t); d != bidi.ON && dir != e {
				dir = d
			}
		}
		if dir == bidi.ON {
			continue
		}
		before := p[0] - 1 // the strong type before the pair, if any (else sos: e)
		for before >= 0 && strongDir(types[before]) == bidi.ON {
			before--
		}
		if dir != e && (before < 0 || strongDir(types[before]) != dir) {
			dir = e
		}
		for _, at := range p {
			types[at] = dir
			for k := at + 1; k < len(types) && orig[k] == bidi.NSM; k++ {
				types[k] = dir
			}
		}
	}
}

// resolveNeutrals applies N1 and N2: a run of neutrals between two strong types of the
// same direction takes it; otherwise the embedding direction e (also sos and eos).
func resolveNeutrals(types []bidi.Class, e bidi.Class) {
	dirAt := func(k int) bidi.Class {
		if k < 0 || k >= len(types) {
			return e
		}
		return strongDir(types[k])
	}
	for i := 0; i < len(types); i++ {
		j := i
		for dirAt(j) == bidi.ON {
			j++
		}
		dir := e
		if dirAt(i-1) == dirAt(j) {
			dir = dirAt(j)
		}
		for k := i; k < j; k++ {
			types[k] = dir
		}
		i = max(i, j-1)
	}
}

// visualOrder returns the indices of a line's characters, given their levels, in visual
// order (L2): from the highest level down to 1, every run at that level or higher reversed.
func visualOrder(levels []int8) []int {
	order, highest := make([]int, len(levels)), int8(0)
	for i, l := range levels {
		order[i], highest = i, max(highest, l)
	}
	for level := highest; level > 0; level-- {
		for i := 0; i < len(order); i++ {
			j := i
			for j < len(order) && levels[order[j]] >= level {
				j++
			}
			slices.Reverse(order[i:j])
			i = j
		}
	}
	return order
}
