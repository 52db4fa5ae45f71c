package main

import (
	"bytes"
	"slices"
	"testing"
	"time"
)

// exportDoc writes a form's PDF with the given fonts and reads it back.
func exportDoc(t *testing.T, form FormDetail, values map[int64]*string, fonts *fontIndex) pdfDoc {
	t.Helper()
	var buf bytes.Buffer
	if err := writeResponsePDF(&buf, form, values, time.Now(), fonts); err != nil {
		t.Fatal(err)
	}
	return readPDF(t, buf.Bytes())
}

// TestExportPDFBreakCharacters: in a textarea the line and paragraph separators break
// lines as a newline does; a soft hyphen inside a line that does not break there is
// invisible; decomposed letters print composed.
func TestExportPDFBreakCharacters(t *testing.T) {
	t.Parallel()
	fonts := newFontIndex(nil)
	for _, tc := range []struct {
		fieldType, value string
		want             []string
	}{
		{"textarea", "one\u2028two\u2029three", []string{"one", "two", "three"}},
		{"text", "co\u00ADoperate", []string{"cooperate"}},
		{"text", "Zoe\u0308 Cafe\u0301", []string{"Zoë Café"}},
	} {
		form, values := oneFieldForm("T", tc.fieldType, tc.value)
		got := exportDoc(t, form, values, fonts).lines()
		if want := append([]string{"T", "Value:"}, tc.want...); !slices.Equal(got, want) {
			t.Errorf("%s %q: lines %q, want %q", tc.fieldType, tc.value, got, want)
		}
	}
}
