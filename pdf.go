package main

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-pdf/fpdf"
	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goitalic"
	"golang.org/x/image/font/gofont/gomedium"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
	"golang.org/x/text/unicode/bidi"
	"golang.org/x/text/unicode/norm"
	"golang.org/x/text/unicode/runenames"
)

// pdf.go reads top down, in four sections, each opened by a comment that says what it is
// for and which tests prove it:
//
//  1. The document: the export endpoint and the layout docs/SPEC.md §4 describes (the
//     page and its margins, the title, categories, fields by type, the textarea frame,
//     the rule under a value, page breaks). A reader may stop there.
//  2. Text shaping: a paragraph's characters made glyphs (Arabic letters joined, a name
//     for what no font draws), marks placed over their bases, lines broken, a line drawn.
//  3. Fonts: the Go fonts, the fallback fonts found on the system and their styled faces,
//     and the variants of them made for a document.
//  4. Bidirectional text: the Unicode bidirectional algorithm, pdf.go's own.

// 1. The document: docs/SPEC.md §4's layout (docs/DESIGN.md, "PDF").
//
// GET /responses/{responseId}/export/pdf builds the whole document in memory
// (writeResponsePDF), then sends it. The page is A4 in points, with 50 pt margins and a
// 500 pt content width; the title is centred at 18 pt bold; a category's name, where it
// has one, at 14 pt bold; a field's label at 12 pt semi-bold, its description at 9 pt
// italic, its value at 11 pt (formatValue: a date as DD/MM/YYYY, Yes or No): a
// textarea's inside a frame at least 30 pt high, any other over a rule that passes below
// its descenders (ruleY). The layout breaks its own pages (flow): a label stays with its
// description and its value's first line, a heading with its first field, and a document
// stops at pdfMaxPages.
//
// Proved by TestExportPDFContent, TestExportPDFHeaders, TestContentDisposition,
// FuzzContentDisposition, TestExportPDFErrors, TestExportPDFOnlyUsedFonts,
// TestUsedFontsEmptyDescription, TestExportPDFHostileText, TestExportPDFLongTextarea,
// TestExportPDFPageBreaks, TestExportPDFInvisibleAndEmpty and FuzzPDF (pdf_test.go);
// TestExportPDFKeepWithNext, TestExportPDFContinuedFrame,
// TestExportPDFRuleBelowDescenders and TestExportPDFValueDirection (pdfpages_test.go);
// TestExportPDFTooLong and TestPDFTitleMetadata (pdfbounds_test.go); TestPDFTooLongAnswer
// (limits_test.go).

// Page geometry of docs/SPEC.md, in points.
const (
	pdfMargin       = 50.0
	pdfContentWidth = 500.0
	pdfPadding      = 5.0  // inside a textarea frame
	pdfMinBoxHeight = 30.0 // of a textarea frame
	pdfLineSpacing  = 1.2  // line height as a multiple of the font size
)

// The four Go fonts (docs/DESIGN.md): title and categories bold, labels medium as the
// semi-bold, descriptions italic, values regular.
var pdfFonts = []struct {
	family string
	ttf    []byte
}{
	{"GoBold", gobold.TTF},
	{"GoMedium", gomedium.TTF},
	{"GoItalic", goitalic.TTF},
	{"GoRegular", goregular.TTF},
}

func (s *server) handleExportPDF(w http.ResponseWriter, r *http.Request) error {
	responseID, ok := parseID(r.PathValue("responseId"))
	if !ok {
		return invalid("Invalid response ID")
	}
	op := fmt.Sprintf("generate PDF for response %d", responseID)
	// The whole document is built in memory first, in one of the heavy slots (it is
	// CPU-bound), so that a failure is still a clean JSON error: nothing has been
	// written yet. It then takes its room in s.answers until the client has it.
	release, err := s.heavy.acquire(r.Context(), 1)
	if err != nil {
		return err
	}
	form, values, err := s.store.ResponseExport(r.Context(), responseID)
	var buf bytes.Buffer
	if err == nil {
		err = writeResponsePDF(&buf, form, values, s.now(), s.fonts)
	}
	release()
	switch {
	case errors.Is(err, errPDFTooLong):
		return during(op, &apiError{kind: kindRejected, msg: fmt.Sprintf("PDF would be longer than %d pages", pdfMaxPages), err: err})
	case err != nil:
		return missing(op, err, "Response not found")
	}
	release, err = s.holdAnswer(r.Context(), buf.Len())
	if err != nil {
		return err
	}
	defer release()
	w.Header().Set("Content-Type", "application/pdf")
	w.Header().Set("Content-Disposition", contentDisposition(responseID, form.Title))
	w.Header().Set("Content-Length", fmt.Sprint(buf.Len()))
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(buf.Bytes()) // once bytes are out, docs/SPEC.md ends the stream without a JSON error
	return writeFailed(err)
}

// contentDisposition names a response's PDF response_<id>_<title>.pdf, shown inline
// (docs/SPEC.md §4), with dispositionHeader's rules for names that are not plain tokens.
func contentDisposition(responseID int64, title string) string {
	return dispositionHeader("inline", fmt.Sprintf("response_%d_%s.pdf", responseID, fileTitle(title)))
}

// Bounds of a document, so that its cost follows its input and not what the text expands
// into (docs/DESIGN.md, PDF).
const (
	// pdfMaxPages is far beyond any real form: a form of a few hundred fields with long
	// answers fills tens of pages.
	pdfMaxPages = 1000
	// pdfNameBudget bounds the letters of the names printed for characters no font draws,
	// per document (about 80 emoji names); past it such a character prints as U+FFFD.
	pdfNameBudget = 2000
	// pdfMaxLines is more lines than pdfMaxPages pages hold (56 lines of 11 pt a page):
	// a textarea's layout stops past it, as the document cannot be finished anyway.
	pdfMaxLines = pdfMaxPages * 60
)

// errPDFTooLong is returned, wrapped, for a document that would pass pdfMaxPages.
var errPDFTooLong = errors.New("PDF too long")

// writeResponsePDF lays out the form with the response's values filled in (docs/SPEC.md §4's
// content rules) and writes the finished document to buf. fonts supplies the fallback
// fonts for characters the Go fonts lack. A document that would pass pdfMaxPages is not
// finished: the error wraps errPDFTooLong.
func writeResponsePDF(buf *bytes.Buffer, form FormDetail, values map[int64]*string, now time.Time, fonts *fontIndex) (err error) {
	// fpdf reports most failures through pdf.Err, but some inputs still panic inside it;
	// the text is sanitised below so none should, and this turns any that remains into an
	// error rather than a dead request.
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("pdf layout: %v", v)
		}
	}()
	pdf := newPDF(form, now)
	l := &pdfLayout{pdf: pdf, fonts: fonts, files: map[string][]byte{}, variants: map[string]bool{}, variantOf: map[string]*fallbackFont{}}
	l.newPage()
	l.text(l.paragraph("GoBold", 18, form.Title, "C", false))
	l.moveDown(18)
	for _, c := range form.Categories {
		if l.err != nil {
			break // past pdfMaxPages: the rest would not be drawn
		}
		fields := make([]fieldBlock, len(c.Fields))
		for i, fd := range c.Fields {
			value := ""
			if v := values[fd.ID]; v != nil {
				value = *v
			}
			fields[i] = l.layoutField(fd, value)
		}
		if c.Name != "" {
			heading := l.paragraph("GoBold", 14, c.Name, "L", false)
			// A heading stays on the page of its first field's label and value.
			keep := heading.height()
			if len(fields) > 0 {
				keep += lineHeight(14/2) + fields[0].keepHeight()
			}
			l.keepTogether(keep)
			l.text(heading)
			l.moveDown(14 / 2)
		}
		for _, f := range fields {
			l.field(f)
			l.moveDown(11)
		}
		l.moveDown(11 / 2)
	}
	if l.err != nil {
		return l.err
	}
	if err := pdf.Output(buf); err != nil {
		return fmt.Errorf("pdf output: %w", err)
	}
	return nil
}

// newPDF starts the document of a form: A4 in points, docs/SPEC.md's margins, the
// metadata, and the Go fonts the form prints with.
func newPDF(form FormDetail, now time.Time) *fpdf.Fpdf {
	pdf := fpdf.NewCustom(&fpdf.InitType{OrientationStr: "P", UnitStr: "pt", SizeStr: "A4"})
	pdf.SetMargins(pdfMargin, pdfMargin, pdfMargin)
	// The layout breaks its own pages (pdfLayout.flow), so that it can bound their number
	// and keep a label with its value.
	pdf.SetAutoPageBreak(false, pdfMargin)
	pdf.SetCellMargin(0)
	pdf.SetTitle(pdfTitle(form.Title), false)
	pdf.SetCreator("formsvc", true)
	// Page content goes uncompressed: fpdf makes a new zlib writer, about a megabyte of
	// garbage, for every page, which made a five-page document cost a quarter more than
	// fpdf's floor of embedding the fonts (BenchmarkExportPDF). The fonts, most of a
	// document's bytes, stay compressed; the 50-field document grows from 49 to 74 KB.
	pdf.SetCompression(false)
	pdf.SetCreationDate(now)
	pdf.SetModificationDate(now)
	// fpdf parses and embeds each font afresh in every document, the largest part of its
	// cost, so a font is added only when the document uses it.
	used := usedFonts(form)
	for _, f := range pdfFonts {
		if used[f.family] {
			pdf.AddUTF8FontFromBytes(f.family, "", f.ttf)
		}
	}
	pdf.SetLineWidth(1)
	return pdf
}

// usedFonts names the Go font families a form's document prints with.
func usedFonts(form FormDetail) map[string]bool {
	used := map[string]bool{"GoBold": true} // the title
	for _, c := range form.Categories {
		for _, fd := range c.Fields {
			used["GoMedium"], used["GoRegular"] = true, true
			if fd.Description != nil && *fd.Description != "" {
				used["GoItalic"] = true
			}
		}
	}
	return used
}

// pdfTitle is the document's metadata title, the form's title as typed (control
// characters as spaces, without bidi controls), as the UTF-16BE text string
// of PDF (with its byte order mark), which fpdf's own conversion writes wrongly above
// U+FFFF.
func pdfTitle(title string) string {
	var u []uint16
	for _, r := range pdfText(title, false) {
		if !unicode.Is(unicode.Bidi_Control, r) {
			u = utf16.AppendRune(u, r)
		}
	}
	b := make([]byte, 2, 2+2*len(u))
	b[0], b[1] = 0xFE, 0xFF
	for _, c := range u {
		b = binary.BigEndian.AppendUint16(b, c)
	}
	return string(b)
}

// fieldBlock is one field laid out: its label, its description (none when it has none)
// and its value, underlined or in a frame.
type fieldBlock struct {
	label, description paragraph
	hasDescription     bool
	value              paragraph
	textarea           bool
}

