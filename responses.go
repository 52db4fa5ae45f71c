package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
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

// submittedValues reads the `values` object in its key order, each value converted as
// String(value) would. Absent, null, non-objects (arrays included) and {} are a 400.
func submittedValues(raw json.RawMessage) ([]SubmittedValue, error) {
	required := badRequest("Response values are required")
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, required
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // the opening brace
		return nil, required
	}
	var values []SubmittedValue
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, badRequest("Invalid JSON body")
		}
		key, _ := tok.(string) // object keys are always strings
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, badRequest("Invalid JSON body")
		}
		text, err := jsString(v)
		if err != nil {
			return nil, badRequest("Invalid JSON body")
		}
		values = append(values, SubmittedValue{Key: key, Value: text})
	}
	if len(values) == 0 {
		return nil, required
	}
	return values, nil
}

func (s *server) handleListResponses(w http.ResponseWriter, r *http.Request) {
	formID, ok := parseID(r.PathValue("id"))
	if !ok {
		writeError(w, http.StatusBadRequest, "Invalid form ID")
		return
	}
	responses, err := s.store.ListResponses(r.Context(), formID)
	if err == errNotFound {
		writeError(w, http.StatusNotFound, "Form not found")
		return
	}
	if err != nil {
		s.fail(w, r, fmt.Sprintf("fetch responses for form %d", formID), err)
		return
	}
	writeJSON(w, http.StatusOK, responses)
}
