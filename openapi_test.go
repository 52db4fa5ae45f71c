package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"mime"
	"net/http"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// openAPIDoc is docs/openapi.json, decoded.
type openAPIDoc struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas    map[string]json.RawMessage `json:"schemas"`
		Responses  map[string]json.RawMessage `json:"responses"`
		Parameters map[string]json.RawMessage `json:"parameters"`
	} `json:"components"`
}

func loadOpenAPI(t *testing.T) openAPIDoc {
	t.Helper()
	var doc openAPIDoc
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatalf("docs/openapi.json: %v", err)
	}
	return doc
}

// TestOpenAPIDocumentsEveryRoute: the document's paths and methods are exactly the
// routes the mux serves.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	doc := loadOpenAPI(t)
	var documented, served []string
	for path, item := range doc.Paths {
		for method := range item {
			if method != "parameters" {
				documented = append(documented, strings.ToUpper(method)+" "+path)
			}
		}
	}
	e := newTestEnv(t)
	for route := range e.srv.routes() {
		served = append(served, route)
	}
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Errorf("documented:\n%s\nserved:\n%s", strings.Join(documented, "\n"), strings.Join(served, "\n"))
	}
	// The document the service replies is the file.
	status, raw := e.do("GET", "/api/openapi.json", nil)
	if status != 200 || !bytes.Equal(raw, openAPI) {
		t.Errorf("GET /api/openapi.json = %d, %d bytes; want 200 and docs/openapi.json", status, len(raw))
	}
}

// TestOpenAPISchemasTypedAndNamed: every schema of the document has a type (or is a
// $ref), and every object schema is a named component. Generators read the document
// this way: oapi-codegen makes a schema without a type interface{} (so that `Type: 42`
// compiles) and an inline object an anonymous struct a Go user must restate, json tags
// included, to build a request; openapi-typescript makes them unknown and inline types.
func TestOpenAPISchemasTypedAndNamed(t *testing.T) {
	var doc any
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	schemas := openAPISchemas(doc, "#")
	if len(schemas) < 100 {
		t.Fatalf("found %d schemas; the walk misses some", len(schemas))
	}
	for _, s := range schemas {
		_, isRef := s.schema["$ref"]
		typ, typed := s.schema["type"]
		switch {
		case s.err != "":
			t.Errorf("%s: %s", s.at, s.err)
		case !isRef && !typed:
			t.Errorf("%s: schema without a type", s.at)
		case !s.component && slices.Contains(schemaTypes(typ), "object"):
			t.Errorf("%s: inline object schema; name it under #/components/schemas", s.at)
		}
	}
}

// openAPISchema is one schema of the document, where it is and whether it is a
// component (directly under #/components/schemas); err names a keyword the walk does
// not know.
type openAPISchema struct {
	at        string
	component bool
	schema    map[string]any
	err       string
}

// openAPISchemas lists the schemas in v, the document or a part of it at `at`: the
// components, the schema of every parameter, header and media type, and every schema
// inside those.
func openAPISchemas(v any, at string) []openAPISchema {
	var out []openAPISchema
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			switch {
			case k == "schema":
				out = append(out, schemasIn(v[k], at+"/schema", false)...)
			case k == "schemas" && at == "#/components":
				components := v[k].(map[string]any)
				for _, name := range slices.Sorted(maps.Keys(components)) {
					out = append(out, schemasIn(components[name], at+"/schemas/"+name, true)...)
				}
			default:
				out = append(out, openAPISchemas(v[k], at+"/"+pointerEscape(k))...)
			}
		}
	case []any:
		for i, item := range v {
			out = append(out, openAPISchemas(item, fmt.Sprintf("%s/%d", at, i))...)
		}
	}
	return out
}

