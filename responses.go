package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

func (s *server) handleSubmitResponse(w http.ResponseWriter, r *http.Request) {
	formID, ok := parseID(r.PathValue("id"))
	if !ok {
		s.fail(w, r, "submit response", badRequest("Invalid form ID"))
		return
	}
	op := fmt.Sprintf("submit response for form %d", formID)
	body, err := readJSON(w, r)
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	in, err := decodeObject(body, "")
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	values, err := submittedValues(in["values"])
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	id, err := s.store.CreateResponse(r.Context(), formID, values)
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]int64{"responseId": id})
}

// submittedValues reads the `values` object into String(value) by field id, nil for
// null. Absent, null, non-objects (arrays included) and {} are a 400. Keys that are not
// ids by the strict rule of parseID are skipped; whether an id is one of the form's
// fields is the store's to check. Of a key given twice the last value counts, as in a
// JavaScript object, and keys are visited in sorted order, so that two spellings of one
// id ("7" and "07") resolve the same way every time.
func submittedValues(raw json.RawMessage) (map[int64]*string, error) {
	raw = bytes.TrimSpace(raw)
	var object map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &object) != nil || len(object) == 0 {
		return nil, badRequest("Response values are required")
	}
	values := make(map[int64]*string, len(object))
	for _, key := range slices.Sorted(maps.Keys(object)) {
		text, err := jsString(object[key])
		if err != nil {
			return nil, badRequest("Invalid JSON body")
		}
		if id, ok := parseID(key); ok {
			values[id] = text
		}
	}
	return values, nil
}

func (s *server) handleListResponses(w http.ResponseWriter, r *http.Request) {
	formID, ok := parseID(r.PathValue("id"))
	if !ok {
		s.fail(w, r, "fetch responses", badRequest("Invalid form ID"))
		return
	}
	_, list, err := s.store.ListResponses(r.Context(), formID)
	if err != nil {
		s.fail(w, r, fmt.Sprintf("fetch responses for form %d", formID), notFoundAs("Form not found", err))
		return
	}
	writeJSON(w, http.StatusOK, list)
}

// MarshalJSON writes the values as an object keyed by field id, in form order, which a
// Go map could not keep: {"12": {"label": …, "type": …, "value": …}, …}.
func (vs ResponseValues) MarshalJSON() ([]byte, error) {
	type entry struct {
		Label string  `json:"label"`
		Type  string  `json:"type"`
		Value *string `json:"value"`
	}
	b := []byte{'{'}
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, v.Field.ID, 10)
		b = append(b, '"', ':')
		e, err := json.Marshal(entry{v.Field.Label, v.Field.Type, v.Value})
		if err != nil {
			return nil, err
		}
		b = append(b, e...)
	}
	return append(b, '}'), nil
}

// The original service stored every submitted value with JavaScript's String(value).
// These functions reproduce it for JSON input, so that data written by clients of the
// original reads back the same here (DESIGN.md's table).

// jsString returns String(value) for a JSON value, and nil for JSON null, which responses
// store as SQL NULL.
func jsString(raw json.RawMessage) (*string, error) {
	// Fast paths for the common scalars; raw has been validated by the JSON decoder.
	switch {
	case len(raw) >= 2 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw):
		s := string(raw[1 : len(raw)-1])
		return &s, nil
	case string(raw) == "null":
		return nil, nil
	case string(raw) == "true" || string(raw) == "false":
		s := string(raw)
		return &s, nil
	}
	v, err := decodeAny(raw)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, nil
	}
	s := jsStringOf(v)
	return &s, nil
}

// jsText returns String(value) for a JSON value, with null written as "null" as
// settings store it.
func jsText(raw json.RawMessage) (string, error) {
	v, err := decodeAny(raw)
	if err != nil {
		return "", err
	}
	return jsStringOf(v), nil
}

// jsDisplay writes a possibly absent JSON value for an error message as JavaScript's
// template string would: absent is "undefined".
func jsDisplay(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "undefined"
	}
	s, err := jsText(raw)
	if err != nil {
		return string(raw)
	}
	return s
}

func decodeAny(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep numbers exact until jsNumber formats them
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode value: %w", err)
	}
	return v, nil
}

func jsStringOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil && !math.IsInf(f, 0) {
			return string(v) // not reachable for numbers the JSON decoder accepted
		}
		return jsNumber(f)
	case []any:
		// Array.prototype.join: null and undefined elements become "".
		parts := make([]string, len(v))
		for i, e := range v {
			if e != nil {
				parts[i] = jsStringOf(e)
			}
		}
		return strings.Join(parts, ",")
	default:
		return "[object Object]"
	}
}

// jsNumber formats f as ECMAScript's Number::toString(10): the shortest digits that
// round-trip, in plain notation for decimal exponents from -6 to 20 and in exponent
// notation ("1e+21", "1.5e-7") outside.
func jsNumber(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		return "0" // also -0
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	// 'e' with precision -1 gives the shortest round-trip digits: d.ddddde±XX.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	k, n := len(digits), x+1 // ECMAScript's k and n: value = digits × 10^(n−k)
	var out string
	switch {
	case k <= n && n <= 21:
		out = digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		out = digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		out = "0." + strings.Repeat("0", -n) + digits
	default:
		expSign := "+"
		if n-1 < 0 {
			expSign = "-"
		}
		out = digits[:1]
		if k > 1 {
			out += "." + digits[1:]
		}
		out += "e" + expSign + strconv.Itoa(abs(n-1))
	}
	return sign + out
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
