package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// fieldTypes are the five field types a form may use; the schema's CHECK repeats them.
var fieldTypes = map[string]bool{"text": true, "number": true, "date": true, "textarea": true, "boolean": true}

// validationError is a rule of the form model that the input broke. docs/SPEC.md §7
// answers these with 500 and the message, so it is a type of its own rather than a 400
// request error.
type validationError struct{ msg string }

func (e *validationError) Error() string { return e.msg }

// FormInput is the body of create and update. Its title is checked before the store is
// called; its categories and fields are checked by the store while it inserts them,
// inside the transaction, so that a missing form is a 404 before a bad field is a 500
// (the original's order) and a bad last field undoes everything before it.
type FormInput struct {
	Title       string
	Description *string
	Categories  []CategoryInput
}

// CategoryInput is one category of a FormInput; a missing name is "".
type CategoryInput struct {
	Name   string
	Fields []FieldInput
}

// FieldInput is one field of a CategoryInput. Type stays raw JSON so that a wrong type of
// any JSON kind is reported as "Invalid field type: <type>", as the original wrote it.
type FieldInput struct {
	Label       *string
	Type        json.RawMessage
	Description *string
}

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
	const op = "create form"
	in, err := decodeFormInput(w, r)
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	f, err := s.store.CreateForm(r.Context(), in)
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	writeJSON(w, http.StatusCreated, formAnswer{f.ID, f.Title, f.Description})
}

func (s *server) handleGetForm(w http.ResponseWriter, r *http.Request) {
	id, ok := parseID(r.PathValue("id"))
	if !ok {
		s.fail(w, r, "", badRequest("Invalid form ID"))
		return
	}
	f, err := s.store.GetForm(r.Context(), id)
	if err != nil {
		s.fail(w, r, fmt.Sprintf("fetch form %d", id), notFoundAs("Form not found", err))
		return
	}
	writeJSON(w, http.StatusOK, f)
}

func (s *server) handleUpdateForm(w http.ResponseWriter, r *http.Request) {
	id, ok := parseID(r.PathValue("id"))
	if !ok {
		s.fail(w, r, "", badRequest("Invalid form ID"))
		return
	}
	op := fmt.Sprintf("update form %d", id)
	in, err := decodeFormInput(w, r)
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	f, err := s.store.UpdateForm(r.Context(), id, in)
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	writeJSON(w, http.StatusOK, formAnswer{f.ID, f.Title, f.Description})
}

func (s *server) handleDeleteForm(w http.ResponseWriter, r *http.Request) {
	id, ok := parseID(r.PathValue("id"))
	if !ok {
		s.fail(w, r, "", badRequest("Invalid form ID"))
		return
	}
	if err := s.store.DeleteForm(r.Context(), id); err != nil {
		s.fail(w, r, fmt.Sprintf("delete form %d", id), err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{
		"message": fmt.Sprintf("Form %d and all related data deleted successfully.", id),
	})
}

// decodeFormInput reads a create or update body, member by exact name at every level,
// and checks the title: absent, null, empty or only white space is a 400.
func decodeFormInput(w http.ResponseWriter, r *http.Request) (FormInput, error) {
	form, err := readObject(r)
	if err != nil {
		return FormInput{}, err
	}
	var in FormInput
	var title *string
	var cats []json.RawMessage
	if err := firstError(
		form.get("title", "", &title),
		form.get("description", "", &in.Description),
		form.get("categories", "", &cats),
	); err != nil {
		return FormInput{}, err
	}
	if title == nil || strings.TrimSpace(*title) == "" {
		return FormInput{}, badRequest("Form title is required")
	}
	in.Title = *title
	for i, raw := range cats {
		path := fmt.Sprintf("categories[%d]", i)
		cat, err := decodeObject(raw, path)
		if err != nil {
			return FormInput{}, err
		}
		var c CategoryInput
		var fields []json.RawMessage
		if err := firstError(cat.get("name", path, &c.Name), cat.get("fields", path, &fields)); err != nil {
			return FormInput{}, err
		}
		for j, raw := range fields {
			path := fmt.Sprintf("%s.fields[%d]", path, j)
			field, err := decodeObject(raw, path)
			if err != nil {
				return FormInput{}, err
			}
			var f FieldInput
			if err := firstError(
				field.get("label", path, &f.Label),
				field.get("type", path, &f.Type),
				field.get("description", path, &f.Description),
			); err != nil {
				return FormInput{}, err
			}
			c.Fields = append(c.Fields, f)
		}
		in.Categories = append(in.Categories, c)
	}
	return in, nil
}

// checkField applies the field checks in order (docs/DESIGN.md, "Smaller decisions")
// and returns the field's type: label absent, empty or only white space, then a type
// that is not one of the five.
func checkField(fd FieldInput) (string, error) {
	if fd.Label == nil || strings.TrimSpace(*fd.Label) == "" {
		return "", &validationError{"Field label is required"}
	}
	var typ string
	if json.Unmarshal(fd.Type, &typ) != nil || !fieldTypes[typ] {
		return "", &validationError{"Invalid field type: " + jsDisplay(fd.Type)}
	}
	return typ, nil
}