// schemasIn lists the schema v and the schemas inside it. The walk knows the keywords
// conforms checks, and no composition (allOf, anyOf, oneOf): a keyword it does not know
// is reported, so that no schema escapes the test.
func schemasIn(v any, at string, component bool) []openAPISchema {
	s, ok := v.(map[string]any)
	if !ok {
		return []openAPISchema{{at: at, err: fmt.Sprintf("schema is %s, not an object", jsonTypeOf(v))}}
	}
	out := []openAPISchema{{at: at, component: component, schema: s}}
	for _, k := range slices.Sorted(maps.Keys(s)) {
		switch k {
		case "$ref", "type", "description", "format", "examples", "const", "enum", "pattern",
			"minLength", "maxLength", "minimum", "maximum", "default", "maxItems", "minProperties",
			"required", "x-go-type", "x-go-type-skip-optional-pointer":
		case "properties":
			props := s[k].(map[string]any)
			for _, name := range slices.Sorted(maps.Keys(props)) {
				out = append(out, schemasIn(props[name], at+"/properties/"+pointerEscape(name), false)...)
			}
		case "additionalProperties":
			if s[k] != false { // false is no schema but a rule: no other members
				out = append(out, schemasIn(s[k], at+"/"+k, false)...)
			}
		case "items", "propertyNames":
			if k == "items" && anyItems(s) {
				continue
			}
			out = append(out, schemasIn(s[k], at+"/"+k, false)...)
		default:
			out = append(out, openAPISchema{at: at, err: fmt.Sprintf("keyword %q not walked by this test", k)})
		}
	}
	return out
}

// anyItems reports whether s admits every JSON type and its items are {}, any JSON
// value: their type is then the parent's, restated. JSONValue needs it: as a $ref to
// itself, openapi-typescript writes a type TypeScript refuses (TS2502), and kin-openapi
// (oapi-codegen) cannot read items: true.
func anyItems(s map[string]any) bool {
	items, ok := s["items"].(map[string]any)
	types := schemaTypes(s["type"])
	return ok && len(items) == 0 && !slices.ContainsFunc([]string{"string", "number", "boolean", "null", "array", "object"},
		func(typ string) bool { return !slices.Contains(types, typ) })
}

// pointerEscape writes a member name as a JSON Pointer (RFC 6901) token, so that a
// schema's place reads as linters print it: /api/forms is ~1api~1forms.
func pointerEscape(name string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(name)
}

// schemaTypes reads a schema's type, one name or a list of them.
func schemaTypes(typ any) []string {
	switch typ := typ.(type) {
	case string:
		return []string{typ}
	case []any:
		var out []string
		for _, name := range typ {
			out = append(out, fmt.Sprint(name))
		}
		return out
	}
	return nil
}

// TestOpenAPIWhiteSpace: the pattern of a title and a label, "not only white space", is
// the service's rule exactly: a string matches when it holds a rune outside Go's
// unicode.IsSpace (Unicode's White_Space), which FormInput.Valid and checkField trim.
// \S would not do: ECMAScript's \s adds U+FEFF and lacks U+0085, Python's adds
// U+001C-U+001F, Go's is ASCII. So the pattern lists the set, and each engine that reads
// it is asked for the runes it refuses: Go's regexp here, ECMAScript's (JSON Schema's
// pattern dialect, with and without the u flag) by node, Python's re (Schemathesis's)
// by python3; either of the last two is skipped where it is not installed.
func TestOpenAPIWhiteSpace(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct{ Pattern string }
			}
		}
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	pattern := doc.Components.Schemas["FormInput"].Properties["title"].Pattern
	if label := doc.Components.Schemas["FieldInput"].Properties["label"].Pattern; label != pattern {
		t.Fatalf("label pattern %q, title pattern %q: one rule, one pattern", label, pattern)
	}
	var want []int // the runes a blank title or label is made of
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if unicode.IsSpace(r) {
			want = append(want, int(r))
		}
	}
	re := regexp.MustCompile(goPattern(pattern))
	var goRefuses []int
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf16.IsSurrogate(r) && !re.MatchString(string(r)) {
			goRefuses = append(goRefuses, int(r))
		}
	}
	engines := []struct {
		name, command string
		args          []string
	}{
		{"ECMAScript", "node", []string{"-e", ecmaRefuses, pattern}},
		{"Python", "python3", []string{"-c", pythonRefuses, pattern}},
	}
	check := func(name string, got []int) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s refuses one-character strings %U, unicode.IsSpace is %U", name, got, want)
		}
	}
	check("Go's regexp", goRefuses)
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			if _, err := exec.LookPath(e.command); err != nil {
				notInstalled(t, "%s not installed: %v", e.command, err)
			}
			out, err := exec.Command(e.command, e.args...).Output()
			if err != nil {
				t.Fatalf("%s: %v", e.command, err)
			}
			var refused map[string][]int
			if err := json.Unmarshal(out, &refused); err != nil || len(refused) == 0 {
				t.Fatalf("%s: %v: %.200s", e.command, err, out)
			}
			for _, flags := range slices.Sorted(maps.Keys(refused)) {
				check(e.name+" "+flags, refused[flags])
			}
		})
	}
}

