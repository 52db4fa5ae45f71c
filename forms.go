package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"
)

// formInput reads a create or update body by exact member names (jsonObject); a member
// of the wrong kind is a 400 that names its place: categories[0].fields[2].label must be
// a string. The whole body is read before Valid's rules, as the original's were.
func formInput(r *http.Request) (FormInput, error) {
	o, err := bodyObject(r)
	if err != nil {
		return FormInput{}, err
	}
	var in FormInput
	in.Categories, err = list(o, "categories", func(c jsonObject) (CategoryInput, error) {
		fields, err := list(c, "fields", func(f jsonObject) (FieldInput, error) {
			fd := FieldInput{Type: "undefined"} // as a JavaScript template string shows none
			if v, ok := f.members["type"]; ok {
				_, fd.TypeIsString = v.(string)
				fd.Type = jsText(v)
			}
			label, err := f.str("label")
			description, err2 := f.str("description")
			fd.Label, fd.Description = label, description
			return fd, cmp.Or(err, err2)
		})
		name, err2 := c.str("name")
		return CategoryInput{Name: deref(name), Fields: fields}, cmp.Or(err2, err)
	})
	title, err2 := o.str("title")
	description, err3 := o.str("description")
	in.Title, in.Description = deref(title), description
	if err = cmp.Or(err2, err3, err); err != nil {
		return FormInput{}, err
	}
	return in, in.Valid()
}

// deref is *s, or "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Valid checks the title and docs/DESIGN.md's limits; the field rules are the store's.
func (in FormInput) Valid() error {
	fields := 0
	for _, c := range in.Categories {
		fields += len(c.Fields)
	}
	switch {
	case strings.TrimSpace(in.Title) == "":
		return invalid("Form title is required")
	case utf8.RuneCountInString(in.Title) > maxTitleChars:
		return invalid(fmt.Sprintf("Form title is too long (at most %d characters)", maxTitleChars))
	case in.Description != nil && utf8.RuneCountInString(*in.Description) > maxDescriptionChars:
		return invalid(fmt.Sprintf("Form description is too long (at most %d characters)", maxDescriptionChars))
	case len(in.Categories) > maxCategories:
		return invalid(fmt.Sprintf("Too many categories (at most %d)", maxCategories))
	case fields > maxFields:
		return invalid(fmt.Sprintf("Too many fields (at most %d in a form)", maxFields))
	}
	return nil
}

// savedForm is what create and update reply: the form without createdAt.
type savedForm struct {
	ID          int64   `json:"id"`
	Title       string  `json:"title"`
	Description *string `json:"description"`
}

// handleListForms replies with every form, newest first, read and sent a page at a time.
func (s *server) handleListForms(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", jsonType)
	var page bytes.Buffer
	page.WriteByte('[')
	enc := json.NewEncoder(&page)
	enc.SetEscapeHTML(false)
	for after, n := new(listStart()), 0; after != nil; {
		forms, next, err := s.store.ListForms(r.Context(), *after)
		if err != nil {
			return during("fetch forms", err)
		}
		for _, f := range forms {
			if n++; n > 1 {
				page.WriteByte(',')
			}
			enc.Encode(f)                 // a Form always encodes
			page.Truncate(page.Len() - 1) // Encode's newline
		}
		if next == nil {
			page.WriteString("]\n")
		}
		if err := s.sendPage(w, &page); err != nil {
			return err
		}
		after = next
	}
	return nil
}

func (s *server) handleCreateForm(w http.ResponseWriter, r *http.Request) error {
	in, err := formInput(r)
	if err != nil {
		return err
	}
	f, err := s.store.CreateForm(r.Context(), in)
	if err != nil {
		return during("create form", err)
	}
	return writeJSON(w, http.StatusCreated, savedForm{f.ID, f.Title, f.Description})
}

func (s *server) handleGetForm(w http.ResponseWriter, r *http.Request) error {
	id, ok := parseID(r.PathValue("id"))
	if !ok {
		return errInvalidFormID
	}
	f, err := s.store.GetForm(r.Context(), id)
	if err != nil {
		return missing(fmt.Sprintf("fetch form %d", id), err, "Form not found")
	}
	if 6*formSize(f) > largeAnswer { // JSON writes a byte of text in 6 at most (\u0001)
		return s.inHeavySlot(r, func() error { return writeJSON(w, http.StatusOK, f) })
	}
	return writeJSON(w, http.StatusOK, f)
}

func (s *server) handleUpdateForm(w http.ResponseWriter, r *http.Request) error {
	id, ok := parseID(r.PathValue("id"))
	if !ok {
		return errInvalidFormID
	}
	in, err := formInput(r)
	if err != nil {
		return err
	}
	f, err := s.store.UpdateForm(r.Context(), id, in)
	if err != nil {
		return during(fmt.Sprintf("update form %d", id), err)
	}
	return writeJSON(w, http.StatusOK, savedForm{f.ID, f.Title, f.Description})
}

func (s *server) handleDeleteForm(w http.ResponseWriter, r *http.Request) error {
	id, ok := parseID(r.PathValue("id"))
	if !ok {
		return errInvalidFormID
	}
	if err := s.store.DeleteForm(r.Context(), id); err != nil {
		return during(fmt.Sprintf("delete form %d", id), err)
	}
	msg := fmt.Sprintf("Form %d and all related data deleted successfully.", id)
	return writeJSON(w, http.StatusOK, map[string]string{"message": msg})
}

var errInvalidFormID = invalid("Invalid form ID")
