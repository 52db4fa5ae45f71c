package main

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// formAnswer is what create and update answer: the form without createdAt.
type formAnswer struct {
	ID          int64   `json:"id"`
	Title       string  `json:"title"`
	Description *string `json:"description"`
}

func (s *server) handleListForms(w http.ResponseWriter, r *http.Request) {
	forms, err := s.store.ListForms(r.Context())
	if err != nil {
		s.fail(w, r, "fetch forms", err)
		return
	}
	writeJSON(w, http.StatusOK, forms)
}

func (s *server) handleCreateForm(w http.ResponseWriter, r *http.Request) {
	in, err := decodeFormInput(w, r)
	if err != nil {
		s.fail(w, r, "create form", err)
		return
	}
	f, err := s.store.CreateForm(r.Context(), in)
	if err != nil {
		s.fail(w, r, "create form", err)
		return
	}
	writeJSON(w, http.StatusCreated, formAnswer{f.ID, f.Title, f.Description})
}

func (s *server) handleGetForm(w http.ResponseWriter, r *http.Request) {
	id, ok := parseID(r.PathValue("id"))
	if !ok {
		writeError(w, http.StatusBadRequest, "Invalid form ID")
		return
	}
	body, gen := s.forms.get(id)
	if body == nil {
		f, err := s.store.GetForm(r.Context(), id)
		if errors.Is(err, errNotFound) {
			writeError(w, http.StatusNotFound, "Form not found")
			return
		}
		if err == nil {
			body, err = encodeJSON(f)
		}
		if err != nil {
			s.fail(w, r, fmt.Sprintf("fetch form %d", id), err)
			return
		}
		s.forms.put(id, gen, body)
	}
	writeBody(w, http.StatusOK, body)
}

func (s *server) handleUpdateForm(w http.ResponseWriter, r *http.Request) {
	id, ok := parseID(r.PathValue("id"))
	if !ok {
		writeError(w, http.StatusBadRequest, "Invalid form ID")
		return
	}
	context := fmt.Sprintf("update form %d", id)
	in, err := decodeFormInput(w, r)
	if err != nil {
		s.fail(w, r, context, err)
		return
	}
	f, err := s.store.UpdateForm(r.Context(), id, in)
	s.forms.invalidate(id) // after the commit, whatever its outcome
	if err != nil {
		s.fail(w, r, context, err)
		return
	}
	writeJSON(w, http.StatusOK, formAnswer{f.ID, f.Title, f.Description})
}

func (s *server) handleDeleteForm(w http.ResponseWriter, r *http.Request) {
	id, ok := parseID(r.PathValue("id"))
	if !ok {
		writeError(w, http.StatusBadRequest, "Invalid form ID")
		return
	}
	err := s.store.DeleteForm(r.Context(), id)
	s.forms.invalidate(id)
	if err != nil {
		s.fail(w, r, fmt.Sprintf("delete form %d", id), err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{
		"message": fmt.Sprintf("Form %d and all related data deleted successfully.", id),
	})
}

// decodeFormInput reads a create or update body and checks the title; the categories and
// fields are checked by the store inside its transaction.
func decodeFormInput(w http.ResponseWriter, r *http.Request) (FormInput, error) {
	var in FormInput
	if err := decodeJSON(w, r, &in); err != nil {
		return FormInput{}, err
	}
	if in.Title == nil || strings.TrimSpace(*in.Title) == "" {
		return FormInput{}, badRequest("Form title is required")
	}
	return in, nil
}
