package main

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

func (s *server) handleSubmitResponse(w http.ResponseWriter, r *http.Request) error {
	formID, ok := parseID(r.PathValue("id"))
	if !ok {
		return errInvalidFormID
	}
	in, err := bodyObject(r)
	if err != nil {
		return err
	}
	values, err := submittedValues(in.members["values"])
	if err != nil {
		return err
	}
	id, err := s.store.CreateResponse(r.Context(), formID, values)
	if err != nil {
		return during(fmt.Sprintf("submit response for form %d", formID), err)
	}
	return writeJSON(w, http.StatusCreated, map[string]int64{"responseId": id})
}

// submittedValues reads the `values` object into String(value) by field id, nil for
// null. Anything but a non-empty object is a 400, and so is a value longer than
// maxValueChars. Keys that are not ids (parseID) are skipped; whether an id is a field of
// the form is the store's to check. Of a key given twice the last value counts, as in
// JavaScript, and keys are read sorted, so that "7" and "07" resolve the same every time.
func submittedValues(v any) (map[int64]*string, error) {
	object, _ := v.(map[string]any) // null, absent and other kinds: no members
	if len(object) == 0 {
		return nil, invalid("Response values are required")
	}
	values := make(map[int64]*string, len(object))
	for _, key := range slices.Sorted(maps.Keys(object)) {
		var text *string // null, stored as SQL NULL
		if raw := object[key]; raw != nil {
			text = new(jsText(raw))
		}
		if text != nil && utf8.RuneCountInString(*text) > maxValueChars {
			return nil, invalid(fmt.Sprintf("Response value is too long (at most %d characters)", maxValueChars))
		}
		if id, ok := parseID(key); ok {
			values[id] = text
		}
	}
	return values, nil
}

// handleListResponses writes a form's responses, newest first, as a JSON array a page at
// a time (a list of any length costs the memory of a page), each value straight into the
// page: {"id": …, "submittedAt": …, "values": {"<field id>": {"label": …, "type": …,
// "value": …}, …}}, the values in form order, which a Go map could not keep.
func (s *server) handleListResponses(w http.ResponseWriter, r *http.Request) error {
	formID, _, fields, err := s.responseFields(r)
	if err != nil {
		return err
	}
	var page bytes.Buffer
	enc := json.NewEncoder(&page)
	enc.SetEscapeHTML(false)
	var text string // passed by pointer: a string put in an interface is allocated each time
	writeString := func(v string) {
		text = v
		enc.Encode(&text)             // strings never fail to encode
		page.Truncate(page.Len() - 1) // Encode's newline
	}
	keys := make([]string, len(fields)) // `"<id>":{"label":…,"type":…,"value":` by Position
	for i, f := range fields {
		fmt.Fprintf(&page, `"%d":{"label":`, f.ID)
		writeString(f.Label)
		page.WriteString(`,"type":`)
		writeString(f.Type)
		keys[i] = page.String() + `,"value":`
		page.Reset()
	}
	w.Header().Set("Content-Type", jsonType)
	page.WriteByte('[')
	n := 0
	return s.eachResponse(w, r, formID, fields, &page, "]\n", func(resp Response) {
		if n++; n > 1 {
			page.WriteByte(',')
		}
		page.WriteString(`{"id":`)
		page.Write(strconv.AppendInt(page.AvailableBuffer(), resp.ID, 10))
		page.WriteString(`,"submittedAt":`)
		writeString(resp.SubmittedAt)
		page.WriteString(`,"values":{`)
		for i, v := range resp.Values {
			if i > 0 {
				page.WriteByte(',')
			}
			page.WriteString(keys[v.Position])
			if v.Value.Valid {
				writeString(v.Value.String)
			} else {
				page.WriteString("null")
			}
			page.WriteByte('}')
		}
		page.WriteString("}}")
	})
}

// responseFields reads the form id of the path and the form's title and fields.
func (s *server) responseFields(r *http.Request) (id int64, title string, fields []Field, err error) {
	id, ok := parseID(r.PathValue("id"))
	if !ok {
		return 0, "", nil, errInvalidFormID
	}
	title, fields, err = s.store.ResponseFields(r.Context(), id)
	if err != nil {
		return 0, "", nil, missing(fmt.Sprintf("fetch responses for form %d", id), err, "Form not found")
	}
	return id, title, fields, nil
}

// eachResponse reads a form's responses a page at a time, has write put each into page
// (which may hold a beginning already), and sends each page, last after the last response.
func (s *server) eachResponse(w http.ResponseWriter, r *http.Request, formID int64, fields []Field,
	page *bytes.Buffer, last string, write func(Response)) error {
	for after := new(listStart()); after != nil; {
		list, next, err := s.store.ListResponses(r.Context(), formID, fields, *after)
		if err != nil {
			return during(fmt.Sprintf("fetch responses for form %d", formID), err)
		}
		for _, resp := range list {
			write(resp)
		}
		if next == nil {
			page.WriteString(last)
		}
		if err := s.sendPage(w, page); err != nil {
			return err
		}
		after = next
	}
	return nil
}

