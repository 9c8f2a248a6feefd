package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/batonhq/baton/runtime/llm"
)

func TestCloseObjects(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"not an object schema", `{"type":"string"}`, `{"type":"string"}`},
		{"boolean subschema", `{"type":"array","items":true}`, `{"type":"array","items":true}`},
		{"keeps key order and spacing of untouched parts", `{"type":"object", "properties":{"b": {"type":"string"},"a":{"type":"number"}}}`, `{"type":"object","properties":{"b": {"type":"string"},"a":{"type":"number"}},"additionalProperties":false}`},
		{"explicit value is the author's", `{"type":"object","additionalProperties":{"type":"string"}}`, `{"type":"object","additionalProperties":{"type":"string"}}`},
		{"tuple items", `{"type":"array","items":[{"type":"object"},{"type":"string"}]}`, `{"type":"array","items":[{"type":"object","additionalProperties":false},{"type":"string"}]}`},
		{"definitions and not", `{"definitions":{"x":{"type":"object"}},"not":{"type":"object","properties":{}}}`, `{"definitions":{"x":{"type":"object","additionalProperties":false}},"not":{"type":"object","properties":{},"additionalProperties":false}}`},
		{"escaped key", `{"properties":{"a\"b":{"type":"object"}}}`, `{"properties":{"a\"b":{"type":"object","additionalProperties":false}}}`},
		// Hot Seat's grade and Boardroom's question lengths: bounds the API
		// refuses stay off the wire (the engine checks the answer).
		{"unsupported bounds", `{"type":"object","properties":{"grade":{"type":"integer","minimum":0,"maximum":100},"q":{"type":"string","minLength":10,"maxLength":300},"l":{"type":"array","minItems":1,"maxItems":3},"m":{"type":"array","minItems":2}},"required":["grade"]}`,
			`{"type":"object","properties":{"grade":{"type":"integer"},"q":{"type":"string"},"l":{"type":"array","minItems":1},"m":{"type":"array"}},"required":["grade"],"additionalProperties":false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := closeObjects([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("closeObjects(%s) =\n %s\nwant\n %s", tt.in, got, tt.want)
			}
		})
	}
	if _, err := closeObjects([]byte(`{"properties":{"a":{"type":}}}`)); err == nil {
		t.Error("closeObjects accepted malformed JSON")
	}
}

func TestFromBodyEdges(t *testing.T) {
	tests := []struct {
		name, body string
		want       llm.Response
	}{
		{"empty content", `{"type":"message","content":[],"stop_reason":"end_turn"}`, llm.Response{FinishReason: "end_turn"}},
		{"server tool blocks skipped", `{"content":[{"type":"server_tool_use","id":"s","name":"web_search","input":{}},{"type":"text","text":"a"},{"type":"redacted_thinking","data":"x"}],"stop_reason":"end_turn"}`, llm.Response{Text: "a", FinishReason: "end_turn"}},
		{"null stop reason", `{"content":[{"type":"text","text":"a"}],"stop_reason":null}`, llm.Response{Text: "a"}},
		{"args compacted", `{"content":[{"type":"tool_use","id":"t","name":"f","input":{ "a" : [1, 2] }}],"stop_reason":"tool_use"}`, llm.Response{ToolCalls: []llm.ToolCall{{ID: "t", Name: "f", Args: json.RawMessage(`{"a":[1,2]}`)}}, FinishReason: "tool_use"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := fromBody([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if got.Text != tt.want.Text || got.FinishReason != tt.want.FinishReason || len(got.ToolCalls) != len(tt.want.ToolCalls) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i, c := range got.ToolCalls {
				w := tt.want.ToolCalls[i]
				if c.ID != w.ID || c.Name != w.Name || string(c.Args) != string(w.Args) {
					t.Errorf("call %d = %+v, want %+v", i, c, w)
				}
			}
		})
	}
	if _, err := fromBody([]byte(`{"type":"error","error":{"type":"overloaded_error"}}`)); llm.Classify(err).Kind != llm.KindServer {
		t.Errorf("an error body with 200: err = %v, want server", err)
	}
}

type panickingTransport struct{}

func (panickingTransport) RoundTrip(*http.Request) (*http.Response, error) { panic("boom") }

// TestSDKPanicIsRecovered: a panic under the SDK's call returns an error
// instead of crashing the host, and is not retried.
func TestSDKPanicIsRecovered(t *testing.T) {
	m, err := New(context.Background(), Config{APIKey: "k", BaseURL: "http://127.0.0.1:1", HTTPClient: &http.Client{Transport: panickingTransport{}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Generate(context.Background(), hi)
	e := llm.Classify(err)
	if !errors.Is(err, ErrSDKPanic) || e.Kind != llm.KindUnknown || e.Retryable || !strings.Contains(e.Message, "boom") {
		t.Fatalf("err = %v, want an unknown, non-retryable error wrapping ErrSDKPanic", err)
	}
}
