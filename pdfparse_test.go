package main

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf16"
)

// The PDF object parser of the Go reader in pdfreader_test.go: the file's objects, values
// and streams, and its text strings.

// PDF values as the reader holds them: float64, bool, nil, pdfName, pdfRef, pdfString,
// []any, pdfDict and *pdfStream.
type (
	pdfName   string
	pdfString []byte
	pdfRef    int // object number; fpdf writes generation 0 only
	pdfDict   map[string]any
	pdfStream struct {
		dict pdfDict
		data []byte // decoded
	}
	pdfKeyword string // an operator of a content stream, or obj, endobj, R ...
)

// pdfObjects reads the numbered objects in file order up to the cross-reference table,
// and the trailer dictionary after it.
func pdfObjects(data []byte) (map[int]any, pdfDict, error) {
	objs := map[int]any{}
	lx := &pdfLexer{data: data}
	if !bytes.HasPrefix(data, []byte("%PDF-")) {
		return nil, nil, fmt.Errorf("no %%PDF- header")
	}
	for {
		lx.skipSpace()
		if lx.pos >= len(data) {
			return nil, nil, fmt.Errorf("no trailer")
		}
		if bytes.HasPrefix(data[lx.pos:], []byte("xref")) {
			i := bytes.Index(data[lx.pos:], []byte("trailer"))
			if i < 0 {
				return nil, nil, fmt.Errorf("no trailer")
			}
			lx.pos += i + len("trailer")
			v, err := lx.value()
			if err != nil {
				return nil, nil, fmt.Errorf("trailer: %w", err)
			}
			d, ok := v.(pdfDict)
			if !ok {
				return nil, nil, fmt.Errorf("trailer is %T", v)
			}
			return objs, d, nil
		}
		num, err := lx.value()
		if err != nil {
			return nil, nil, err
		}
		gen, err := lx.value()
		if err != nil {
			return nil, nil, err
		}
		kw, err := lx.value()
		n, ok1 := num.(float64)
		_, ok2 := gen.(float64)
		if err != nil || !ok1 || !ok2 || kw != pdfKeyword("obj") {
			return nil, nil, fmt.Errorf("at byte %d: want an object header, got %v %v %v", lx.pos, num, gen, kw)
		}
		v, err := lx.value()
		if err != nil {
			return nil, nil, fmt.Errorf("object %v: %w", n, err)
		}
		lx.skipSpace()
		if d, ok := v.(pdfDict); ok && bytes.HasPrefix(data[lx.pos:], []byte("stream")) {
			s, err := lx.stream(d)
			if err != nil {
				return nil, nil, fmt.Errorf("object %v: %w", n, err)
			}
			v = s
		}
		if end, err := lx.value(); err != nil || end != pdfKeyword("endobj") {
			return nil, nil, fmt.Errorf("object %v: no endobj (%v, %v)", n, end, err)
		}
		objs[int(n)] = v
	}
}

// pdfLexer reads PDF values from data (the file, or a content stream).
type pdfLexer struct {
	data []byte
	pos  int
}

func isPDFSpace(c byte) bool { return strings.IndexByte("\x00\t\n\f\r ", c) >= 0 }

func isPDFDelim(c byte) bool { return strings.IndexByte("()<>[]{}/%", c) >= 0 }

func (lx *pdfLexer) skipSpace() {
	for lx.pos < len(lx.data) {
		c := lx.data[lx.pos]
		switch {
		case isPDFSpace(c):
			lx.pos++
		case c == '%':
			for lx.pos < len(lx.data) && lx.data[lx.pos] != '\n' && lx.data[lx.pos] != '\r' {
				lx.pos++
			}
		default:
			return
		}
	}
}

// errPDFEnd is the end of the data where a value was expected.
var errPDFEnd = fmt.Errorf("unexpected end of data")

// value reads the next value; a reference N G R is folded into a pdfRef.
func (lx *pdfLexer) value() (any, error) {
	v, err := lx.token()
	if err != nil {
		return nil, err
	}
	switch v {
	case pdfKeyword("<<"):
		d := pdfDict{}
		for {
			k, err := lx.value()
			if err != nil {
				return nil, err
			}
			if k == pdfKeyword(">>") {
				return d, nil
			}
			name, ok := k.(pdfName)
			if !ok {
				return nil, fmt.Errorf("dictionary key %v", k)
			}
			if d[string(name)], err = lx.value(); err != nil {
				return nil, err
			}
		}
	case pdfKeyword("["):
		var a []any
		for {
			e, err := lx.value()
			if err != nil {
				return nil, err
			}
			if e == pdfKeyword("]") {
				return a, nil
			}
			a = append(a, e)
		}
	}
	// A number may be the start of a reference: look ahead for "G R".
	if n, ok := v.(float64); ok {
		save := lx.pos
		if g, err := lx.token(); err == nil {
			if _, ok := g.(float64); ok {
				if r, err := lx.token(); err == nil && r == pdfKeyword("R") {
					return pdfRef(n), nil
				}
			}
		}
		lx.pos = save
	}
	return v, nil
}

