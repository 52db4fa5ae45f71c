package main

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/text/encoding/charmap"
)

// readerTool runs a PDF reader's program on a PDF (its path last) and returns what it
// prints: an extra layer over the Go reader below, skipped where not installed.
func readerTool(t *testing.T, pdf []byte, tool string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		pkg := map[string]string{"mutool": "mupdf-tools", "node": "nodejs"}[tool]
		notInstalled(t, "%s not installed: %v (install %s)", tool, err, cmp.Or(pkg, "poppler-utils"))
	}
	path := filepath.Join(t.TempDir(), "doc.pdf")
	if err := os.WriteFile(path, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	args = append(args, path)
	if tool == "pdftotext" {
		args = append(args, "-") // to standard output
	}
	out, err := exec.Command(tool, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", tool, args, err, out)
	}
	return string(out)
}

// exportPDF fetches the PDF of a response and checks that it is one.
func (e *testEnv) exportPDF(responseID int64) ([]byte, http.Header) {
	e.t.Helper()
	res, body := e.getRaw("/api/responses/" + itoa(responseID) + "/export/pdf")
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/pdf" || !bytes.HasPrefix(body, []byte("%PDF-")) {
		e.t.Fatalf("export %d = %d %s %.200q, want 200 and a PDF", responseID, res.StatusCode, res.Header.Get("Content-Type"), body)
	}
	// The length is sent, not chunked: the document is whole before a byte of it is.
	if res.ContentLength != int64(len(body)) || len(res.TransferEncoding) > 0 {
		e.t.Fatalf("export %d: Content-Length %d, Transfer-Encoding %q, want %d, none",
			responseID, res.ContentLength, res.TransferEncoding, len(body))
	}
	return body, res.Header
}

