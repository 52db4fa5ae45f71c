package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
)

func (s *server) handleSubmitResponse(w http.ResponseWriter, r *http.Request) {
	formID, ok := parseID(r.PathValue("id"))
	if !ok {
		writeError(w, http.StatusBadRequest, "Invalid form ID")
		return
	}
	context := fmt.Sprintf("submit response for form %d", formID)
	var in struct {
		Values json.RawMessage `json:"values"`
	}
	if err := decodeJSON(w, r, &in); err != nil {
		s.fail(w, r, context, err)
		return
	}
	values, err := submittedValues(in.Values)
	if err != nil {
		s.fail(w, r, context, err)
		return
	}
	id, err := s.store.CreateResponse(r.Context(), formID, values)
	if err != nil {
		s.fail(w, r, context, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]int64{"responseId": id})
}

// submittedValues reads the `values` object, each value converted as String(value)
// would. Absent, null, non-objects (arrays included) and {} are a 400. Of a key given
// twice the last value counts, as in a JavaScript object; keys are visited in sorted
// order, so that two spellings of one id ("7" and "07") resolve the same way every time.
func submittedValues(raw json.RawMessage) ([]SubmittedValue, error) {
	raw = bytes.TrimSpace(raw)
	var object map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &object) != nil || len(object) == 0 {
		return nil, badRequest("Response values are required")
	}
	keys := slices.Sorted(maps.Keys(object))
	values := make([]SubmittedValue, 0, len(keys))
	for _, key := range keys {
		text, err := jsString(object[key])
		if err != nil {
			return nil, badRequest("Invalid JSON body")
		}
		values = append(values, SubmittedValue{Key: key, Value: text})
	}
	return values, nil
}

func (s *server) handleListResponses(w http.ResponseWriter, r *http.Request) {
	formID, ok := parseID(r.PathValue("id"))
	if !ok {
		writeError(w, http.StatusBadRequest, "Invalid form ID")
		return
	}
	// The list is written while it is read, response by response: a form with many
	// responses never sits in memory whole (4.8 MB of JSON for 1,000 of 50 values).
	bw := bufio.NewWriterSize(w, 32<<10)
	var b []byte
	started := false
	err := s.store.EachResponse(r.Context(), formID, func(resp Response) error {
		if !started {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusOK)
			bw.WriteByte('[')
			started = true
		} else {
			bw.WriteByte(',')
		}
		b = appendResponse(b[:0], resp)
		_, err := bw.Write(b)
		return err
	})
	switch {
	case errors.Is(err, errNotFound):
		writeError(w, http.StatusNotFound, "Form not found")
	case err != nil && !started:
		s.fail(w, r, fmt.Sprintf("fetch responses for form %d", formID), err)
	case err != nil:
		// Part of the list is out: the only honest end is a broken stream, which the
		// client sees as an error rather than as a short, well-formed list.
		s.log.Error("list responses: stream broken off", "form", formID, "err", err)
		panic(http.ErrAbortHandler)
	case !started:
		writeJSON(w, http.StatusOK, []struct{}{})
	default:
		bw.WriteString("]\n")
		if err := bw.Flush(); err != nil {
			s.log.Warn("list responses: write", "form", formID, "err", err)
		}
	}
}

// appendResponse writes one listed response as JSON: {id, submittedAt, values}, values
// an object keyed by field id in form order, which a Go map could not keep.
func appendResponse(b []byte, r Response) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, r.ID, 10)
	b = append(b, `,"submittedAt":`...)
	b = appendJSONString(b, r.SubmittedAt)
	b = append(b, `,"values":{`...)
	for i, v := range r.Values {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, v.Field.ID, 10)
		b = append(b, `":{"label":`...)
		b = appendJSONString(b, v.Field.Label)
		b = append(b, `,"type":`...)
		b = appendJSONString(b, v.Field.Type)
		b = append(b, `,"value":`...)
		if v.Value == nil {
			b = append(b, "null"...)
		} else {
			b = appendJSONString(b, *v.Value)
		}
		b = append(b, '}')
	}
	return append(b, "}}"...)
}
