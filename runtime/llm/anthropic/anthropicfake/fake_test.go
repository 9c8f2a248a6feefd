package anthropicfake

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/batonhq/baton/runtime/llm"
	vf "github.com/batonhq/baton/runtime/llm/internal/vendorfake"
	"github.com/batonhq/baton/runtime/llm/llmtest"
)

const version = "2023-06-01"

func newRequest(t *testing.T, s *Server, method, path, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", s.APIKey)
	req.Header.Set("anthropic-version", version)
	return req
}

// post sends body as a Messages request and returns the status and the
// decoded answer.
func post(t *testing.T, s *Server, body string) (int, map[string]any) {
	t.Helper()
	return vf.Do(t, newRequest(t, s, http.MethodPost, Path, body))
}

func start(t *testing.T, b Behavior) *Server {
	t.Helper()
	s := New(b)
	t.Cleanup(s.Close)
	return s
}

// errorOf checks Anthropic's error shape and returns the error's type and
// message.
func errorOf(t *testing.T, status int, body map[string]any) (string, string) {
	t.Helper()
	if body["type"] != "error" {
		t.Errorf("status %d: body type %v, want error", status, body["type"])
	}
	e, ok := body["error"].(map[string]any)
	if !ok {
		t.Fatalf("status %d without an error object: %v", status, body)
	}
	typ, _ := e["type"].(string)
	msg, _ := e["message"].(string)
	return typ, msg
}

// A valid conversation to build bad ones from.
const (
	user      = `{"role":"user","content":"hi"}`
	pdf       = `JVBERi0xLjcK` // %PDF-1.7\n
	png       = `iVBORw0KGgo=` // the PNG signature
	jpegBytes = `/9j/4AAQ`     // a JPEG start
	head      = `"model":"claude-test","max_tokens":64`
)

func body(fields ...string) string { return "{" + strings.Join(fields, ",") + "}" }

func messages(ms ...string) string { return `"messages":[` + strings.Join(ms, ",") + `]` }