// handleExportCSV writes a form's responses as CSV (RFC 4180's quoting; records end in LF,
// see below), newest first, a page at a time: UTF-8 with a byte-order mark, so that
// spreadsheet programs guess no other charset, a header of id, submittedAt and the labels in
// form order, null an empty cell.
func (s *server) handleExportCSV(w http.ResponseWriter, r *http.Request) error {
	formID, title, fields, err := s.responseFields(r)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition",
		dispositionHeader("attachment", fmt.Sprintf("responses_%d_%s.csv", formID, fileTitle(title))))
	var page bytes.Buffer
	page.WriteString("\uFEFF")
	// Records end with LF, which spreadsheets read too: with UseCRLF, encoding/csv drops
	// every carriage return inside a value, which must read back as it is stored.
	cw := csv.NewWriter(&page)
	row := []string{"id", "submittedAt"}
	for _, f := range fields {
		row = append(row, csvCell(f.Label))
	}
	cw.Write(row)
	cw.Flush() // into a bytes.Buffer, which never fails
	return s.eachResponse(w, r, formID, fields, &page, "", func(resp Response) {
		clear(row)
		row[0], row[1] = strconv.FormatInt(resp.ID, 10), resp.SubmittedAt
		for _, v := range resp.Values {
			if v.Value.Valid {
				row[2+v.Position] = csvCell(v.Value.String)
			}
		}
		cw.Write(row)
		cw.Flush()
	}) // every page, the empty first one too, is out
}

// plainNumber is a number as a spreadsheet reads one: -5, +1.5, -2e3, .5.
var plainNumber = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// csvCell disarms a cell a spreadsheet would run as a formula (starting with =, +, -, @,
// tab or CR: OWASP's "CSV injection") with an apostrophe. A plain number stays a number.
func csvCell(s string) string {
	if s == "" || !strings.ContainsRune("=+-@\t\r", rune(s[0])) || plainNumber.MatchString(s) {
		return s
	}
	return "'" + s
}

// fileTitle makes a form title part of a download's name: white space, backslash and
// slash become underscores, an empty result is "form" (docs/SPEC.md §4). Control and
// format characters (Cc, Cf: bidi controls, zero-width spaces) are dropped, as RFC 6266
// appendix D advises: they would let a name read otherwise than it is saved.
func fileTitle(title string) string {
	safe := strings.Map(func(r rune) rune {
		switch {
		// JavaScript's \s is Unicode white space and U+FEFF, but not U+0085.
		case unicode.IsSpace(r) && r != '\u0085' || r == '\uFEFF' || r == '/' || r == '\\':
			return '_'
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			return -1
		}
		return r
	}, title)
	return cmp.Or(safe, "form")
}

// dispositionHeader writes a Content-Disposition header for a download named name. A
// name of HTTP token characters stands bare; any other (quotes, semicolons, non-ASCII)
// takes RFC 6266's form, an ASCII fallback and the exact name percent-encoded (RFC 8187:
// every byte but letters, digits and "-._~", which url.QueryEscape writes but for the
// space), so that no title can break or inject a header. "%" is an underscore in a bare
// name or the fallback, since some programs decode %XX in filename (RFC 6266 appendix D).
func dispositionHeader(disposition, name string) string {
	fallback := strings.Map(func(r rune) rune {
		if isTokenChar(r) && r != '%' {
			return r
		}
		return '_'
	}, name)
	if fallback == name {
		return disposition + "; filename=" + name
	}
	enc := strings.ReplaceAll(url.QueryEscape(name), "+", "%20")
	return disposition + `; filename="` + fallback + `"; filename*=UTF-8''` + enc
}

// jsText returns JavaScript's String(value) of v, a value readBody decoded, as the
// original service stored every submitted value, so that its clients read back the same;
// null is "null", as settings store it.
func jsText(v any) string {
	if s, ok := v.(string); ok {
		return s // most values, not copied again
	}
	var b strings.Builder
	appendJS(&b, v)
	return b.String()
}

// appendJS writes String(v) to b: an array joins its elements with commas, an object is
// "[object Object]". Nested arrays are written in place, so that the cost is linear in
// the input however deep it nests.
func appendJS(b *strings.Builder, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case string:
		b.WriteString(v)
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case json.Number:
		f, _ := v.Float64() // ±Inf past float64's range
		b.WriteString(jsNumber(f))
	case []any:
		// Array.prototype.join: null and undefined elements become "".
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if e != nil {
				appendJS(b, e)
			}
		}
	default:
		b.WriteString("[object Object]")
	}
}

// jsNumber is JavaScript's String(f): encoding/json writes a float64 by the same rules
// (ECMAScript's Number::toString) but for the infinities and -0 (JSON has no NaN).
func jsNumber(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		return "0" // also -0
	}
	b, _ := json.Marshal(f) // finite: never an error
	return string(b)
}

// isTokenChar reports an RFC 9110 token character.
func isTokenChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}
