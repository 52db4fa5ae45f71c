package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestFormLifecycle(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	before := time.Now().UTC().Truncate(time.Millisecond)
	f := e.createForm(fullForm())

	if f.Title != "Site inspection" || f.Description == nil || *f.Description != "Yearly check" {
		t.Errorf("form = %+v, want title and description as sent", f.Form)
	}
	created, err := time.Parse("2006-01-02T15:04:05.000Z", f.CreatedAt)
	if err != nil || created.Before(before) {
		t.Errorf("createdAt = %q (%v), want a toISOString() timestamp not before %v", f.CreatedAt, err, before)
	}
	if len(f.Categories) != 2 {
		t.Fatalf("got %d categories, want 2", len(f.Categories))
	}
	type row struct {
		cat, field       int
		label, typ, desc string // desc as show writes it
	}
	want := []row{
		{0, 0, "Inspector", "text", `"Full name"`},
		{0, 1, "Rooms", "number", "NULL"}, // empty description is stored as null
		{0, 2, "Visited", "date", "NULL"},
		{1, 0, "Notes", "textarea", "NULL"},
		{1, 1, "Passed", "boolean", "NULL"},
	}
	var got []row
	for ci, c := range f.Categories {
		if c.SortOrder != ci || c.FormID != f.ID {
			t.Errorf("category %d: sortOrder %d formId %d, want %d and %d", ci, c.SortOrder, c.FormID, ci, f.ID)
		}
		for fi, fd := range c.Fields {
			if fd.SortOrder != fi || fd.CategoryID != c.ID {
				t.Errorf("field %q: sortOrder %d categoryId %d, want %d and %d", fd.Label, fd.SortOrder, fd.CategoryID, fi, c.ID)
			}
			got = append(got, row{ci, fi, fd.Label, fd.Type, show(fd.Description)})
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("fields = %+v,\nwant %+v", got, want)
	}
	if f.Categories[1].Name != "" {
		t.Errorf("unnamed category name = %q, want empty", f.Categories[1].Name)
	}

	// The raw reply must carry description: null, never omit it.
	_, raw := e.do("GET", "/api/forms/"+itoa(f.ID), nil)
	if !strings.Contains(string(raw), `"label":"Rooms","type":"number","description":null`) {
		t.Errorf("single read does not write description null: %s", raw)
	}

	// Update keeps id and createdAt and replaces the tree with new ids.
	var updated savedForm
	status := e.doJSON("PUT", "/api/forms/"+itoa(f.ID), map[string]any{
		"title": "Renamed",
		"categories": []any{map[string]any{"name": "Only", "fields": []any{
			map[string]any{"label": "One", "type": "text"},
		}}},
	}, &updated)
	if status != http.StatusOK || updated.ID != f.ID || updated.Title != "Renamed" || updated.Description != nil {
		t.Fatalf("update = %d %+v, want 200, same id, new title, description null", status, updated)
	}
	var after FormDetail
	e.doJSON("GET", "/api/forms/"+itoa(f.ID), nil, &after)
	if after.CreatedAt != f.CreatedAt || after.Title != "Renamed" || after.Description != nil {
		t.Errorf("after update: createdAt %q, title %q, description %v; want %q, Renamed, null", after.CreatedAt, after.Title, after.Description, f.CreatedAt)
	}
	if len(after.Categories) != 1 || len(after.Categories[0].Fields) != 1 {
		t.Fatalf("after update: %+v, want one category with one field", after.Categories)
	}
	for _, c := range f.Categories {
		if after.Categories[0].ID == c.ID {
			t.Errorf("category id %d reused after update", c.ID)
		}
	}
	if e.count("fields") != 1 || e.count("categories") != 1 {
		t.Errorf("old categories or fields left behind: %d categories, %d fields", e.count("categories"), e.count("fields"))
	}

	// A new description is stored, not only answered.
	e.doJSON("PUT", "/api/forms/"+itoa(f.ID), map[string]any{"title": "Renamed", "description": "Changed"}, nil)
	var described FormDetail
	if e.doJSON("GET", "/api/forms/"+itoa(f.ID), nil, &described); described.Description == nil || *described.Description != "Changed" {
		t.Errorf("description after update = %v, want Changed", described.Description)
	}

	// Missing categories remove them all.
	if status := e.doJSON("PUT", "/api/forms/"+itoa(f.ID), map[string]any{"title": "Empty"}, nil); status != http.StatusOK {
		t.Fatalf("update without categories = %d", status)
	}
	if e.count("categories") != 0 {
		t.Errorf("update without categories left %d categories", e.count("categories"))
	}

	status, raw = e.do("DELETE", "/api/forms/"+itoa(f.ID), nil)
	if want := `{"message":"Form ` + itoa(f.ID) + ` and all related data deleted successfully."}`; status != 200 || strings.TrimSpace(string(raw)) != want {
		t.Errorf("delete = %d %s, want 200 %s", status, raw, want)
	}
	e.wantError("GET", "/api/forms/"+itoa(f.ID), nil, 404, "Form not found")
}

func TestListForms(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	var empty []Form
	if status := e.doJSON("GET", "/api/forms", nil, &empty); status != 200 || empty == nil || len(empty) != 0 {
		t.Errorf("empty list = %d %v, want 200 []", status, empty)
	}
	a := e.createForm(map[string]any{"title": "A"})
	b := e.createForm(map[string]any{"title": "B", "description": "second"})
	_, raw := e.do("GET", "/api/forms", nil)
	want := `[{"id":` + itoa(b.ID) + `,"title":"B","description":"second","createdAt":"` + b.CreatedAt + `"},` +
		`{"id":` + itoa(a.ID) + `,"title":"A","description":null,"createdAt":"` + a.CreatedAt + `"}]`
	if strings.TrimSpace(string(raw)) != want {
		t.Errorf("list = %s\nwant   %s", raw, want)
	}

	// Forms created in the same millisecond: the later one (higher id) first.
	fixed := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	same := newTestEnvAt(t, func() time.Time { return fixed })
	first := same.createForm(map[string]any{"title": "first"})
	second := same.createForm(map[string]any{"title": "second"})
	var list []Form
	same.doJSON("GET", "/api/forms", nil, &list)
	if len(list) != 2 || list[0].ID != second.ID || list[1].ID != first.ID {
		t.Errorf("same-instant forms listed as %+v, want %d then %d", list, second.ID, first.ID)
	}
}

// TestListsFollowTimeNotIds: forms are listed by createdAt and responses by
// submittedAt, newest first, also when ids say otherwise (a clock set back between two
// writes): noon, then nine, then eleven o'clock lists as noon, eleven, nine.
func TestListsFollowTimeNotIds(t *testing.T) {
	clock := &testClock{now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	e := newTestEnvAt(t, clock.Now)
	at := func(hour int) { clock.Set(time.Date(2026, 11, 26, hour, 0, 0, 0, time.UTC)) }
	var forms, responses []int64
	at(8) // the form the responses go to, listed last
	form := e.createForm(fullForm())
	field := itoa(form.Categories[0].Fields[0].ID)
	for _, hour := range []int{12, 9, 11} {
		at(hour)
		forms = append(forms, e.createForm(map[string]any{"title": fmt.Sprint(hour)}).ID)
		responses = append(responses, e.submit(form.ID, map[string]any{field: hour}))
	}
	newestFirst := func(ids []int64) []int64 { return []int64{ids[0], ids[2], ids[1]} }

	var listed []Form
	e.doJSON("GET", "/api/forms", nil, &listed)
	var gotForms []int64
	for _, f := range listed[:3] {
		gotForms = append(gotForms, f.ID)
	}
	if want := newestFirst(forms); !slices.Equal(gotForms, want) {
		t.Errorf("forms listed %v, want %v (by createdAt)", gotForms, want)
	}
	var list []listedResponse
	e.doJSON("GET", "/api/forms/"+itoa(form.ID)+"/responses", nil, &list)
	var gotResponses []int64
	for _, r := range list {
		gotResponses = append(gotResponses, r.ID)
	}
	if want := newestFirst(responses); !slices.Equal(gotResponses, want) {
		t.Errorf("responses listed %v, want %v (by submittedAt)", gotResponses, want)
	}
}

func TestFormIDs(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	for _, id := range []string{"abc", "12abc", "1.5", "-1", "+1", "%2012", "1e3", "0x10"} {
		for _, m := range []string{"GET", "PUT", "DELETE"} {
			e.wantError(m, "/api/forms/"+id, map[string]any{"title": "x"}, 400, "Invalid form ID")
		}
		e.wantError("GET", "/api/forms/"+id+"/responses", nil, 400, "Invalid form ID")
		e.wantError("POST", "/api/forms/"+id+"/responses", map[string]any{"values": map[string]any{"1": "a"}}, 400, "Invalid form ID")
	}
	e.wantError("GET", "/api/forms/999", nil, 404, "Form not found")
	// Digits beyond int64 are an id still, of no row (they read as 0, which no row has).
	for _, id := range []string{"9223372036854775808", "1234567890123456789012345678901234567890"} {
		e.wantError("GET", "/api/forms/"+id, nil, 404, "Form not found")
		e.wantError("PUT", "/api/forms/"+id, map[string]any{"title": "x"}, 404, "update form 0: Record not found")
		e.wantError("DELETE", "/api/forms/"+id, nil, 404, "delete form 0: Record not found")
		e.wantError("GET", "/api/forms/"+id+"/responses", nil, 404, "Form not found")
		e.wantError("POST", "/api/forms/"+id+"/responses", map[string]any{"values": map[string]any{"1": "a"}}, 404, "submit response for form 0: Record not found")
	}
	e.wantError("DELETE", "/api/forms/999", nil, 404, "delete form 999: Record not found")
	e.wantError("PUT", "/api/forms/999", map[string]any{"title": "x"}, 404, "update form 999: Record not found")
	// Title is checked before existence.
	e.wantError("PUT", "/api/forms/999", map[string]any{"title": ""}, 400, "Form title is required")
	// A missing form is reported before a bad field, as the original checked inside its transaction.
	e.wantError("PUT", "/api/forms/999", map[string]any{"title": "x", "categories": []any{
		map[string]any{"fields": []any{map[string]any{"label": "a", "type": "nope"}}}}}, 404, "update form 999: Record not found")
}

// TestFormValidation checks every rejected body and that none of them changes anything,
// on create and on update of an existing form.
func TestFormValidation(t *testing.T) {
	field := func(f map[string]any) map[string]any {
		return map[string]any{"title": "T", "categories": []any{
			map[string]any{"name": "first", "fields": []any{map[string]any{"label": "ok", "type": "text"}}},
			map[string]any{"name": "last", "fields": []any{map[string]any{"label": "ok", "type": "date"}, f}},
		}}
	}
	cases := []struct {
		name   string
		body   any
		status int
		msg    string // after "Failed to <context>: " for 500s
	}{
		{"no title", map[string]any{"description": "d"}, 400, "Form title is required"},
		{"null title", map[string]any{"title": nil}, 400, "Form title is required"},
		{"empty title", map[string]any{"title": ""}, 400, "Form title is required"},
		{"blank title", map[string]any{"title": " \t\n\u00a0"}, 400, "Form title is required"},
		{"empty body", "", 400, "Form title is required"},
		{"number title", map[string]any{"title": 5}, 400, "Invalid JSON body: title must be a string"},
		{"number description", map[string]any{"title": "t", "description": 5}, 400, "Invalid JSON body: description must be a string"},
		{"array body", "[]", 400, "Form title is required"}, // req.body.title of [] is undefined
		{"string body", `"T"`, 400, "Invalid JSON body: expected an object"},
		{"one-digit body", `7`, 400, "Invalid JSON body: expected an object"},
		{"categories not array", map[string]any{"title": "T", "categories": "x"}, 400, "Invalid JSON body: categories must be an array"},
		{"category not an object", map[string]any{"title": "T", "categories": []any{[]any{}}}, 400, "Invalid JSON body: categories[0] must be an object"},
		{"fields not an array", map[string]any{"title": "T", "categories": []any{map[string]any{"fields": "x"}}}, 400, "Invalid JSON body: categories[0].fields must be an array"},
		{"field not an object", map[string]any{"title": "T", "categories": []any{map[string]any{"fields": []any{"label"}}}}, 400, "Invalid JSON body: categories[0].fields[0] must be an object"},
		{"number label", field(map[string]any{"label": 5, "type": "text"}), 400, "Invalid JSON body: categories[1].fields[1].label must be a string"},
		// The whole body is decoded before its rules are checked: a member of the wrong
		// kind anywhere replies before a missing title.
		{"no title and a number name", map[string]any{"categories": []any{map[string]any{"name": 5}}}, 400, "Invalid JSON body: categories[0].name must be a string"},
		{"white space body", " \n\t", 400, "Form title is required"},
		{"invalid JSON", `{"title": "T",`, 400, "Invalid JSON body"},
		{"trailing data", `{"title": "T"} {}`, 400, "Invalid JSON body"},
		{"bad type in last field", field(map[string]any{"label": "x", "type": "color"}), 500, "Invalid field type: color"},
		{"absent type", field(map[string]any{"label": "x"}), 500, "Invalid field type: undefined"},
		{"number type", field(map[string]any{"label": "x", "type": 5}), 500, "Invalid field type: 5"},
		{"type with other case", field(map[string]any{"label": "x", "type": "Text"}), 500, "Invalid field type: Text"},
		{"missing label", field(map[string]any{"type": "text"}), 500, "Field label is required"},
		{"blank label", field(map[string]any{"label": "  ", "type": "text"}), 500, "Field label is required"},
		{"label before type", field(map[string]any{"type": "nope"}), 500, "Field label is required"},
	}
	e := newTestEnv(t)
	existing := e.createForm(fullForm())
	e.submit(existing.ID, map[string]any{itoa(existing.Categories[0].Fields[0].ID): "kept"})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := e.snapshot()
			for _, op := range []struct{ method, path, context string }{
				{"POST", "/api/forms", "create form"},
				{"PUT", "/api/forms/" + itoa(existing.ID), "update form " + itoa(existing.ID)},
			} {
				msg := tc.msg
				if tc.status == 500 {
					msg = "Failed to " + op.context + ": " + tc.msg
				}
				e.wantError(op.method, op.path, tc.body, tc.status, msg)
				if after := e.snapshot(); after != before {
					t.Errorf("%s %s changed the database:\nbefore %s\nafter  %s", op.method, op.path, before, after)
				}
			}
		})
	}
	// A broken rule is the client's: its 500 is no failure of the service's to log.
	if strings.Contains(e.logs.String(), "request failed") {
		t.Errorf("a refused form was logged as a failed request:\n%s", e.logs)
	}
}

