package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// listedResponse is one element of GET /forms/{id}/responses as a client decodes it.
type listedResponse struct {
	ID          int64                  `json:"id"`
	SubmittedAt string                 `json:"submittedAt"`
	Values      map[string]listedValue `json:"values"`
}

type listedValue struct {
	Label string  `json:"label"`
	Type  string  `json:"type"`
	Value *string `json:"value"`
}

func TestSubmitStoresJavaScriptStrings(t *testing.T) {
	e := newTestEnv(t)
	f := e.createForm(map[string]any{"title": "T", "categories": []any{
		map[string]any{"fields": []any{map[string]any{"label": "v", "type": "text"}}}}})
	field := itoa(f.Categories[0].Fields[0].ID)
	// Each row of DESIGN.md's String(value) table, sent as raw JSON.
	cases := []struct {
		json string
		want *string
	}{
		{`"abc"`, ptr("abc")},
		{`""`, ptr("")},
		{`true`, ptr("true")},
		{`false`, ptr("false")},
		{`42`, ptr("42")},
		{`1.0`, ptr("1")},
		{`1.50`, ptr("1.5")},
		{`-0`, ptr("0")},
		{`1e21`, ptr("1e+21")},
		{`1e-7`, ptr("1e-7")},
		{`123456789012`, ptr("123456789012")},
		{`[1, "a", [2, 3]]`, ptr("1,a,2,3")},
		{`[]`, ptr("")},
		{`[null]`, ptr("")},
		{`{"a": 1}`, ptr("[object Object]")},
		{`null`, nil},
		{`"'); DROP TABLE responses; --"`, ptr("'); DROP TABLE responses; --")},
		{`"\u0000 %s ? $1 \\ \""`, ptr("\x00 %s ? $1 \\ \"")},
	}
	for _, tc := range cases {
		body := `{"values": {"` + field + `": ` + tc.json + `}}`
		var out struct{ ResponseID int64 }
		if status := e.doJSON("POST", "/api/forms/"+itoa(f.ID)+"/responses", body, &out); status != 201 {
			t.Fatalf("submit %s = %d", tc.json, status)
		}
		var got *string
		var stored = e.store.read.QueryRow(`SELECT value FROM response_values WHERE responseId = ?`, out.ResponseID)
		if err := stored.Scan(&got); err != nil {
			t.Fatalf("read %s back: %v", tc.json, err)
		}
		if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
			t.Errorf("String(%s) stored as %s, want %s", tc.json, show(got), show(tc.want))
		}
	}
}

func ptr(s string) *string { return &s }

func show(p *string) string {
	if p == nil {
		return "NULL"
	}
	return fmt.Sprintf("%q", *p)
}

func TestSubmitErrors(t *testing.T) {
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	path := "/api/forms/" + itoa(f.ID) + "/responses"
	cases := []struct {
		name string
		path string
		body any
		code int
		msg  string
	}{
		{"no values", path, `{}`, 400, "Response values are required"},
		{"empty body", path, ``, 400, "Response values are required"},
		{"null values", path, `{"values": null}`, 400, "Response values are required"},
		{"empty object", path, `{"values": {}}`, 400, "Response values are required"},
		{"array", path, `{"values": [1, 2]}`, 400, "Response values are required"},
		{"string", path, `{"values": "1"}`, 400, "Response values are required"},
		{"number", path, `{"values": 1}`, 400, "Response values are required"},
		{"invalid JSON", path, `{"values": {"1": }`, 400, "Invalid JSON body"},
		{"unknown form", "/api/forms/999/responses", `{"values": {"1": "a"}}`, 404, "submit response for form 999: Record not found"},
		{"values checked before the form", "/api/forms/999/responses", `{"values": {}}`, 400, "Response values are required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := e.snapshot()
			e.wantError("POST", tc.path, tc.body, tc.code, tc.msg)
			if e.snapshot() != before {
				t.Errorf("rejected submit changed the database")
			}
		})
	}
}

