package main

import (
	"net/url"
	"strings"
	"testing"
)

func TestSettings(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	cases := []struct{ key, body, want string }{
		{"theme", `{"value": "dark"}`, `{"key":"theme","value":"dark"}`},
		{"theme", `{"value": "light"}`, `{"key":"theme","value":"light"}`}, // overwrite
		{"n", `{"value": 1.50}`, `{"key":"n","value":"1.5"}`},
		{"big", `{"value": 1e21}`, `{"key":"big","value":"1e+21"}`},
		{"flag", `{"value": false}`, `{"key":"flag","value":"false"}`},
		{"nil", `{"value": null}`, `{"key":"nil","value":"null"}`},
		{"list", `{"value": [1, null, "a"]}`, `{"key":"list","value":"1,,a"}`},
		{"obj", `{"value": {"a": 1}}`, `{"key":"obj","value":"[object Object]"}`},
		{"'; DROP TABLE settings; --", `{"value": "x'\"--"}`, `{"key":"'; DROP TABLE settings; --","value":"x'\"--"}`},
		{"Grüße ключ", `{"value": "ü"}`, `{"key":"Grüße ключ","value":"ü"}`},
		{"a/b", `{"value": "slash"}`, `{"key":"a/b","value":"slash"}`},
	}
	for _, tc := range cases {
		path := "/api/settings/" + url.PathEscape(tc.key)
		e.wantReply("PUT", path, tc.body, 200, tc.want)
		e.wantReply("GET", path, nil, 200, tc.want)
	}
	e.wantReply("GET", "/api/settings/missing", nil, 200, `{"key":"missing","value":""}`)

	before := e.snapshot()
	e.wantError("PUT", "/api/settings/theme", `{}`, 400, "Setting value is required in the request body")
	e.wantError("PUT", "/api/settings/theme", ``, 400, "Setting value is required in the request body")
	e.wantError("PUT", "/api/settings/theme", `{"value": `, 400, "Invalid JSON body")
	e.wantError("PUT", "/api/settings/theme", `["x"]`, 400, "Setting value is required in the request body")
	e.wantError("PUT", "/api/settings/theme", `5`, 400, "Invalid JSON body: expected an object")
	long := strings.Repeat("k", 10*1024)
	e.wantError("PUT", "/api/settings/"+long, `{"value": "x"}`, 400, "Setting key is too long")
	e.wantError("GET", "/api/settings/"+long, nil, 400, "Setting key is too long")
	// The key limit, in literals: 256 bytes are a key, 257 are not.
	e.wantError("PUT", "/api/settings/"+strings.Repeat("k", 257), `{"value": "x"}`, 400, "Setting key is too long")
	if e.snapshot() != before {
		t.Errorf("rejected setting writes changed the database")
	}
	key := strings.Repeat("k", 256)
	e.wantReply("PUT", "/api/settings/"+key, `{"value": "x"}`, 200, `{"key":"`+key+`","value":"x"}`)
}
