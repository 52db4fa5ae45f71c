package main

import (
	"bytes"
	"compress/zlib"
	"encoding/hex"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"
)

// The object parser of the Go reader in pdfreader_test.go. Its values: float64, pdfName,
// pdfRef, pdfString, []any, pdfDict, *pdfStream; true, false and null are keywords.
type (
	pdfName    string
	pdfString  []byte
	pdfRef     int // object number; fpdf writes generation 0 only
	pdfDict    map[string]any
	pdfStream  struct{ data []byte } // its data decoded
	pdfKeyword string                // an operator of a content stream, or obj, endobj, R ...
)

// pdfObjects reads the numbered objects (skipping headers matched inside a stream) and
// the trailer.
func pdfObjects(data []byte) (map[int]any, pdfDict, error) {
	if !bytes.HasPrefix(data, []byte("%PDF-")) {
		return nil, nil, fmt.Errorf("no %%PDF- header")
	}
	objs, lx := map[int]any{}, &pdfLexer{data: data}
	for _, m := range pdfObjHeader.FindAllSubmatchIndex(data, -1) {
		if m[0] < lx.pos {
			continue
		}
		n, _ := strconv.Atoi(string(data[m[2]:m[3]]))
		lx.pos = m[1]
		v, err := lx.value()
		if err != nil {
			return nil, nil, fmt.Errorf("object %d: %w", n, err)
		}
		lx.skipSpace()
		if d, ok := v.(pdfDict); ok && bytes.HasPrefix(data[lx.pos:], []byte("stream")) {
			if v, err = lx.stream(d); err != nil {
				return nil, nil, fmt.Errorf("object %d: %w", n, err)
			}
		}
		if end, err := lx.value(); err != nil || end != pdfKeyword("endobj") {
			return nil, nil, fmt.Errorf("object %d: no endobj (%v, %v)", n, end, err)
		}
		objs[n] = v
	}
	lx.pos = bytes.LastIndex(data, []byte("trailer")) + len("trailer")
	trailer, err := lx.value()
	if d, ok := trailer.(pdfDict); ok && err == nil {
		return objs, d, nil
	}
	return nil, nil, fmt.Errorf("trailer %v: %v", trailer, err)
}

// pdfObjHeader is an object's header: fpdf writes generation 0 only, at a line's start.
var pdfObjHeader = regexp.MustCompile(`(?m)^(\d+) 0 obj\b`)

// pdfRefTail is what follows the number of a reference.
var pdfRefTail = regexp.MustCompile(`^ 0 R\b`)

type pdfLexer struct {
	data []byte
	pos  int
}

func isPDFSpace(c byte) bool { return strings.IndexByte("\x00\t\n\f\r ", c) >= 0 }

func isPDFDelim(c byte) bool { return strings.IndexByte("()<>[]{}/%", c) >= 0 }

// skipSpace skips white space; fpdf writes no comment after the header.
func (lx *pdfLexer) skipSpace() {
	for lx.pos < len(lx.data) && isPDFSpace(lx.data[lx.pos]) {
		lx.pos++
	}
}

var errPDFEnd = fmt.Errorf("unexpected end of data")

// value reads the next value; a reference, which fpdf writes as N 0 R, is a pdfRef.
func (lx *pdfLexer) value() (any, error) {
	v, err := lx.token()
	if err != nil {
		return nil, err
	}
	if open, end := v == pdfKeyword("<<"), pdfKeyword("]"); open || v == pdfKeyword("[") {
		if open {
			end = pdfKeyword(">>")
		}
		var a []any
		for e, err := lx.value(); e != end; e, err = lx.value() {
			if err != nil || e == pdfKeyword(">>") || e == pdfKeyword("]") {
				return nil, fmt.Errorf("%v before %s: %v", e, end, err)
			}
			a = append(a, e)
		}
		if !open {
			return a, nil
		}
		d := pdfDict{}
		for i := 0; i < len(a); i += 2 {
			name, ok := a[i].(pdfName)
			if !ok || i+1 == len(a) {
				return nil, fmt.Errorf("dictionary key %v", a[i])
			}
			d[string(name)] = a[i+1]
		}
		return d, nil
	}
	if n, ok := v.(float64); ok && pdfRefTail.Match(lx.data[lx.pos:]) {
		lx.pos += len(" 0 R")
		return pdfRef(n), nil
	}
	return v, nil
}

