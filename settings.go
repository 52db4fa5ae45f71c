package main

import (
	"fmt"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"
)

const maxSettingKeyBytes = 256 // a 10 KB path segment is a clear 400, not a stored row

// setting is the reply of both setting endpoints.
type setting struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// checkSettingKey refuses keys nobody could mean: too long, with control characters (a
// %00 in the path) or invalid UTF-8.
func checkSettingKey(key string) error {
	switch {
	case len(key) > maxSettingKeyBytes:
		return invalid("Setting key is too long")
	case !utf8.ValidString(key) || strings.IndexFunc(key, unicode.IsControl) >= 0:
		return invalid("Invalid setting key")
	}
	return nil
}

func (s *server) handleGetSetting(w http.ResponseWriter, r *http.Request) error {
	key := r.PathValue("key")
	if err := checkSettingKey(key); err != nil {
		return err
	}
	value, err := s.store.Setting(r.Context(), key)
	if err != nil {
		return during(fmt.Sprintf("fetch setting '%s'", key), err)
	}
	return s.writeJSON(w, r, http.StatusOK, setting{key, value})
}

func (s *server) handlePutSetting(w http.ResponseWriter, r *http.Request) error {
	key := r.PathValue("key")
	if err := checkSettingKey(key); err != nil {
		return err
	}
	in, err := readJSON[jsonObject](r)
	if err != nil {
		return err
	}
	// An absent value is a 400; null arrives as the raw text null and is stored as "null".
	if in.members["value"] == nil {
		return invalid("Setting value is required in the request body")
	}
	value, err := jsText(in.members["value"])
	if err != nil {
		return errInvalidJSON
	}
	if err := s.store.PutSetting(r.Context(), key, value); err != nil {
		return during(fmt.Sprintf("update setting '%s'", key), err)
	}
	return s.writeJSON(w, r, http.StatusOK, setting{key, value})
}