func TestRejectsUndocumentedRequests(t *testing.T) {
	toolUse := `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]}`
	result := `{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}`
	tests := []struct {
		name, body, want string
	}{
		{"not JSON", `{"model":`, "invalid JSON"},
		{"two values", body(head, messages(user)) + `{}`, "invalid JSON"},
		{"not an object", `[1]`, "valid dictionary"},
		{"unknown top-level field", body(head, messages(user), `"reasoning_effort":"low"`), "reasoning_effort: Extra inputs are not permitted"},
		{"unknown field in a block", body(head, messages(`{"role":"user","content":[{"type":"text","text":"hi","name":"x"}]}`)), "messages.0.content.0.text.name: Extra inputs are not permitted"},
		{"unknown field in a message", body(head, messages(`{"role":"user","content":"hi","name":"bob"}`)), "messages.0.name: Extra inputs are not permitted"},
		{"unknown field in a tool", body(head, messages(user), `"tools":[{"name":"f","input_schema":{"type":"object"},"parameters":{}}]`), "tools.0.custom.parameters: Extra inputs are not permitted"},
		{"unknown field in a source", body(head, messages(`{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"`+png+`","name":"a.png"}}]}`)), "messages.0.content.0.image.source.base64.name: Extra inputs are not permitted"},
		{"missing model", body(`"max_tokens":5`, messages(user)), "model: Field required"},
		{"missing max_tokens", body(`"model":"claude-test"`, messages(user)), "max_tokens: Field required"},
		{"missing messages", body(head), "messages: Field required"},
		{"empty model", body(`"model":"","max_tokens":5`, messages(user)), "model: String should have at least 1 character"},
		{"max_tokens as a string", body(`"model":"m","max_tokens":"64"`, messages(user)), "max_tokens: Input should be a valid integer"},
		{"max_tokens not whole", body(`"model":"m","max_tokens":1.5`, messages(user)), "max_tokens: Input should be a valid integer"},
		{"max_tokens beyond a float's integers", body(`"model":"m","max_tokens":9007199254740994`, messages(user)), "max_tokens: Input should be a valid integer"},
		{"negative max_tokens", body(`"model":"m","max_tokens":-1`, messages(user)), "max_tokens: Input should be greater than or equal to 0"},
		{"temperature above 1", body(head, messages(user), `"temperature":1.5`), "temperature: Input should be less than or equal to 1"},
		{"text not a string", body(head, messages(`{"role":"user","content":[{"type":"text","text":5}]}`)), "messages.0.content.0.text.text: Input should be a valid string"},
		{"content neither string nor list", body(head, messages(`{"role":"user","content":{"type":"text","text":"hi"}}`)), "messages.0.content: Input should be a valid string or list"},
		{"bad role", body(head, messages(`{"role":"model","content":"hi"}`)), "messages.0.role: Input should be 'user', 'assistant' or 'system'"},
		{"block without type", body(head, messages(`{"role":"user","content":[{"text":"hi"}]}`)), "messages.0.content.0: Unable to extract tag using discriminator 'type'"},
		{"unknown block type", body(head, messages(`{"role":"user","content":[{"type":"video","source":{}}]}`)), "Input tag 'video' found using 'type' does not match any of the expected tags"},
		{"unmodelled block type", body(head, messages(`{"role":"user","content":[{"type":"container_upload","file_id":"f"}]}`)), "this fake does not model it"},
		{"unmodelled tool type", body(head, messages(user), `"tools":[{"type":"web_search_20250305","name":"web_search"}]`), "this fake does not model it"},
		{"null where not nullable", body(head, messages(user), `"system":null`), "system: Input should be a valid string or list"},
		{"stream", body(head, messages(user), `"stream":true`), "not modelled"},
		{"system-role message", body(head, messages(user, `{"role":"system","content":"be brief"}`)), "does not model them"},
		{"bad base64", body(head, messages(`{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"not base64!"}}]}`)), "Input should be a valid base64 string"},
		{"unsupported image type", body(head, messages(`{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/bmp","data":"`+png+`"}}]}`)), "Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"},
		{"image of another type", body(head, messages(`{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"`+jpegBytes+`"}}]}`)), "Image does not match the provided media type image/png"},
		{"PDF that is not one", body(head, messages(`{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"`+png+`"}}]}`)), "The PDF specified was not valid."},
		{"text document of another type", body(head, messages(`{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/markdown","data":"# x"}}]}`)), "Input should be 'text/plain'"},
		{"no messages", body(head, messages()), "messages: at least one message is required"},
		{"empty text", body(head, messages(`{"role":"user","content":""}`)), "text content blocks must be non-empty"},
		{"blank text", body(head, messages(`{"role":"user","content":[{"type":"text","text":" \n"}]}`)), "text content blocks must contain non-whitespace text"},
		{"blank system", body(head, messages(user), `"system":" "`), "system: text content blocks must contain non-whitespace text"},
		{"empty content", body(head, messages(`{"role":"user","content":[]}`, `{"role":"assistant","content":"a"}`)), "messages.0: all messages must have non-empty content"},
		{"trailing whitespace in a prefill", body(head, messages(user, `{"role":"assistant","content":"The answer is "}`)), "final assistant content cannot end with trailing whitespace"},
		{"result without a call", body(head, messages(user, `{"role":"assistant","content":"a"}`, `{"role":"user","content":[`+result+`]}`)), "unexpected `tool_use_id` found in `tool_result` blocks: toolu_1"},
		{"result answering another id", body(head, messages(user, toolUse, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2"}]}`)), "unexpected `tool_use_id`"},
		{"call without a result", body(head, messages(user, toolUse, `{"role":"user","content":"go on"}`)), "messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1"},
		{"result after text", body(head, messages(user, toolUse, `{"role":"user","content":[{"type":"text","text":"here"},`+result+`]}`)), "tool_result blocks must come first"},
		{"two results for one call", body(head, messages(user, toolUse, `{"role":"user","content":[`+result+`,`+result+`]}`)), "more than one `tool_result` block"},
		{"tool_use in a user message", body(head, messages(`{"role":"user","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]}`)), "tool_use blocks can only be in assistant messages"},
		{"tool_result in an assistant message", body(head, messages(user, `{"role":"assistant","content":[`+result+`]}`)), "tool_result blocks can only be in user messages"},
		{"duplicate tool_use ids", body(head, messages(user, toolUse, `{"role":"user","content":[`+result+`]}`, toolUse, `{"role":"user","content":[`+result+`]}`)), "`tool_use` ids must be unique"},
		{"tool_use id with a dot", body(head, messages(user, `{"role":"assistant","content":[{"type":"tool_use","id":"call.1","name":"f","input":{}}]}`)), "String should match pattern '^[a-zA-Z0-9_-]+$'"},
		{"tool_use input not an object", body(head, messages(user, `{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":"x"}]}`)), "input: Input should be a valid dictionary"},
		{"tool name with a dot", body(head, messages(user), `"tools":[{"name":"ns.lookup","input_schema":{"type":"object"}}]`), "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'"},
		{"tool without input_schema", body(head, messages(user), `"tools":[{"name":"f"}]`), "tools.0.custom.input_schema: Field required"},
		{"duplicate tool names", body(head, messages(user), `"tools":[{"name":"f","input_schema":{"type":"object"}},{"name":"f","input_schema":{"type":"object"}}]`), "Tool names must be unique."},
		{"input_schema of another type", body(head, messages(user), `"tools":[{"name":"f","input_schema":{"type":"array"}}]`), "tools.0.custom.input_schema.type: Input should be 'object'"},
		{"input_schema without type", body(head, messages(user), `"tools":[{"name":"f","input_schema":{"properties":{}}}]`), "tools.0.custom.input_schema.type: Field required"},
		{"strict tool with an open object", body(head, messages(user), `"tools":[{"name":"f","strict":true,"input_schema":{"type":"object"}}]`), "'additionalProperties' must be explicitly set to false"},
		{"tool_choice without tools", body(head, messages(user), `"tool_choice":{"type":"any"}`), "tool_choice may only be specified while providing tools"},
		{"tool_choice naming no tool", body(head, messages(user), `"tools":[{"name":"f","input_schema":{"type":"object"}}]`, `"tool_choice":{"type":"tool","name":"g"}`), `tool "g" is not among the declared tools`},
		{"output schema with a numeric bound", body(head, messages(user), `"output_config":{"format":{"type":"json_schema","schema":{"type":"object","properties":{"grade":{"type":"integer","minimum":0}},"additionalProperties":false}}}`), "property 'minimum' is not supported"},
		{"output schema with a string length", body(head, messages(user), `"output_config":{"format":{"type":"json_schema","schema":{"type":"object","properties":{"q":{"type":"string","maxLength":300}},"additionalProperties":false}}}`), "property 'maxLength' is not supported"},
		{"output schema with an open object", body(head, messages(user), `"output_config":{"format":{"type":"json_schema","schema":{"type":"object","properties":{"a":{"type":"object","additionalProperties":false},"b":{"type":"object"}},"additionalProperties":false}}}`), "output_config.format.schema.properties.b: For 'object' type, 'additionalProperties' must be explicitly set to false"},
		{"output format of another type", body(head, messages(user), `"output_config":{"format":{"type":"json_object","schema":{}}}`), "output_config.format.type: Input should be 'json_schema'"},
		{"output_format beta field", body(head, messages(user), `"output_format":{"type":"json_schema","schema":{}}`), "output_format: Extra inputs are not permitted"},
		{"thinking budget over max_tokens", body(head, messages(user), `"thinking":{"type":"enabled","budget_tokens":2048}`), "`max_tokens` must be greater than `thinking.budget_tokens`"},
		{"thinking budget too small", body(`"model":"m","max_tokens":4096`, messages(user), `"thinking":{"type":"enabled","budget_tokens":100}`), "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"},
		{"temperature with thinking", body(`"model":"m","max_tokens":4096`, messages(user), `"thinking":{"type":"enabled","budget_tokens":1024}`, `"temperature":0.5`), "`temperature` may only be set to 1 when thinking is enabled"},
	}
	s := start(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, answer := post(t, s, tt.body)
			if status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %v", status, answer)
			}
			typ, msg := errorOf(t, status, answer)
			if typ != "invalid_request_error" {
				t.Errorf("error type %q", typ)
			}
			if !strings.Contains(msg, tt.want) {
				t.Errorf("message %q lacks %q", msg, tt.want)
			}
			if err := Validate([]byte(tt.body)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate = %v", err)
			}
		})
	}
	s.RequireRefused(t)
}

