package main

import (
	"encoding/json"
	"math"
	"testing"
)

// TestJSNumber compares with what node prints for String(x).
func TestJSNumber(t *testing.T) {
	cases := []struct {
		in   float64
		want string
	}{
		{0, "0"}, {math.Copysign(0, -1), "0"}, {1, "1"}, {-1, "-1"}, {1.5, "1.5"}, {0.1, "0.1"},
		{0.30000000000000004, "0.30000000000000004"}, {123456789012, "123456789012"},
		{1e20, "100000000000000000000"}, {1e21, "1e+21"}, {1.5e21, "1.5e+21"}, {123e20, "1.23e+22"},
		{1e-6, "0.000001"}, {1.5e-6, "0.0000015"}, {1e-7, "1e-7"}, {1.25e-7, "1.25e-7"},
		{-2.5e-8, "-2.5e-8"}, {math.MaxFloat64, "1.7976931348623157e+308"}, {5e-324, "5e-324"},
		{9007199254740993, "9007199254740992"}, {math.Inf(1), "Infinity"}, {math.Inf(-1), "-Infinity"},
		{100, "100"}, {0.000123, "0.000123"}, {12345.6789, "12345.6789"},
	}
	for _, tc := range cases {
		if got := jsNumber(tc.in); got != tc.want {
			t.Errorf("jsNumber(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestJSStringOverflow(t *testing.T) {
	// JSON numbers beyond float64 become Infinity in JavaScript.
	got, err := jsText(json.RawMessage(`1e400`))
	if err != nil || got != "Infinity" {
		t.Errorf("String(1e400) = %q, %v; want Infinity", got, err)
	}
	got, err = jsText(json.RawMessage(`[[], [[]], {"a": []}, true]`))
	if err != nil || got != ",,[object Object],true" {
		t.Errorf("nested array = %q, %v", got, err)
	}
}

// FuzzAppendJSONString: the hand-written string encoder writes what encoding/json writes.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", `"quoted" \ back`, "<a href='x'>&</a>", "\u2028\u2029", "\x00\x1f\x7f", "\xff\xfe bad", "Grüße 🙂", "\t\n\r\b\f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	})
}