// layoutField lays out a field and its value as docs/SPEC.md §4 prints them.
func (l *pdfLayout) layoutField(fd Field, value string) fieldBlock {
	b := fieldBlock{label: l.paragraph("GoMedium", 12, fd.Label+":", "L", false), textarea: fd.Type == "textarea"}
	// A value or description without letters ("12", a date, "Yes") follows its label's
	// direction: at the right edge under a right-to-left label.
	rtl := b.label.lines[0].rtl
	if fd.Description != nil && *fd.Description != "" {
		b.description, b.hasDescription = l.paragraph("GoItalic", 9, *fd.Description, "L", rtl), true
	}
	if b.textarea {
		b.value = l.textareaLines(value, rtl)
	} else {
		b.value = l.paragraph("GoRegular", 11, formatValue(fd.Type, value), "L", rtl)
	}
	if fd.Type == "boolean" && rtl {
		// Yes and No are the document's words, not the respondent's: they stand where
		// the label's direction puts a value.
		b.value.lines[0].rtl = true
	}
	return b
}

// formatValue turns a stored value into the text printed for its field type.
func formatValue(fieldType, value string) string {
	switch fieldType {
	case "date":
		if t, err := time.Parse("2006-01-02", value); err == nil {
			return t.Format("02/01/2006")
		}
		return value
	case "boolean":
		switch value {
		case "true":
			return "Yes"
		case "false":
			return "No"
		}
		return ""
	default:
		return value
	}
}

// keepHeight is the height of what must share a page: the label, the description, and
// the first line of the value, or the top of the frame (its least height) for a textarea.
func (b fieldBlock) keepHeight() float64 {
	h := b.label.height()
	if b.hasDescription {
		h += b.description.height()
	}
	if b.textarea {
		return h + pdfMinBoxHeight
	}
	return h + lineHeight(11)
}

// field prints a laid-out field, starting a new page first when its label would be parted
// from its value.
func (l *pdfLayout) field(b fieldBlock) {
	l.keepTogether(b.keepHeight())
	l.text(b.label)
	if b.hasDescription {
		l.text(b.description)
	}
	if b.textarea {
		l.textarea(b.value)
		return
	}
	l.text(b.value)
	l.pdf.Line(pdfMargin, l.ruleY(b.value), pdfMargin+pdfContentWidth, l.ruleY(b.value))
}

// ruleY is where the rule under a value just printed goes: at the foot of its last line,
// or lower where a font of that line reaches further down, so that the rule (1 pt
// thick) passes clear below every descender of its fonts.
func (l *pdfLayout) ruleY(value paragraph) float64 {
	foot := l.pdf.GetY()
	baseline := baselineBelow(foot-lineHeight(value.size), value.size)
	depth := 0.0
	for _, g := range value.lines[len(value.lines)-1].glyphs {
		if f := l.variantOf[g.font]; f != nil {
			depth = max(depth, f.letterDepth())
			continue
		}
		depth = max(depth, l.fonts.depth(g.font))
	}
	return max(foot, baseline+depth*value.size+1)
}

// pdfLayout draws the pieces of a response document, flowing down the page. It does its
// own line breaking, because a line may mix fonts (fpdf's MultiCell and SplitText measure
// with one font) and right-to-left text is reordered per line.
type pdfLayout struct {
	pdf   *fpdf.Fpdf
	fonts *fontIndex
	files map[string][]byte // the files of the fallback fonts in this document, by family
	// variants are the families of the fonts' variants (mirrored, joinedForm) tried in
	// this document, true where added; variantOf gives the fallback font of each joined
	// form's variant, whose depth it has.
	variants  map[string]bool
	variantOf map[string]*fallbackFont
	sb        sfnt.Buffer // for cmap look-ups in the Go fonts
	names     int         // letters of character names printed, against pdfNameBudget
	font      string      // the font selected (setFont), and its size
	size      float64
	at        []float64 // drawLine's, kept for the next line
	pos       []int     // drawLine's, kept for the next line
	err       error     // errPDFTooLong, wrapped, once a page past the bound was asked for
}

// paragraph is text laid out in lines of one size, ready to be drawn: at least one line,
// which may be empty.
type paragraph struct {
	lines []textLine
	size  float64
	align string // "C" centres the lines; otherwise a line goes by its direction
}

func (p paragraph) height() float64 { return float64(len(p.lines)) * lineHeight(p.size) }

func lineHeight(size float64) float64 { return size * pdfLineSpacing }

func (l *pdfLayout) moveDown(size float64) { l.pdf.Ln(lineHeight(size)) }

func (l *pdfLayout) bottom() float64 {
	_, pageHeight := l.pdf.GetPageSize()
	return pageHeight - pdfMargin
}

// setFont selects a font, unless it is the one selected: fpdf writes a font selection
// into the page for every call, wanted or not.
func (l *pdfLayout) setFont(family string, size float64) {
	if family != l.font || size != l.size {
		l.pdf.SetFont(family, "", size)
		l.font, l.size = family, size
	}
}

// newPage starts a page, unless the document has reached pdfMaxPages: then it records
// errPDFTooLong and reports false, and the layout stops drawing.
func (l *pdfLayout) newPage() bool {
	if l.err != nil {
		return false
	}
	if l.pdf.PageNo() >= pdfMaxPages {
		l.err = fmt.Errorf("more than %d pages: %w", pdfMaxPages, errPDFTooLong)
		return false
	}
	l.pdf.AddPage()
	return true
}

// keepTogether starts a new page when height no longer fits on this one, unless the page
// is still empty (what does not fit on an empty page breaks where it must).
func (l *pdfLayout) keepTogether(height float64) {
	if y := l.pdf.GetY(); y+height > l.bottom() && y > pdfMargin {
		l.newPage()
	}
}

// paragraph lays out text of one font and size over the content width; text without
// letters is right to left where rtl is set.
func (l *pdfLayout) paragraph(font string, size float64, s, align string, rtl bool) paragraph {
	lines := l.layout(font, size, pdfText(s, false), pdfContentWidth, rtl)
	if len(lines) == 0 {
		lines = []textLine{{rtl: rtl}}
	}
	return paragraph{lines: lines, size: size, align: align}
}

// textareaLines lays out a textarea's value, each of its own lines a paragraph, inside
// the frame's padding; one without letters is right to left where rtl is set. An empty
// value has no lines.
func (l *pdfLayout) textareaLines(s string, rtl bool) paragraph {
	var lines []textLine
	if s != "" {
		for _, para := range strings.Split(pdfText(s, true), "\n") {
			if len(lines) > pdfMaxLines {
				break // more than the document can hold: drawing fails with errPDFTooLong
			}
			pl := l.layout("GoRegular", 11, para, pdfContentWidth-2*pdfPadding, rtl)
			if len(pl) == 0 {
				pl = []textLine{{}}
			}
			lines = append(lines, pl...)
		}
	}
	return paragraph{lines: lines, size: 11, align: "L"}
}

// text prints a paragraph down the content width, breaking pages as needed.
func (l *pdfLayout) text(p paragraph) {
	l.flow(p.lines, p.size, 0, 0, func(lines []textLine, y, _ float64) {
		for i, line := range lines {
			x := pdfMargin
			switch {
			case p.align == "C":
				x += (pdfContentWidth - line.width) / 2
			case line.rtl:
				x += pdfContentWidth - line.width
			}
			l.drawLine(line, x, y+float64(i)*lineHeight(p.size), p.size)
		}
	})
}

// textarea prints a textarea's lines inside a frame the width of the content, at least
// pdfMinBoxHeight high. Lines that do not fit on the page continue on the next, in a
// frame of their own.
func (l *pdfLayout) textarea(p paragraph) {
	l.flow(p.lines, p.size, pdfPadding, pdfMinBoxHeight, func(lines []textLine, y, height float64) {
		l.pdf.Rect(pdfMargin, y, pdfContentWidth, height, "D")
		for i, line := range lines {
			x := pdfMargin + pdfPadding
			if line.rtl {
				x = pdfMargin + pdfContentWidth - pdfPadding - line.width
			}
			l.drawLine(line, x, y+pdfPadding+float64(i)*lineHeight(p.size), p.size)
		}
	})
}

// flow lays lines of one size down the page from the current position, in pieces that
// fit above the bottom margin, each piece after the first on a new page. A piece is
// padded by padding above and below and at least minHeight high; draw draws it at y,
// height high. A piece that cannot hold even its least height here starts on a new page;
// blank lines at a page break are dropped. Without lines, one piece of the least height
// is drawn.
func (l *pdfLayout) flow(lines []textLine, size, padding, minHeight float64, draw func(lines []textLine, y, height float64)) {
	lh := lineHeight(size)
	for first := true; first || len(lines) > 0; first = false {
		if !first {
			// A piece continued on a new page does not start with blank lines (a
			// textarea's empty lines at the break).
			for len(lines) > 0 && len(lines[0].glyphs) == 0 {
				lines = lines[1:]
			}
			if len(lines) == 0 {
				return
			}
		}
		least := max(minHeight, float64(min(len(lines), 1))*lh+2*padding)
		if !first || l.pdf.GetY()+least > l.bottom() {
			if !l.newPage() {
				return
			}
		}
		y := l.pdf.GetY()
		n := min(len(lines), int((l.bottom()-y-2*padding)/lh+1e-9)) // 1e-9: a line that fits exactly
		height := max(minHeight, float64(n)*lh+2*padding)
		draw(lines[:n], y, height)
		lines = lines[n:]
		l.pdf.SetXY(pdfMargin, y+height)
	}
}

// 2. Text shaping: from a paragraph's characters to a line drawn.
//
// fpdf draws code point by code point, one font to a text operation, and can neither
// shape text nor break lines that mix fonts, so the layout does both itself, in this
// order: pdfText cleans the text (NFC, control characters, line separators); layout
// makes it glyphs (glyphs: Arabic letters joined by shapeArabic, each character drawn in
// the Go font, a fallback font, or as its name), gives them their bidi levels (section
// 4), measures them, puts marks over their bases (placeMarks) and breaks the lines
// (breakLines: after spaces, between Chinese, Japanese and Thai characters, at a soft
// hyphen); drawLine then draws a line in visual order, its text layer in logical order
// (/ActualText where the glyphs drawn are not the characters typed).
//
// Proved by TestPDFTextLineBreaks, FuzzPDFText, TestBreakLines, TestRuneNames and
// TestShapeArabic (bidi_test.go); TestExportPDFBreakCharacters, TestExportPDFMarks,
// TestExportPDFMarkStack, TestExportPDFKeycapsApart, TestExportPDFNameAcrossLines and
// TestExportPDFTextLayer (pdftext_test.go); TestExportPDFScripts,
// TestExportPDFArabicTextarea and TestExportPDFInvisibleAndEmpty (pdf_test.go);
// TestPDFNameBudget and TestExportPDFBoundedExpansion (pdfbounds_test.go).