func TestAcceptsDocumentedForms(t *testing.T) {
	var got *Request
	s := start(t, func(r *Request) Reply { got = r; return Text("ok") })
	// Shorthand and block content, a system prompt as blocks, a first
	// assistant turn, consecutive user turns, a parallel tool round with a
	// failed call, every file kind, and options the adapter does not use.
	schema := `{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"}},"required":["z"],"additionalProperties":false}`
	req := body(`"model":"claude-test","max_tokens":2048`,
		`"system":[{"type":"text","text":"be brief","cache_control":{"type":"ephemeral","ttl":"1h"}}]`,
		messages(
			`{"role":"assistant","content":"tech_lead: We double charge."}`,
			`{"role":"user","content":"Look at "}`,
			`{"role":"user","content":[{"type":"text","text":"these."},{"type":"text","text":"cv"},{"type":"document","title":"cv.pdf","source":{"type":"base64","media_type":"application/pdf","data":"`+pdf+`"}},{"type":"document","source":{"type":"text","media_type":"text/plain","data":"notes"},"citations":{"enabled":true}},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"`+png+`"}}]}`,
			`{"role":"assistant","content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_1","name":"lookup","input":{"id":"A","n":1}},{"type":"tool_use","id":"toolu_2","name":"lookup","input":{}}]}`,
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"{\"error\":\"refused\"}","is_error":true}]}`,
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"B is closed"}]},{"type":"text","text":"Summarise."}]}`,
		),
		`"tools":[{"name":"lookup","description":"d","input_schema":{"type":"object","properties":{"id":{"type":"string"}}}},{"type":"custom","name":"escalate","input_schema":{"type":"object","additionalProperties":false},"strict":true}]`,
		`"tool_choice":{"type":"auto","disable_parallel_tool_use":false}`,
		`"output_config":{"effort":"low","format":{"type":"json_schema","schema":`+schema+`}}`,
		`"thinking":{"type":"enabled","budget_tokens":1024}`,
		`"temperature":1`, `"top_p":0.9`, `"stop_sequences":["END"]`, `"stream":false`,
		`"metadata":{"user_id":null}`, `"service_tier":"auto"`, `"inference_geo":null`,
	)
	status, answer := post(t, s, req)
	if status != http.StatusOK {
		t.Fatalf("status %d: %v", status, answer)
	}
	if got == nil || got.Model != "claude-test" || got.MaxTokens != 2048 || len(got.Messages) != 6 {
		t.Fatalf("request = %+v", got)
	}
	v := got.View()
	want := llmtest.View{
		System: "be brief",
		Messages: []llmtest.Message{
			{Role: llm.RoleModel, Parts: []llmtest.Part{{Text: "tech_lead: We double charge."}}},
			{Role: llm.RoleUser, Parts: []llmtest.Part{
				{Text: "Look at "}, {Text: "these."}, {Text: "cv"},
				{Blob: &llm.Blob{Name: "cv.pdf", MIME: "application/pdf", Data: []byte("%PDF-1.7\n")}},
				{Blob: &llm.Blob{MIME: "text/plain", Data: []byte("notes")}},
				{Blob: &llm.Blob{MIME: "image/png", Data: []byte("\x89PNG\r\n\x1a\n")}},
			}},
			{Role: llm.RoleModel, Parts: []llmtest.Part{
				{Text: "Checking."},
				{Call: &llm.ToolCall{ID: "toolu_1", Name: "lookup", Args: json.RawMessage(`{"id":"A","n":1}`)}},
				{Call: &llm.ToolCall{ID: "toolu_2", Name: "lookup", Args: json.RawMessage(`{}`)}},
			}},
			{Role: llm.RoleUser, Parts: []llmtest.Part{
				{Result: &llm.ToolResult{CallID: "toolu_1", Name: "lookup", Content: json.RawMessage(`{"error":"refused"}`), IsError: true}},
				{Result: &llm.ToolResult{CallID: "toolu_2", Name: "lookup", Content: json.RawMessage(`"B is closed"`)}},
				{Text: "Summarise."},
			}},
		},
		Tools:          []string{"lookup", "escalate"},
		ResponseSchema: json.RawMessage(schema),
	}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("view:\n%#v\nwant:\n%#v", v, want)
	}
	// The schema is kept as sent, its properties in their order.
	if string(v.ResponseSchema) != schema {
		t.Errorf("schema = %s, want %s", v.ResponseSchema, schema)
	}
}