// token reads one lexical token: a number, name, string, keyword or delimiter.
func (lx *pdfLexer) token() (any, error) {
	lx.skipSpace()
	if lx.pos >= len(lx.data) {
		return nil, errPDFEnd
	}
	d := lx.data
	c := d[lx.pos]
	switch {
	case c == '/':
		lx.pos++
		start := lx.pos
		for lx.pos < len(d) && !isPDFSpace(d[lx.pos]) && !isPDFDelim(d[lx.pos]) {
			lx.pos++
		}
		return pdfName(d[start:lx.pos]), nil
	case c == '(':
		return lx.literal()
	case c == '<' && lx.pos+1 < len(d) && d[lx.pos+1] == '<', c == '>' && lx.pos+1 < len(d) && d[lx.pos+1] == '>':
		lx.pos += 2
		return pdfKeyword(d[lx.pos-2 : lx.pos]), nil
	case c == '<':
		end := bytes.IndexByte(d[lx.pos:], '>')
		if end < 0 {
			return nil, errPDFEnd
		}
		hex := strings.Map(func(r rune) rune {
			if isPDFSpace(byte(r)) {
				return -1
			}
			return r
		}, string(d[lx.pos+1:lx.pos+end]))
		lx.pos += end + 1
		if len(hex)%2 == 1 {
			hex += "0"
		}
		var s pdfString
		for i := 0; i < len(hex); i += 2 {
			b, err := strconv.ParseUint(hex[i:i+2], 16, 8)
			if err != nil {
				return nil, fmt.Errorf("hex string: %w", err)
			}
			s = append(s, byte(b))
		}
		return s, nil
	case c == '[', c == ']', c == '{', c == '}':
		lx.pos++
		return pdfKeyword(d[lx.pos-1 : lx.pos]), nil
	}
	start := lx.pos
	for lx.pos < len(d) && !isPDFSpace(d[lx.pos]) && !isPDFDelim(d[lx.pos]) {
		lx.pos++
	}
	word := string(d[start:lx.pos])
	if word == "" {
		return nil, fmt.Errorf("unexpected %q at byte %d", c, start)
	}
	switch word {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "null":
		return nil, nil
	}
	if f, err := strconv.ParseFloat(word, 64); err == nil && strings.Trim(word, "+-.0123456789") == "" {
		return f, nil
	}
	return pdfKeyword(word), nil
}

// literal reads a (string) with its escapes and balanced parentheses.
func (lx *pdfLexer) literal() (pdfString, error) {
	d := lx.data
	lx.pos++ // (
	var s pdfString
	depth := 1
	for lx.pos < len(d) {
		c := d[lx.pos]
		lx.pos++
		switch c {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return s, nil
			}
		case '\\':
			if lx.pos >= len(d) {
				return nil, errPDFEnd
			}
			e := d[lx.pos]
			lx.pos++
			switch e {
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case '\r', '\n': // a line continuation
				if e == '\r' && lx.pos < len(d) && d[lx.pos] == '\n' {
					lx.pos++
				}
				continue
			default:
				if e >= '0' && e <= '7' {
					v := int(e - '0')
					for i := 0; i < 2 && lx.pos < len(d) && d[lx.pos] >= '0' && d[lx.pos] <= '7'; i++ {
						v = v*8 + int(d[lx.pos]-'0')
						lx.pos++
					}
					c = byte(v)
				} else {
					c = e // \( \) \\ and unknown escapes stand for the character
				}
			}
		}
		s = append(s, c)
	}
	return nil, errPDFEnd
}

// stream reads the stream after its dictionary d and decodes FlateDecode.
func (lx *pdfLexer) stream(d pdfDict) (*pdfStream, error) {
	lx.pos += len("stream")
	if lx.pos < len(lx.data) && lx.data[lx.pos] == '\r' {
		lx.pos++
	}
	if lx.pos < len(lx.data) && lx.data[lx.pos] == '\n' {
		lx.pos++
	}
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
		return &pdfStream{d, raw}, nil
	case pdfName("FlateDecode"):
		zr, err := zlib.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(zr)
		if err != nil {
			return nil, fmt.Errorf("inflate: %w", err)
		}
		return &pdfStream{d, data}, nil
	}
	return nil, fmt.Errorf("filter %v", d["Filter"])
}

// pdfTextString decodes a text string: UTF-16BE after a byte-order mark, else bytes as
// Latin-1 (close enough to PDFDocEncoding for the tests).
func pdfTextString(s pdfString) string {
	if len(s) >= 2 && s[0] == 0xFE && s[1] == 0xFF {
		u := make([]uint16, 0, len(s)/2)
		for i := 2; i+1 < len(s); i += 2 {
			u = append(u, uint16(s[i])<<8|uint16(s[i+1]))
		}
		return string(utf16.Decode(u))
	}
	r := make([]rune, len(s))
	for i, b := range s {
		r[i] = rune(b)
	}
	return string(r)
}
