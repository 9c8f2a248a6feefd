package vendorfake

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/batonhq/baton/runtime/llm/llmtest"
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

// RequireValid fails t unless the server accepted every request it has
// received, and returns them.
func (s *Server[R, P]) RequireValid(t testing.TB) []Received[R] {
	t.Helper()
	got := s.Requests()
	for _, r := range got {
		if r.Err != nil {
			t.Fatalf("request %d refused: %v\n%s", r.Index, r.Err, r.Body)
		}
	}
	return got
}

// RequireRefused fails t unless the server refused every request it has
// received, and recorded none as valid.
func (s *Server[R, P]) RequireRefused(t testing.TB) {
	t.Helper()
	for _, r := range s.Requests() {
		if r.Err == nil || r.Request != nil {
			t.Errorf("request %d recorded as valid", r.Index)
		}
	}
}

// Neutral lists the requests received so far in llmtest's terms, view
// reading each valid one the way the model does.
func (s *Server[R, P]) Neutral(view func(*R) llmtest.View) []llmtest.Received {
	var out []llmtest.Received
	for _, r := range s.Requests() {
		rec := llmtest.Received{Body: r.Body, Err: r.Err}
		if r.Request != nil {
			rec.View = view(r.Request)
		}
		out = append(out, rec)
	}
	return out
}
