package main

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-pdf/fpdf"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goitalic"
	"golang.org/x/image/font/gofont/gomedium"
	"golang.org/x/image/font/gofont/goregular"
)

// Page geometry of SPEC.md, in points.
const (
	pdfMargin       = 50.0
	pdfContentWidth = 500.0
	pdfPadding      = 5.0  // inside a textarea frame
	pdfMinBoxHeight = 30.0 // of a textarea frame
	pdfLineSpacing  = 1.2  // line height as a multiple of the font size
)

// The four Go fonts (DESIGN.md): title and categories bold, labels medium as the
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

func (s *server) handleExportPDF(w http.ResponseWriter, r *http.Request) {
	responseID, ok := parseID(r.PathValue("responseId"))
	if !ok {
		writeError(w, http.StatusBadRequest, "Invalid response ID")
		return
	}
	context := fmt.Sprintf("generate PDF for response %d", responseID)
	// Rendering is CPU-bound and allocates about 20 MB: more documents at once than
	// cores only adds memory, not speed.
	select {
	case s.pdfSlots <- struct{}{}:
		defer func() { <-s.pdfSlots }()
	case <-r.Context().Done():
		return // the client is gone
	}
	form, values, err := s.store.ResponseExport(r.Context(), responseID)
	if errors.Is(err, errNotFound) {
		writeError(w, http.StatusNotFound, "Response not found")
		return
	}
	if err != nil {
		s.fail(w, r, context, err)
		return
	}
	// The whole document is built in memory first, so that a failure is still a clean
	// JSON error: nothing has been written yet.
	var buf bytes.Buffer
	if err := writeResponsePDF(&buf, form, values, s.now()); err != nil {
		s.fail(w, r, context, err)
		return
	}
	w.Header().Set("Content-Type", "application/pdf")
	w.Header().Set("Content-Disposition", contentDisposition(responseID, form.Title))
	w.Header().Set("Content-Length", fmt.Sprint(buf.Len()))
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(buf.Bytes()); err != nil {
		// Bytes are out: SPEC.md ends the stream without a JSON error.
		s.log.Warn("write PDF", "response", responseID, "err", err)
	}
}

// writeResponsePDF lays out the form with the response's values filled in (SPEC.md §4's
// content rules) and writes the finished document to buf.
func writeResponsePDF(buf *bytes.Buffer, form FormDetail, values map[int64]*string, now time.Time) (err error) {
	// fpdf reports most failures through pdf.Err, but some inputs still panic inside it;
	// the text is sanitised below so none should, and this turns any that remains into an
	// error rather than a dead request.
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("pdf layout: %v", v)
		}
	}()
	pdf := fpdf.NewCustom(&fpdf.InitType{OrientationStr: "P", UnitStr: "pt", SizeStr: "A4"})
	pdf.SetMargins(pdfMargin, pdfMargin, pdfMargin)
	pdf.SetAutoPageBreak(true, pdfMargin)
	pdf.SetCellMargin(0)
	pdf.SetTitle(pdfText(form.Title, false), true)
	pdf.SetCreator("formsvc", true)
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
	pdf.AddPage()

	l := pdfLayout{pdf}
	l.text("GoBold", 18, form.Title, "C")
	l.moveDown(18)
	for _, c := range form.Categories {
		if c.Name != "" {
			l.text("GoBold", 14, c.Name, "L")
			l.moveDown(14 / 2)
		}
		for _, fd := range c.Fields {
			l.text("GoMedium", 12, fd.Label+":", "L")
			if fd.Description != nil && *fd.Description != "" {
				l.text("GoItalic", 9, *fd.Description, "L")
			}
			value := ""
			if v := values[fd.ID]; v != nil {
				value = *v
			}
			if fd.Type == "textarea" {
				l.textarea(value)
			} else {
				l.underlined(formatValue(fd.Type, value))
			}
			l.moveDown(11)
		}
		l.moveDown(11 / 2)
	}
	if err := pdf.Output(buf); err != nil {
		return fmt.Errorf("pdf output: %w", err)
	}
	return nil
}

// usedFonts names the font families a form's document prints with.
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

// pdfLayout draws the pieces of a response document, flowing down the page.
type pdfLayout struct{ pdf *fpdf.Fpdf }

func lineHeight(size float64) float64 { return size * pdfLineSpacing }

func (l pdfLayout) moveDown(size float64) { l.pdf.Ln(lineHeight(size)) }

// text prints wrapped text over the content width; fpdf breaks pages as needed.
func (l pdfLayout) text(font string, size float64, s, align string) {
	l.pdf.SetFont(font, "", size)
	l.pdf.SetX(pdfMargin)
	l.pdf.MultiCell(pdfContentWidth, lineHeight(size), pdfText(s, false), "", align, false)
}

