package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// apiRequest is httptest.NewRequest as a local client sends it: to Host localhost (the
// service refuses unknown Host names while it has no token), a body as JSON.
func apiRequest(method, target string, body io.Reader) *http.Request {
	r := httptest.NewRequest(method, target, body)
	r.Host = "localhost"
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	return r
}

// allResponses reads every response of a form from the store, page by page.
func allResponses(t *testing.T, store *Store, formID int64) []Response {
	t.Helper()
	_, fields, err := store.ResponseFields(context.Background(), formID)
	if err != nil {
		t.Fatalf("fields of form %d: %v", formID, err)
	}
	var all []Response
	for after := &listStart; after != nil; {
		var page []Response
		page, after, err = store.ListResponses(context.Background(), formID, fields, *after)
		if err != nil {
			t.Fatalf("responses of form %d: %v", formID, err)
		}
		all = append(all, page...)
	}
	return all
}
