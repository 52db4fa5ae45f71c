package main

import (
	"bytes"
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func oneFieldForm(title, fieldType, value string) (FormDetail, map[int64]*string) {
	fields := []Field{{ID: 1, Label: "Value", Type: fieldType}}
	form := FormDetail{Form: Form{ID: 1, Title: title}, Categories: []Category{{ID: 1, Fields: fields}}}
	return form, map[int64]*string{1: &value}
}

// TestExportPDFBoundedExpansion: a megabyte of a character no font draws (U+1FBA9) costs
// what a megabyte of letters does, not what its long name would: names stop at
// pdfNameBudget, the rest print U+FFFD. About 90 MB with the budget, gigabytes without.
// A name reaching the budget exactly prints, the next is U+FFFD; a new document has its
// own budget.
func TestExportPDFBoundedExpansion(t *testing.T) {
	fonts := newFontIndex(nil) // the Go fonts alone: U+1FBA9 has no font anywhere
	value := strings.Repeat("\U0001FBA9", 1<<20/4)
	form, values := oneFieldForm("Bound", "text", value)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	pdf := writePDF(t, form, values, fonts)
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d MiB", allocated>>20)
	if allocated > 300<<20 {
		t.Errorf("a 1 MiB value allocated %d MiB, want under 300 MiB", allocated>>20)
	}
	text := strings.Join(strings.Fields(strings.Join(readPDF(t, pdf).lines(), " ")), " ") // the names wrap
	name := runeName(0x1FBA9)
	names, replaced := strings.Count(text, name), strings.Count(text, "\uFFFD")
	if names != pdfNameBudget/len(name) || names+replaced != len(value)/4 {
		t.Errorf("%d names and %d U+FFFD, want %d names and the other %d characters as U+FFFD",
			names, replaced, pdfNameBudget/len(name), len(value)/4-pdfNameBudget/len(name))
	}
	name = runeName(0x1F642)
	l := &pdfLayout{names: pdfNameBudget - len(name)}
	got := []string{l.missing(0x1F642), l.missing(0x1F642), (&pdfLayout{}).missing(0x1F642)}
	if want := []string{name, "\uFFFD", name}; !slices.Equal(got, want) {
		t.Errorf("names at the budget, past it and in a new document: %q, want %q", got, want)
	}
}

// TestExportPDFTooLong: past pdfMaxPages the export stops with errPDFTooLong; a document
// of pdfMaxPages pages is still written (all text breaks pages through pdfLayout.print).
func TestExportPDFTooLong(t *testing.T) {
	t.Parallel()
	fonts := newFontIndex(nil)
	// A frame holds 55 lines of 13.2 pt a page (741.89 pt less 10 of padding), 51 on the first.
	const fitting = 51 + (pdfMaxPages-1)*55
	fits := strings.Repeat("x\n", fitting-1) + "x"
	form, values := oneFieldForm("Long", "textarea", fits)
	if n := len(readPDF(t, writePDF(t, form, values, fonts)).Pages); n != pdfMaxPages {
		t.Fatalf("%d pages, want %d: the test's arithmetic is off", n, pdfMaxPages)
	}

	form, values = oneFieldForm("Long", "textarea", fits+"\nx")
	if err := writeResponsePDF(&bytes.Buffer{}, form, values, time.Now(), fonts); !errors.Is(err, errPDFTooLong) {
		t.Errorf("a textarea of %d lines: error %v, want errPDFTooLong", fitting+1, err)
	}
}
