package main

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

// oneFieldForm is a form of one field of the given type with its value.
func oneFieldForm(title, fieldType, value string) (FormDetail, map[int64]*string) {
	form := FormDetail{Form: Form{ID: 1, Title: title}, Categories: []Category{{ID: 1, Fields: []Field{{ID: 1, Label: "Value", Type: fieldType}}}}}
	return form, map[int64]*string{1: &value}
}

// exportAllocs writes a form's PDF and returns the document, the bytes allocated
// meanwhile and its error.
func exportAllocs(t *testing.T, form FormDetail, values map[int64]*string, fonts *fontIndex) ([]byte, uint64, error) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var buf bytes.Buffer
	err := writeResponsePDF(&buf, form, values, time.Now(), fonts)
	runtime.ReadMemStats(&after)
	return buf.Bytes(), after.TotalAlloc - before.TotalAlloc, err
}

// TestExportPDFBoundedExpansion: a megabyte of a character no font draws (U+1FBA9, a
// block element above the Basic Multilingual Plane) costs what a megabyte of letters
// does, not what its 30-letter name would: the names stop at pdfNameBudget, and the rest
// print as U+FFFD. Allocations are checked with a wide margin: about 90 MB with the
// budget, gigabytes without it.
func TestExportPDFBoundedExpansion(t *testing.T) {
	fonts := newFontIndex(nil) // the Go fonts alone: U+1FBA9 has no font anywhere
	value := strings.Repeat("\U0001FBA9", 1<<20/4)
	form, values := oneFieldForm("Bound", "text", value)
	pdf, allocated, err := exportAllocs(t, form, values, fonts)
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	t.Logf("allocated %d MiB", allocated>>20)
	if allocated > 300<<20 {
		t.Errorf("a 1 MiB value allocated %d MiB, want under 300 MiB", allocated>>20)
	}
	text := strings.Join(strings.Fields(readPDF(t, pdf).text()), " ") // the names wrap
	name := runeName(0x1FBA9)
	names, replaced := strings.Count(text, name), strings.Count(text, "\uFFFD")
	if names != pdfNameBudget/len(name) || names+replaced != len(value)/4 {
		t.Errorf("%d names and %d U+FFFD, want %d names and the other %d characters as U+FFFD",
			names, replaced, pdfNameBudget/len(name), len(value)/4-pdfNameBudget/len(name))
	}
}

// TestExportPDFTooLong: past pdfMaxPages the export stops with errPDFTooLong; a document
// of pdfMaxPages pages is still written. (Text and textareas break pages through one
// function, pdfLayout.print, which asks newPage for each.)
func TestExportPDFTooLong(t *testing.T) {
	t.Parallel()
	fonts := newFontIndex(nil)
	// A frame holds 55 lines of 13.2 pt on a page (741.89 pt less 10 of padding), 51 on
	// the first under the title and label: 54,996 lines on 1000 pages.
	const fitting = 51 + (pdfMaxPages-1)*55
	fits := strings.Repeat("x\n", fitting-1) + "x"
	form, values := oneFieldForm("Long", "textarea", fits)
	pdf, _, err := exportAllocs(t, form, values, fonts)
	if err != nil {
		t.Fatalf("a document of %d pages: %v", pdfMaxPages, err)
	}
	if n := len(readPDF(t, pdf).Pages); n != pdfMaxPages {
		t.Fatalf("%d pages, want %d: the test's arithmetic is off", n, pdfMaxPages)
	}

	form, values = oneFieldForm("Long", "textarea", fits+"\nx")
	if _, _, err := exportAllocs(t, form, values, fonts); !errors.Is(err, errPDFTooLong) {
		t.Errorf("a textarea of %d lines: error %v, want errPDFTooLong", fitting+1, err)
	}
}

// TestPDFNameBudget: names are printed until the next would pass pdfNameBudget, then
// U+FFFD, per document.
func TestPDFNameBudget(t *testing.T) {
	t.Parallel()
	l := &pdfLayout{}
	name := runeName(0x1F642) // [SLIGHTLY SMILING FACE], 23 letters
	n := pdfNameBudget / len(name)
	for i := range n {
		if got := l.missing(0x1F642); got != name {
			t.Fatalf("name %d: %q, want %q", i+1, got, name)
		}
	}
	if got := l.missing(0x1F642); got != "\uFFFD" {
		t.Errorf("past the budget: %q, want U+FFFD", got)
	}
	if got := (&pdfLayout{}).missing(0x1F642); got != name {
		t.Errorf("a new document: %q, want the name again", got)
	}
	if got := (&pdfLayout{names: pdfNameBudget - len(name)}).missing(0x1F642); got != name {
		t.Errorf("a name that reaches the budget exactly: %q, want the name", got)
	}
}