// pdfText cleans text for layout: it is composed (NFC), invalid UTF-8 becomes U+FFFD,
// control characters become a space, and so do line breaks (LF, CR, CRLF as one, and
// the line and paragraph separators U+2028 and U+2029) unless keepNewlines is set
// (textareas): then they become LF. Characters above U+FFFF stay: fpdf draws none of them, and the layout
// prints what it can instead (pdfLayout.missing).
func pdfText(s string, keepNewlines bool) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	// Composed, as fpdf draws character by character: a letter and its accent in one
	// glyph where the font has it.
	s = norm.NFC.String(s)
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029':
			if keepNewlines {
				b.WriteByte('\n')
			} else {
				b.WriteByte(' ')
			}
		case unicode.IsControl(r):
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// glyph is one character as laid out: the font family that draws it, its embedding level
// of the bidirectional algorithm (odd is right to left) and its advance; a mark drawn
// over its base, and a base widened for a frame (widenForFrame), is moved by dx, and a
// mark raised by rise (placeMarks), in points.
type glyph struct {
	w        float64
	font     string
	r        rune
	src      int32 // the index in its paragraph as typed of the first character it stands for
	chars    int8  // how many it stands for: 2 for a lam-alef ligature, 0 for a base put under a lone mark or a name's later letters
	level    int8
	dx, rise float32
}

// textLine is one line of glyphs in logical order, with the order they are seen in.
type textLine struct {
	glyphs []glyph
	order  []int   // the indices of glyphs in visual (left-to-right) order
	width  float64 // the sum of the glyphs' advances
	rtl    bool    // of a right-to-left paragraph: aligned to the right
	typed  []rune  // the paragraph as typed, which glyphs' src index
}

// layout breaks one paragraph (text without newlines, already through pdfText) into lines
// at most width wide, of the glyphs that glyphs makes of it. The bidirectional
// algorithm gives each glyph its level, and each line is put in visual order; a
// paragraph without a strong character (no letters) is right to left where rtl is set.
func (l *pdfLayout) layout(family string, size float64, para string, width float64, rtl bool) []textLine {
	typed := []rune(para)
	gs := l.glyphs(family, typed)
	if len(gs) == 0 {
		return nil
	}
	rs := make([]rune, len(gs))
	for i, g := range gs {
		rs[i] = g.r
	}
	fallback := int8(0)
	if rtl {
		fallback = 1
	}
	levels, paraLevel := bidiLevels(rs, fallback)
	for i := range gs {
		gs[i].level = levels[i]
	}
	l.measure(gs, size)
	l.placeMarks(gs, size)
	var lines []textLine
	for _, line := range breakLines(gs, width) {
		lineLevels := make([]int8, len(line))
		tl := textLine{glyphs: line, rtl: paraLevel == 1, typed: typed}
		for i, g := range line {
			tl.width += g.w
			lineLevels[i] = g.level
		}
		tl.order = visualOrder(lineLevels)
		lines = append(lines, tl)
	}
	return lines
}

// glyphs turns a paragraph's characters into glyphs in logical order, each knowing the
// index of the character it stands for. Arabic letters take their joined forms
// (shapeArabic); then each character is asked one question at a time: is it a space
// that stays in the fallback font of the glyph before (spaceFace)? does the Go font
// family draw it (goDraws)? is it invisible, and dropped? Otherwise it is drawn from a
// fallback font in the face its place asks for, or printed as its name
// (appendFallback). The one font carried from character to character is run, the
// fallback font of the characters before, which fallbackFor tries first so that a run
// stays in one font.
func (l *pdfLayout) glyphs(family string, typed []rune) []glyph {
	rs, src := shapeArabic(typed)
	gs := make([]glyph, 0, len(rs))
	var run *fallbackFont // the fallback font of the characters before
	for i, r := range rs {
		g := glyph{r: r, font: family, src: src[i], chars: charsAt(typed, src, i)}
		face := l.spaceFace(gs, g)
		switch {
		case face != nil:
			g.font = face.family
			gs = append(gs, g)
		case l.goDraws(family, r):
			gs = append(gs, g)
		case invisible(r):
			// dropped
		default:
			gs, run = l.appendFallback(gs, g, typed, run)
		}
	}
	return gs
}

// charsAt is how many characters as typed rs[i], a character of shapeArabic's, stands
// for, by the index of each in the text as typed (src): 2 for a lam-alef ligature, else 1.
func charsAt(typed []rune, src []int32, i int) int8 {
	if i+1 < len(src) {
		return int8(src[i+1] - src[i])
	}
	return int8(len(typed) - int(src[i]))
}

// spaceFace is the fallback face a space g is drawn in, so that a run of words in a
// fallback font stays one font (a font changes with a text operation): the face that
// drew the glyph before, where that glyph stands for the character just before (none was
// dropped between them) and the face has a space. It is nil for any other character, and
// after a glyph in the paragraph's Go family (a Go font's, or a name's).
func (l *pdfLayout) spaceFace(gs []glyph, g glyph) *fallbackFont {
	if g.r != ' ' || len(gs) == 0 {
		return nil
	}
	before := gs[len(gs)-1]
	if before.font == g.font || before.src+int32(before.chars) != g.src {
		return nil
	}
	face := l.variantOf[before.font] // a joined form, drawn from a variant of its face
	if face == nil {
		face = l.fonts.byName[before.font]
	}
	if face == nil || !face.covers(' ') {
		return nil
	}
	return face
}

// goDraws reports whether the Go font family draws r: every ASCII character, and the
// others its character map has (of the Basic Multilingual Plane, all fpdf draws).
func (l *pdfLayout) goDraws(family string, r rune) bool {
	return r < utf8.RuneSelf || r <= 0xFFFF && l.fonts.goCovers(&l.sb, family, r)
}

// invisible reports a character that has no glyph of its own and only steers others.
// The combining grapheme joiner (U+034F) is among them: NFC (golang.org/x/text/unicode/norm)
// inserts one after every 30 marks on a base, Unicode's stream-safe text format
// (UAX #15), and fonts that have it draw it as a dashed box.
func invisible(r rune) bool {
	return unicode.In(r, unicode.Variation_Selector, unicode.Join_Control, unicode.Bidi_Control) ||
		r == '\u200B' || r == '\u2060' || r == '\uFEFF' || r == '\u034F'
}

// appendFallback appends the glyphs of g, a character its Go family (g.font) lacks, and
// returns the run's fallback font after it. A mark without a base first gets a base
// (loneMark). The character is drawn from the face fallbackFace finds, in its joined
// form where it is one of an Arabic letter (joinedForm), else as it is; where no font
// draws it, it is printed as its name (appendName), and the run keeps its font.
func (l *pdfLayout) appendFallback(gs []glyph, g glyph, typed []rune, run *fallbackFont) ([]glyph, *fallbackFont) {
	if loneMark(gs, g.r) {
		// A mark without a base is drawn over a no-break space, its base's place,
		// not over the margin or the space before.
		gs = append(gs, glyph{r: '\u00A0', font: g.font, src: g.src})
	}
	font, face := l.fallbackFace(g.font, g.r, run)
	if face == nil {
		return l.appendName(gs, g), run
	}
	if joined, ok := l.joinedForm(face, g.r, typed, g.src, g.chars); ok {
		return append(gs, joined...), font
	}
	g.font = face.family
	return append(gs, g), font
}

// loneMark reports a mark (Mn, Me) without a base: at the start of the text, or after a
// space.
func loneMark(gs []glyph, r rune) bool {
	return unicode.In(r, unicode.Mn, unicode.Me) && (len(gs) == 0 || gs[len(gs)-1].r == ' ')
}

// fallbackFace finds the fallback font that draws r, the run's font first (fallbackFor),
// and the face of it that draws r in the style the Go family asks for (styled), added to
// the document (addFont). face is nil where no font draws r, or where its file can no
// longer be read.
func (l *pdfLayout) fallbackFace(family string, r rune, run *fallbackFont) (font, face *fallbackFont) {
	font = l.fonts.fallbackFor(r, run)
	if font == nil {
		return nil, nil
	}
	if face = font.styled(family, r); !l.addFont(face) {
		return nil, nil
	}
	return font, face
}

// appendName appends the glyphs of the name printed for g's character (missing), in g's
// font. The name's first glyph stands for the character, the others for nothing: a name
// broken over two lines gives its character to the first.
func (l *pdfLayout) appendName(gs []glyph, g glyph) []glyph {
	for k, c := range []rune(l.missing(g.r)) {
		n := glyph{r: c, font: g.font, src: g.src}
		if k == 0 {
			n.chars = g.chars
		}
		gs = append(gs, n)
	}
	return gs
}

// missing is the text printed for a character no font can draw: its name (runeName) while
// the document's names stay within pdfNameBudget, U+FFFD past it, so that a long run of
// such characters costs a glyph each, as any other character does.
func (l *pdfLayout) missing(r rune) string {
	name := runeName(r)
	if l.names+len(name) > pdfNameBudget {
		return "\uFFFD"
	}
	l.names += len(name)
	return name
}

// runeName is the text printed for a character no font can draw: its Unicode name in
// brackets, or its code point when it has none.
func runeName(r rune) string {
	if name := runenames.Name(r); name != "" && !strings.HasPrefix(name, "<") {
		return "[" + name + "]"
	}
	return fmt.Sprintf("[U+%04X]", r)
}

// joinedForm draws an Arabic presentation form r (shapeArabic's, for the typed letter at
// src) as the letter typed, in a variant of font f whose character map gives each letter
// the glyph of that form (variant): the text layer then holds the letters, not the
// forms, for every reader. ok is false where r is no such form (a lam-alef ligature,
// which stands for two letters, stays the ligature) or f has no such variant; r is then
// drawn as it is.
func (l *pdfLayout) joinedForm(f *fallbackFont, r rune, typed []rune, src int32, chars int8) (gs []glyph, ok bool) {
	if !(r >= 0xFB50 && r <= 0xFDFF || r >= 0xFE70 && r <= 0xFEFF) || chars != 1 {
		return nil, false
	}
	letter := typed[src]
	form, ok := arabicForms[letter]
	if !ok || r < form.first || r > form.first+3 {
		return nil, false
	}
	kind := [4]string{"", "fina", "init", "medi"}[r-form.first]
	if kind == "" {
		return []glyph{{r: letter, font: f.family, src: src, chars: chars}}, f.covers(letter)
	}
	family, ok := l.variant(f, kind)
	return []glyph{{r: letter, font: family, src: src, chars: chars}}, ok
}

// arabicForm gives a letter's presentation forms in Arabic Presentation Forms-B: first
// is the isolated form, then come final, initial and medial; n is 2 for a letter that
// joins only to the letter before it (alef, dal, reh, waw ...) and 4 for one that joins
// on both sides, 1 for hamza, which joins to none.
type arabicForm struct {
	first rune
	n     int
}