func TestTitlesKeptVerbatim(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	for _, title := range []string{"  padded  ", "'; DROP TABLE forms; --", `Robert"); DELETE FROM fields;`, "Café ü Ж Ω ’ 🙂", "a\x00b", "%s %d {{.}}"} {
		f := e.createForm(map[string]any{"title": title, "description": title, "categories": []any{
			map[string]any{"name": title, "fields": []any{map[string]any{"label": title, "type": "text", "description": title}}}}})
		c := f.Categories[0]
		if f.Title != title || *f.Description != title || c.Name != title || c.Fields[0].Label != title || *c.Fields[0].Description != title {
			t.Errorf("stored %q, read back %+v", title, f)
		}
	}
	if n := e.count("forms"); n != 6 {
		t.Errorf("forms = %d, want 6", n)
	}
}

func TestDeleteCascades(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	other := e.createForm(fullForm())
	for range 3 {
		e.submit(f.ID, map[string]any{itoa(f.Categories[0].Fields[0].ID): "x", itoa(f.Categories[1].Fields[1].ID): true})
	}
	e.submit(other.ID, map[string]any{itoa(other.Categories[0].Fields[0].ID): "stays"})
	if status := e.doJSON("DELETE", "/api/forms/"+itoa(f.ID), nil, nil); status != 200 {
		t.Fatalf("delete = %d", status)
	}
	for table, want := range map[string]int{"forms": 1, "categories": 2, "fields": 5, "responses": 1, "response_values": 1} {
		if got := e.count(table); got != want {
			t.Errorf("%s after delete = %d rows, want %d (only the other form's)", table, got, want)
		}
	}
	e.wantError("DELETE", "/api/forms/"+itoa(f.ID), nil, 404, "delete form "+itoa(f.ID)+": Record not found")
	e.wantNoOrphans()
}