func TestCallerChecks(t *testing.T) {
	s := start(t, nil)
	ok := body(head, messages(user))
	tests := []struct {
		name   string
		edit   func(*http.Request)
		method string
		path   string
		status int
		typ    string
		want   string
	}{
		{"as sent", func(*http.Request) {}, http.MethodPost, Path, 200, "", ""},
		{"GET", func(*http.Request) {}, http.MethodGet, Path, 405, "invalid_request_error", "takes POST"},
		{"another path", func(*http.Request) {}, http.MethodPost, "/v1/complete", 404, "not_found_error", "Not Found"},
		{"no key", func(r *http.Request) { r.Header.Del("x-api-key") }, http.MethodPost, Path, 401, "authentication_error", "x-api-key header is required"},
		{"wrong key", func(r *http.Request) { r.Header.Set("x-api-key", "nope") }, http.MethodPost, Path, 401, "authentication_error", "invalid x-api-key"},
		{"bearer token instead of a key", func(r *http.Request) {
			r.Header.Del("x-api-key")
			r.Header.Set("Authorization", "Bearer "+s.APIKey)
		}, http.MethodPost, Path, 401, "authentication_error", "x-api-key header is required"},
		{"no version", func(r *http.Request) { r.Header.Del("anthropic-version") }, http.MethodPost, Path, 400, "invalid_request_error", "anthropic-version: header is required"},
		{"unknown version", func(r *http.Request) { r.Header.Set("anthropic-version", "2024-01-01") }, http.MethodPost, Path, 400, "invalid_request_error", "is not a valid version"},
		{"beta header", func(r *http.Request) { r.Header.Set("anthropic-beta", "structured-outputs-2025-11-13") }, http.MethodPost, Path, 400, "invalid_request_error", "beta features are not modelled"},
		{"query parameter", func(r *http.Request) { r.URL.RawQuery = "beta=true" }, http.MethodPost, Path, 400, "invalid_request_error", "takes no query parameters"},
		{"not JSON", func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }, http.MethodPost, Path, 400, "invalid_request_error", "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := newRequest(t, s, tt.method, tt.path, ok)
			tt.edit(req)
			status, answer := vf.Do(t, req)
			if status != tt.status {
				t.Fatalf("status %d, want %d: %v", status, tt.status, answer)
			}
			if tt.status == 200 {
				return
			}
			typ, msg := errorOf(t, status, answer)
			if typ != tt.typ || !strings.Contains(msg, tt.want) {
				t.Errorf("got %s %q, want %s containing %q", typ, msg, tt.typ, tt.want)
			}
		})
	}
}

