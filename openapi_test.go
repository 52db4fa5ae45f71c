package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"mime"
	"net/http"
	"net/http/httptest"
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

func loadOpenAPI(t *testing.T) any {
	t.Helper()
	var doc any
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatalf("docs/openapi.json: %v", err)
	}
	return doc
}

// jsonAt is the value at the member names path inside v, nil where there is none.
func jsonAt(v any, path ...string) any {
	for _, name := range path {
		m, _ := v.(map[string]any)
		v = m[name]
	}
	return v
}

// resolved is v, or what v's $ref (a JSON Pointer into doc) names.
func resolved(doc, v any) any {
	if ref, ok := jsonAt(v, "$ref").(string); ok {
		return jsonAt(doc, strings.Split(strings.TrimPrefix(ref, "#/"), "/")...)
	}
	return v
}

// TestOpenAPISchemasTypedAndNamed: every schema has a type (or is a $ref), and every object
// schema is a named component: else oapi-codegen makes interface{} and anonymous structs a
// Go user must restate, openapi-typescript unknown and inline types.
func TestOpenAPISchemasTypedAndNamed(t *testing.T) {
	if n := walkSchemas(t, loadOpenAPI(t), "#", ""); n < 100 {
		t.Fatalf("found %d schemas; the walk misses some", n)
	}
}

// walkSchemas checks the schemas in v, at `at` in the document, and returns how many it
// found. Where kind is "", v is a part of the document that may hold schemas; else v is a
// schema ("component" when directly under #/components/schemas). A keyword the walk does
// not know (allOf, anyOf, oneOf among them) is reported, so that no schema escapes it.
func walkSchemas(t *testing.T, v any, at, kind string) int {
	t.Helper()
	n := 0
	m, isObject := v.(map[string]any)
	if kind == "" {
		list, _ := v.([]any)
		for i, item := range list {
			n += walkSchemas(t, item, fmt.Sprintf("%s/%d", at, i), "")
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			switch {
			case k == "schema":
				n += walkSchemas(t, m[k], at+"/schema", "inline")
			case k == "schemas" && at == "#/components":
				for name, schema := range m[k].(map[string]any) {
					n += walkSchemas(t, schema, at+"/schemas/"+name, "component")
				}
			default:
				n += walkSchemas(t, m[k], at+"/"+pointerEscape(k), "")
			}
		}
		return n
	}
	if !isObject {
		t.Errorf("%s: schema is %s, not an object", at, jsonTypeOf(v))
		return 0
	}
	_, isRef := m["$ref"]
	typ, typed := m["type"]
	switch {
	case !isRef && !typed:
		t.Errorf("%s: schema without a type", at)
	case kind != "component" && slices.Contains(schemaTypes(typ), "object"):
		t.Errorf("%s: inline object schema; name it under #/components/schemas", at)
	}
	for k, sub := range m {
		switch k {
		case "$ref", "type", "description", "format", "const", "enum", "pattern",
			"minLength", "maxLength", "minimum", "maximum", "default", "maxItems", "minProperties",
			"required", "x-go-type", "x-go-type-skip-optional-pointer":
		case "properties":
			for name, prop := range sub.(map[string]any) {
				n += walkSchemas(t, prop, at+"/properties/"+pointerEscape(name), "inline")
			}
		case "additionalProperties", "items", "propertyNames":
			// additionalProperties false is no schema but a rule: no other members.
			if sub != false && !(k == "items" && anyItems(m)) {
				n += walkSchemas(t, sub, at+"/"+k, "inline")
			}
		default:
			t.Errorf("%s: keyword %q not walked by this test", at, k)
		}
	}
	return n + 1
}

// anyItems reports whether s admits every JSON type and its items are {}: JSONValue's
// items, since as a $ref to itself openapi-typescript writes a type TypeScript refuses
// (TS2502), and kin-openapi (oapi-codegen) cannot read items: true.
func anyItems(s map[string]any) bool {
	items, ok := s["items"].(map[string]any)
	types := schemaTypes(s["type"])
	return ok && len(items) == 0 && !slices.ContainsFunc([]string{"string", "number", "boolean", "null", "array", "object"},
		func(typ string) bool { return !slices.Contains(types, typ) })
}