func TestUpdateDropsValuesOfRemovedFields(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	id := e.submit(f.ID, map[string]any{itoa(f.Categories[0].Fields[0].ID): "a", itoa(f.Categories[1].Fields[0].ID): "b"})
	if status := e.doJSON("PUT", "/api/forms/"+itoa(f.ID), map[string]any{"title": "T", "categories": []any{
		map[string]any{"fields": []any{map[string]any{"label": "New", "type": "text"}}}}}, nil); status != 200 {
		t.Fatalf("update = %d", status)
	}
	if n := e.count("response_values"); n != 0 {
		t.Errorf("response_values after update = %d, want 0", n)
	}
	e.wantNoOrphans()
	var list []listedResponse
	e.doJSON("GET", "/api/forms/"+itoa(f.ID)+"/responses", nil, &list)
	if len(list) != 1 || list[0].ID != id || len(list[0].Values) != 0 {
		t.Errorf("responses after update = %+v, want response %d with no values", list, id)
	}

	// Submits after the update know the new fields only, though the old set was in use.
	var now FormDetail
	e.doJSON("GET", "/api/forms/"+itoa(f.ID), nil, &now)
	newField := itoa(now.Categories[0].Fields[0].ID)
	e.submit(f.ID, map[string]any{itoa(f.Categories[0].Fields[0].ID): "old field", newField: "new field"})
	var v string
	if err := e.store.read.QueryRow(`SELECT group_concat(value) FROM response_values`).Scan(&v); err != nil || v != "new field" {
		t.Errorf("values after a submit to the updated form = %q (%v), want only the new field's", v, err)
	}
	e.wantNoOrphans()
	if status := e.doJSON("DELETE", "/api/forms/"+itoa(f.ID), nil, nil); status != 200 {
		t.Fatal("delete failed")
	}
	e.wantError("POST", "/api/forms/"+itoa(f.ID)+"/responses", map[string]any{"values": map[string]any{newField: "x"}}, 404,
		"submit response for form "+itoa(f.ID)+": Record not found")
}