// arabicForms is the joining table of the basic Arabic letters (U+0621–U+064A) and of
// the Persian and Urdu letters most used.
var arabicForms = map[rune]arabicForm{
	0x0621: {0xFE80, 1}, 0x0622: {0xFE81, 2}, 0x0623: {0xFE83, 2}, 0x0624: {0xFE85, 2},
	0x0625: {0xFE87, 2}, 0x0626: {0xFE89, 4}, 0x0627: {0xFE8D, 2}, 0x0628: {0xFE8F, 4},
	0x0629: {0xFE93, 2}, 0x062A: {0xFE95, 4}, 0x062B: {0xFE99, 4}, 0x062C: {0xFE9D, 4},
	0x062D: {0xFEA1, 4}, 0x062E: {0xFEA5, 4}, 0x062F: {0xFEA9, 2}, 0x0630: {0xFEAB, 2},
	0x0631: {0xFEAD, 2}, 0x0632: {0xFEAF, 2}, 0x0633: {0xFEB1, 4}, 0x0634: {0xFEB5, 4},
	0x0635: {0xFEB9, 4}, 0x0636: {0xFEBD, 4}, 0x0637: {0xFEC1, 4}, 0x0638: {0xFEC5, 4},
	0x0639: {0xFEC9, 4}, 0x063A: {0xFECD, 4}, 0x0641: {0xFED1, 4}, 0x0642: {0xFED5, 4},
	0x0643: {0xFED9, 4}, 0x0644: {0xFEDD, 4}, 0x0645: {0xFEE1, 4}, 0x0646: {0xFEE5, 4},
	0x0647: {0xFEE9, 4}, 0x0648: {0xFEED, 2}, 0x0649: {0xFEEF, 2}, 0x064A: {0xFEF1, 4},
	// Persian and Urdu letters, from Arabic Presentation Forms-A (noon ghunna, written at
	// the end of a word, has only its isolated and final forms there).
	0x0679: {0xFB66, 4}, 0x067E: {0xFB56, 4}, 0x0686: {0xFB7A, 4}, 0x0688: {0xFB88, 2},
	0x0691: {0xFB8C, 2}, 0x0698: {0xFB8A, 2}, 0x06A9: {0xFB8E, 4}, 0x06AF: {0xFB92, 4},
	0x06BA: {0xFB9E, 2}, 0x06BE: {0xFBAA, 4}, 0x06C1: {0xFBA6, 4}, 0x06CC: {0xFBFC, 4},
	0x06D2: {0xFBAE, 2},
}

// lamAlef gives the isolated lam-alef ligature of lam followed by each alef; the final
// form follows it.
var lamAlef = map[rune]rune{0x0622: 0xFEF5, 0x0623: 0xFEF7, 0x0625: 0xFEF9, 0x0627: 0xFEFB}

const tatweel = 0x0640 // joins on both sides and has no forms of its own

// shapeArabic replaces the Arabic letters of a paragraph (logical order) by the
// presentation form their neighbours call for (isolated, final, initial, medial) and lam
// followed by alef by their ligature: fpdf draws characters one by one and cannot shape.
// Marks (harakat) are skipped over when finding neighbours. Letters outside the table
// keep their plain form. src gives, for each character
// out, the index in rs of the character it stands for (of the lam, for a ligature).
func shapeArabic(rs []rune) (out []rune, src []int32) {
	out, src = make([]rune, 0, len(rs)), make([]int32, 0, len(rs))
	if !slices.ContainsFunc(rs, func(r rune) bool { _, ok := arabicForms[r]; return ok }) {
		for i := range rs {
			src = append(src, int32(i))
		}
		return append(out, rs...), src
	}
	joinsBefore := func(r rune) bool { return r == tatweel || arabicForms[r].n >= 2 } // links to the letter before
	joinsAfter := func(r rune) bool { return r == tatweel || arabicForms[r].n == 4 }  // links to the letter after
	neighbour := func(i, step int) rune {
		for i += step; i >= 0 && i < len(rs); i += step {
			if !unicode.Is(unicode.Mn, rs[i]) {
				return rs[i]
			}
		}
		return 0
	}
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		src = append(src, int32(i))
		f, ok := arabicForms[r]
		if !ok {
			out = append(out, r)
			continue
		}
		linkBefore := f.n >= 2 && joinsAfter(neighbour(i, -1))
		if r == 0x0644 && i+1 < len(rs) {
			if lig, ok := lamAlef[rs[i+1]]; ok {
				if linkBefore {
					lig++ // the final form
				}
				out = append(out, lig)
				i++
				continue
			}
		}
		linkAfter := f.n == 4 && joinsBefore(neighbour(i, 1))
		switch {
		case linkBefore && linkAfter:
			out = append(out, f.first+3)
		case linkAfter:
			out = append(out, f.first+2)
		case linkBefore:
			out = append(out, f.first+1)
		default:
			out = append(out, f.first)
		}
	}
	return out, src
}

// measure sets each glyph's advance, run by run, so that the font changes once per run.
func (l *pdfLayout) measure(gs []glyph, size float64) {
	for i := 0; i < len(gs); {
		l.setFont(gs[i].font, size)
		j := i
		for ; j < len(gs) && gs[j].font == gs[i].font; j++ {
			if gs[j].r == softHyphen {
				gs[j].w = l.pdf.GetStringWidth("-") // its width where it prints
				continue
			}
			gs[j].w = l.pdf.GetStringWidth(string(gs[j].r))
		}
		i = j
	}
}

// markGap is the space left between two marks stacked over one base, in em; markStack
// is how high marks are stacked at most, in em above the baseline.
const (
	markGap   = 0.05
	markStack = 1.5
)

// placeMarks puts each mark of a paragraph (logical order, measured) over its base, where
// the font gives the mark no advance of its own: fpdf cannot read a font's positioning
// tables, so a mark stays where its font draws it by default when that is over its base
// (its ink's middle over the base, not at its edge, its ink not starting before it: so
// in Noto's Latin and Thai, and Hebrew drawn right to left), and is centred over the
// base otherwise, and over a base widened for a keycap's frame (widenForFrame). Text
// readers take a mark moved further than needed for a word of its own. A mark above the
// baseline that would overprint a mark above it before (a Thai tone mark over an upper
// vowel, stacked accents) is raised clear of it.
func (l *pdfLayout) placeMarks(gs []glyph, size float64) {
	base := -1
	widened := false     // whether the base's place is widened for a frame
	var stackTop float64 // the top of the marks above the base so far, in em
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
		// The mark's pen, from the base's start, is at the base's end in left-to-right
		// text, at its start in right-to-left text, where the line's order puts the marks
		// before their base.
		pen := gs[base].w
		if gs[base].level%2 == 1 {
			pen = 0
		}
		if left, centre := pen+box.minX*size, pen+(box.minX+box.maxX)/2*size; widened || left < 0 || centre >= gs[base].w {
			gs[i].dx = float32(gs[base].w/2 - (box.minX+box.maxX)/2*size - pen)
		}
		if box.bottom < 0 {
			continue // below the baseline or through it: not stacked
		}
		rise := 0.0
		// Raised only up to a stack of markStack em: a longer run of marks on one base
		// (hostile text) would otherwise climb over the lines above.
		if stackTop > 0 && stackTop+markGap > box.bottom && stackTop < markStack {
			rise = stackTop + markGap - box.bottom
		}
		gs[i].rise = float32(rise * size)
		stackTop = box.top + rise
	}
}

// widenForFrame widens the place of the base gs[b] to the widest enclosing mark on it
// (a keycap's frame round its digit), the base centred in it, so that frames side by
// side do not run into each other over the space between them. It reports whether it
// did.
func (l *pdfLayout) widenForFrame(gs []glyph, b int, size float64) bool {
	widest := gs[b].w
	for j := b + 1; j < len(gs) && unicode.In(gs[j].r, unicode.Mn, unicode.Me); j++ {
		if box, ok := l.markBox(gs[j]); ok && gs[j].w == 0 && unicode.Is(unicode.Me, gs[j].r) {
			widest = max(widest, (box.maxX-box.minX)*size)
		}
	}
	if widest == gs[b].w {
		return false
	}
	gs[b].dx += float32((widest - gs[b].w) / 2)
	gs[b].w = widest
	return true
}

// markBox is the ink box of a mark with no advance of its own, in em, y up.
type markBox struct{ minX, maxX, bottom, top float64 }

// markBox returns the box of g's character in its font when it is such a mark.
func (l *pdfLayout) markBox(g glyph) (markBox, bool) {
	f := l.fonts.byName[g.font]
	if f == nil || !unicode.In(g.r, unicode.Mn, unicode.Me) {
		return markBox{}, false
	}
	return f.mark(g.r)
}

// softHyphen marks where a word may be hyphenated: it prints only at the end of a line
// that breaks there, as a hyphen; elsewhere it is invisible.
const softHyphen = '\u00AD'

// breakLines breaks a paragraph's glyphs (in logical order) into lines no wider than
// width: where canBreak allows, or, for a word longer than the line, before the character
// that would overflow (never before a mark, which stays with its base). The spaces at a
// break are dropped; a soft hyphen at a break becomes a hyphen (its glyph's advance is
// the hyphen's), others are dropped.
func breakLines(gs []glyph, width float64) [][]glyph {
	var lines [][]glyph
	for len(gs) > 0 {
		w := 0.0
		brk := 0 // the last break opportunity: the line may end before gs[brk]
		n := 0
		for n < len(gs) {
			if n > 0 && canBreakAt(gs, n) && (gs[n-1].r != softHyphen || w+gs[n-1].w <= width) {
				brk = n
			}
			// A word too long for a line breaks before the character that would overflow,
			// but for a mark without an advance (Mn, Me), which stays with its base.
			if w+gs[n].w > width && gs[n].r != ' ' && gs[n].r != softHyphen && n > 0 && !unicode.In(gs[n].r, unicode.Mn, unicode.Me) {
				break
			}
			if gs[n].r != softHyphen {
				w += gs[n].w
			}
			n++
		}
		end := n
		if n < len(gs) && brk > 0 {
			end = brk
		}
		line := gs[:end]
		for len(line) > 0 && line[len(line)-1].r == ' ' {
			line = line[:len(line)-1]
		}
		hyphen := end < len(gs) && len(line) > 0 && line[len(line)-1].r == softHyphen
		h := line[max(len(line)-1, 0):]
		if hyphen {
			h = []glyph{line[len(line)-1]}
			h[0].r = '-'
		}
		line = slices.DeleteFunc(line, func(g glyph) bool { return g.r == softHyphen })
		if hyphen {
			line = append(line, h[0]) // into the place of a soft hyphen deleted
		}
		if len(line) > 0 {
			lines = append(lines, line)
		}
		gs = gs[end:]
		for len(gs) > 0 && gs[0].r == ' ' {
			gs = gs[1:]
		}
	}
	return lines
}

// canBreak reports whether a line may break between a and b, two characters of a
// paragraph: after a space or a soft hyphen, and between two characters where one is of
// a script written without spaces (breaksAnywhere), but never before a mark (which
// belongs to the character before it), before closing punctuation or after opening
// punctuation (noBreakBefore, noBreakAfter).
func canBreak(a, b rune) bool {
	switch {
	case isMark(b):
		return false
	case a == ' ' || a == softHyphen:
		return true
	case b == ' ' || noBreakBefore(b) || noBreakAfter(a):
		return false
	}
	return breaksAnywhere(a) || breaksAnywhere(b)
}