// pointerEscape writes a member name as a JSON Pointer (RFC 6901) token, as linters do.
func pointerEscape(name string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(name)
}

func schemaTypes(typ any) []string {
	if name, ok := typ.(string); ok {
		return []string{name}
	}
	list, _ := typ.([]any)
	var names []string
	for _, name := range list {
		names = append(names, name.(string))
	}
	return names
}

// TestOpenAPIWhiteSpace: the pattern of a title and a label, "not only white space", is
// the service's rule exactly: a rune outside Go's unicode.IsSpace. \S would not do
// (ECMAScript's \s adds U+FEFF and lacks U+0085, Python's adds U+001C-U+001F, Go's is
// ASCII), so each engine that reads the pattern is asked for the runes it refuses: Go's,
// ECMAScript's (JSON Schema's dialect) by node, Python's re (Schemathesis's) by python3.
func TestOpenAPIWhiteSpace(t *testing.T) {
	schemas := jsonAt(loadOpenAPI(t), "components", "schemas")
	pattern, _ := jsonAt(schemas, "FormInput", "properties", "title", "pattern").(string)
	if label := jsonAt(schemas, "FieldInput", "properties", "label", "pattern"); label != pattern {
		t.Fatalf("label pattern %q, title pattern %q: one rule, one pattern", label, pattern)
	}
	var want, goRefuses []int // the runes a blank title or label is made of; Go's regexp refuses
	re := regexp.MustCompile(goPattern(pattern))
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if unicode.IsSpace(r) {
			want = append(want, int(r))
		}
		if !utf16.IsSurrogate(r) && !re.MatchString(string(r)) {
			goRefuses = append(goRefuses, int(r))
		}
	}
	if !slices.Equal(goRefuses, want) {
		t.Errorf("Go's regexp refuses one-character strings %U, unicode.IsSpace is %U", goRefuses, want)
	}
	for _, e := range []struct{ name, command, flag, script string }{
		{"ECMAScript", "node", "-e", ecmaRefuses},
		{"Python", "python3", "-c", pythonRefuses},
	} {
		t.Run(e.name, func(t *testing.T) {
			if _, err := exec.LookPath(e.command); err != nil {
				notInstalled(t, "%s not installed: %v", e.command, err)
			}
			out, err := exec.Command(e.command, e.flag, e.script, pattern).Output()
			var refused map[string][]int
			if err != nil || json.Unmarshal(out, &refused) != nil || len(refused) == 0 {
				t.Fatalf("%s: %v: %.200s", e.command, err, out)
			}
			for _, flags := range slices.Sorted(maps.Keys(refused)) {
				if !slices.Equal(refused[flags], want) {
					t.Errorf("%s %s refuses one-character strings %U, unicode.IsSpace is %U",
						e.name, flags, refused[flags], want)
				}
			}
		})
	}
}

// ecmaRefuses prints the code points (surrogates aside) that make a one-character string
// the pattern in argv does not match, with and without the u flag.
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