func BenchmarkFormRead(b *testing.B) {
	e, f := benchEnv(b, 0)
	b.ReportAllocs()
	for b.Loop() {
		serve(b, e.srv, "GET", "/api/forms/"+itoa(f.ID), "", 200)
	}
}

// FuzzFormBody: any body for create and update replies JSON, never an unexpected 500,
// and leaves the database consistent.
func FuzzFormBody(f *testing.F) {
	for _, s := range []string{
		`{"title": "T"}`, `{"title": "T", "categories": [{"name": "c", "fields": [{"label": "l", "type": "text"}]}]}`,
		`{"title": "T", "categories": [{"fields": [{"label": "l", "type": "bad"}]}]}`, `{"title": ""}`, `[]`, `null`, `{"title": 1}`,
		`{"title": "T", "categories": [null, {"fields": [null]}]}`, `{"title": "T", "description": null, "categories": null}`, `{`, ``,
		`{"title": "x", "categories": [{"fields": [{"label": "a", "type": ["text"]}]}]}`,
	} {
		f.Add(s)
	}
	e := newTestEnv(f)
	existing := e.createForm(fullForm())
	e.submit(existing.ID, map[string]any{itoa(existing.Categories[0].Fields[0].ID): "v"})
	f.Fuzz(func(t *testing.T, body string) {
		e.t = t
		switch fuzzServe(t, e.srv, "POST", "/api/forms", body) {
		case 201, 400, 413, 500:
		default:
			t.Fatalf("create %q: unexpected status", body)
		}
		switch fuzzServe(t, e.srv, "PUT", "/api/forms/"+itoa(existing.ID), body) {
		case 200, 400, 413, 500:
		default:
			t.Fatalf("update %q: unexpected status", body)
		}
		e.wantNoOrphans()
	})
}