// ecmaRefuses prints, for the pattern in argv, the code points (surrogates aside) that
// make a one-character string it does not match, read with and without the u flag.
const ecmaRefuses = `
const pattern = process.argv[process.argv.length - 1];
const out = {};
for (const flags of ['', 'u']) {
  const re = new RegExp(pattern, flags);
  const refused = out[flags ? 'with u' : 'without u'] = [];
  for (let c = 0; c <= 0x10FFFF; c++) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    if (!re.test(String.fromCodePoint(c))) refused.push(c);
  }
}
process.stdout.write(JSON.stringify(out));
`

// pythonRefuses is ecmaRefuses for Python's re.
const pythonRefuses = `
import json, re, sys
r = re.compile(sys.argv[1])
print(json.dumps({"re": [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF and not r.search(chr(c))]}))
`

// TestOpenAPIRepliesConform sends requests to every route, with replies of every
// documented kind, success and error, and checks each against the document: the status
// is documented for the route, and a JSON body conforms to its schema.
func TestOpenAPIRepliesConform(t *testing.T) {
	doc := loadOpenAPI(t)
	e := newTestEnv(t)
	f := e.createForm(fullForm())
	field := itoa(f.Categories[0].Fields[0].ID)
	id := itoa(f.ID)
	responseID := itoa(e.submit(f.ID, map[string]any{field: "x"}))
	doomed := itoa(e.createForm(map[string]any{"title": "to delete"}).ID)
	locked := newTestEnv(t, func(c *config) { c.APIToken = "t" })
	big := `{"title": "` + strings.Repeat("x", 1<<20) + `"}`

	type call struct {
		env                   *testEnv
		method, path, docPath string
		body                  string
		status                int
	}
	calls := []call{
		{e, "GET", "/healthz", "/healthz", "", 200},
		{e, "GET", "/api/openapi.json", "/api/openapi.json", "", 200},
		{e, "GET", "/api/forms", "/api/forms", "", 200},
		{e, "POST", "/api/forms", "/api/forms", `{"title": "n", "categories": [{"fields": [{"label": "l", "type": "date"}]}]}`, 201},
		{e, "POST", "/api/forms", "/api/forms", `{}`, 400},
		{e, "POST", "/api/forms", "/api/forms", `{"title": 5}`, 400},
		{e, "POST", "/api/forms", "/api/forms", `{`, 400},
		{e, "POST", "/api/forms", "/api/forms", big, 413},
		{e, "POST", "/api/forms", "/api/forms", `{"title": "t", "categories": [{"fields": [{"label": "l", "type": "x"}]}]}`, 500},
		// The document's promises on bodies, each against a real reply: a title of white
		// space is no title, a field is an object (null has no label), limits hold.
		{e, "POST", "/api/forms", "/api/forms", `{"title": " \t "}`, 400},
		{e, "POST", "/api/forms", "/api/forms", `{"title": "t", "categories": [{"fields": [null]}]}`, 500},
		{e, "POST", "/api/forms", "/api/forms", `{"title": "t", "categories": [null, {"name": null, "fields": null}]}`, 201},
		{e, "POST", "/api/forms", "/api/forms", `{"title": "` + strings.Repeat("t", maxTitleChars+1) + `"}`, 400},
		{e, "POST", "/api/forms", "/api/forms", `{"title": "t", "categories": [{"fields": [{"label": " ", "type": "text"}]}]}`, 500},
		// White space is Go's unicode.IsSpace, where regex engines' \s differ (see
		// TestOpenAPIWhiteSpace): U+0085 is space, U+001E (Python's), U+FEFF (ECMAScript's)
		// and U+180E (space before Unicode 6.3) are not.
		{e, "POST", "/api/forms", "/api/forms", `{"title": "\u0085\u3000\u2028"}`, 400},
		{e, "POST", "/api/forms", "/api/forms", `{"title": "\u001e"}`, 201},
		{e, "POST", "/api/forms", "/api/forms", `{"title": "\ufeff"}`, 201},
		{e, "POST", "/api/forms", "/api/forms", `{"title": "\u180e"}`, 201},
		{e, "POST", "/api/forms", "/api/forms", `{"title": "t", "categories": [{"fields": [{"label": "\u0085", "type": "text"}]}]}`, 500},
		{e, "POST", "/api/forms", "/api/forms", `{"title": "t", "categories": [{"fields": [{"label": "\u001e", "type": "text"}]}]}`, 201},
		{e, "POST", "/api/forms", "/api/forms", `{"title": "t", "categories": [` + strings.Repeat(`{},`, maxCategories) + `{}]}`, 400},
		{e, "POST", "/api/forms", "/api/forms", ``, 400},
		{e, "GET", "/api/forms/" + id, "/api/forms/{id}", "", 200},
		{e, "GET", "/api/forms/x", "/api/forms/{id}", "", 400},
		{e, "GET", "/api/forms/999", "/api/forms/{id}", "", 404},
		{e, "PUT", "/api/forms/999", "/api/forms/{id}", `{"title": "t"}`, 404},
		{e, "PUT", "/api/forms/" + id, "/api/forms/{id}", `{"title": ""}`, 400},
		{e, "PUT", "/api/forms/" + id, "/api/forms/{id}", `{"title": "t", "categories": [{"fields": [{"type": "text"}]}]}`, 500},
		{e, "DELETE", "/api/forms/" + doomed, "/api/forms/{id}", "", 200},
		{e, "DELETE", "/api/forms/" + doomed, "/api/forms/{id}", "", 404},
		{e, "DELETE", "/api/forms/-1", "/api/forms/{id}", "", 400},
		// Path ids are integers of at least 0, written as clients write them; SPEC's 400 for
		// a non-numeric id covers every other spelling.
		{e, "GET", "/api/forms/0", "/api/forms/{id}", "", 404},
		{e, "GET", "/api/forms/+1", "/api/forms/{id}", "", 400},
		{e, "GET", "/api/forms/1.0", "/api/forms/{id}", "", 400},
		{e, "GET", "/api/forms/1e3", "/api/forms/{id}", "", 400},
		{e, "GET", "/api/responses/0/export/pdf", "/api/responses/{responseId}/export/pdf", "", 404},
		{e, "GET", "/api/responses/-" + responseID + "/export/pdf", "/api/responses/{responseId}/export/pdf", "", 400},
		{e, "POST", "/api/forms/" + id + "/responses", "/api/forms/{id}/responses", `{"values": {"` + field + `": 1}}`, 201},
		{e, "POST", "/api/forms/" + id + "/responses", "/api/forms/{id}/responses", `{"values": {}}`, 400},
		{e, "POST", "/api/forms/999/responses", "/api/forms/{id}/responses", `{"values": {"1": 1}}`, 404},
		{e, "GET", "/api/forms/" + id + "/responses", "/api/forms/{id}/responses", "", 200},
		{e, "GET", "/api/forms/999/responses", "/api/forms/{id}/responses", "", 404},
		{e, "GET", "/api/forms/" + id + "/responses.csv", "/api/forms/{id}/responses.csv", "", 200},
		{e, "GET", "/api/forms/1x/responses.csv", "/api/forms/{id}/responses.csv", "", 400},
		{e, "GET", "/api/responses/" + responseID + "/export/pdf", "/api/responses/{responseId}/export/pdf", "", 200},
		{e, "GET", "/api/responses/x/export/pdf", "/api/responses/{responseId}/export/pdf", "", 400},
		{e, "GET", "/api/responses/999/export/pdf", "/api/responses/{responseId}/export/pdf", "", 404},
		{e, "GET", "/api/tracker-summary/today", "/api/tracker-summary/today", "", 404},
		{e, "POST", "/api/tracker-summaries/generate", "/api/tracker-summaries/generate", "", 202},
		{e, "POST", "/api/email-summaries/generate", "/api/email-summaries/generate", "", 202},
		{e, "GET", "/api/tracker-summary", "/api/tracker-summary", "", 500},
		{e, "PUT", "/api/settings/k", "/api/settings/{key}", `{"value": [1, 2]}`, 200},
		{e, "PUT", "/api/settings/k", "/api/settings/{key}", `{}`, 400},
		{e, "GET", "/api/settings/k", "/api/settings/{key}", "", 200},
		{e, "GET", "/api/settings/" + strings.Repeat("k", 300), "/api/settings/{key}", "", 400},
		{e, "GET", "/api/settings/a%01b", "/api/settings/{key}", "", 400},
		{e, "DELETE", "/api/settings/k", "/api/settings/{key}", "", 405},
		{locked, "GET", "/api/forms", "/api/forms", "", 401},
	}
	for _, c := range calls {
		checkReply(t, doc, c.env, c.method, c.path, c.docPath, c.body, c.status)
	}
	// Every route refuses a body that is not JSON, or is too large.
	for route := range e.srv.routes() {
		method, pattern, _ := strings.Cut(route, " ")
		path := strings.NewReplacer("{id}", id, "{responseId}", responseID, "{key}", "k").Replace(pattern)
		checkReply(t, doc, e, method, path, pattern, `{bad`, 400)
		checkReply(t, doc, e, method, path, pattern, big, 413)
	}
	// Every route refuses a body that is not application/json, and, without a token, a
	// Host it does not know.
	for route := range e.srv.routes() {
		method, pattern, _ := strings.Cut(route, " ")
		url := e.http.URL + strings.NewReplacer("{id}", id, "{responseId}", responseID, "{key}", "k").Replace(pattern)
		req, _ := http.NewRequest(method, url, strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "text/plain")
		checkRequest(t, doc, e, req, pattern, `{}`, 415)
		if strings.HasPrefix(pattern, "/api") {
			req, _ := http.NewRequest(method, url, nil)
			req.Host = "attacker.example"
			checkRequest(t, doc, e, req, pattern, "", 403)
		}
	}
	// Summaries, once stored.
	now := time.Now()
	if err := e.store.SaveTrackerSummary(context.Background(), startOfDay(now), "text"); err != nil {
		t.Fatal(err)
	}
	if err := e.store.AddEmailSummary(context.Background(), startOfDay(now), "mail"); err != nil {
		t.Fatal(err)
	}
	checkReply(t, doc, e, "GET", "/api/tracker-summary/today", "/api/tracker-summary/today", "", 200)
	checkReply(t, doc, e, "GET", "/api/tracker-summaries?page=1&limit=5", "/api/tracker-summaries", "", 200)
	checkReply(t, doc, e, "GET", "/api/email-summaries?page=x", "/api/email-summaries", "", 200)
}

