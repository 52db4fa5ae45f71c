package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestFormLifecycle creates, reads, updates and deletes a form, each reply byte for byte:
// ids in array order, an empty or absent description as null, an unnamed category as "",
// and an update that keeps id and createdAt and replaces the whole tree under new ids.
func TestFormLifecycle(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	form := `{"id":1,"title":"Site inspection","description":"Yearly check","createdAt":"@",` +
		`"categories":[{"id":1,"formId":1,"name":"General","sortOrder":0,"fields":[` +
		`{"id":1,"categoryId":1,"label":"Inspector","type":"text","description":"Full name",` +
		`"sortOrder":0},` +
		`{"id":2,"categoryId":1,"label":"Rooms","type":"number","description":null,"sortOrder":1},` +
		`{"id":3,"categoryId":1,"label":"Visited","type":"date","description":null,"sortOrder":2}]},` +
		`{"id":2,"formId":1,"name":"","sortOrder":1,"fields":[` +
		`{"id":4,"categoryId":2,"label":"Notes","type":"textarea","description":null,"sortOrder":0},` +
		`{"id":5,"categoryId":2,"label":"Passed","type":"boolean","description":null,"sortOrder":1}` +
		`]}]}`
	for _, step := range []struct {
		method string
		body   any
		status int
		want   string // @ stands for the form's createdAt
	}{
		{"GET", nil, 200, form},
		{"PUT", map[string]any{"title": "Renamed", "categories": []any{map[string]any{
			"name": "Only", "fields": []any{map[string]any{"label": "One", "type": "text"}}}}},
			200, `{"id":1,"title":"Renamed","description":null}`},
		{"GET", nil, 200, `{"id":1,"title":"Renamed","description":null,"createdAt":"@",` +
			`"categories":[{"id":3,"formId":1,"name":"Only","sortOrder":0,"fields":[{"id":6,` +
			`"categoryId":3,"label":"One","type":"text","description":null,"sortOrder":0}]}]}`},
		{"PUT", map[string]any{"title": "Empty", "description": "Changed"},
			200, `{"id":1,"title":"Empty","description":"Changed"}`},
		{"GET", nil, 200,
			`{"id":1,"title":"Empty","description":"Changed","createdAt":"@","categories":[]}`},
		{"DELETE", nil, 200, `{"message":"Form 1 and all related data deleted successfully."}`},
		{"GET", nil, 404, `{"error":"Form not found"}`},
	} {
		e.wantReply(step.method, "/api/forms/1", step.body, step.status,
			strings.ReplaceAll(step.want, "@", f.CreatedAt))
	}
}

// TestListsNewestFirst: forms are listed by createdAt and responses by submittedAt,
// newest first, also when ids say otherwise (a clock set back between two writes), and
// the higher id first within one instant; the form list is [] without forms and writes an
// absent description as null.
func TestListsNewestFirst(t *testing.T) {
	clock := &testClock{now: time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)}
	e := newTestEnvAt(t, clock.Now)
	e.wantReply("GET", "/api/forms", nil, 200, "[]")
	form := e.createForm(fullForm()) // the form the responses go to, listed last
	field := itoa(form.Categories[0].Fields[0].ID)
	hours := []int{12, 9, 11, 11}
	for _, hour := range hours {
		clock.Set(time.Date(2026, 11, 26, hour, 0, 0, 0, time.UTC))
		e.createForm(map[string]any{"title": fmt.Sprint(hour)})
		e.submit(form.ID, map[string]any{field: hour})
	}
	var forms, list []string
	for _, i := range []int{0, 3, 2, 1} { // newest first
		at := fmt.Sprintf("2026-11-26T%02d:00:00.000Z", hours[i])
		forms = append(forms, fmt.Sprintf(
			`{"id":%d,"title":"%d","description":null,"createdAt":"%s"}`, i+2, hours[i], at))
		list = append(list, fmt.Sprintf(`{"id":%d,"submittedAt":"%s","values":{"%s":{"label":`+
			`"Inspector","type":"text","value":"%d"}}}`, i+1, at, field, hours[i]))
	}
	forms = append(forms, `{"id":1,"title":"Site inspection","description":"Yearly check",`+
		`"createdAt":"2026-11-26T08:00:00.000Z"}`)
	e.wantReply("GET", "/api/forms", nil, 200, "["+strings.Join(forms, ",")+"]")
	e.wantReply("GET", "/api/forms/"+itoa(form.ID)+"/responses", nil, 200,
		"["+strings.Join(list, ",")+"]")
}