// underlined prints a value with a line under it the width of the content.
func (l pdfLayout) underlined(s string) {
	if s == "" {
		s = " " // keeps the line below an empty value a line lower than the label
	}
	l.text("GoRegular", 11, s, "L")
	y := l.pdf.GetY()
	l.pdf.Line(pdfMargin, y, pdfMargin+pdfContentWidth, y)
}

// textarea prints s inside a frame the width of the content, at least pdfMinBoxHeight
// high. Text that does not fit on the page continues on the next, in a frame of its own.
func (l pdfLayout) textarea(s string) {
	pdf := l.pdf
	const size = 11
	lh := lineHeight(size)
	pdf.SetFont("GoRegular", "", size)
	var lines []string
	for _, para := range strings.Split(pdfText(s, true), "\n") {
		if para == "" {
			lines = append(lines, "")
			continue
		}
		lines = append(lines, pdf.SplitText(para, pdfContentWidth-2*pdfPadding)...)
	}
	if s == "" {
		lines = nil
	}
	_, pageHeight := pdf.GetPageSize()
	bottom := pageHeight - pdfMargin
	for {
		y := pdf.GetY()
		room := bottom - y - 2*pdfPadding
		// Start on a new page when not even the minimal frame or one line fits here.
		if y+pdfMinBoxHeight > bottom || (len(lines) > 0 && room < lh) {
			pdf.AddPage()
			y = pdf.GetY()
			room = bottom - y - 2*pdfPadding
		}
		n := min(len(lines), int(room/lh))
		height := max(pdfMinBoxHeight, float64(n)*lh+2*pdfPadding)
		pdf.Rect(pdfMargin, y, pdfContentWidth, height, "D")
		for i, line := range lines[:n] {
			pdf.SetXY(pdfMargin+pdfPadding, y+pdfPadding+float64(i)*lh)
			pdf.CellFormat(pdfContentWidth-2*pdfPadding, lh, line, "", 0, "L", false, 0, "")
		}
		lines = lines[n:]
		pdf.SetXY(pdfMargin, y+height)
		if len(lines) == 0 {
			return
		}
		pdf.AddPage()
	}
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

// pdfText makes any string printable by fpdf's UTF-8 fonts, which cover only the Basic
// Multilingual Plane: a rune above U+FFFF (an emoji) would make fpdf fail the document or
// panic. Such runes and invalid UTF-8 become U+FFFD; control characters become a space,
// except newlines where keepNewlines is set (textareas), with CRLF and CR read as one.
func pdfText(s string, keepNewlines bool) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r':
			if keepNewlines {
				b.WriteByte('\n')
			} else {
				b.WriteByte(' ')
			}
		case r > 0xFFFF || r == utf8.RuneError:
			b.WriteRune('\uFFFD')
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// contentDisposition writes SPEC.md's header, inline; filename=response_<id>_<title>.pdf,
// with white space and slashes of the title made underscores. When the name still holds
// a character that is not an HTTP token character (quotes, semicolons, non-ASCII), it
// uses RFC 6266's form instead: an ASCII fallback and the exact name percent-encoded.
func contentDisposition(responseID int64, title string) string {
	safe := strings.Map(func(r rune) rune {
		if isJSSpace(r) || r == '/' || r == '\\' {
			return '_'
		}
		return r
	}, title)
	if safe == "" {
		safe = "form"
	}
	name := fmt.Sprintf("response_%d_%s.pdf", responseID, safe)
	if strings.IndexFunc(name, func(r rune) bool { return !isTokenChar(r) }) < 0 {
		return "inline; filename=" + name
	}
	fallback := strings.Map(func(r rune) rune {
		if isTokenChar(r) {
			return r
		}
		return '_'
	}, name)
	var enc strings.Builder
	for _, c := range []byte(name) {
		if c < utf8.RuneSelf && isAttrChar(rune(c)) {
			enc.WriteByte(c)
		} else {
			fmt.Fprintf(&enc, "%%%02X", c)
		}
	}
	return `inline; filename="` + fallback + `"; filename*=UTF-8''` + enc.String()
}

// isJSSpace is JavaScript's \s: Unicode white space and U+FEFF, but not U+0085.
func isJSSpace(r rune) bool {
	return (unicode.IsSpace(r) && r != '\u0085') || r == '\uFEFF'
}

// isTokenChar reports an RFC 9110 token character.
func isTokenChar(r rune) bool {
	return r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		strings.ContainsRune("!#$%&'*+-.^_`|~", r))
}

// isAttrChar reports an RFC 8187 attr-char, which may stand unencoded in filename*.
func isAttrChar(r rune) bool {
	return isTokenChar(r) && !strings.ContainsRune("%'*", r)
}
