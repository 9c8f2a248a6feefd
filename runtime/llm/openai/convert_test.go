package openai

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/batonhq/baton/runtime/llm"
)

func TestToolContent(t *testing.T) {
	tests := []struct {
		name    string
		in      llm.ToolResult
		want    string
		wantErr bool
	}{
		{"object as is, compacted", llm.ToolResult{Content: json.RawMessage(`{ "a": 1 }`)}, `{"a":1}`, false},
		{"string as is", llm.ToolResult{Content: json.RawMessage(`"done"`)}, `"done"`, false},
		{"array as is", llm.ToolResult{Content: json.RawMessage(`[1, 2]`)}, `[1,2]`, false},
		{"empty content", llm.ToolResult{}, `null`, false},
		{"error string is wrapped once", llm.ToolResult{Content: json.RawMessage(`"boom"`), IsError: true}, `{"error":"boom"}`, false},
		{"error object is wrapped once", llm.ToolResult{Content: json.RawMessage(`{"code":7}`), IsError: true}, `{"error":{"code":7}}`, false},
		{"refusal is sent as is", llm.ToolResult{Content: json.RawMessage(`{"error":"tool x is not available now"}`), IsError: true}, `{"error":"tool x is not available now"}`, false},
		{"error object with an error key is sent as is", llm.ToolResult{Content: json.RawMessage(`{"error":{"code":7},"hint":"retry"}`), IsError: true}, `{"error":{"code":7},"hint":"retry"}`, false},
		{"empty error", llm.ToolResult{IsError: true}, `{"error":null}`, false},
		{"invalid JSON", llm.ToolResult{Content: json.RawMessage(`{oops`)}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := toolContent(tt.in)
			if tt.wantErr != (err != nil) {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestDecimal(t *testing.T) {
	for f, want := range map[float32]string{0: "0", 0.1: "0.1", 0.25: "0.25", 0.7: "0.7", 1: "1", 1.3: "1.3", 2: "2"} {
		if got, _ := json.Marshal(decimal(f)); string(got) != want {
			t.Errorf("decimal(%v) marshals as %s, want %s", f, got, want)
		}
	}
}

// TestInvalidRequestsStayLocal: everything the adapter cannot express is a
// bad_request before any traffic (toParams makes none).
func TestInvalidRequestsStayLocal(t *testing.T) {
	user := llm.Message{Role: llm.RoleUser, Text: "hi"}
	nan := float32(math.NaN())
	tests := []struct {
		name string
		req  llm.Request
		want string
	}{
		{"unknown role", llm.Request{Messages: []llm.Message{{Role: "narrator", Text: "x"}}}, `unknown role "narrator"`},
		{"nothing to send", llm.Request{Messages: []llm.Message{{Role: llm.RoleUser}, {Role: llm.RoleModel}}}, "no message has anything to send"},
		{"tool message without result", llm.Request{Messages: []llm.Message{user, {Role: llm.RoleTool}}}, "without a tool result"},
		{"result without call ID", llm.Request{Messages: []llm.Message{user, {Role: llm.RoleTool, ToolResult: &llm.ToolResult{Name: "f", Content: json.RawMessage(`{}`)}}}}, "has no call ID"},
		{"result that is not JSON", llm.Request{Messages: []llm.Message{user, {Role: llm.RoleTool, ToolResult: &llm.ToolResult{CallID: "c", Name: "f", Content: json.RawMessage(`nope`)}}}}, "content is not JSON"},
		{"call without ID", llm.Request{Messages: []llm.Message{user, {Role: llm.RoleModel, ToolCalls: []llm.ToolCall{{Name: "f"}}}}}, `tool call "f" has no ID`},
		{"call without name", llm.Request{Messages: []llm.Message{user, {Role: llm.RoleModel, ToolCalls: []llm.ToolCall{{ID: "c"}}}}}, "has no name"},
		{"call args not JSON", llm.Request{Messages: []llm.Message{user, {Role: llm.RoleModel, ToolCalls: []llm.ToolCall{{ID: "c", Name: "f", Args: json.RawMessage(`{"a":`)}}}}}, "args are not a JSON object"},
		{"call args not an object", llm.Request{Messages: []llm.Message{user, {Role: llm.RoleModel, ToolCalls: []llm.ToolCall{{ID: "c", Name: "f", Args: json.RawMessage(`[1]`)}}}}}, "args are not a JSON object"},
		{"unsupported file type", llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Blobs: []llm.Blob{{Name: "a.zip", MIME: "application/zip", Data: []byte("PK")}}}}}, "cannot take application/zip files"},
		{"no MIME type", llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Blobs: []llm.Blob{{Name: "a", Data: []byte("x")}}}}}, "invalid MIME type"},
		{"text file that is not UTF-8", llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Blobs: []llm.Blob{{Name: "a.txt", MIME: "text/plain", Data: []byte{0xff, 0xfe}}}}}}, "must be UTF-8 text"},
		{"tool without name", llm.Request{Messages: []llm.Message{user}, Tools: []llm.ToolDecl{{}}}, "without a name"},
		{"tool parameters not an object", llm.Request{Messages: []llm.Message{user}, Tools: []llm.ToolDecl{{Name: "f", Parameters: json.RawMessage(`[]`)}}}, "parameters are not a JSON object"},
		{"schema not an object", llm.Request{Messages: []llm.Message{user}, ResponseSchema: json.RawMessage(`"object"`)}, "response schema is not a JSON object"},
		{"temperature not a number", llm.Request{Messages: []llm.Message{user}, Temperature: &nan}, "temperature"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := toParams("m", tt.req)
			e := llm.Classify(err)
			if e == nil || e.Kind != llm.KindBadRequest || e.Retryable || !strings.Contains(e.Message, tt.want) || !strings.HasPrefix(e.Message, "openai: ") {
				t.Fatalf("err = %v, want a non-retryable bad request about %q", err, tt.want)
			}
		})
	}
}