// canBreakAt reports whether a line may break before gs[n]: canBreak of the characters
// either side, and not before the Thai consonant that closes a syllable whose vowel
// calls for one (mai han-akat ั and maitaikhu ็, a tone mark between: ปั้|น).
func canBreakAt(gs []glyph, n int) bool {
	if !canBreak(gs[n-1].r, gs[n].r) {
		return false
	}
	if gs[n].r >= 0x0E01 && gs[n].r <= 0x0E2E { // a Thai consonant
		k := n - 1
		if k > 0 && gs[k].r >= 0x0E48 && gs[k].r <= 0x0E4B { // a tone mark
			k--
		}
		return gs[k].r != '\u0E31' && gs[k].r != '\u0E47'
	}
	return true
}

// isMark reports a combining mark, drawn on the character before it.
func isMark(r rune) bool { return unicode.In(r, unicode.Mn, unicode.Me, unicode.Mc) }

// breaksAnywhere reports a character of a script written without spaces between words,
// where a line may break between any two characters: Chinese, Japanese and Thai. For Thai
// this is a rule without a dictionary: it may break inside a word, but never after a
// leading vowel (noBreakAfter), nor before a mark, a following vowel or a repetition mark
// (noBreakBefore), so that no syllable loses its vowel, nor before the final consonant
// that mai han-akat and maitaikhu call for (canBreakAt).
func breaksAnywhere(r rune) bool {
	return r >= 0x2E80 && unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana) ||
		r >= 0x3000 && r <= 0x303F || r >= 0xFF00 && r <= 0xFFEF || // CJK and full-width punctuation
		r >= 0x0E01 && r <= 0x0E5B // Thai
}

// noBreakBefore reports a character a line does not start with: closing punctuation, the
// Chinese and Japanese punctuation and small kana that follow what they close (UAX #14's
// classes CL, CP, EX, IS and NS), and Thai's following vowels and repetition marks.
func noBreakBefore(r rune) bool {
	return unicode.In(r, unicode.Pe, unicode.Pf) ||
		strings.ContainsRune("!%),.:;?、。〃〆〻ゝゞ゠ーヽヾ・ぁぃぅぇぉっゃゅょゎゕゖァィゥェォッャュョヮヵヶ！％），．：；？｡､ｰ"+"ะาำๅๆฯ", r)
}

// noBreakAfter reports a character a line does not end with: opening punctuation, and a
// Thai leading vowel, which is written before the consonant it follows in speech.
func noBreakAfter(r rune) bool {
	return unicode.In(r, unicode.Ps, unicode.Pi) || r >= 0x0E40 && r <= 0x0E44
}

// drawLine draws a line from x: each glyph where the visual order puts it, but in the
// content in logical order, so that readers that read text in the order it is drawn
// (pdf.js, MuPDF) read it as typed; readers that read it by position (poppler) order it
// themselves. Glyphs of left-to-right text share a cell per run of one font; a glyph of
// right-to-left text, a mark placed over its base and a base widened for a frame is a
// cell of its own. A bracket
// in right-to-left text is the bracket typed, drawn with its partner's glyph (L4) from a
// mirrored variant of its font. Arabic letters are the letters typed, drawn in their joined forms from variants
// of their font (joinedForm). Where a cell's characters are not what was typed (the name
// of an emoji, U+FFFD, a soft hyphen's hyphen), a marked-content span gives the typed
// text as its /ActualText, for the readers that read it (poppler, Acrobat).
func (l *pdfLayout) drawLine(line textLine, x, y, size float64) {
	gs := line.glyphs
	at := l.at[:0]   // each glyph's x
	pos := l.pos[:0] // each glyph's place in visual order
	for range gs {
		at, pos = append(at, 0), append(pos, 0)
	}
	l.at, l.pos = at, pos
	for v, i := range line.order {
		at[i], pos[i] = x, v
		x += gs[i].w
	}
	for i := 0; i < len(gs); {
		n := 1
		for i+n < len(gs) && !ownCell(gs[i]) && !ownCell(gs[i+n]) &&
			gs[i+n].font == gs[i].font && pos[i+n] == pos[i]+n {
			n++
		}
		l.drawCell(gs[i:i+n], line.typed, at[i], y, size)
		i += n
	}
}

// baselineBelow is the baseline of a line of text of the given size whose top is at y:
// 0.3 of the size below the line's middle, where fpdf's cells put it.
func baselineBelow(y, size float64) float64 { return y + lineHeight(size)/2 + 0.3*size }

// ownCell reports a glyph drawn in a cell of its own (see drawLine).
func ownCell(g glyph) bool { return g.level%2 == 1 || g.dx != 0 || g.rise != 0 }

// drawCell draws glyphs, visually in a row from x, as one cell (see drawLine).
func (l *pdfLayout) drawCell(gs []glyph, typed []rune, x, y, size float64) {
	var run strings.Builder
	for _, g := range gs {
		run.WriteRune(g.r)
	}
	font := gs[0].font
	if gs[0].level%2 == 1 && mirrorOf(gs[0].r) != 0 {
		// A bracket in right-to-left text: the character typed, drawn with the glyph of
		// its partner (L4) from the font's mirrored variant.
		if family, ok := l.mirrored(font); ok {
			font = family
		}
	}
	l.setFont(font, size)
	// A right-to-left glyph that stands for two characters (the lam-alef ligature) keeps
	// its own: poppler spreads an /ActualText over the glyph's width and reorders it as if
	// it were drawn, which reverses the pair.
	ligature := gs[0].level%2 == 1 && gs[0].chars > 1
	if !asTyped(typed, gs) && !ligature {
		text := typedText(typed, gs)
		if text != run.String() {
			l.pdf.RawWriteStr("/Span <</ActualText " + pdfHexText(text) + ">> BDC")
			defer l.pdf.RawWriteStr("EMC")
		}
	}
	g := gs[0]
	// Text is fpdf's plainest way to show a string: a cell costs five times as much.
	l.pdf.Text(x+float64(g.dx), baselineBelow(y, size)-float64(g.rise), run.String())
}

// asTyped reports glyphs that are, one for one, the characters typed: the common case,
// checked without building the typed text.
func asTyped(typed []rune, gs []glyph) bool {
	for k, g := range gs {
		if g.chars != 1 || g.src != gs[0].src+int32(k) || typed[g.src] != g.r {
			return false
		}
	}
	return true
}

// typedText is the text glyphs stand for as typed: the paragraph's characters from the
// first glyph's to the last's, without the bidi controls (the layout drops them; the
// other invisible characters it drops stay in the text).
func typedText(typed []rune, gs []glyph) string {
	first, last := int32(len(typed)), int32(-1)
	for _, g := range gs {
		if g.chars > 0 {
			first, last = min(first, g.src), max(last, g.src+int32(g.chars)-1)
		}
	}
	var b strings.Builder
	for i := first; i <= last; i++ {
		if !unicode.Is(unicode.Bidi_Control, typed[i]) {
			b.WriteRune(typed[i])
		}
	}
	return b.String()
}

// pdfHexText writes s as a PDF text string: UTF-16BE with its byte order mark, in hex.
func pdfHexText(s string) string {
	var b strings.Builder
	b.WriteString("<FEFF")
	for _, c := range utf16.Encode([]rune(s)) {
		fmt.Fprintf(&b, "%04X", c)
	}
	b.WriteString(">")
	return b.String()
}

// 3. Fonts: which font draws a character, and the fonts made for a document.
//
// The Go fonts draw what their character maps have; a character they lack is drawn from
// the first fallback TrueType font that has it, in PDF_FONT_DIR's folders and then the
// system's (fontIndex, built once per server and shared by its exports), in the face its
// place asks for (styled: bold, semi-bold, italic). A fallback font is embedded only in a
// document that draws from it (addFont). fpdf's text layer is the code points drawn, so
// a character drawn with another glyph of its font (a bracket mirrored, an Arabic
// letter's joined form) is drawn from a variant of that font whose character map gives
// it that glyph (mirrored, variant, withCmap). How far a font reaches below the baseline
// (depth) places the rule under a value.
//
// Proved by TestGoFontsParse, TestPDFFontDirFirst, TestExportPDFChineseFont and
// TestExportPDFScripts (pdf_test.go); TestExportPDFFallbackStyles and
// TestExportPDFTextLayer, which reads the variants' text (pdftext_test.go);
// TestExportPDFRuleBelowDescenders, the fonts' depths (pdfpages_test.go).

// fontIndex knows the fonts a document can draw with: the Go fonts' character maps, and
// the fallback TrueType fonts found in the font folders, in the order they are tried. It
// is built once, when the server is (newFontIndex), and shared by all exports; what it
// learns later about a fallback font (its coverage) is filled in under a sync.Once, so it
// is safe for concurrent use.
type fontIndex struct {
	goFonts   map[string]*sfnt.Font // by family, for cmap look-ups
	fallbacks []*fallbackFont       // in the order they are tried
	byName    map[string]*fallbackFont
	goDepth   map[string]float64 // by family: how far its letters reach below the baseline, in em
}

// fallbackFont is one candidate TrueType file. Its character map is read the first time
// a character is looked up in it and kept (8 KiB), its depth and marks the first time a
// document draws from it (measure); the file itself is read by each document that
// embeds it, as fpdf parses it afresh for each document anyway.
type fallbackFont struct {
	path   string
	family string                   // the fpdf family name, unique in the index
	faces  map[string]*fallbackFont // its family's bold, semibold and italic faces beside it, by style

	coverOnce sync.Once
	cover     []uint64 // a bit per Basic Multilingual Plane character; nil if unusable

	measureOnce sync.Once
	marks       map[rune]markBox // its combining marks without an advance, for placeMarks
	depth       float64          // how far its letters and marks reach below the baseline, in em
}

// systemFontDirs are the usual font folders of Linux and BSD systems, searched after
// PDF_FONT_DIR's; ~ is the home folder.
var systemFontDirs = []string{"/usr/share/fonts", "/usr/local/share/fonts", "~/.local/share/fonts", "~/.fonts"}

// fontDirs is the list of folders to search: PDF_FONT_DIR's (":"-separated), then the
// system's.
func fontDirs(pdfFontDir string) []string {
	dirs := splitList(pdfFontDir, ":")
	home, _ := os.UserHomeDir()
	for _, d := range systemFontDirs {
		if rest, ok := strings.CutPrefix(d, "~/"); ok {
			if home == "" {
				continue
			}
			d = filepath.Join(home, rest)
		}
		dirs = append(dirs, d)
	}
	return dirs
}