func TestFormIDs(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	for _, r := range []struct {
		method, suffix string
		body           any
		missing        string // @: the id read
	}{
		{"GET", "", nil, "Form not found"},
		{"PUT", "", map[string]any{"title": "x"}, "update form @: Record not found"},
		{"DELETE", "", nil, "delete form @: Record not found"},
		{"GET", "/responses", nil, "Form not found"},
		{"GET", "/responses.csv", nil, "Form not found"},
		{"POST", "/responses", map[string]any{"values": map[string]any{"1": "a"}},
			"submit response for form @: Record not found"},
	} {
		for _, id := range []string{"abc", "12abc", "1.5", "-1", "+1", "%2012", "1e3", "0x10"} {
			e.wantError(r.method, "/api/forms/"+id+r.suffix, r.body, 400, "Invalid form ID")
		}
		// Digits beyond int64 are an id still, of no row (they read as 0, which no row has).
		for id, read := range map[string]string{"999": "999", "9223372036854775808": "0",
			"1234567890123456789012345678901234567890": "0"} {
			e.wantError(r.method, "/api/forms/"+id+r.suffix, r.body, 404,
				strings.ReplaceAll(r.missing, "@", read))
		}
	}
	// Title is checked before existence.
	e.wantError("PUT", "/api/forms/999", map[string]any{"title": ""}, 400, "Form title is required")
	// A missing form is reported before a bad field, as the original checked inside its transaction.
	e.wantError("PUT", "/api/forms/999", map[string]any{"title": "x", "categories": []any{
		map[string]any{"fields": []any{map[string]any{"label": "a", "type": "nope"}}}}},
		404, "update form 999: Record not found")
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
	if n := e.count("fields"); n != 6 { // none deleted by another's label
		t.Errorf("fields = %d, want 6", n)
	}
}

// TestRemovalsTakeTheirRows: deleting a form takes its categories, fields, responses and
// values with it; replacing its fields takes the old fields' values and keeps the
// responses; neither touches another form's rows. A submit after the update knows the
// new fields only, though the old set was in use.
func TestRemovalsTakeTheirRows(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		method string
		body   any
		rows   map[string]int // left, the other form's among them
	}{
		{"DELETE", nil, map[string]int{"forms": 1, "categories": 2, "fields": 5,
			"responses": 1, "response_values": 1}},
		{"PUT", map[string]any{"title": "T", "categories": []any{map[string]any{"fields": []any{
			map[string]any{"label": "New", "type": "text"}}}}},
			map[string]int{"forms": 2, "categories": 3, "fields": 6,
				"responses": 4, "response_values": 1}},
	} {
		e := newTestEnv(t)
		f := e.createForm(fullForm())
		other := e.createForm(fullForm())
		old := itoa(f.Categories[0].Fields[0].ID)
		for range 3 {
			e.submit(f.ID, map[string]any{old: "x", itoa(f.Categories[1].Fields[1].ID): true})
		}
		e.submit(other.ID, map[string]any{itoa(other.Categories[0].Fields[0].ID): "stays"})
		if status := e.doJSON(tc.method, "/api/forms/"+itoa(f.ID), tc.body, nil); status != 200 {
			t.Fatalf("%s = %d", tc.method, status)
		}
		for table, want := range tc.rows {
			if got := e.count(table); got != want {
				t.Errorf("%s: %s = %d rows, want %d", tc.method, table, got, want)
			}
		}
		e.wantNoOrphans()
		if tc.method == "PUT" { // its one field is 11, after the two forms' ten
			id := e.submit(f.ID, map[string]any{old: "old field", "11": "new"})
			if v := e.storedValue(id); show(v) != `"new"` {
				t.Errorf("a submit to the updated form stored %s, want only the new field's", show(v))
			}
		}
	}
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
		for _, op := range []struct {
			method, path string
			ok           int
		}{{"POST", "/api/forms", 201}, {"PUT", "/api/forms/" + itoa(existing.ID), 200}} {
			status := fuzzServe(t, e.srv, op.method, op.path, body)
			if !slices.Contains([]int{op.ok, 400, 413, 500}, status) {
				t.Fatalf("%s %q: unexpected status %d", op.method, body, status)
			}
		}
		e.wantNoOrphans()
	})
}