// checkReply sends one request with a JSON body and checks its reply against the
// document (see checkRequest).
func checkReply(t *testing.T, doc openAPIDoc, e *testEnv, method, path, docPath, body string, wantStatus int) {
	t.Helper()
	req, err := http.NewRequest(method, e.http.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	checkRequest(t, doc, e, req, docPath, body, wantStatus)
}

// checkRequest sends req, whose body is body, and checks that its status is wantStatus
// and documented for the operation, with an reply of the documented type and schema.
// A JSON body of an operation with a requestBody is checked too: an accepted one must
// conform to the documented schema, and one refused with 400 or 500 must not, so that the
// document promises neither more nor less than the service does.
func checkRequest(t *testing.T, doc openAPIDoc, e *testEnv, req *http.Request, docPath, body string, wantStatus int) {
	t.Helper()
	method, path := req.Method, req.URL.RequestURI()
	res, err := e.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	where := fmt.Sprintf("%s %s", method, path)
	if res.StatusCode != wantStatus {
		t.Errorf("%s = %d %s, want %d", where, res.StatusCode, raw, wantStatus)
		return
	}
	var op struct {
		Responses   map[string]json.RawMessage `json:"responses"`
		RequestBody *struct {
			Content map[string]struct{ Schema json.RawMessage } `json:"content"`
		} `json:"requestBody"`
	}
	opRaw := doc.Paths[docPath][strings.ToLower(method)]
	if opRaw == nil && res.StatusCode == http.StatusMethodNotAllowed {
		opRaw = doc.Paths[docPath]["get"] // a 405 is documented on the path's operations
	}
	if err := json.Unmarshal(opRaw, &op); err != nil || op.Responses == nil {
		t.Errorf("%s: %s %s is not documented", where, method, docPath)
		return
	}
	checkPathParameters(t, doc, req, docPath, res.StatusCode, raw)
	var sent any
	if op.RequestBody != nil && req.Header.Get("Content-Type") == "application/json" && json.Unmarshal([]byte(body), &sent) == nil {
		err := conforms(doc, op.RequestBody.Content["application/json"].Schema, sent, "request")
		switch {
		case res.StatusCode < 300 && err != nil:
			t.Errorf("%s: accepted, but the document refuses the body: %v", where, err)
		case (res.StatusCode == 400 || res.StatusCode == 500) && err == nil:
			t.Errorf("%s: refused with %d, but the document accepts the body %.200s", where, res.StatusCode, body)
		}
	}
	reply := op.Responses[strconv.Itoa(res.StatusCode)]
	if reply == nil {
		t.Errorf("%s: status %d is not documented for %s %s", where, res.StatusCode, method, docPath)
		return
	}
	var r struct {
		Ref     string                                      `json:"$ref"`
		Content map[string]struct{ Schema json.RawMessage } `json:"content"`
	}
	json.Unmarshal(reply, &r)
	if name, ok := strings.CutPrefix(r.Ref, "#/components/responses/"); ok {
		json.Unmarshal(doc.Components.Responses[name], &r)
	}
	mediaType, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	content, ok := r.Content[mediaType]
	if !ok {
		t.Errorf("%s: reply of type %q, documented: %v", where, mediaType, slices.Collect(maps.Keys(r.Content)))
		return
	}
	if mediaType != "application/json" {
		return
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Errorf("%s: %v", where, err)
		return
	}
	if err := conforms(doc, content.Schema, v, "body"); err != nil {
		t.Errorf("%s: %s: %v", where, raw[:min(len(raw), 300)], err)
	}
}

// pathParameterErrors are the 400s that refuse a path parameter rather than a body.
var pathParameterErrors = []string{"Invalid form ID", "Invalid response ID", "Invalid setting key", "Setting key is too long"}

// checkPathParameters checks the path parameters of a request whose reply had status
// and body raw against the document, as checkRequest checks a body: a value the
// document accepts is not refused with the parameter's 400, and one it refuses is
// refused (400), unless a check that comes first replies (401, 403, 413, 415). An
// integer is read as a client writes it, base-10 digits with a sign when negative: +1,
// 01 and 1.0 are no integers there, whatever JSON makes of them.
func checkPathParameters(t *testing.T, doc openAPIDoc, req *http.Request, docPath string, status int, raw []byte) {
	t.Helper()
	var params []struct {
		Ref    string `json:"$ref"`
		Name   string
		Schema json.RawMessage
	}
	json.Unmarshal(doc.Paths[docPath]["parameters"], &params)
	segments := strings.Split(req.URL.Path, "/")
	for i, seg := range strings.Split(docPath, "/") {
		name, ok := strings.CutPrefix(seg, "{")
		if !ok {
			continue
		}
		name = strings.TrimSuffix(name, "}")
		var schema json.RawMessage
		for _, p := range params {
			if ref, ok := strings.CutPrefix(p.Ref, "#/components/parameters/"); ok {
				json.Unmarshal(doc.Components.Parameters[ref], &p)
			}
			if p.Name == name {
				schema = p.Schema
			}
		}
		if schema == nil {
			t.Errorf("%s: path parameter %s is not documented", docPath, name)
			continue
		}
		value := segments[i]
		var typ struct{ Type string }
		json.Unmarshal(schema, &typ)
		var err error
		if typ.Type == "integer" {
			n, perr := strconv.ParseInt(value, 10, 64)
			if perr != nil || strconv.FormatInt(n, 10) != value {
				err = fmt.Errorf("%q is no integer", value)
			} else {
				err = conforms(doc, schema, float64(n), name)
			}
		} else {
			err = conforms(doc, schema, value, name)
		}
		var reply struct{ Error string }
		json.Unmarshal(raw, &reply)
		where := fmt.Sprintf("%s %s", req.Method, req.URL.RequestURI())
		switch {
		case err == nil && status == 400 && slices.Contains(pathParameterErrors, reply.Error):
			t.Errorf("%s: refused with %s, but the document accepts %s %q", where, bytes.TrimSpace(raw), name, value)
		case err != nil && !slices.Contains([]int{400, 401, 403, 413, 415}, status):
			t.Errorf("%s: answered %d, but the document refuses the parameter: %v", where, status, err)
		}
	}
}

// conforms checks v against the part of JSON Schema (2020-12, as OpenAPI 3.1 uses it)
// that docs/openapi.json uses: $ref, type, const, enum, pattern, minLength, maxLength,
// minimum, maximum, maxItems, properties, required, additionalProperties, propertyNames,
// minProperties and items. A keyword it does not know fails the check, so that the
// document cannot outgrow its test.
func conforms(doc openAPIDoc, schema json.RawMessage, v any, at string) error {
	var s map[string]json.RawMessage
	if err := json.Unmarshal(schema, &s); err != nil {
		return fmt.Errorf("%s: schema: %v", at, err)
	}
	for kw, raw := range s {
		var err error
		switch kw {
		case "description", "format", "examples", "default", "x-go-type", "x-go-type-skip-optional-pointer":
			// Annotations: x-go-type names the Go type oapi-codegen generates.
		case "$ref":
			var ref string
			json.Unmarshal(raw, &ref)
			name, _ := strings.CutPrefix(ref, "#/components/schemas/")
			target, ok := doc.Components.Schemas[name]
			if !ok {
				return fmt.Errorf("%s: unknown $ref %s", at, ref)
			}
			err = conforms(doc, target, v, at)
		case "type":
			var types []string
			if json.Unmarshal(raw, &types) != nil {
				var one string
				json.Unmarshal(raw, &one)
				types = []string{one}
			}
			if !slices.Contains(types, jsonTypeOf(v)) && !(jsonTypeOf(v) == "integer" && slices.Contains(types, "number")) {
				err = fmt.Errorf("%s: %s, want %v", at, jsonTypeOf(v), types)
			}
		case "const", "enum":
			var allowed []any
			if kw == "const" {
				var one any
				json.Unmarshal(raw, &one)
				allowed = []any{one}
			} else {
				json.Unmarshal(raw, &allowed)
			}
			if !slices.ContainsFunc(allowed, func(a any) bool { return reflect.DeepEqual(a, v) }) {
				err = fmt.Errorf("%s: %v, want one of %v", at, v, allowed)
			}
		case "pattern", "minLength", "maxLength":
			str, ok := v.(string)
			if !ok {
				continue
			}
			var pattern string
			var length int
			json.Unmarshal(raw, &pattern)
			json.Unmarshal(raw, &length)
			switch n := utf8.RuneCountInString(str); {
			case kw == "pattern" && !regexp.MustCompile(goPattern(pattern)).MatchString(str):
				err = fmt.Errorf("%s: %.50q does not match %s", at, str, pattern)
			case kw == "minLength" && n < length:
				err = fmt.Errorf("%s: %.50q shorter than %d", at, str, length)
			case kw == "maxLength" && n > length:
				err = fmt.Errorf("%s: %.50q longer than %d", at, str, length)
			}
		case "minimum", "maximum":
			n, ok := v.(float64)
			var bound float64
			json.Unmarshal(raw, &bound)
			if ok && (kw == "minimum" && n < bound || kw == "maximum" && n > bound) {
				err = fmt.Errorf("%s: %v, %s %v", at, n, kw, bound)
			}
		case "maxItems":
			arr, ok := v.([]any)
			var most int
			json.Unmarshal(raw, &most)
			if ok && len(arr) > most {
				err = fmt.Errorf("%s: %d items, at most %d", at, len(arr), most)
			}
		case "properties", "required", "additionalProperties", "propertyNames", "minProperties":
			obj, ok := v.(map[string]any)
			if !ok {
				continue
			}
			err = objectConforms(doc, kw, raw, s, obj, at)
		case "items":
			arr, ok := v.([]any)
			if !ok {
				continue
			}
			for i, item := range arr {
				if err = conforms(doc, raw, item, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					break
				}
			}
		default:
			err = fmt.Errorf("%s: schema keyword %q not checked by this test", at, kw)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// goPattern writes an ECMA-262 pattern, as JSON Schema reads it, in the syntax of Go's
// regexp: \uXXXX is \x{XXXX}. The document's patterns use no other syntax the two read
// differently (TestOpenAPIWhiteSpace asks ECMAScript itself about its one class).
func goPattern(pattern string) string {
	return regexp.MustCompile(`\\u([0-9A-Fa-f]{4})`).ReplaceAllString(pattern, `\x{$1}`)
}

// objectConforms checks one object keyword of schema s.
func objectConforms(doc openAPIDoc, kw string, raw json.RawMessage, s map[string]json.RawMessage, obj map[string]any, at string) error {
	var props map[string]json.RawMessage
	json.Unmarshal(s["properties"], &props)
	switch kw {
	case "properties":
		for name, sub := range props {
			if value, ok := obj[name]; ok {
				if err := conforms(doc, sub, value, at+"."+name); err != nil {
					return err
				}
			}
		}
	case "required":
		var required []string
		json.Unmarshal(raw, &required)
		for _, name := range required {
			if _, ok := obj[name]; !ok {
				return fmt.Errorf("%s: member %q missing", at, name)
			}
		}
	case "additionalProperties":
		for name, value := range obj {
			if _, declared := props[name]; declared {
				continue
			}
			if string(raw) == "false" {
				return fmt.Errorf("%s: member %q not in the schema", at, name)
			}
			if err := conforms(doc, raw, value, at+"."+name); err != nil {
				return err
			}
		}
	case "propertyNames":
		for name := range obj {
			if err := conforms(doc, raw, name, at+" key "+name); err != nil {
				return err
			}
		}
	case "minProperties":
		var n int
		json.Unmarshal(raw, &n)
		if len(obj) < n {
			return fmt.Errorf("%s: %d members, want at least %d", at, len(obj), n)
		}
	}
	return nil
}

// jsonTypeOf names the JSON Schema type of a decoded JSON value.
func jsonTypeOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if v == math.Trunc(v) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	default:
		return "object"
	}
}