// newFontIndex parses the Go fonts' character maps and lists the TrueType files under
// dirs (recursively; a missing folder is skipped). Only names are read here: a file's
// contents are read when a character is first looked up in it. The files of each folder
// are tried in a sensible order (fallbackRank); folders in the order given.
func newFontIndex(dirs []string) *fontIndex {
	ix := &fontIndex{goFonts: map[string]*sfnt.Font{}, byName: map[string]*fallbackFont{}, goDepth: map[string]float64{}}
	for _, f := range pdfFonts {
		// The Go fonts are compiled in and parse (TestGoFontsParse); were one not to, its
		// family would draw ASCII only and take the rest from the fallbacks.
		if sf, err := sfnt.Parse(f.ttf); err == nil {
			ix.goFonts[f.family] = sf
			ix.goDepth[f.family] = letterDepth(sf)
		}
	}
	seen := map[string]bool{}
	faces := map[string]*fallbackFont{} // by variantKey
	for _, dir := range dirs {
		var paths []string
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // an unreadable or missing folder is no error: it has no fonts
			}
			// .otf files are nearly always CFF, which fpdf cannot embed; those that are
			// TrueType inside are kept by the check on load.
			if ext := strings.ToLower(filepath.Ext(path)); !d.IsDir() && (ext == ".ttf" || ext == ".otf") {
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
			family := fontFamilyName(p)
			for i := 2; ix.byName[family] != nil; i++ {
				family = fmt.Sprintf("%s%d", fontFamilyName(p), i)
			}
			f := &fallbackFont{path: p, family: family}
			ix.fallbacks = append(ix.fallbacks, f)
			ix.byName[family] = f
			stem, style := fontStyle(p)
			if key := variantKey(p, stem, style); faces[key] == nil {
				faces[key] = f
			}
		}
	}
	for _, f := range ix.fallbacks {
		stem, _ := fontStyle(f.path)
		for _, style := range []string{"bold", "semibold", "italic"} {
			if v := faces[variantKey(f.path, stem, style)]; v != nil {
				if f.faces == nil {
					f.faces = map[string]*fallbackFont{}
				}
				f.faces[style] = v
			}
		}
	}
	return ix
}

// fontStyles are the styles a Go family asks of a fallback font, in the order tried: the
// bold title and headings bold; the semi-bold labels semi-bold, else bold (the nearest
// heavier weight, as CSS matches a weight above 500); the italic descriptions italic.
// Where none is installed beside the regular face, the regular face draws.
var fontStyles = map[string][]string{"GoBold": {"bold"}, "GoMedium": {"semibold", "bold"}, "GoItalic": {"italic"}}