func TestReplies(t *testing.T) {
	s := start(t, Script(
		Text("plain"),
		JSON(map[string]string{"text": "hi"}),
		Reply{Text: "Checking.", Calls: []Call{{ID: "toolu_given", Name: "f", Input: map[string]any{"x": 1}}, {Name: "g"}}},
		Error(429, "slow down"),
		Error(529, "Overloaded"),
		Reply{Status: 503, Body: []byte("upstream")},
		Text("unused by the cache-only request"),
	))
	ok := body(head, messages(user))
	content := func(answer map[string]any) []any { c, _ := answer["content"].([]any); return c }

	status, answer := post(t, s, ok)
	c := content(answer)
	if status != 200 || len(c) != 1 || c[0].(map[string]any)["text"] != "plain" || answer["stop_reason"] != "end_turn" {
		t.Errorf("text reply: %d %v", status, answer)
	}
	if answer["type"] != "message" || answer["role"] != "assistant" || answer["model"] != "claude-test" || answer["usage"] == nil {
		t.Errorf("reply metadata: %v", answer)
	}
	_, answer = post(t, s, ok)
	if text := content(answer)[0].(map[string]any)["text"]; text != `{"text":"hi"}` {
		t.Errorf("JSON reply text = %v", text)
	}
	_, answer = post(t, s, ok)
	c = content(answer)
	if len(c) != 3 || answer["stop_reason"] != "tool_use" {
		t.Fatalf("call reply: %v", answer)
	}
	first, second := c[1].(map[string]any), c[2].(map[string]any)
	if first["id"] != "toolu_given" || first["type"] != "tool_use" || !reflect.DeepEqual(first["input"], map[string]any{"x": 1.0}) {
		t.Errorf("first call = %v", first)
	}
	if id, _ := second["id"].(string); !strings.HasPrefix(id, "toolu_") || !reflect.DeepEqual(second["input"], map[string]any{}) {
		t.Errorf("second call = %v, want a made-up id and {} input", second)
	}
	for _, want := range []struct {
		status int
		typ    string
		msg    string
	}{{429, "rate_limit_error", "slow down"}, {529, "overloaded_error", "Overloaded"}} {
		status, answer := post(t, s, ok)
		if typ, msg := errorOf(t, status, answer); status != want.status || typ != want.typ || msg != want.msg {
			t.Errorf("error reply: %d %s %q, want %d %s %q", status, typ, msg, want.status, want.typ, want.msg)
		}
		if id, _ := answer["request_id"].(string); id == "" {
			t.Errorf("error reply without request_id: %v", answer)
		}
	}
	if status, raw, _ := vf.Send(t, newRequest(t, s, http.MethodPost, Path, ok)); status != 503 || string(raw) != "upstream" {
		t.Errorf("raw reply: %d %q", status, raw)
	}
	// max_tokens 0 only fills the prompt cache: no content.
	status, answer = post(t, s, body(`"model":"m","max_tokens":0`, messages(user)))
	if status != 200 || len(content(answer)) != 0 || answer["stop_reason"] != "max_tokens" {
		t.Errorf("cache-only reply: %d %v", status, answer)
	}
	status, answer = post(t, s, ok)
	if _, msg := errorOf(t, status, answer); status != 500 || !strings.Contains(msg, "unscripted") {
		t.Errorf("past the script: %d %v", status, answer)
	}
	if got := s.Requests(); len(got) != 8 || got[7].Request.Index != 7 {
		t.Errorf("recorded %d requests: %+v", len(got), got)
	}
}

// Alternating holds a server to strictly alternating roles, which the
// default (the API reference's combining of repeated roles) does not.
func TestAlternating(t *testing.T) {
	twoUsers := body(head, messages(user, `{"role":"user","content":"again"}`))
	alternating := body(head, messages(user, `{"role":"assistant","content":"yes"}`, `{"role":"user","content":"again"}`))
	if err := Validate([]byte(twoUsers)); err != nil {
		t.Fatalf("the default server refused repeated roles: %v", err)
	}
	s := Start(Config{Alternating: true})
	t.Cleanup(s.Close)
	status, answer := post(t, s, twoUsers)
	if status != http.StatusBadRequest {
		t.Fatalf("status %d, want 400: %v", status, answer)
	}
	if _, msg := errorOf(t, status, answer); !strings.Contains(msg, "messages.1: roles must alternate") {
		t.Errorf("message %q", msg)
	}
	if err := s.Validate([]byte(twoUsers)); err == nil {
		t.Error("Validate accepted repeated roles")
	}
	if err := s.Validate([]byte(alternating)); err != nil {
		t.Errorf("Validate refused alternating roles: %v", err)
	}
}