func TestToolParamsKeepTheSchema(t *testing.T) {
	schema := `{"type":"object","properties":{"n":{"type":"integer","maximum":12345678901234567890}},"additionalProperties":false}`
	p, err := toParams("m", llm.Request{
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}},
		Tools:    []llm.ToolDecl{{Name: "f", Description: "d", Parameters: json.RawMessage(schema)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p.Tools[0])
	if err != nil {
		t.Fatal(err)
	}
	// Every value as written, big numbers included; keys may be reordered.
	if !strings.Contains(string(b), `"maximum":12345678901234567890`) || !strings.Contains(string(b), `"additionalProperties":false`) {
		t.Fatalf("tool = %s", b)
	}
}

func TestDecodeResponse(t *testing.T) {
	body := `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Checking.","refusal":null,"tool_calls":[
		{"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{\"id\": \"A\"}"}},
		{"id":"call_2","type":"function","function":{"name":"ping","arguments":""}}]},"logprobs":null,"finish_reason":"tool_calls"}],
		"usage":{"prompt_tokens":40,"completion_tokens":25,"total_tokens":65,"completion_tokens_details":{"reasoning_tokens":20}}}`
	resp, err := decodeResponse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Response{
		Text: "Checking.",
		ToolCalls: []llm.ToolCall{
			{ID: "call_1", Name: "lookup", Args: json.RawMessage(`{"id": "A"}`)},
			{ID: "call_2", Name: "ping", Args: json.RawMessage(`{}`)},
		},
		// completion_tokens already counts the reasoning tokens.
		Usage:        llm.Usage{InputTokens: 40, OutputTokens: 25},
		FinishReason: "tool_calls",
	}
	if !equalResponse(resp, want) {
		t.Fatalf("response = %+v, want %+v", resp, want)
	}

	for _, bad := range []string{
		`null`,
		`{"choices":[1]}`,
		`{"choices":[{"message":{"content":"x","tool_calls":[{"id":"c","type":"custom","custom":{"name":"f","input":"x"}}]}}]}`,
		`{"choices":[{"message":{"content":"x","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`,
		`{"choices":[{"message":{"content":"x","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":{"a":1}}}]}}]}`,
		`{"choices":[{"message":{"content":"x"},"finish_reason":3}]}`,
	} {
		_, err := decodeResponse([]byte(bad))
		if e := llm.Classify(err); e == nil || e.Kind != llm.KindServer || !e.Retryable {
			t.Errorf("%s: err = %v, want a retryable server error", bad, err)
		}
	}
}

// FuzzDecodeResponse: no body makes decoding panic or return anything but
// a response or a retryable server error (a refusal is a bad request).
func FuzzDecodeResponse(f *testing.F) {
	f.Add([]byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`))
	f.Add([]byte(`{"choices":[{"message":{"content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`))
	f.Add([]byte(`{"choices":[{"message":{"content":"","refusal":"no"}}]}`))
	f.Add([]byte(`{"choices":[{"message":{"tool_calls":[{"id":1,"type":"function","function":[]}]}}],"usage":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := decodeResponse(b)
		if err == nil {
			return
		}
		var e *llm.Error
		if !errors.As(err, &e) || (e.Kind != llm.KindServer && e.Kind != llm.KindBadRequest) {
			t.Fatalf("err = %v (%T)", err, err)
		}
	})
}