// fontStyle splits a font file's name into its family's stem and its style, in lower
// case: NotoSansThai-Bold.ttf is notosansthai, bold; NanumGothic.ttf is nanumgothic, "".
func fontStyle(path string) (stem, style string) {
	name := strings.ToLower(strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
	for _, s := range []string{"semibolditalic", "bolditalic", "semibold", "bold", "italic", "regular"} {
		if rest, ok := strings.CutSuffix(name, s); ok {
			if s == "regular" {
				s = ""
			}
			return strings.TrimRight(rest, "-_ "), s
		}
	}
	return name, ""
}

// variantKey names a face of a family in a folder: faces of one family lie side by side.
func variantKey(path, stem, style string) string {
	return filepath.Join(filepath.Dir(path), stem) + "\x00" + style
}

// styled returns the face of fallback font f in the style the Go family asks for
// (fontStyles), where one is installed beside f and draws r; else f itself.
func (f *fallbackFont) styled(family string, r rune) *fallbackFont {
	for _, style := range fontStyles[family] {
		if v := f.faces[style]; v != nil && v.covers(r) {
			return v
		}
	}
	return f
}

// fallbackRank orders the fonts of a folder: regular weights of Noto Sans (one font per
// script, drawn like the Go fonts' sans serif) first; then the CJK fonts, Droid Sans
// Fallback (Chinese and Japanese) before Nanum Gothic (Korean, with fewer ideographs);
// then other regular faces; bold, italic, light and the like last: a character's font is
// chosen among the regular faces, and its bold or italic face beside it drawn where the
// text asks for one (styled).
func fallbackRank(path string) int {
	name := strings.ToLower(strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
	styled := false
	for _, w := range []string{"bold", "italic", "oblique", "light", "thin", "black", "medium", "semi", "extra", "condensed", "narrow", "mono", "coding", "display"} {
		styled = styled || strings.Contains(name, w)
	}
	switch {
	case styled:
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

// fontFamilyName makes an fpdf family name of a file name: its letters and digits.
func fontFamilyName(path string) string {
	return strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return -1
	}, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
}

// squareBlock reports a character of the large blocks whose glyphs all sit in one square
// frame (CJK ideographs, Hangul syllables): for a font's depth, one in 64 of them is
// measured, as measuring all of Droid Sans Fallback's takes a second.
func squareBlock(r rune) bool {
	return r >= 0x3400 && r <= 0x9FFF || r >= 0xAC00 && r <= 0xD7A3 || r >= 0xF900 && r <= 0xFAFF
}

// letterDepth is how far the letters of a Go font reach below the baseline, in em: the
// deepest of the Latin, Greek and Cyrillic letters it has.
func letterDepth(sf *sfnt.Font) float64 {
	var sb sfnt.Buffer
	em := fixed.I(int(sf.UnitsPerEm()))
	depth := 0.0
	for c := rune(0x20); c < 0x0530; c++ {
		g, err := sf.GlyphIndex(&sb, c)
		if err != nil || g == 0 || !unicode.IsLetter(c) {
			continue
		}
		if b, _, err := sf.GlyphBounds(&sb, g, em, font.HintingNone); err == nil {
			depth = max(depth, float64(b.Max.Y)/float64(em))
		}
	}
	return depth
}

// depth is how far the letters of a font family reach below the baseline, in em.
func (ix *fontIndex) depth(family string) float64 {
	if f := ix.byName[family]; f != nil {
		return f.letterDepth()
	}
	return ix.goDepth[family]
}

// goCovers reports whether the Go font family has a glyph for r.
func (ix *fontIndex) goCovers(sb *sfnt.Buffer, family string, r rune) bool {
	f := ix.goFonts[family]
	if f == nil {
		return false
	}
	g, err := f.GlyphIndex(sb, r)
	return err == nil && g != 0
}

// fallbackFor returns the fallback font that draws r: prefer when it has the glyph (as a
// mark without an advance, for a mark), else the first in the index's order that has
// it, else nil. Only characters of the Basic
// Multilingual Plane are looked for (fpdf draws no others), and never private-use ones.
func (ix *fontIndex) fallbackFor(r rune, prefer *fallbackFont) *fallbackFont {
	if r > 0xFFFF || !unicode.IsGraphic(r) || unicode.Is(unicode.Co, r) {
		return nil
	}
	// A mark stays in the run's font only where it is a mark there, without an advance of
	// its own: the keycap (U+20E3) is one in Noto Sans Symbols, but a symbol drawn beside
	// its digit in Noto Sans Symbols2.
	if prefer != nil && prefer.covers(r) && (!unicode.In(r, unicode.Mn, unicode.Me) || prefer.hasMark(r)) {
		return prefer
	}
	for _, f := range ix.fallbacks {
		if f.covers(r) {
			return f
		}
	}
	return nil
}

// covers reports whether the font has a glyph for r, reading its character map with
// sfnt the first time. A file fpdf cannot embed covers nothing.
func (f *fallbackFont) covers(r rune) bool {
	f.coverOnce.Do(func() {
		sf := readFont(f.path)
		if sf == nil {
			return
		}
		var sb sfnt.Buffer
		cover := make([]uint64, 0x10000/64)
		for c := rune(0x20); c <= 0xFFFF; c++ {
			if g, err := sf.GlyphIndex(&sb, c); err == nil && g != 0 {
				cover[c/64] |= 1 << (c % 64)
			}
		}
		f.cover = cover
	})
	return f.cover != nil && r <= 0xFFFF && f.cover[r/64]&(1<<(r%64)) != 0
}

// readFont parses the font file at path, nil where it cannot be read or fpdf cannot
// embed it.
func readFont(path string) *sfnt.Font {
	ttf, err := os.ReadFile(path)
	if err != nil || !embeddableTrueType(ttf) {
		return nil
	}
	sf, err := sfnt.Parse(ttf)
	if err != nil {
		return nil
	}
	return sf
}

// measure takes the font's depth and marks, the first time a document draws from it:
// only a font that draws is measured, not every font a character's search looks at.
func (f *fallbackFont) measure() {
	f.measureOnce.Do(func() {
		f.marks = map[rune]markBox{}
		f.covers(0) // its character map, read first
		sf := readFont(f.path)
		if sf == nil || f.cover == nil {
			return
		}
		var sb sfnt.Buffer
		em := fixed.I(int(sf.UnitsPerEm()))
		u := float64(em)
		for c := rune(0x20); c <= 0xFFFF; c++ {
			if !f.covers(c) || !unicode.In(c, unicode.L, unicode.M) || squareBlock(c) && c%64 != 0 {
				continue
			}
			g, err := sf.GlyphIndex(&sb, c)
			if err != nil || g == 0 {
				continue
			}
			// sfnt's y grows downwards; em units as 26.6 fixed point.
			b, adv, err := sf.GlyphBounds(&sb, g, em, font.HintingNone)
			if err != nil {
				continue
			}
			f.depth = max(f.depth, float64(b.Max.Y)/u)
			if unicode.In(c, unicode.Mn, unicode.Me) && adv == 0 && b.Max.X > b.Min.X {
				f.marks[c] = markBox{float64(b.Min.X) / u, float64(b.Max.X) / u, float64(-b.Max.Y) / u, float64(-b.Min.Y) / u}
			}
		}
	})
}

// mark returns r's box where the font has it as a mark without an advance (placeMarks'
// kind).
func (f *fallbackFont) mark(r rune) (markBox, bool) {
	f.measure()
	box, ok := f.marks[r]
	return box, ok
}

// hasMark reports whether the font has r as a mark without an advance.
func (f *fallbackFont) hasMark(r rune) bool {
	_, ok := f.mark(r)
	return ok
}

// letterDepth is how far the font's letters and marks reach below the baseline, in em.
func (f *fallbackFont) letterDepth() float64 {
	f.measure()
	return f.depth
}

// embeddableTrueType reports whether fpdf's AddUTF8FontFromBytes can embed a font file:
// a single TrueType font (not a collection, not CFF outlines) with the tables fpdf reads
// and a format 4 Unicode character map, the one fpdf looks for.
func embeddableTrueType(b []byte) bool {
	if len(b) < 12 {
		return false
	}
	if v := binary.BigEndian.Uint32(b); v != 0x00010000 && v != 0x74727565 { // 'true'
		return false
	}
	tables := map[string][]byte{}
	n := int(binary.BigEndian.Uint16(b[4:]))
	for i := range n {
		rec := 12 + 16*i
		if rec+16 > len(b) {
			return false
		}
		off, size := int(binary.BigEndian.Uint32(b[rec+8:])), int(binary.BigEndian.Uint32(b[rec+12:]))
		if off < 0 || size < 0 || off+size > len(b) {
			return false
		}
		tables[string(b[rec:rec+4])] = b[off : off+size]
	}
	for _, t := range []string{"head", "hhea", "hmtx", "maxp", "name", "OS/2", "post", "cmap", "glyf", "loca"} {
		if tables[t] == nil {
			return false
		}
	}
	cmap := tables["cmap"]
	if len(cmap) < 4 {
		return false
	}
	for i := range int(binary.BigEndian.Uint16(cmap[2:])) {
		rec := 4 + 8*i
		if rec+8 > len(cmap) {
			return false
		}
		platform, encoding := binary.BigEndian.Uint16(cmap[rec:]), binary.BigEndian.Uint16(cmap[rec+2:])
		off := int(binary.BigEndian.Uint32(cmap[rec+4:]))
		if (platform == 3 && encoding == 1 || platform == 0) && off+2 <= len(cmap) && binary.BigEndian.Uint16(cmap[off:]) == 4 {
			return true
		}
	}
	return false
}

// addFont adds a fallback font to the document the first time a character needs it. A
// font that can no longer be read (it was readable when its coverage was taken) reports
// false, and the character is named instead: a character never fails a document.
func (l *pdfLayout) addFont(f *fallbackFont) bool {
	if l.files[f.family] != nil {
		return true
	}
	ttf, err := os.ReadFile(f.path)
	if err != nil {
		return false
	}
	l.pdf.AddUTF8FontFromBytes(f.family, "", ttf)
	l.files[f.family] = ttf
	return true
}

// mirrored adds to the document, once, the mirrored variant of a font family (a Go font
// or a fallback font already in the document): a font whose character map gives each
// character mirrorOf knows the glyph of its partner, and has no other characters. ok is
// false where the font cannot be read.
func (l *pdfLayout) mirrored(family string) (variant string, ok bool) {
	variant = family + "mirrored"
	return variant, l.addVariant(variant, family, func(glyphOf func(rune) sfnt.GlyphIndex) map[rune]sfnt.GlyphIndex {
		cmap := map[rune]sfnt.GlyphIndex{}
		for _, r := range bracketPairs + string(slices.Collect(maps.Keys(otherMirrors))) { // every character mirrorOf knows
			if g := glyphOf(mirrorOf(r)); g != 0 {
				cmap[r] = g
			}
		}
		return cmap
	})
}

// variant adds to the document, once, the variant of fallback font f (already in the
// document) whose character map gives each Arabic letter the glyph of its final, initial
// or medial form (kind "fina", "init", "medi"), and has no other characters. ok is false
// where the font cannot be read.
func (l *pdfLayout) variant(f *fallbackFont, kind string) (family string, ok bool) {
	family = f.family + kind
	offset := map[string]rune{"fina": 1, "init": 2, "medi": 3}[kind]
	ok = l.addVariant(family, f.family, func(glyphOf func(rune) sfnt.GlyphIndex) map[rune]sfnt.GlyphIndex {
		cmap := map[rune]sfnt.GlyphIndex{}
		for letter, form := range arabicForms {
			if form.n >= 2 && offset == 1 || form.n == 4 {
				if g := glyphOf(form.first + offset); g != 0 {
					cmap[letter] = g
				}
			}
		}
		return cmap
	})
	if ok {
		l.variantOf[family] = f
	}
	return family, ok
}

// addVariant adds to the document, once, the font named name: the file of family (a Go
// font's, or the one addFont read) with the character map cmapOf makes from the font's
// glyphOf (withCmap).
// It reports whether the variant is in the document.
func (l *pdfLayout) addVariant(name, family string, cmapOf func(glyphOf func(rune) sfnt.GlyphIndex) map[rune]sfnt.GlyphIndex) bool {
	if done, seen := l.variants[name]; seen {
		return done
	}
	l.variants[name] = false
	ttf := goFontTTF(family)
	if ttf == nil {
		ttf = l.files[family]
	}
	sf, err := sfnt.Parse(ttf)
	if err != nil {
		return false
	}
	var sb sfnt.Buffer
	glyphOf := func(r rune) sfnt.GlyphIndex {
		g, err := sf.GlyphIndex(&sb, r)
		if err != nil {
			return 0
		}
		return g
	}
	font, err := withCmap(ttf, cmapOf(glyphOf))
	if err != nil {
		return false
	}
	l.pdf.AddUTF8FontFromBytes(name, "", font)
	l.variants[name] = true
	return true
}

// goFontTTF is the font file of a Go font family, nil for another family.
func goFontTTF(family string) []byte {
	for _, f := range pdfFonts {
		if f.family == family {
			return f.ttf
		}
	}
	return nil
}

// withCmap returns a TrueType font file like ttf but for its character map, which is
// cmap: a single format 4 subtable (Windows, Unicode BMP), the one fpdf reads. The other
// tables are kept as they are; fpdf does not check the table checksums.
func withCmap(ttf []byte, cmap map[rune]sfnt.GlyphIndex) ([]byte, error) {
	if len(ttf) < 12 {
		return nil, errors.New("font too short")
	}
	n := int(binary.BigEndian.Uint16(ttf[4:]))
	if 12+16*n > len(ttf) {
		return nil, errors.New("font table directory too short")
	}
	table := cmapFormat4(cmap)
	out := slices.Clone(ttf)
	for len(out)%4 != 0 {
		out = append(out, 0)
	}
	found := false
	for i := range n {
		rec := out[12+16*i:]
		if string(rec[:4]) == "cmap" {
			binary.BigEndian.PutUint32(rec[8:], uint32(len(out)))
			binary.BigEndian.PutUint32(rec[12:], uint32(len(table)))
			found = true
		}
	}
	if !found {
		return nil, errors.New("font has no cmap")
	}
	return append(out, table...), nil
}

// cmapFormat4 encodes a character map as a cmap table of one format 4 subtable: a
// segment per run of characters whose glyphs follow on from each other, with the closing
// segment at U+FFFF.
func cmapFormat4(cmap map[rune]sfnt.GlyphIndex) []byte {
	chars := make([]rune, 0, len(cmap))
	for c, g := range cmap {
		if c <= 0xFFFE && g != 0 {
			chars = append(chars, c)
		}
	}
	slices.Sort(chars)
	type segment struct{ start, end rune }
	var segs []segment
	for _, c := range chars {
		if k := len(segs) - 1; k >= 0 && segs[k].end == c-1 && int(cmap[c])-int(c) == int(cmap[segs[k].start])-int(segs[k].start) {
			segs[k].end = c
			continue
		}
		segs = append(segs, segment{c, c})
	}
	segs = append(segs, segment{0xFFFF, 0xFFFF})
	segCount := len(segs)
	search := 1
	for search*2 <= segCount {
		search *= 2
	}
	entry := 0
	for 1<<(entry+1) <= search {
		entry++
	}
	u16 := func(b []byte, v int) []byte { return binary.BigEndian.AppendUint16(b, uint16(v)) }
	sub := u16(nil, 4)
	sub = u16(sub, 16+8*segCount) // length
	sub = u16(sub, 0)             // language
	sub = u16(sub, 2*segCount)
	sub = u16(sub, 2*search)
	sub = u16(sub, entry)
	sub = u16(sub, 2*segCount-2*search)
	for _, sg := range segs {
		sub = u16(sub, int(sg.end))
	}
	sub = u16(sub, 0) // reserved
	for _, sg := range segs {
		sub = u16(sub, int(sg.start))
	}
	for _, sg := range segs {
		delta := 1 // U+FFFF to glyph 0
		if sg.start != 0xFFFF {
			delta = int(cmap[sg.start]) - int(sg.start)
		}
		sub = u16(sub, delta&0xFFFF)
	}
	for range segs {
		sub = u16(sub, 0) // idRangeOffset: none, idDelta alone
	}
	table := u16(nil, 0)  // version
	table = u16(table, 1) // one subtable
	table = u16(table, 3) // Windows
	table = u16(table, 1) // Unicode BMP
	table = binary.BigEndian.AppendUint32(table, 12)
	return append(table, sub...)
}

// 4. Bidirectional text: the Unicode bidirectional algorithm (UAX #9), pdf.go's own.
//
// A paragraph's glyphs get their embedding levels (bidiLevels: X9, W1–W7, N0 for bracket
// pairs, N1–N2, I1–I2, L1; explicit embeddings, overrides and isolates are dropped with
// their controls), and each line is put in visual order (visualOrder, L2); mirrorOf
// gives the partner whose glyph a bracket takes in right-to-left text (L4).
// golang.org/x/text supplies the character classes, not the ordering (bidiLevels says
// why).
//
// Proved by TestBidiLevels, TestBidiConformance (Unicode's BidiTest.txt) and
// TestBidiCharacterConformance (BidiCharacterTest.txt) in bidi_test.go;
// TestExportPDFTextLayer, brackets as typed (pdftext_test.go); TestExportPDFValueDirection
// (pdfpages_test.go).

// bidiLevels resolves the embedding levels of one paragraph, a line, by the Unicode
// bidirectional algorithm (UAX #9) for text without explicit embeddings, overrides or
// isolates (their control characters are dropped as invisible before layout): the
// paragraph level from the first strong character (P2, P3; fallback where there is
// none), then resolveLevels. golang.org/x/text/unicode/bidi supplies the character
// classes; its Paragraph/Ordering API is not used, as it reports runs without their
// levels (so numbers inside right-to-left text cannot be placed), pairs brackets wrongly
// and panics on an empty paragraph (x/text v0.44.0). TestBidiConformance runs Unicode's
// own test data through it.
func bidiLevels(rs []rune, fallback int8) (levels []int8, paraLevel int8) {
	classes := make([]bidi.Class, len(rs))
	for i, r := range rs {
		p, _ := bidi.LookupRune(r)
		classes[i] = p.Class()
	}
	paraLevel = paragraphLevel(classes, fallback)
	return resolveLevels(rs, classes, paraLevel), paraLevel
}

// paragraphLevel is 0 (left to right) or 1 (right to left) by the paragraph's first
// strong character (P2, P3), fallback without one.
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

// resolveLevels resolves the levels of a paragraph at paraLevel, its characters rs (nil
// for classes alone: no brackets then) of the given classes, as one line: the characters
// X9 removes (embedding controls, BN) are set aside, and take the level of the character
// before them (the paragraph's at the start); the others go through the weak types
// (W1–W7), bracket pairs (N0), the neutrals (N1, N2), the implicit levels (I1, I2) and
// the line's white space (L1).
func resolveLevels(rs []rune, classes []bidi.Class, paraLevel int8) []int8 {
	var kept []int // the characters X9 keeps
	for i, c := range classes {
		switch c {
		case bidi.LRE, bidi.RLE, bidi.LRO, bidi.RLO, bidi.PDF, bidi.BN:
		default:
			kept = append(kept, i)
		}
	}
	orig := make([]bidi.Class, len(kept))
	var keptRunes []rune
	for j, i := range kept {
		orig[j] = classes[i]
		if rs != nil {
			keptRunes = append(keptRunes, rs[i])
		}
	}
	sos := bidi.L // also the embedding direction: without embeddings, the paragraph's
	if paraLevel == 1 {
		sos = bidi.R
	}
	types := slices.Clone(orig)
	resolveWeak(types, sos)
	resolveBrackets(keptRunes, types, orig, sos)
	resolveNeutrals(types, sos)
	keptLevels := implicitLevels(types, paraLevel)
	resetWhitespace(orig, keptLevels, paraLevel)

	levels := make([]int8, len(classes))
	level, j := paraLevel, 0
	for i := range levels {
		if j < len(kept) && kept[j] == i {
			level = keptLevels[j]
			j++
		}
		levels[i] = level
	}
	return levels
}

// resolveWeak applies the rules for weak types, W1–W7, to a paragraph's types; sos is the
// type before its start.
func resolveWeak(types []bidi.Class, sos bidi.Class) {
	// W1: a non-spacing mark takes the type of the character before it.
	for i, t := range types {
		if t == bidi.NSM {
			types[i] = sos
			if i > 0 {
				types[i] = types[i-1]
			}
		}
	}
	// W2: European numbers after Arabic letters are Arabic numbers. W3: AL is R.
	lastStrong := sos
	for i, t := range types {
		switch t {
		case bidi.L, bidi.R, bidi.AL:
			lastStrong = t
		case bidi.EN:
			if lastStrong == bidi.AL {
				types[i] = bidi.AN
			}
		}
	}
	for i, t := range types {
		if t == bidi.AL {
			types[i] = bidi.R
		}
	}
	// W4: one separator between two numbers of the same kind joins them.
	for i := 1; i+1 < len(types); i++ {
		prev, next := types[i-1], types[i+1]
		switch {
		case types[i] == bidi.ES && prev == bidi.EN && next == bidi.EN:
			types[i] = bidi.EN
		case types[i] == bidi.CS && prev == next && (prev == bidi.EN || prev == bidi.AN):
			types[i] = prev
		}
	}
	resolveTerminators(types)
	// W6: other separators and terminators are neutral. W7: European numbers after
	// left-to-right text are left to right.
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

// resolveTerminators applies W5: terminators (%, $, °) next to European numbers are
// numbers.
func resolveTerminators(types []bidi.Class) {
	for i := 0; i < len(types); i++ {
		if types[i] != bidi.ET {
			continue
		}
		j := i
		for j < len(types) && types[j] == bidi.ET {
			j++
		}
		if (i > 0 && types[i-1] == bidi.EN) || (j < len(types) && types[j] == bidi.EN) {
			for k := i; k < j; k++ {
				types[k] = bidi.EN
			}
		}
		i = j - 1
	}
}

// strongDir is a type's direction for the neutrals and brackets (N0–N2): L, or R for
// R and for numbers; ok is false for a neutral.
func strongDir(t bidi.Class) (dir bidi.Class, ok bool) {
	switch t {
	case bidi.L:
		return bidi.L, true
	case bidi.R, bidi.AL, bidi.EN, bidi.AN:
		return bidi.R, true
	}
	return 0, false
}

// bracketPairs lists the paired brackets of Unicode 15.0 (BidiBrackets.txt), each
// opening bracket followed by its closing one.
const bracketPairs = "()[]{}\u0F3A\u0F3B\u0F3C\u0F3D\u169B\u169C\u2045\u2046\u207D\u207E" +
	"\u208D\u208E\u2308\u2309\u230A\u230B\u2329\u232A\u2768\u2769\u276A\u276B\u276C\u276D\u276E\u276F" +
	"\u2770\u2771\u2772\u2773\u2774\u2775\u27C5\u27C6\u27E6\u27E7\u27E8\u27E9\u27EA\u27EB\u27EC\u27ED" +
	"\u27EE\u27EF\u2983\u2984\u2985\u2986\u2987\u2988\u2989\u298A\u298B\u298C\u298D\u2990\u298F\u298E" +
	"\u2991\u2992\u2993\u2994\u2995\u2996\u2997\u2998\u29D8\u29D9\u29DA\u29DB\u29FC\u29FD\u2E22\u2E23" +
	"\u2E24\u2E25\u2E26\u2E27\u2E28\u2E29\u2E55\u2E56\u2E57\u2E58\u2E59\u2E5A\u2E5B\u2E5C\u3008\u3009" +
	"\u300A\u300B\u300C\u300D\u300E\u300F\u3010\u3011\u3014\u3015\u3016\u3017\u3018\u3019\u301A\u301B" +
	"\uFE59\uFE5A\uFE5B\uFE5C\uFE5D\uFE5E\uFF08\uFF09\uFF3B\uFF3D\uFF5B\uFF5D\uFF5F\uFF60\uFF62\uFF63"

// closingBrackets maps each opening bracket to its closing one; openingBrackets the other way.
var closingBrackets, openingBrackets = func() (map[rune]rune, map[rune]rune) {
	closing, opening := map[rune]rune{}, map[rune]rune{}
	rs := []rune(bracketPairs)
	for i := 0; i+1 < len(rs); i += 2 {
		closing[rs[i]], opening[rs[i+1]] = rs[i+1], rs[i]
	}
	return closing, opening
}()

// canonicalBracket maps a bracket to its canonical equivalent (U+2329 and U+232A are
// U+3008 and U+3009), as BD16 pairs them so.
func canonicalBracket(r rune) rune {
	// The only brackets with a canonical decomposition (UnicodeData.txt): the angle
	// brackets U+2329 and U+232A, which decompose to U+3008 and U+3009.
	switch r {
	case '\u2329':
		return '\u3008'
	case '\u232A':
		return '\u3009'
	}
	return r
}

// bracketPairsOf finds the bracket pairs of a paragraph (BD16): an opening bracket whose
// type is still ON pairs with the first later closing bracket of its kind that closes
// no bracket opened after it; at most 63 may be open at once. The pairs are returned in
// the order of their opening brackets.
func bracketPairsOf(rs []rune, types []bidi.Class) [][2]int {
	type open struct {
		closer rune
		at     int
	}
	var stack []open
	var pairs [][2]int
	for i, r := range rs {
		if types[i] != bidi.ON {
			continue
		}
		if c, ok := closingBrackets[r]; ok {
			if len(stack) == 63 {
				break
			}
			stack = append(stack, open{canonicalBracket(c), i})
			continue
		}
		if _, ok := openingBrackets[r]; !ok {
			continue
		}
		closer := canonicalBracket(r)
		for k := len(stack) - 1; k >= 0; k-- {
			if stack[k].closer == closer {
				pairs = append(pairs, [2]int{stack[k].at, i})
				stack = stack[:k]
				break
			}
		}
	}
	slices.SortFunc(pairs, func(a, b [2]int) int { return cmp.Compare(a[0], b[0]) })
	return pairs
}

// resolveBrackets applies N0: a bracket pair takes the embedding direction e when the
// text inside has a strong type of that direction; else, when the text inside has one of
// the other direction, that direction if the text before the pair has it too, e
// otherwise; a pair with no strong type inside is left. Marks (NSM before W1) after a
// bracket so set follow it.
func resolveBrackets(rs []rune, types, orig []bidi.Class, e bidi.Class) {
	for _, p := range bracketPairsOf(rs, types) {
		open, closing := p[0], p[1]
		dir := bidi.ON
		for _, t := range types[open+1 : closing] {
			if d, ok := strongDir(t); ok {
				dir = d
				if d == e {
					break
				}
			}
		}
		if dir == bidi.ON {
			continue
		}
		if dir != e {
			before := e
			for k := open - 1; k >= -1; k-- {
				if k < 0 {
					before = e // sos: the embedding direction, without embeddings
					break
				}
				if d, ok := strongDir(types[k]); ok {
					before = d
					break
				}
			}
			if before != dir {
				dir = e
			}
		}
		for _, at := range []int{open, closing} {
			types[at] = dir
			for k := at + 1; k < len(types) && orig[k] == bidi.NSM; k++ {
				types[k] = dir
			}
		}
	}
}

// resolveNeutrals applies N1 and N2: a run of neutrals between two strong types of the
// same direction takes it (numbers count as R); otherwise it takes the embedding
// direction e (also the type at the paragraph's start and end).
func resolveNeutrals(types []bidi.Class, e bidi.Class) {
	for i := 0; i < len(types); i++ {
		if _, strong := strongDir(types[i]); strong {
			continue
		}
		j := i
		for j < len(types) {
			if _, strong := strongDir(types[j]); strong {
				break
			}
			j++
		}
		before, after := e, e
		if i > 0 {
			before, _ = strongDir(types[i-1])
		}
		if j < len(types) {
			after, _ = strongDir(types[j])
		}
		dir := e
		if before == after {
			dir = before
		}
		for k := i; k < j; k++ {
			types[k] = dir
		}
		i = j - 1
	}
}

// implicitLevels applies I1 and I2: right-to-left text one level up from left-to-right
// paragraphs, numbers two; left-to-right text and numbers one level up from
// right-to-left paragraphs.
func implicitLevels(types []bidi.Class, paraLevel int8) []int8 {
	levels := make([]int8, len(types))
	for i, t := range types {
		switch {
		case paraLevel == 0 && t == bidi.R:
			levels[i] = 1
		case paraLevel == 0 && (t == bidi.AN || t == bidi.EN):
			levels[i] = 2
		case paraLevel == 1 && (t == bidi.L || t == bidi.EN || t == bidi.AN):
			levels[i] = 2
		default:
			levels[i] = paraLevel
		}
	}
	return levels
}

// resetWhitespace applies L1 to a line: segment and paragraph separators, and the white
// space before them or at the line's end, take the paragraph's level. orig are the
// characters' own classes.
func resetWhitespace(orig []bidi.Class, levels []int8, paraLevel int8) {
	trailing := true
	for i := len(orig) - 1; i >= 0; i-- {
		switch {
		case orig[i] == bidi.S || orig[i] == bidi.B:
			levels[i], trailing = paraLevel, true
		case orig[i] == bidi.WS && trailing:
			levels[i] = paraLevel
		default:
			trailing = false
		}
	}
}

// visualOrder returns the indices of a line's characters, given their levels in logical
// order, in visual (left-to-right) order, rule L2: from the highest level down to the
// lowest odd one, every run at that level or higher is reversed.
func visualOrder(levels []int8) []int {
	order := make([]int, len(levels))
	for i := range order {
		order[i] = i
	}
	var highest, lowestOdd int8 = 0, 127
	for _, l := range levels {
		highest = max(highest, l)
		if l%2 == 1 {
			lowestOdd = min(lowestOdd, l)
		}
	}
	for level := highest; level >= lowestOdd && level > 0; level-- {
		for i := 0; i < len(order); i++ {
			if levels[order[i]] < level {
				continue
			}
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

// mirrorOf is the partner of a character drawn mirrored in right-to-left text (L4): of
// the paired brackets, < > and the guillemets; 0 for others.
func mirrorOf(r rune) rune {
	if c, ok := closingBrackets[r]; ok {
		return c
	}
	if o, ok := openingBrackets[r]; ok {
		return o
	}
	return otherMirrors[r]
}

// otherMirrors are the characters besides the brackets that mirrorOf knows: their
// mirrored glyphs are their partners'.
var otherMirrors = map[rune]rune{'<': '>', '>': '<', '«': '»', '»': '«', '‹': '›', '›': '‹'}