// TestReadsFollowSortOrder: the single read (and with it the PDF and the response list)
// order categories and fields by sortOrder, not by id. The API assigns both in array
// order, so the test reverses the sortOrders in the database to make them differ.
func TestReadsFollowSortOrder(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(map[string]any{"title": "T", "categories": []any{
		map[string]any{"name": "first", "fields": []any{
			map[string]any{"label": "a", "type": "text"}, map[string]any{"label": "b", "type": "text"}}},
		map[string]any{"name": "second", "fields": []any{
			map[string]any{"label": "c", "type": "text"}, map[string]any{"label": "d", "type": "text"}}},
	}})
	for _, q := range []string{
		`UPDATE categories SET sortOrder = 1 - sortOrder WHERE formId = ?`,
		`UPDATE fields SET sortOrder = 1 - sortOrder WHERE categoryId IN (SELECT id FROM categories WHERE formId = ?)`,
	} {
		if _, err := e.store.write.Exec(q, f.ID); err != nil {
			t.Fatal(err)
		}
	}
	e.store.forms.drop(f.ID) // the change went around the store

	var got FormDetail
	e.doJSON("GET", "/api/forms/"+itoa(f.ID), nil, &got)
	var order []string
	for i, c := range got.Categories {
		if c.SortOrder != i {
			t.Errorf("category %q has sortOrder %d at index %d", c.Name, c.SortOrder, i)
		}
		order = append(order, c.Name)
		for j, fd := range c.Fields {
			if fd.SortOrder != j {
				t.Errorf("field %q has sortOrder %d at index %d", fd.Label, fd.SortOrder, j)
			}
			order = append(order, fd.Label)
		}
	}
	if want := "second d c first b a"; strings.Join(order, " ") != want {
		t.Errorf("form read order = %q, want %q", strings.Join(order, " "), want)
	}
}