// popplerLines is pdftotext -layout's output in pdfDoc.lines' form.
func popplerLines(t *testing.T, pdf []byte) []string {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(readerTool(t, pdf, "pdftotext", "-layout"), "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// A reader of the PDFs fpdf writes, so that the core checks need nothing but Go: objects
// one after another, FlateDecode streams, Type0 fonts with Identity-H, fpdf's identity
// ToUnicode CMap and a /W array, TrueType fonts in WinAnsiEncoding (ISO 32000-1 Annex D,
// Windows-1252 for its printable characters) with /FirstChar and /Widths, and Tj strings
// placed by Td. It fails the test on anything else.
type pdfDoc struct {
	Title string    // of the document information dictionary
	Dates [2]string // its CreationDate and ModDate, as written
	Pages []pdfPage
	Fonts []string // the BaseFont names of the fonts the document embeds (FontFile2)
}

type pdfPage struct {
	MediaBox  [4]float64
	Rects     [][4]float64 // the rectangles drawn (re): x, y, width, height in PDF space
	Segments  [][4]float64 // the straight lines drawn (m, l): x1, y1, x2, y2 in PDF space
	TextLines []pdfTextLine
	Glyphs    []pdfGlyph // in the order drawn
}

// pdfTextLine is one line of text: where it starts and ends (x, in points from the left
// edge) and the font and size of its first character.
type pdfTextLine struct {
	Text    string // the glyphs' text, left to right
	Typed   string // the text they stand for (/ActualText), in the order they are shown
	X, EndX float64
	Y       float64 // the baseline, in points from the bottom edge
	Font    string  // BaseFont without its subset prefix, e.g. gobold
	Size    float64
}

func (d pdfDoc) textLines() []pdfTextLine {
	var lines []pdfTextLine
	for _, p := range d.Pages {
		lines = append(lines, p.TextLines...)
	}
	return lines
}

func (d pdfDoc) lines() []string {
	var lines []string
	for _, l := range d.textLines() {
		lines = append(lines, l.Text)
	}
	return lines
}

// readPDF reads a document fpdf wrote, whose page tree is one node over all its pages.
func readPDF(t *testing.T, data []byte) pdfDoc {
	t.Helper()
	objs, trailer, err := pdfObjects(data)
	if err != nil {
		t.Fatalf("read PDF: %v", err)
	}
	r := pdfReader{objs: objs, fonts: map[string]*pdfFont{}}
	info, _ := r.resolve(trailer["Info"]).(pdfDict)
	title, _ := info["Title"].(pdfString)
	created, _ := info["CreationDate"].(pdfString)
	changed, _ := info["ModDate"].(pdfString)
	doc := pdfDoc{Title: pdfTextString(title), Dates: [2]string{string(created), string(changed)}}
	root, _ := r.resolve(trailer["Root"]).(pdfDict)
	pages, _ := r.resolve(root["Pages"]).(pdfDict)
	kids, _ := r.resolve(pages["Kids"]).([]any)
	for _, k := range kids {
		page, err := r.page(k, pages["MediaBox"])
		if err != nil {
			t.Fatalf("read PDF: page %d: %v", len(doc.Pages)+1, err)
		}
		doc.Pages = append(doc.Pages, page)
	}
	if len(doc.Pages) == 0 {
		t.Fatalf("read PDF: no pages in %v", pages)
	}
	for _, o := range objs {
		d, ok := o.(pdfDict)
		if ok && d["Type"] == pdfName("FontDescriptor") && d["FontFile2"] != nil {
			name, _ := d["FontName"].(pdfName)
			doc.Fonts = append(doc.Fonts, string(name))
		}
	}
	slices.Sort(doc.Fonts)
	return doc
}

type pdfReader struct {
	objs  map[int]any
	fonts map[string]*pdfFont // by resource name
}

// resolve is the object v refers to (fpdf refers to no reference), or v.
func (r *pdfReader) resolve(v any) any {
	if ref, ok := v.(pdfRef); ok {
		return r.objs[int(ref)]
	}
	return v
}

// page reads a page, whose media box is the page tree's (fpdf's pages are one size).
func (r *pdfReader) page(node, mediaBox any) (pdfPage, error) {
	var page pdfPage
	d, _ := r.resolve(node).(pdfDict)
	mb, ok := r.resolve(mediaBox).([]any)
	if d["Type"] != pdfName("Page") || d["MediaBox"] != nil || !ok || len(mb) != 4 {
		return page, fmt.Errorf("page %v in a tree of media box %v", d, mediaBox)
	}
	for i, v := range mb {
		page.MediaBox[i], _ = v.(float64)
	}
	content, ok := r.resolve(d["Contents"]).(*pdfStream)
	if !ok {
		return page, fmt.Errorf("contents %v", d["Contents"])
	}
	res, _ := r.resolve(d["Resources"]).(pdfDict)
	fontRes, _ := r.resolve(res["Font"]).(pdfDict)
	if err := r.showText(&page, content.data, fontRes); err != nil {
		return page, err
	}
	page.TextLines = pdfLines(page.Glyphs)
	return page, nil
}

// pdfFont is a font's name, its code's bytes and widths (in 1/1000 of the font size).
type pdfFont struct {
	name      string
	codeBytes int
	widths    map[int]float64
	dw        float64
}

func (r *pdfReader) font(fontRes pdfDict, res string) (*pdfFont, error) {
	if f, ok := r.fonts[res]; ok {
		return f, nil
	}
	d, ok := r.resolve(fontRes[res]).(pdfDict)
	if !ok {
		return nil, fmt.Errorf("font resource %s missing", res)
	}
	name, _ := d["BaseFont"].(pdfName)
	f := &pdfFont{name: string(name), codeBytes: 1, widths: map[int]float64{}, dw: 1000}
	if d["Subtype"] == pdfName("Type0") {
		if d["Encoding"] != pdfName("Identity-H") {
			return nil, fmt.Errorf("font %s: encoding %v", name, d["Encoding"])
		}
		f.codeBytes = 2
		if s, ok := r.resolve(d["ToUnicode"]).(*pdfStream); !ok ||
			!bytes.Contains(s.data, []byte("beginbfrange\n<0000> <FFFF> <0000>\nendbfrange")) {
			return nil, fmt.Errorf("font %s: ToUnicode not fpdf's identity", name)
		}
		desc, _ := r.resolve(d["DescendantFonts"]).([]any)
		if len(desc) != 1 {
			return nil, fmt.Errorf("font %s: descendant fonts %v", name, desc)
		}
		cid, _ := r.resolve(desc[0]).(pdfDict)
		if dw, ok := r.resolve(cid["DW"]).(float64); ok {
			f.dw = dw
		}
		// /W: c [w1 w2 ...] gives widths from c on; c1 c2 w gives one width to c1..c2.
		w, _ := r.resolve(cid["W"]).([]any)
		for i := 0; i+1 < len(w); i += 2 {
			first, _ := w[i].(float64)
			if a, ok := w[i+1].([]any); ok {
				for j, v := range a {
					f.widths[int(first)+j], _ = v.(float64)
				}
			} else if last, ok := w[i+1].(float64); ok && i+2 < len(w) {
				for c := int(first); c <= int(last); c++ {
					f.widths[c], _ = w[i+2].(float64)
				}
				i++
			} else {
				return nil, fmt.Errorf("font %s: bad /W at %d", name, i)
			}
		}
	} else {
		// A symbolic font's codes are read by its own map, not by WinAnsiEncoding.
		fd, _ := r.resolve(d["FontDescriptor"]).(pdfDict)
		flags, _ := fd["Flags"].(float64)
		if d["Encoding"] != pdfName("WinAnsiEncoding") || int(flags)&(4|32) != 32 {
			return nil, fmt.Errorf("font %s: encoding %v, flags %v: not nonsymbolic WinAnsi",
				name, d["Encoding"], flags)
		}
		first, _ := r.resolve(d["FirstChar"]).(float64)
		ws, _ := r.resolve(d["Widths"]).([]any)
		for i, v := range ws {
			f.widths[int(first)+i], _ = v.(float64)
		}
		f.dw = 500
	}
	r.fonts[res] = f
	return f, nil
}

// pdfGlyph is one shown character; typed is its text, or for the first glyph of a span
// with /ActualText the span's (the span's others stand for nothing).
type pdfGlyph struct {
	text       string
	x, y, endX float64
	size       float64
	font       string
	typed      string
}

type contentReader struct {
	r            *pdfReader
	fontRes      pdfDict
	out          *pdfPage // its Glyphs, Rects and Segments
	stack        []any    // the operands of the next operator
	pathX, pathY float64  // the current point of a path
	font         *pdfFont
	size         float64
	lineX, lineY float64 // where the text line starts (Td)
	x            float64 // where the next glyph is shown on it
	span         int     // the first glyph of the open /ActualText span; -1 when none is
	actual       string  // its /ActualText
}

// pdfOperands are the operators the reader knows and their operand counts.
var pdfOperands = map[pdfKeyword]int{"m": 2, "l": 2, "re": 4, "S": 0, "Td": 2, "Tf": 2, "Tj": 1,
	"BT": 0, "ET": 0, "BDC": 2, "EMC": 0, "g": 1, "G": 1, "w": 1, "j": 1, "J": 1}

// showText adds to page what content shows and draws.
func (r *pdfReader) showText(page *pdfPage, content []byte, fontRes pdfDict) error {
	c := &contentReader{r: r, fontRes: fontRes, out: page, span: -1}
	lx := &pdfLexer{data: content}
	for {
		v, err := lx.value()
		if err == errPDFEnd {
			return nil
		}
		if err != nil {
			return err
		}
		op, ok := v.(pdfKeyword)
		if !ok {
			c.stack = append(c.stack, v)
			continue
		}
		need, known := pdfOperands[op]
		if !known || len(c.stack) != need {
			return fmt.Errorf("operator %s with %d operands", op, len(c.stack))
		}
		if err := c.run(op); err != nil {
			return err
		}
		c.stack = c.stack[:0]
	}
}

// number is the operand n places from the top of the stack (1: the last).
func (c *contentReader) number(n int) float64 {
	f, _ := c.stack[len(c.stack)-n].(float64)
	return f
}

func (c *contentReader) run(op pdfKeyword) error {
	switch op {
	case "m", "l":
		if op == "l" {
			segment := [4]float64{c.pathX, c.pathY, c.number(2), c.number(1)}
			c.out.Segments = append(c.out.Segments, segment)
		}
		c.pathX, c.pathY = c.number(2), c.number(1)
	case "re":
		c.out.Rects = append(c.out.Rects, [4]float64{c.number(4), c.number(3), c.number(2), c.number(1)})
	case "BT":
		c.lineX, c.lineY, c.x = 0, 0, 0
	case "Td":
		c.lineX, c.lineY = c.lineX+c.number(2), c.lineY+c.number(1)
		c.x = c.lineX
	case "Tf":
		name, _ := c.stack[0].(pdfName)
		font, err := c.r.font(c.fontRes, string(name))
		if err != nil {
			return err
		}
		c.font, c.size = font, c.number(1)
	case "Tj":
		s, _ := c.stack[0].(pdfString)
		return c.show(s)
	case "BDC":
		props, _ := c.stack[1].(pdfDict)
		actual, ok := props["ActualText"].(pdfString)
		if !ok || c.span >= 0 {
			return fmt.Errorf("marked content %v inside a span: %v", props, c.span >= 0)
		}
		c.span, c.actual = len(c.out.Glyphs), pdfTextString(actual)
	case "EMC":
		if c.span < 0 {
			return fmt.Errorf("EMC outside a span")
		}
		for i := c.span; i < len(c.out.Glyphs); i++ {
			c.out.Glyphs[i].typed = ""
		}
		c.out.Glyphs[c.span].typed, c.span = c.actual, -1 // fpdf's spans are never empty
	}
	return nil
}

func (c *contentReader) show(s pdfString) error {
	font := c.font
	if font == nil {
		return fmt.Errorf("text shown without a font")
	}
	for i := 0; i+font.codeBytes <= len(s); i += font.codeBytes {
		code, text := int(s[i]), string(charmap.Windows1252.DecodeByte(s[i]))
		if font.codeBytes == 2 { // big-endian, its character, as fpdf's ToUnicode CMap says
			code = code<<8 | int(s[i+1])
			text = string(rune(code))
		}
		w, ok := font.widths[code]
		if !ok {
			w = font.dw
		}
		adv := w / 1000 * c.size
		c.out.Glyphs = append(c.out.Glyphs, pdfGlyph{text: text, x: c.x, y: c.lineY, endX: c.x + adv,
			size: c.size, font: font.name, typed: text})
		c.x += adv
	}
	return nil
}

// pdfLines groups glyphs into lines by baseline, top to bottom, each left to right (Typed
// in the order shown); a gap over a fifth of the size is a space, as pdftotext reads it.
func pdfLines(glyphs []pdfGlyph) []pdfTextLine {
	type line struct {
		y      float64
		glyphs []pdfGlyph
	}
	var lines []*line
	for _, g := range glyphs {
		i := slices.IndexFunc(lines, func(l *line) bool { return math.Abs(l.y-g.y) < g.size*0.3 })
		if i < 0 {
			i, lines = len(lines), append(lines, &line{y: g.y})
		}
		lines[i].glyphs = append(lines[i].glyphs, g)
	}
	slices.SortStableFunc(lines, func(a, b *line) int { return cmp.Compare(b.y, a.y) })
	var out []pdfTextLine
	for _, l := range lines {
		var typed strings.Builder
		for _, g := range l.glyphs { // in the order shown
			typed.WriteString(g.typed)
		}
		slices.SortStableFunc(l.glyphs, func(a, b pdfGlyph) int { return cmp.Compare(a.x, b.x) })
		var b strings.Builder
		tl := pdfTextLine{X: -1, Y: l.y}
		for i, g := range l.glyphs {
			if i > 0 {
				prev := l.glyphs[i-1]
				if g.x-prev.endX > g.size*0.2 && prev.text != " " && g.text != " " {
					b.WriteByte(' ')
				}
			}
			b.WriteString(g.text)
			if g.text != " " {
				if tl.X < 0 {
					tl.X, tl.Font, tl.Size = g.x, g.font, g.size
				}
				tl.EndX = g.endX
			}
		}
		tl.Typed = strings.Join(strings.Fields(typed.String()), " ")
		if tl.Text = strings.Join(strings.Fields(b.String()), " "); tl.Text != "" {
			out = append(out, tl)
		}
	}
	return out
}
