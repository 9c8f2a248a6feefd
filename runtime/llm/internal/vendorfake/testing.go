package vendorfake

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// Send sends req and returns the status, the body and the headers of the
// answer.
func Send(t testing.TB, req *http.Request) (int, []byte, http.Header) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, raw, resp.Header
}

// Do sends req and returns the status and the answer, which must be a JSON
// object.
func Do(t testing.TB, req *http.Request) (int, map[string]any) {
	t.Helper()
	status, raw, _ := Send(t, req)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("answer is not JSON: %v\n%s", err, raw)
	}
	return status, out
}