// TestOpenAPIRepliesConform: the document's routes are the served ones, and replies of
// every kind, success and error, of every route have a documented status and conform.
func TestOpenAPIRepliesConform(t *testing.T) {
	doc := loadOpenAPI(t)
	e := newTestEnv(t)
	var documented []string
	for path, item := range jsonAt(doc, "paths").(map[string]any) {
		for method := range item.(map[string]any) {
			if method != "parameters" {
				documented = append(documented, strings.ToUpper(method)+" "+path)
			}
		}
	}
	slices.Sort(documented)
	if served := slices.Sorted(maps.Keys(e.srv.routes())); !slices.Equal(documented, served) {
		t.Errorf("documented:\n%s\nserved:\n%s", strings.Join(documented, "\n"), strings.Join(served, "\n"))
	}
	status, raw := e.do("GET", "/api/openapi.json", nil)
	if status != 200 || !bytes.Equal(raw, openAPI) {
		t.Errorf("GET /api/openapi.json = %d, %d bytes; want 200 and docs/openapi.json", status, len(raw))
	}
	f := e.createForm(fullForm())
	field := itoa(f.Categories[0].Fields[0].ID)
	id := itoa(f.ID)
	responseID := itoa(e.submit(f.ID, map[string]any{field: "x"}))
	doomed := itoa(e.createForm(map[string]any{"title": "to delete"}).ID)
	locked := newTestEnv(t, func(c *config) { c.APIToken = "t" })
	big := `{"title": "` + strings.Repeat("x", 1<<20) + `"}`

	for _, c := range []struct {
		env                   *testEnv
		method, path, docPath string
		body                  string
		status                int
	}{
		{e, "GET", "/healthz", "/healthz", "", 200},
		{e, "GET", "/api/openapi.json", "/api/openapi.json", "", 200},
		{e, "GET", "/api/forms", "/api/forms", "", 200},
		{e, "POST", "/api/forms", "/api/forms", `{"title": "n", "categories": [{"fields": [{"label": "l", "type": "date"}]}]}`, 201},
		{e, "POST", "/api/forms", "/api/forms", `{}`, 400},
		{e, "POST", "/api/forms", "/api/forms", `{"title": 5}`, 400},
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
	} {
		checkReply(t, doc, c.env, c.method, c.path, c.docPath, c.body, c.status)
	}
	// Every route refuses a body that is not JSON, is too large or is not application/json,
	// and, without a token, a Host it does not know.
	for route := range e.srv.routes() {
		method, pattern, _ := strings.Cut(route, " ")
		path := strings.NewReplacer("{id}", id, "{responseId}", responseID, "{key}", "k").Replace(pattern)
		checkReply(t, doc, e, method, path, pattern, `{bad`, 400)
		checkReply(t, doc, e, method, path, pattern, big, 413)
		checkReply(t, doc, e, method, path, pattern, `{}`, 415, "Content-Type", "text/plain")
		if strings.HasPrefix(pattern, "/api") {
			checkReply(t, doc, e, method, path, pattern, "", 403, "Host", "attacker.example")
		}
	}
	today := startOfDay(time.Now())
	if err := errors.Join(e.store.SaveTrackerSummary(t.Context(), today, "text"),
		e.store.AddEmailSummary(t.Context(), today, "mail")); err != nil {
		t.Fatal(err)
	}
	checkReply(t, doc, e, "GET", "/api/tracker-summary/today", "/api/tracker-summary/today", "", 200)
	checkReply(t, doc, e, "GET", "/api/tracker-summaries?page=1&limit=5", "/api/tracker-summaries", "", 200)
	checkReply(t, doc, e, "GET", "/api/email-summaries?page=x", "/api/email-summaries", "", 200)
}

