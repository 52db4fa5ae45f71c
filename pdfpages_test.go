package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// keepForm is a form whose fields start at every height of a page as filler grows: a
// textarea of filler lines first, then categories H0, H1 ... of fields labelled L0, L1
// ... (every other one with a description D<n>), of every kind of value: a text V<n>, a
// textarea whose first line is V<n>, an empty textarea.
func keepForm(filler int) (FormDetail, map[int64]*string) {
	form := FormDetail{Form: Form{ID: 1, Title: "Keep"}}
	fill := strings.Repeat("filler\n", filler)
	values := map[int64]*string{0: &fill}
	form.Categories = append(form.Categories, Category{Fields: []Field{{ID: 0, Label: "Filler", Type: "textarea"}}})
	n := int64(0)
	for c := range 6 {
		cat := Category{ID: int64(c + 1), Name: fmt.Sprintf("H%d", c)}
		for i := range 5 {
			n++
			fd := Field{ID: n, Label: fmt.Sprintf("L%d", n), Type: []string{"text", "textarea", "date", "textarea", "boolean"}[i]}
			if n%2 == 0 {
				fd.Description = ptr(fmt.Sprintf("D%d", n))
			}
			v := fmt.Sprintf("V%d", n)
			switch i {
			case 1:
				v += "\nsecond line\nthird line"
			case 3:
				v = ""
			case 4:
				v = "true"
			}
			values[n] = &v
			cat.Fields = append(cat.Fields, fd)
		}
		form.Categories = append(form.Categories, cat)
	}
	return form, values
}

// pagedLine is a line of text with the page it is on.
type pagedLine struct {
	pdfTextLine
	page int
}

func pagedLines(doc pdfDoc) []pagedLine {
	var out []pagedLine
	for i, p := range doc.Pages {
		for _, l := range p.TextLines {
			out = append(out, pagedLine{l, i + 1})
		}
	}
	return out
}

// TestExportPDFKeepWithNext: wherever a field falls on a page, its label is on the page of
// its description and of its value's first line (the top of its frame for an empty
// textarea), and a category heading is on the page of its first field's label.
func TestExportPDFKeepWithNext(t *testing.T) {
	t.Parallel()
	fonts := newFontIndex(nil)
	// A line of a textarea is 13.2 pt: 60 steps move the fields through a whole page.
	for filler := range 60 {
		form, values := keepForm(filler)
		var buf bytes.Buffer
		if err := writeResponsePDF(&buf, form, values, time.Now(), fonts); err != nil {
			t.Fatal(err)
		}
		doc := readPDF(t, buf.Bytes())
		checkKeptTogether(t, filler, doc)
	}
}

func checkKeptTogether(t *testing.T, filler int, doc pdfDoc) {
	t.Helper()
	lines := pagedLines(doc)
	for i, l := range lines {
		var want []string
		var n int
		switch {
		case strings.HasPrefix(l.Text, "H"):
			want = []string{"L"}
		case fmtScan(l.Text, "L%d:", &n):
			want = valueLines(n)
		default:
			continue
		}
		for j, w := range want {
			if w == "" {
				if !frameUnder(doc.Pages[l.page-1], l.Y) {
					t.Errorf("filler %d: %q on page %d, its empty frame not under it there", filler, l.Text, l.page)
				}
				continue
			}
			if next := i + 1 + j; next >= len(lines) || !strings.HasPrefix(lines[next].Text, w) || lines[next].page != l.page {
				t.Errorf("filler %d: %q on page %d, not followed there by %q: %v", filler, l.Text, l.page, w, lines[i+1:min(i+3, len(lines))])
			}
		}
	}
}

// fmtScan reports whether s is format's text with its one number, read into n.
func fmtScan(s, format string, n *int) bool {
	k, err := fmt.Sscanf(s, format, n)
	return k == 1 && err == nil
}

// valueLines is what follows label L<n> on its page: its description D<n> when n is
// even, then its value: V<n>, Yes, or "" for an empty textarea's frame.
func valueLines(n int) []string {
	var want []string
	if n%2 == 0 {
		want = append(want, fmt.Sprintf("D%d", n))
	}
	switch (n - 1) % 5 {
	case 3:
		return append(want, "")
	case 4:
		return append(want, "Yes")
	}
	return append(want, fmt.Sprintf("V%d", n))
}

// frameUnder reports a frame on the page whose top edge is just under a label's baseline
// y (PDF space, y up): within a label's and a description's line.
func frameUnder(p pdfPage, y float64) bool {
	for _, r := range p.Rects {
		if top := r[1]; top < y && top > y-30 {
			return true
		}
	}
	return false
}
