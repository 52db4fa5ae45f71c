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
	"unicode/utf16"

	"golang.org/x/text/encoding/charmap"
)

// popplerTool runs one of poppler-utils' programs on a PDF and returns its output. The
// Go reader below (readPDF) carries the core checks everywhere; poppler's programs are an
// extra layer, run where they are installed (.ci/run installs them) and skipped elsewhere.
func popplerTool(t *testing.T, pdf []byte, tool string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		notInstalled(t, "%s not installed: %v (install poppler-utils for the poppler checks)", tool, err)
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
	// The length is sent, not left to chunked encoding: the document is whole before a
	// byte of it is.
	if res.ContentLength != int64(len(body)) || len(res.TransferEncoding) > 0 {
		e.t.Fatalf("export %d: Content-Length %d, Transfer-Encoding %q, want %d, none",
			responseID, res.ContentLength, res.TransferEncoding, len(body))
	}
	return body, res.Header
}

// textLines is the document's text as the Go reader finds it: non-empty lines, top to
// bottom, page after page, white space runs made one space.
func textLines(t *testing.T, pdf []byte) []string {
	t.Helper()
	return readPDF(t, pdf).lines()
}

// popplerLines is pdftotext -layout's output in textLines' form; it skips the test when
// pdftotext is missing.
func popplerLines(t *testing.T, pdf []byte) []string {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(popplerTool(t, pdf, "pdftotext", "-layout"), "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// checkPopplerAgrees checks, in a subtest that skips without poppler, that pdftotext
// reads the same lines as the Go reader finds typed (a document's /ActualText included).
func checkPopplerAgrees(t *testing.T, pdf []byte) {
	t.Helper()
	t.Run("pdftotext agrees", func(t *testing.T) {
		var typed []string
		for _, l := range readPDF(t, pdf).textLines() {
			typed = append(typed, l.Typed)
		}
		want := strings.Join(typed, "\n")
		if got := strings.Join(popplerLines(t, pdf), "\n"); got != want {
			t.Errorf("pdftotext reads:\n%s\n\nthe Go reader:\n%s", got, want)
		}
	})
}

// A reader of the PDFs this service writes, so that the core checks need nothing but Go.
// It knows what fpdf writes: objects one after another (no object streams, no
// encryption), zlib FlateDecode streams, Type0 fonts with Identity-H, a ToUnicode CMap and
// a /W widths array, TrueType fonts in WinAnsiEncoding (ISO 32000-1 Annex D, which
// Windows-1252 is for its printable characters) with /FirstChar and /Widths, and text
// shown with Tj/TJ strings placed by Td/Tm inside BT/ET. It is not a general PDF reader
// and fails the test on anything it does not know.

// pdfDoc is what readPDF finds in a document.
type pdfDoc struct {
	Title string    // of the document information dictionary
	Dates [2]string // its CreationDate and ModDate, as written
	Pages []pdfPage // in page-tree order
	// Fonts are the BaseFont names of the fonts the document embeds (FontFile2).
	Fonts []string
}

// pdfPage is one page: its media box and its text, line by line from the top, each line's
// pieces ordered left to right (for right-to-left scripts this is visual order).
type pdfPage struct {
	MediaBox [4]float64
	Lines    []string
	// Fonts are the BaseFont names of the fonts text on this page is shown in.
	Fonts []string
	// Right is where the rightmost character other than a space ends.
	Right float64
	// Rects are the rectangles drawn (re), as x, y, width, height in PDF space.
	Rects [][4]float64
	// Segments are the straight lines drawn (m, l), as x1, y1, x2, y2 in PDF space.
	Segments [][4]float64
	// TextLines are Lines with where and how each is set.
	TextLines []pdfTextLine
	// Glyphs are the characters shown, in the order they are drawn.
	Glyphs []pdfGlyph
}

// pdfTextLine is one line of text on a page: where it starts and ends (x, in points from
// the left edge) and the font and size of its first character.
type pdfTextLine struct {
	Text    string // the glyphs' text, left to right
	Typed   string // the text they stand for (/ActualText), in the order they are shown
	X, EndX float64
	Y       float64 // the baseline, in points from the bottom edge
	Font    string  // BaseFont without its subset prefix, e.g. gobold
	Size    float64
}

// text is the page's lines joined with newlines.
func (p pdfPage) text() string { return strings.Join(p.Lines, "\n") }

// text is every page's lines joined with newlines.
func (d pdfDoc) text() string {
	var pages []string
	for _, p := range d.Pages {
		pages = append(pages, p.text())
	}
	return strings.Join(pages, "\n")
}

// textLines is every page's text lines, in order.
func (d pdfDoc) textLines() []pdfTextLine {
	var lines []pdfTextLine
	for _, p := range d.Pages {
		lines = append(lines, p.TextLines...)
	}
	return lines
}

// lines is every page's lines, in order.
func (d pdfDoc) lines() []string {
	var lines []string
	for _, p := range d.Pages {
		lines = append(lines, p.Lines...)
	}
	return lines
}

// readPDF reads a document fpdf wrote; a document it cannot read fails the test.
func readPDF(t *testing.T, data []byte) pdfDoc {
	t.Helper()
	doc, err := parsePDF(data)
	if err != nil {
		t.Fatalf("read PDF: %v", err)
	}
	return doc
}

func parsePDF(data []byte) (doc pdfDoc, err error) {
	objs, trailer, err := pdfObjects(data)
	if err != nil {
		return doc, err
	}
	r := pdfReader{objs: objs, fonts: map[string]*pdfFont{}}
	if info, ok := r.resolve(trailer["Info"]).(pdfDict); ok {
		if s, ok := r.resolve(info["Title"]).(pdfString); ok {
			doc.Title = pdfTextString(s)
		}
		for i, key := range []string{"CreationDate", "ModDate"} {
			if s, ok := r.resolve(info[key]).(pdfString); ok {
				doc.Dates[i] = string(s)
			}
		}
	}
	root, ok := r.resolve(trailer["Root"]).(pdfDict)
	if !ok {
		return doc, fmt.Errorf("no document catalog")
	}
	if err := r.walkPages(root["Pages"], nil, &doc); err != nil {
		return doc, err
	}
	for _, o := range objs {
		d, ok := o.(pdfDict)
		if !ok || d["Type"] != pdfName("FontDescriptor") {
			continue
		}
		if d["FontFile2"] != nil || d["FontFile"] != nil || d["FontFile3"] != nil {
			name, _ := d["FontName"].(pdfName)
			doc.Fonts = append(doc.Fonts, string(name))
		}
	}
	slices.Sort(doc.Fonts)
	return doc, nil
}

// pdfReader resolves references and remembers the fonts it has read.
type pdfReader struct {
	objs  map[int]any
	fonts map[string]*pdfFont // by resource name
}

func (r *pdfReader) resolve(v any) any {
	for i := 0; i < 10; i++ {
		ref, ok := v.(pdfRef)
		if !ok {
			return v
		}
		v = r.objs[int(ref)]
	}
	return nil
}

// walkPages appends the pages under node to doc; inherited carries the media box down.
func (r *pdfReader) walkPages(node any, inherited []any, doc *pdfDoc) error {
	d, ok := r.resolve(node).(pdfDict)
	if !ok {
		return fmt.Errorf("page tree node %v is not a dictionary", node)
	}
	if mb, ok := r.resolve(d["MediaBox"]).([]any); ok {
		inherited = mb
	}
	switch d["Type"] {
	case pdfName("Pages"):
		kids, _ := r.resolve(d["Kids"]).([]any)
		for _, k := range kids {
			if err := r.walkPages(k, inherited, doc); err != nil {
				return err
			}
		}
		return nil
	case pdfName("Page"):
		var page pdfPage
		if len(inherited) != 4 {
			return fmt.Errorf("page without a media box")
		}
		for i, v := range inherited {
			page.MediaBox[i], _ = r.resolve(v).(float64)
		}
		var content []byte
		contents := r.resolve(d["Contents"])
		if a, ok := contents.([]any); ok {
			for _, c := range a {
				if s, ok := r.resolve(c).(*pdfStream); ok {
					content = append(append(content, s.data...), '\n')
				}
			}
		} else if s, ok := contents.(*pdfStream); ok {
			content = s.data
		}
		res, _ := r.resolve(d["Resources"]).(pdfDict)
		fontRes, _ := r.resolve(res["Font"]).(pdfDict)
		shown, err := r.showText(content, fontRes)
		if err != nil {
			return fmt.Errorf("page %d: %w", len(doc.Pages)+1, err)
		}
		glyphs, fonts, rects, segments := shown.glyphs, shown.fonts, shown.rects, shown.segments
		page.TextLines = pdfLines(glyphs)
		page.Glyphs = glyphs
		for _, l := range page.TextLines {
			page.Lines = append(page.Lines, l.Text)
		}
		for _, g := range glyphs {
			if g.text != " " {
				page.Right = max(page.Right, g.endX)
			}
		}
		page.Fonts = fonts
		page.Rects = rects
		page.Segments = segments
		doc.Pages = append(doc.Pages, page)
		return nil
	}
	return fmt.Errorf("page tree node of type %v", d["Type"])
}

// pdfFont is what the reader needs of a font: its name, how many bytes a character code
// takes, the code's text (ToUnicode) and its width (in 1/1000 of the font size).
type pdfFont struct {
	name      string
	codeBytes int
	toUnicode map[int]string
	ranges    []pdfCMapRange
	widths    map[int]float64
	dw        float64
}

type pdfCMapRange struct {
	lo, hi int
	dst    []rune // the text of lo; the last rune counts up for the rest of the range
}

func (f *pdfFont) text(code int) string {
	if s, ok := f.toUnicode[code]; ok {
		return s
	}
	for _, rg := range f.ranges {
		if code >= rg.lo && code <= rg.hi && len(rg.dst) > 0 {
			rs := slices.Clone(rg.dst)
			rs[len(rs)-1] += rune(code - rg.lo)
			return string(rs)
		}
	}
	switch {
	case f.codeBytes == 1 && (code == 0xA0 || code == 0xAD):
		return map[int]string{0xA0: " ", 0xAD: "-"}[code] // WinAnsi's duplicates (Annex D)
	case f.codeBytes == 1:
		return string(charmap.Windows1252.DecodeByte(byte(code)))
	}
	return "\uFFFD"
}

func (f *pdfFont) width(code int) float64 {
	if w, ok := f.widths[code]; ok {
		return w
	}
	return f.dw
}

// font reads the font of resource name res from the page's font resources.
func (r *pdfReader) font(fontRes pdfDict, res string) (*pdfFont, error) {
	if f, ok := r.fonts[res]; ok {
		return f, nil
	}
	d, ok := r.resolve(fontRes[res]).(pdfDict)
	if !ok {
		return nil, fmt.Errorf("font resource %s missing", res)
	}
	name, _ := d["BaseFont"].(pdfName)
	f := &pdfFont{name: string(name), codeBytes: 1, toUnicode: map[int]string{}, widths: map[int]float64{}, dw: 1000}
	if d["Subtype"] == pdfName("Type0") {
		if d["Encoding"] != pdfName("Identity-H") {
			return nil, fmt.Errorf("font %s: encoding %v", name, d["Encoding"])
		}
		f.codeBytes = 2
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
		for i := 0; i < len(w); {
			first, ok := r.resolve(w[i]).(float64)
			if !ok || i+1 >= len(w) {
				return nil, fmt.Errorf("font %s: bad /W at %d", name, i)
			}
			if a, ok := r.resolve(w[i+1]).([]any); ok {
				for j, v := range a {
					f.widths[int(first)+j], _ = r.resolve(v).(float64)
				}
				i += 2
				continue
			}
			last, ok1 := r.resolve(w[i+1]).(float64)
			if i+2 >= len(w) || !ok1 {
				return nil, fmt.Errorf("font %s: bad /W at %d", name, i)
			}
			width, _ := r.resolve(w[i+2]).(float64)
			for c := int(first); c <= int(last); c++ {
				f.widths[c] = width
			}
			i += 3
		}
	} else {
		if d["Encoding"] != pdfName("WinAnsiEncoding") {
			return nil, fmt.Errorf("font %s: encoding %v", name, d["Encoding"])
		}
		first, _ := r.resolve(d["FirstChar"]).(float64)
		ws, _ := r.resolve(d["Widths"]).([]any)
		for i, v := range ws {
			f.widths[int(first)+i], _ = r.resolve(v).(float64)
		}
		f.dw = 500
	}
	if s, ok := r.resolve(d["ToUnicode"]).(*pdfStream); ok {
		if err := f.readCMap(s.data); err != nil {
			return nil, fmt.Errorf("font %s ToUnicode: %w", name, err)
		}
	}
	r.fonts[res] = f
	return f, nil
}

// readCMap reads the bfchar and bfrange sections of a ToUnicode CMap.
func (f *pdfFont) readCMap(data []byte) error {
	lx := &pdfLexer{data: data}
	code := func(v any) int {
		n := 0
		for _, b := range v.(pdfString) {
			n = n<<8 | int(b)
		}
		return n
	}
	utf16Of := func(v any) []rune {
		s := v.(pdfString)
		u := make([]uint16, 0, len(s)/2)
		for i := 0; i+1 < len(s); i += 2 {
			u = append(u, uint16(s[i])<<8|uint16(s[i+1]))
		}
		return utf16.Decode(u)
	}
	var stack []any
	for {
		v, err := lx.value()
		if err == errPDFEnd {
			return nil
		}
		if err != nil {
			return err
		}
		switch v {
		case pdfKeyword("endbfchar"):
			for i := 0; i+1 < len(stack); i += 2 {
				f.toUnicode[code(stack[i])] = string(utf16Of(stack[i+1]))
			}
		case pdfKeyword("endbfrange"):
			for i := 0; i+2 < len(stack); i += 3 {
				lo, hi := code(stack[i]), code(stack[i+1])
				if a, ok := stack[i+2].([]any); ok {
					for j, s := range a {
						f.toUnicode[lo+j] = string(utf16Of(s))
					}
				} else {
					f.ranges = append(f.ranges, pdfCMapRange{lo, hi, utf16Of(stack[i+2])})
				}
			}
		}
		if _, ok := v.(pdfKeyword); ok {
			stack = stack[:0]
		} else {
			stack = append(stack, v)
		}
	}
}

// pdfGlyph is one shown character: its text, where it starts and ends on the baseline
// (x left of endX, also for a glyph drawn mirrored), the font size, and the text it
// stands for: its own, or for the first glyph of a marked-content span with /ActualText
// the span's (the span's other glyphs stand for nothing).
type pdfGlyph struct {
	text       string
	x, y, endX float64
	size       float64
	font       string
	typed      string
}

// pdfMatrix is [a b c d e f] of PDF's transformation matrices.
type pdfMatrix [6]float64

var pdfIdentity = pdfMatrix{1, 0, 0, 1, 0, 0}

// mul is m × n (m applied first).
func (m pdfMatrix) mul(n pdfMatrix) pdfMatrix {
	return pdfMatrix{
		m[0]*n[0] + m[1]*n[2], m[0]*n[1] + m[1]*n[3],
		m[2]*n[0] + m[3]*n[2], m[2]*n[1] + m[3]*n[3],
		m[4]*n[0] + m[5]*n[2] + n[4], m[4]*n[1] + m[5]*n[3] + n[5],
	}
}

// pageContent is what a page's content stream shows and draws: its glyphs in the order
// shown, the names of the fonts it shows them in, and the rectangles and straight lines
// it draws.
type pageContent struct {
	glyphs   []pdfGlyph
	fonts    []string
	rects    [][4]float64
	segments [][4]float64
}

// contentReader runs a content stream's operators, keeping the graphics and text state
// they change.
type contentReader struct {
	r       *pdfReader
	fontRes pdfDict
	out     pageContent
	stack   []any // the operands of the next operator

	pathX, pathY float64 // the current point of a path
	graphicsState
	saved   []graphicsState // by q, for Q
	tm, tlm pdfMatrix
	spans   []int    // per open marked-content sequence, its first glyph; -1 without /ActualText
	actual  []string // per open marked-content sequence, its /ActualText
}

// graphicsState is the part of PDF's graphics state the reader keeps: q saves it and Q
// restores it, the text state (the font among it) included.
type graphicsState struct {
	ctm     pdfMatrix
	font    *pdfFont
	size    float64
	leading float64
	charSp  float64
	wordSp  float64
	hScale  float64
}

// showText runs a content stream's text, path and marked-content operators.
func (r *pdfReader) showText(content []byte, fontRes pdfDict) (pageContent, error) {
	c := &contentReader{r: r, fontRes: fontRes, graphicsState: graphicsState{ctm: pdfIdentity, hScale: 1}, tm: pdfIdentity, tlm: pdfIdentity}
	lx := &pdfLexer{data: content}
	for {
		v, err := lx.value()
		if err == errPDFEnd {
			return c.out, nil
		}
		if err != nil {
			return pageContent{}, err
		}
		op, ok := v.(pdfKeyword)
		if !ok {
			c.stack = append(c.stack, v)
			continue
		}
		need := map[pdfKeyword]int{"m": 2, "l": 2, "re": 4, "cm": 6, "Tm": 6, "Td": 2, "TD": 2, "Tf": 2, "TL": 1, "Tc": 1, "Tw": 1, "Tz": 1, "Tj": 1, "TJ": 1, "'": 1, "\"": 3, "BDC": 2}[op]
		if len(c.stack) < need {
			return pageContent{}, fmt.Errorf("operator %s with %d operands", op, len(c.stack))
		}
		if err := c.run(op); err != nil {
			return pageContent{}, err
		}
		c.stack = c.stack[:0]
	}
}

// number is the operand n places from the top of the stack (1 is the last).
func (c *contentReader) number(n int) float64 {
	f, _ := c.stack[len(c.stack)-n].(float64)
	return f
}

// run runs one operator on the operands stacked.
func (c *contentReader) run(op pdfKeyword) error {
	switch op {
	case "m", "l", "re", "q", "Q", "cm":
		c.graphics(op)
	case "BDC", "BMC", "EMC":
		c.markedContent(op)
	case "Tf":
		name, _ := c.stack[len(c.stack)-2].(pdfName)
		font, err := c.r.font(c.fontRes, string(name))
		if err != nil {
			return err
		}
		c.font, c.size = font, c.number(1)
	case "Tj", "'", "\"":
		if op != "Tj" {
			c.nextLine(0, -c.leading)
		}
		s, _ := c.stack[len(c.stack)-1].(pdfString)
		return c.show(s)
	case "TJ":
		a, _ := c.stack[len(c.stack)-1].([]any)
		for _, e := range a {
			switch e := e.(type) {
			case pdfString:
				if err := c.show(e); err != nil {
					return err
				}
			case float64:
				c.tm = pdfMatrix{1, 0, 0, 1, -e / 1000 * c.size * c.hScale, 0}.mul(c.tm)
			}
		}
	default:
		c.textState(op)
	}
	return nil
}

// graphics runs the path and graphics-state operators the reader knows.
func (c *contentReader) graphics(op pdfKeyword) {
	switch op {
	case "m", "l":
		p := pdfMatrix{1, 0, 0, 1, c.number(2), c.number(1)}.mul(c.ctm)
		if op == "l" {
			c.out.segments = append(c.out.segments, [4]float64{c.pathX, c.pathY, p[4], p[5]})
		}
		c.pathX, c.pathY = p[4], p[5]
	case "re":
		c.out.rects = append(c.out.rects, [4]float64{c.number(4), c.number(3), c.number(2), c.number(1)})
	case "q":
		c.saved = append(c.saved, c.graphicsState)
	case "Q":
		if len(c.saved) > 0 {
			c.graphicsState, c.saved = c.saved[len(c.saved)-1], c.saved[:len(c.saved)-1]
		}
	case "cm":
		var m pdfMatrix
		for i := range m {
			m[i] = c.number(6 - i)
		}
		c.ctm = m.mul(c.ctm)
	}
}

// markedContent opens and closes marked-content sequences; at the end of one with an
// /ActualText, its first glyph stands for that text and the others for nothing.
func (c *contentReader) markedContent(op pdfKeyword) {
	switch op {
	case "BDC":
		props, _ := c.stack[len(c.stack)-1].(pdfDict)
		if _, ok := props["ActualText"].(pdfString); ok {
			c.spans = append(c.spans, len(c.out.glyphs))
			c.actual = append(c.actual, pdfTextString(props["ActualText"].(pdfString)))
			return
		}
		c.spans, c.actual = append(c.spans, -1), append(c.actual, "")
	case "BMC":
		c.spans, c.actual = append(c.spans, -1), append(c.actual, "")
	case "EMC":
		if len(c.spans) == 0 {
			return
		}
		first, text := c.spans[len(c.spans)-1], c.actual[len(c.actual)-1]
		c.spans, c.actual = c.spans[:len(c.spans)-1], c.actual[:len(c.actual)-1]
		if first < 0 {
			return
		}
		for i := first; i < len(c.out.glyphs); i++ {
			c.out.glyphs[i].typed = ""
		}
		if first < len(c.out.glyphs) {
			c.out.glyphs[first].typed = text
		}
	}
}

// textState runs the operators that set the text matrix and text parameters.
func (c *contentReader) textState(op pdfKeyword) {
	switch op {
	case "BT":
		c.tm, c.tlm = pdfIdentity, pdfIdentity
	case "Tm":
		for i := range c.tlm {
			c.tlm[i] = c.number(6 - i)
		}
		c.tm = c.tlm
	case "Td":
		c.nextLine(c.number(2), c.number(1))
	case "TD":
		c.leading = -c.number(1)
		c.nextLine(c.number(2), c.number(1))
	case "T*":
		c.nextLine(0, -c.leading)
	case "TL":
		c.leading = c.number(1)
	case "Tc":
		c.charSp = c.number(1)
	case "Tw":
		c.wordSp = c.number(1)
	case "Tz":
		c.hScale = c.number(1) / 100
	}
}

func (c *contentReader) nextLine(tx, ty float64) {
	c.tlm = pdfMatrix{1, 0, 0, 1, tx, ty}.mul(c.tlm)
	c.tm = c.tlm
}

// show shows a string's glyphs in the current font.
func (c *contentReader) show(s pdfString) error {
	font := c.font
	if font == nil {
		return fmt.Errorf("text shown without a font")
	}
	if !slices.Contains(c.out.fonts, font.name) {
		c.out.fonts = append(c.out.fonts, font.name)
	}
	for i := 0; i+font.codeBytes <= len(s); i += font.codeBytes {
		code := 0
		for _, b := range s[i : i+font.codeBytes] {
			code = code<<8 | int(b)
		}
		adv := font.width(code)/1000*c.size + c.charSp
		if font.codeBytes == 1 && code == ' ' {
			adv += c.wordSp
		}
		adv *= c.hScale
		m := c.tm.mul(c.ctm)
		end := pdfMatrix{1, 0, 0, 1, adv, 0}.mul(c.tm).mul(c.ctm)
		x, endX := min(m[4], end[4]), max(m[4], end[4])
		text := font.text(code)
		c.out.glyphs = append(c.out.glyphs, pdfGlyph{text: text, x: x, y: m[5], endX: endX, size: c.size * m[3], font: font.name, typed: text})
		c.tm = pdfMatrix{1, 0, 0, 1, adv, 0}.mul(c.tm)
	}
	return nil
}

// pdfLines groups glyphs into lines by their baseline, top to bottom, and orders each
// line's glyphs left to right (Typed keeps the order shown). A gap wider than a fifth of
// the font size between two glyphs is a space, as pdftotext reads it. Lines of only
// spaces are left out.
func pdfLines(glyphs []pdfGlyph) []pdfTextLine {
	type line struct {
		y      float64
		glyphs []pdfGlyph
	}
	var lines []*line
	for _, g := range glyphs {
		var into *line
		for _, l := range lines {
			if math.Abs(l.y-g.y) < g.size*0.3 {
				into = l
				break
			}
		}
		if into == nil {
			into = &line{y: g.y}
			lines = append(lines, into)
		}
		into.glyphs = append(into.glyphs, g)
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
			tl.Font = tl.Font[strings.IndexByte(tl.Font, '+')+1:] // drop the subset prefix
			out = append(out, tl)
		}
	}
	return out
}
