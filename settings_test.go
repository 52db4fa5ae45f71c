package main

import (
	"net/url"
	"strings"
	"testing"
)

func TestSettings(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	cases := []struct {
		key, body, want string
	}{
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
		status, raw := e.do("PUT", path, tc.body)
		if status != 200 || strings.TrimSpace(string(raw)) != tc.want {
			t.Errorf("PUT %s %s = %d %s, want 200 %s", path, tc.body, status, raw, tc.want)
		}
		status, raw = e.do("GET", path, nil)
		if status != 200 || strings.TrimSpace(string(raw)) != tc.want {
			t.Errorf("GET %s = %d %s, want 200 %s", path, status, raw, tc.want)
		}
	}

	status, raw := e.do("GET", "/api/settings/missing", nil)
	if want := `{"key":"missing","value":""}`; status != 200 || strings.TrimSpace(string(raw)) != want {
		t.Errorf("GET missing = %d %s, want 200 %s", status, raw, want)
	}

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
	if status, _ := e.do("PUT", "/api/settings/"+strings.Repeat("k", 256), `{"value": "x"}`); status != 200 {
		t.Errorf("a 256-byte key = %d, want 200", status)
	}
}