func (lx *pdfLexer) token() (any, error) {
	lx.skipSpace()
	if lx.pos >= len(lx.data) {
		return nil, errPDFEnd
	}
	d := lx.data
	c := d[lx.pos]
	switch {
	case c == '(':
		return lx.literal()
	case c == '<' && lx.pos+1 < len(d) && d[lx.pos+1] == '<', c == '>' && lx.pos+1 < len(d) && d[lx.pos+1] == '>':
		lx.pos += 2
		return pdfKeyword(d[lx.pos-2 : lx.pos]), nil
	case c == '<':
		end := bytes.IndexByte(d[lx.pos:], '>') // fpdf writes hex strings without spaces
		s, err := hex.DecodeString(string(d[lx.pos+1 : lx.pos+end]))
		lx.pos += end + 1
		return pdfString(s), err
	case c == '[', c == ']':
		lx.pos++
		return pdfKeyword(d[lx.pos-1 : lx.pos]), nil
	}
	if c == '/' {
		lx.pos++
	}
	start := lx.pos
	for lx.pos < len(d) && !isPDFSpace(d[lx.pos]) && !isPDFDelim(d[lx.pos]) {
		lx.pos++
	}
	word := string(d[start:lx.pos])
	if c == '/' {
		return pdfName(word), nil
	} else if word == "" {
		return nil, fmt.Errorf("unexpected %q at byte %d", c, start)
	}
	if f, err := strconv.ParseFloat(word, 64); err == nil && strings.Trim(word, "+-.0123456789") == "" {
		return f, nil
	}
	return pdfKeyword(word), nil
}

// literal reads a (string) with its escapes. fpdf escapes a backslash, every parenthesis
// and a carriage return, and nothing else.
func (lx *pdfLexer) literal() (pdfString, error) {
	d := lx.data
	lx.pos++ // (
	var s pdfString
	for lx.pos < len(d) {
		c := d[lx.pos]
		lx.pos++
		switch c {
		case ')':
			return s, nil
		case '\\':
			if c = d[lx.pos]; c == 'r' {
				c = '\r'
			} else if !strings.ContainsRune(`\()`, rune(c)) {
				return nil, fmt.Errorf("escape \\%c at byte %d", c, lx.pos)
			}
			lx.pos++
		}
		s = append(s, c)
	}
	return nil, errPDFEnd
}

func (lx *pdfLexer) stream(d pdfDict) (*pdfStream, error) {
	lx.pos += len("stream\n") // fpdf ends the keyword's line with a line feed alone
	n, ok := d["Length"].(float64)
	if !ok || lx.pos+int(n) > len(lx.data) {
		return nil, fmt.Errorf("stream length %v", d["Length"])
	}
	raw := lx.data[lx.pos : lx.pos+int(n)]
	lx.pos += int(n)
	lx.skipSpace()
	if !bytes.HasPrefix(lx.data[lx.pos:], []byte("endstream")) {
		return nil, fmt.Errorf("no endstream")
	}
	lx.pos += len("endstream")
	switch d["Filter"] {
	case nil:
		return &pdfStream{raw}, nil
	case pdfName("FlateDecode"):
		zr, err := zlib.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(zr)
		if err != nil {
			return nil, fmt.Errorf("inflate: %w", err)
		}
		return &pdfStream{data}, nil
	}
	return nil, fmt.Errorf("filter %v", d["Filter"])
}

// pdfTextString decodes a text string, which fpdf writes as UTF-16BE after a byte-order
// mark.
func pdfTextString(s pdfString) string {
	var u []uint16
	for i := 2; i+1 < len(s); i += 2 {
		u = append(u, uint16(s[i])<<8|uint16(s[i+1]))
	}
	return string(utf16.Decode(u))
}
