// Package wiretest holds helpers for contract tests that check what the
// genai SDK puts on the wire, shared by the Gemini LLM, Live and speech
// adapters' tests.
package wiretest

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// At walks decoded JSON by a dotted path such as "contents.0.parts.0.text".
func At(v any, path string) any {
	for _, key := range strings.Split(path, ".") {
		switch node := v.(type) {
		case map[string]any:
			v = node[key]
		case []any:
			i, err := strconv.Atoi(key)
			if err != nil || i < 0 || i >= len(node) {
				return nil
			}
			v = node[i]
		default:
			return nil
		}
	}
	return v
}

// Expect reports an error unless the value at path equals want.
func Expect(t *testing.T, msg map[string]any, path string, want any) {
	t.Helper()
	if got := At(msg, path); !reflect.DeepEqual(got, want) {
		t.Errorf("message %s = %#v, want %#v", path, got, want)
	}
}

// WriteJSON answers with a JSON body.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