func TestSubmitSkipsUnknownKeys(t *testing.T) {
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	other := e.createForm(fullForm())
	own := itoa(f.Categories[0].Fields[0].ID)
	foreign := itoa(other.Categories[0].Fields[0].ID)
	id := e.submit(f.ID, map[string]any{"abc": "x", "12abc": "x", "": "x", foreign: "x", "999999": "x"})
	if n := e.count("response_values"); n != 0 {
		t.Errorf("skipped keys stored %d values", n)
	}
	var list []listedResponse
	e.doJSON("GET", "/api/forms/"+itoa(f.ID)+"/responses", nil, &list)
	if len(list) != 1 || list[0].ID != id || len(list[0].Values) != 0 {
		t.Errorf("list = %+v, want the response with no values", list)
	}
	// A key written twice keeps the later value, as a JavaScript object would.
	var out struct{ ResponseID int64 }
	e.doJSON("POST", "/api/forms/"+itoa(f.ID)+"/responses", `{"values": {"`+own+`": "first", "`+own+`": "second"}}`, &out)
	var v string
	if err := e.store.read.QueryRow(`SELECT value FROM response_values WHERE responseId = ?`, out.ResponseID).Scan(&v); err != nil || v != "second" {
		t.Errorf("duplicate key stored %q (%v), want second", v, err)
	}
}

func TestListResponses(t *testing.T) {
	e := newTestEnv(t)
	// The API assigns ids in display order; to show that values follow sortOrder and not
	// ids, the sortOrders are reversed in the database after the update below.
	f := e.createForm(fullForm())
	swapped := map[string]any{"title": "T", "categories": []any{
		map[string]any{"name": "B", "fields": []any{
			map[string]any{"label": "b2", "type": "boolean"}, map[string]any{"label": "b1", "type": "text"}}},
		map[string]any{"name": "A", "fields": []any{map[string]any{"label": "a1", "type": "number"}}},
	}}
	if status := e.doJSON("PUT", "/api/forms/"+itoa(f.ID), swapped, nil); status != 200 {
		t.Fatalf("update = %d", status)
	}
	var form FormDetail
	e.doJSON("GET", "/api/forms/"+itoa(f.ID), nil, &form)
	b2, b1, a1 := form.Categories[0].Fields[0].ID, form.Categories[0].Fields[1].ID, form.Categories[1].Fields[0].ID
	for _, q := range []string{
		`UPDATE categories SET sortOrder = 1 - sortOrder WHERE formId = ?`,
		`UPDATE fields SET sortOrder = 1 - sortOrder WHERE categoryId = (SELECT id FROM categories WHERE formId = ? AND name = 'B')`,
	} {
		if _, err := e.store.write.Exec(q, f.ID); err != nil {
			t.Fatal(err)
		}
	}

	first := e.submit(f.ID, map[string]any{itoa(a1): 7, itoa(b1): "text", itoa(b2): false})
	second := e.submit(f.ID, map[string]any{itoa(a1): nil})
	empty := e.submit(f.ID, map[string]any{"nope": 1})

	status, raw := e.do("GET", "/api/forms/"+itoa(f.ID)+"/responses", nil)
	if status != 200 {
		t.Fatalf("list = %d %s", status, raw)
	}
	var list []listedResponse
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 || list[0].ID != empty || list[1].ID != second || list[2].ID != first {
		t.Fatalf("order = %+v, want newest first: %d %d %d", list, empty, second, first)
	}
	// Keys inside values follow category sortOrder, then field sortOrder: a1, b1, b2.
	want := fmt.Sprintf(`"values":{"%d":{"label":"a1","type":"number","value":"7"},"%d":{"label":"b1","type":"text","value":"text"},"%d":{"label":"b2","type":"boolean","value":"false"}}`, a1, b1, b2)
	if !strings.Contains(string(raw), want) {
		t.Errorf("list = %s\nwant it to contain %s", raw, want)
	}
	if !strings.Contains(string(raw), fmt.Sprintf(`"values":{"%d":{"label":"a1","type":"number","value":null}}`, a1)) {
		t.Errorf("null value not listed as null: %s", raw)
	}
	if !strings.Contains(string(raw), fmt.Sprintf(`{"id":%d,"submittedAt":"%s","values":{}}`, empty, list[0].SubmittedAt)) {
		t.Errorf("response without values not listed with empty values: %s", raw)
	}
	e.wantError("GET", "/api/forms/999/responses", nil, 404, "Form not found")

	var none []listedResponse
	other := e.createForm(map[string]any{"title": "none"})
	if status := e.doJSON("GET", "/api/forms/"+itoa(other.ID)+"/responses", nil, &none); status != 200 || none == nil || len(none) != 0 {
		t.Errorf("list of a form without responses = %d %v, want 200 []", status, none)
	}
}

