package main

import (
	"fmt"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"
)

// settingKey is r's key, refused when nobody could mean it: over 256 bytes (a clear 400,
// not a stored row), with control characters (a %00 in the path) or invalid UTF-8.
func settingKey(r *http.Request) (string, error) {
	key := r.PathValue("key")
	if len(key) > 256 {
		return "", invalid("Setting key is too long")
	}
	if !utf8.ValidString(key) || strings.ContainsFunc(key, unicode.IsControl) {
		return "", invalid("Invalid setting key")
	}
	return key, nil
}

func (s *server) handleGetSetting(w http.ResponseWriter, r *http.Request) error {
	key, err := settingKey(r)
	if err != nil {
		return err
	}
	value, err := s.store.Setting(r.Context(), key)
	if err != nil {
		return during(fmt.Sprintf("fetch setting '%s'", key), err)
	}
	return writeJSON(w, http.StatusOK, map[string]string{"key": key, "value": value})
}

func (s *server) handlePutSetting(w http.ResponseWriter, r *http.Request) error {
	key, err := settingKey(r)
	if err != nil {
		return err
	}
	in, err := bodyObject(r)
	if err != nil {
		return err
	}
	raw, ok := in.members["value"] // null is there: stored as "null"
	if !ok {
		return invalid("Setting value is required in the request body")
	}
	value := jsText(raw)
	if err := s.store.PutSetting(r.Context(), key, value); err != nil {
		return during(fmt.Sprintf("update setting '%s'", key), err)
	}
	// The answer is about as long as the body, whose room it keeps (readBody).
	return writeJSON(w, http.StatusOK, map[string]string{"key": key, "value": value})
}