// TestReadsFollowSortOrder: the single read and the response list (and with them the PDF
// and the CSV) order categories and fields by sortOrder, not by id. The API assigns both
// in array order, so the test reverses the sortOrders in the database to make them
// differ. The list, newest first (the higher id first within one instant), writes a null
// value as null, a response without values with {}, and no response as [].
func TestReadsFollowSortOrder(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	e := newTestEnvAt(t, func() time.Time { return now })
	f := e.createForm(map[string]any{"title": "T", "categories": []any{
		map[string]any{"name": "first", "fields": []any{
			map[string]any{"label": "a", "type": "text"}, map[string]any{"label": "b", "type": "number"}}},
		map[string]any{"name": "second", "fields": []any{
			map[string]any{"label": "c", "type": "date"}, map[string]any{"label": "d", "type": "boolean"}}},
	}})
	list := "/api/forms/" + itoa(f.ID) + "/responses"
	e.wantReply("GET", list, nil, 200, "[]")
	e.exec(`UPDATE categories SET sortOrder = 1 - sortOrder WHERE formId = ?`, f.ID)
	e.exec(`UPDATE fields SET sortOrder = 1 - sortOrder
		WHERE categoryId IN (SELECT id FROM categories WHERE formId = ?)`, f.ID)
	e.store.forms.drop(f.ID) // the change went around the store

	e.wantReply("GET", "/api/forms/"+itoa(f.ID), nil, 200, `{"id":1,"title":"T",`+
		`"description":null,"createdAt":"2026-11-26T09:00:00.000Z","categories":[`+
		`{"id":2,"formId":1,"name":"second","sortOrder":0,"fields":[`+
		`{"id":4,"categoryId":2,"label":"d","type":"boolean","description":null,"sortOrder":0},`+
		`{"id":3,"categoryId":2,"label":"c","type":"date","description":null,"sortOrder":1}]},`+
		`{"id":1,"formId":1,"name":"first","sortOrder":1,"fields":[`+
		`{"id":2,"categoryId":1,"label":"b","type":"number","description":null,"sortOrder":0},`+
		`{"id":1,"categoryId":1,"label":"a","type":"text","description":null,"sortOrder":1}]}]}`)

	first := e.submit(f.ID, map[string]any{"1": "x", "2": 7, "3": nil, "4": false})
	empty := e.submit(f.ID, map[string]any{"nope": 1})
	at := `"submittedAt":"2026-11-26T09:00:00.000Z"`
	want := fmt.Sprintf(`[{"id":%d,%s,"values":{}},{"id":%d,%s,"values":{`+
		`"4":{"label":"d","type":"boolean","value":"false"},`+
		`"3":{"label":"c","type":"date","value":null},`+
		`"2":{"label":"b","type":"number","value":"7"},`+
		`"1":{"label":"a","type":"text","value":"x"}}}]`, empty, at, first, at)
	e.wantReply("GET", list, nil, 200, want)
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