// checkReply sends one request and checks that its status is wantStatus and documented
// for the operation of docPath, with a reply of the documented type and schema. An
// accepted JSON body must conform to the documented requestBody, and one refused with 400
// or 500 must not: the document promises neither more nor less than the service does.
func checkReply(t *testing.T, doc any, e *testEnv, method, path, docPath, body string, wantStatus int,
	header ...string) {
	t.Helper()
	req := apiRequest(method, path, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	req.Host = cmp.Or(req.Header.Get("Host"), req.Host)
	w := httptest.NewRecorder()
	e.srv.ServeHTTP(w, req)
	res, raw := w.Result(), w.Body.Bytes()
	where := method + " " + path
	if res.StatusCode != wantStatus {
		t.Errorf("%s = %d %s, want %d", where, res.StatusCode, raw, wantStatus)
		return
	}
	op := jsonAt(doc, "paths", docPath, strings.ToLower(method))
	if op == nil && res.StatusCode == http.StatusMethodNotAllowed {
		op = jsonAt(doc, "paths", docPath, "get") // a 405 is documented on the path's operations
	}
	if jsonAt(op, "responses") == nil {
		t.Errorf("%s: %s %s is not documented", where, method, docPath)
		return
	}
	checkPathParameters(t, doc, req, docPath, res.StatusCode, raw)
	var sent any
	schema := jsonAt(op, "requestBody", "content", "application/json", "schema")
	isJSON := req.Header.Get("Content-Type") == "application/json"
	if schema != nil && isJSON && json.Unmarshal([]byte(body), &sent) == nil {
		err := conforms(doc, schema, sent, "request")
		switch {
		case res.StatusCode < 300 && err != nil:
			t.Errorf("%s: accepted, but the document refuses the body: %v", where, err)
		case (res.StatusCode == 400 || res.StatusCode == 500) && err == nil:
			t.Errorf("%s: refused with %d, but the document accepts the body %.200s", where, res.StatusCode, body)
		}
	}
	reply := resolved(doc, jsonAt(op, "responses", strconv.Itoa(res.StatusCode)))
	if reply == nil {
		t.Errorf("%s: status %d is not documented for %s %s", where, res.StatusCode, method, docPath)
		return
	}
	mediaType, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	content, ok := jsonAt(reply, "content").(map[string]any)[mediaType]
	if !ok {
		t.Errorf("%s: reply of type %q, documented: %v", where, mediaType, jsonAt(reply, "content"))
		return
	}
	if mediaType != "application/json" {
		return
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Errorf("%s: %v", where, err)
	} else if err := conforms(doc, jsonAt(content, "schema"), v, "body"); err != nil {
		t.Errorf("%s: %s: %v", where, raw[:min(len(raw), 300)], err)
	}
}

// pathParameterErrors are the 400s that refuse a path parameter rather than a body.
var pathParameterErrors = []string{"Invalid form ID", "Invalid response ID", "Invalid setting key", "Setting key is too long"}

// checkPathParameters checks the path parameters of a request as checkReply checks a
// body: a value the document accepts is not refused with the parameter's 400, and one it
// refuses is refused, unless an earlier check replies (401, 403, 413, 415). An integer is
// written as a client writes it: +1, 01 and 1.0 are none.
func checkPathParameters(t *testing.T, doc any, req *http.Request, docPath string, status int, raw []byte) {
	t.Helper()
	params, _ := jsonAt(doc, "paths", docPath, "parameters").([]any)
	segments := strings.Split(req.URL.Path, "/")
	for i, seg := range strings.Split(docPath, "/") {
		name, ok := strings.CutPrefix(seg, "{")
		if !ok {
			continue
		}
		name = strings.TrimSuffix(name, "}")
		var schema any
		for _, p := range params {
			if p = resolved(doc, p); jsonAt(p, "name") == name {
				schema = jsonAt(p, "schema")
			}
		}
		if schema == nil {
			t.Errorf("%s: path parameter %s is not documented", docPath, name)
			continue
		}
		value := segments[i]
		err := conforms(doc, schema, value, name)
		if jsonAt(schema, "type") == "integer" {
			n, perr := strconv.ParseInt(value, 10, 64)
			if err = fmt.Errorf("%q is no integer", value); perr == nil && strconv.FormatInt(n, 10) == value {
				err = conforms(doc, schema, float64(n), name)
			}
		}
		var reply struct{ Error string }
		json.Unmarshal(raw, &reply)
		switch where := req.Method + " " + req.URL.RequestURI(); {
		case err == nil && status == 400 && slices.Contains(pathParameterErrors, reply.Error):
			t.Errorf("%s: refused with %s, but the document accepts %s %q", where, bytes.TrimSpace(raw), name, value)
		case err != nil && !slices.Contains([]int{400, 401, 403, 413, 415}, status):
			t.Errorf("%s: answered %d, but the document refuses the parameter: %v", where, status, err)
		}
	}
}

// conforms checks v against the part of JSON Schema 2020-12 that docs/openapi.json uses.
// A keyword it does not know fails the check: the document cannot outgrow its test.
func conforms(doc, schema, v any, at string) error {
	s, ok := schema.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: schema is %s, not an object", at, jsonTypeOf(schema))
	}
	str, isString := v.(string)
	n, isNumber := v.(float64)
	arr, _ := v.([]any)
	obj, _ := v.(map[string]any)
	props, _ := s["properties"].(map[string]any)
	var err error
	for _, kw := range slices.Sorted(maps.Keys(s)) {
		rule := s[kw]
		bound, _ := rule.(float64)
		switch kw {
		case "description", "format", "default", "x-go-type", "x-go-type-skip-optional-pointer":
			// Annotations: x-go-type names the Go type oapi-codegen generates.
		case "$ref":
			err = conforms(doc, resolved(doc, s), v, at)
		case "type":
			types, typ := schemaTypes(rule), jsonTypeOf(v)
			if !slices.Contains(types, typ) && !(typ == "integer" && slices.Contains(types, "number")) {
				err = fmt.Errorf("%s: %s, want %v", at, typ, types)
			}
		case "const", "enum":
			allowed, _ := rule.([]any)
			if kw == "const" {
				allowed = []any{rule}
			}
			if !slices.ContainsFunc(allowed, func(a any) bool { return reflect.DeepEqual(a, v) }) {
				err = fmt.Errorf("%s: %v, want one of %v", at, v, allowed)
			}
		case "pattern":
			if isString && !regexp.MustCompile(goPattern(rule.(string))).MatchString(str) {
				err = fmt.Errorf("%s: %.50q does not match %s", at, str, rule)
			}
		case "minLength", "maxLength", "minimum", "maximum", "maxItems", "minProperties":
			var size float64
			switch {
			case isString && strings.HasSuffix(kw, "Length"):
				size = float64(utf8.RuneCountInString(str))
			case isNumber && strings.HasSuffix(kw, "imum"):
				size = n
			case arr != nil && kw == "maxItems":
				size = float64(len(arr))
			case obj != nil && kw == "minProperties":
				size = float64(len(obj))
			default:
				continue // the keyword is about another type
			}
			if strings.HasPrefix(kw, "min") && size < bound || strings.HasPrefix(kw, "max") && size > bound {
				err = fmt.Errorf("%s: %.50v, %s %v", at, v, kw, bound)
			}
		case "items":
			for i, item := range arr {
				if err = conforms(doc, rule, item, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					break
				}
			}
		case "properties":
			for _, name := range slices.Sorted(maps.Keys(obj)) {
				if sub, declared := props[name]; declared && err == nil {
					err = conforms(doc, sub, obj[name], at+"."+name)
				}
			}
		case "required":
			for _, name := range rule.([]any) {
				if _, ok := obj[name.(string)]; obj != nil && !ok {
					err = fmt.Errorf("%s: member %q missing", at, name)
				}
			}
		case "additionalProperties", "propertyNames":
			for _, name := range slices.Sorted(maps.Keys(obj)) {
				_, declared := props[name]
				switch {
				case err != nil || kw == "additionalProperties" && declared:
				case kw == "propertyNames":
					err = conforms(doc, rule, name, at+" key "+name)
				case rule == false:
					err = fmt.Errorf("%s: member %q not in the schema", at, name)
				default:
					err = conforms(doc, rule, obj[name], at+"."+name)
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

// goPattern writes an ECMA-262 pattern in Go's syntax: \uXXXX is \x{XXXX}, the one
// difference the document's patterns meet (TestOpenAPIWhiteSpace checks its class).
func goPattern(pattern string) string {
	return regexp.MustCompile(`\\u([0-9A-Fa-f]{4})`).ReplaceAllString(pattern, `\x{$1}`)
}

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