// TestConcurrentSubmits: 32 clients submitting 50 responses each are all acknowledged and
// all listed.
func TestConcurrentSubmits(t *testing.T) {
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	body := fmt.Sprintf(`{"values": {"%d": "a", "%d": 3, "%d": true}}`,
		f.Categories[0].Fields[0].ID, f.Categories[0].Fields[1].ID, f.Categories[1].Fields[1].ID)
	const clients, each = 32, 50
	var wg sync.WaitGroup
	errs := make(chan error, clients*each)
	for range clients {
		wg.Go(func() {
			for range each {
				res, err := e.http.Client().Post(e.http.URL+"/api/forms/"+itoa(f.ID)+"/responses", "application/json", strings.NewReader(body))
				if err != nil {
					errs <- err
					continue
				}
				res.Body.Close()
				if res.StatusCode != http.StatusCreated {
					errs <- fmt.Errorf("status %d", res.StatusCode)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var list []listedResponse
	e.doJSON("GET", "/api/forms/"+itoa(f.ID)+"/responses", nil, &list)
	if len(list) != clients*each {
		t.Errorf("listed %d responses, want %d", len(list), clients*each)
	}
	for _, r := range list {
		if len(r.Values) != 3 {
			t.Fatalf("response %d has %d values, want 3", r.ID, len(r.Values))
		}
	}
}

// TestSubmitBatch: submits written in one transaction keep their own outcomes; a missing
// form refuses only its own submit.
func TestSubmitBatch(t *testing.T) {
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	field := itoa(f.Categories[0].Fields[0].ID)
	one := func(v string) []SubmittedValue { return []SubmittedValue{{Key: field, Value: &v}} }
	batch := []*pendingSubmit{
		{formID: f.ID, values: one("first")},
		{formID: 999, values: one("lost")},
		{formID: f.ID, values: one("third")},
	}
	results := e.store.writeBatch(batch)
	if results[0].err != nil || results[2].err != nil || results[0].id == 0 || results[2].id <= results[0].id {
		t.Errorf("good submits = %+v, %+v", results[0], results[2])
	}
	if !errors.Is(results[1].err, errNotFound) || results[1].id != 0 {
		t.Errorf("submit to a missing form = %+v, want errNotFound", results[1])
	}
	var values string
	if err := e.store.read.QueryRow(`SELECT group_concat(value, ',') FROM (SELECT value FROM response_values ORDER BY responseId)`).Scan(&values); err != nil || values != "first,third" {
		t.Errorf("stored values %q (%v), want first,third", values, err)
	}
	if n := e.count("responses"); n != 2 {
		t.Errorf("%d responses stored, want 2", n)
	}

	// Concurrently, through the API: good and bad submits interleave in batches.
	var wg sync.WaitGroup
	errs := make(chan string, 640)
	for i := range 32 {
		wg.Go(func() {
			formID := f.ID
			if i%2 == 1 {
				formID = 999
			}
			for range 20 {
				res, err := e.http.Client().Post(e.http.URL+"/api/forms/"+itoa(formID)+"/responses", "application/json",
					strings.NewReader(`{"values": {"`+field+`": "x"}}`))
				if err != nil {
					errs <- err.Error()
					continue
				}
				res.Body.Close()
				if (formID == 999 && res.StatusCode != 404) || (formID != 999 && res.StatusCode != 201) {
					errs <- fmt.Sprintf("form %d: status %d", formID, res.StatusCode)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := e.count("responses"); n != 2+16*20 {
		t.Errorf("%d responses stored, want %d", n, 2+16*20)
	}
	e.wantNoOrphans()
}