// BenchmarkCreateFormLarge creates a form at the limits: 100 categories of 10 fields,
// one transaction with one prepared statement per table.
func BenchmarkCreateFormLarge(b *testing.B) {
	e := newTestEnv(b)
	var cats []any
	for range maxCategories {
		var fields []any
		for i := range maxFields / maxCategories {
			fields = append(fields, map[string]any{"label": fmt.Sprint("Field ", i), "type": "text", "description": "d"})
		}
		cats = append(cats, map[string]any{"name": "Category", "fields": fields})
	}
	body, _ := json.Marshal(map[string]any{"title": "Large", "categories": cats})
	b.ReportAllocs()
	for b.Loop() {
		serve(b, e.srv, "POST", "/api/forms", string(body), 201)
	}
}

// BenchmarkDecodeFormBody reads, decodes and checks a create body of 5 categories of 10
// fields (seedFormBody) and one of 1,000 fields, as readBody and the handler do before
// calling the store.
func BenchmarkDecodeFormBody(b *testing.B) {
	s := newTestEnv(b).srv
	large := seedFormBody()
	var fields []any
	for i := range maxFields {
		fields = append(fields, map[string]any{"label": fmt.Sprintf("Field %d", i), "type": "text", "description": "d"})
	}
	large["categories"] = []any{map[string]any{"name": "All", "fields": fields}}
	for _, bc := range []struct {
		name string
		body map[string]any
	}{{"50 fields", seedFormBody()}, {"1000 fields", large}} {
		raw, err := json.Marshal(bc.body)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest("POST", "/api/forms", bytes.NewReader(raw))
				r.Header.Set("Content-Type", "application/json")
				var in FormInput
				s.readBody(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					var err error
					if in, err = formInput(r); err != nil {
						b.Fatal(err)
					}
				})).ServeHTTP(httptest.NewRecorder(), r)
				if in.Title == "" {
					b.Fatal("no form read")
				}
			}
		})
	}
}
