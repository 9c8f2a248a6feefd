package openaifake

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

func newRequest(t *testing.T, s *Server, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.APIKey)
	return req
}

// post sends body to s's endpoint with its key and returns the status and
// the decoded answer.
func post(t *testing.T, s *Server, body string) (int, map[string]any) {
	t.Helper()
	return vf.Do(t, newRequest(t, s, body))
}

func start(t *testing.T, b Behavior) *Server {
	t.Helper()
	s := New(b)
	t.Cleanup(s.Close)
	return s
}

// errorOf checks OpenAI's error shape (all four fields present, param and
// code strings or null) and returns the error object.
func errorOf(t *testing.T, status int, body map[string]any) map[string]any {
	t.Helper()
	e, ok := body["error"].(map[string]any)
	if !ok {
		t.Fatalf("status %d without an error object: %v", status, body)
	}
	if _, ok := e["message"].(string); !ok {
		t.Errorf("error without a message: %v", e)
	}
	if _, ok := e["type"].(string); !ok {
		t.Errorf("error without a type: %v", e)
	}
	for _, k := range []string{"param", "code"} {
		v, present := e[k]
		if _, isString := v.(string); !present || (v != nil && !isString) {
			t.Errorf("error field %s = %v, want a string or null", k, v)
		}
	}
	return e
}

const user = `{"role":"user","content":"hi"}`

func body(fields string, messages ...string) string {
	if len(messages) == 0 {
		messages = []string{user}
	}
	b := `{"model":"gpt-4.1-mini","messages":[` + strings.Join(messages, ",") + `]`
	if fields != "" {
		b += "," + fields
	}
	return b + "}"
}

const (
	callA    = `{"role":"assistant","tool_calls":[{"id":"call_a","type":"function","function":{"name":"f","arguments":"{}"}}]}`
	answerA  = `{"role":"tool","tool_call_id":"call_a","content":"{\"ok\":true}"}`
	toolDecl = `"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`
)

func TestRejectsUndocumentedRequests(t *testing.T) {
	tests := []struct {
		name, body, param, want string
	}{
		{"not JSON", `{"model":`, "", "could not parse the JSON body"},
		{"not an object", `[1]`, "", "expected an object, but got an array"},
		{"unknown top-level field", body(`"temprature":0.5`), "temprature", "Unrecognized request argument supplied: temprature"},
		{"unknown field in a message", body("", `{"role":"user","content":"hi","id":"m1"}`), "messages[0].id", "Unknown parameter: 'messages[0].id'."},
		{"unknown field in a file part", body("", `{"role":"user","content":[{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVBE","mime_type":"application/pdf"}}]}`), "messages[0].content[0].file.mime_type", "Unknown parameter: 'messages[0].content[0].file.mime_type'."},
		{"unknown field deep in a tool", body(`"tools":[{"type":"function","function":{"name":"f","parameter":{}}}]`), "tools[0].function.parameter", "Unknown parameter: 'tools[0].function.parameter'."},
		{"user name with a space", body("", `{"role":"user","name":"Marcus Webb","content":"hi"}`), "messages[0].name", "Invalid 'messages[0].name': string does not match pattern."},
		{"user name too long", body("", `{"role":"user","name":"`+strings.Repeat("a", 65)+`","content":"hi"}`), "messages[0].name", "does not match pattern"},
		{"name on a tool message", body("", callA, `{"role":"tool","tool_call_id":"call_a","content":"x","name":"f"}`), "messages[1].name", "Unknown parameter: 'messages[1].name'."},
		{"content is a number", body("", `{"role":"user","content":5}`), "messages[0].content", "Invalid type for 'messages[0].content': expected one of a string or an array, but got an integer instead."},
		{"temperature is a string", body(`"temperature":"hot"`), "temperature", "expected a number, but got a string"},
		{"fractional token limit", body(`"max_completion_tokens":1.5`), "max_completion_tokens", "expected an integer, but got a decimal"},
		{"null where not nullable", body(`"parallel_tool_calls":null,` + toolDecl), "parallel_tool_calls", "expected a boolean, but got null"},
		{"unknown enum value", body(`"verbosity":"loud"`), "verbosity", "Invalid value: 'loud'. Supported values are: 'low', 'medium', and 'high'."},
		{"temperature out of range", body(`"temperature":2.5`), "temperature", "decimal above maximum value. Expected a value <= 2, but got 2.5 instead."},
		{"too many stop sequences", body(`"stop":["a","b","c","d","e"]`), "stop", "array too long"},
		{"no model", `{"messages":[` + user + `]}`, "model", "Missing required parameter: 'model'."},
		{"empty model", `{"model":"","messages":[` + user + `]}`, "model", "you must provide a model parameter"},
		{"no messages", `{"model":"gpt-4.1-mini"}`, "messages", "Missing required parameter: 'messages'."},
		{"empty messages", `{"model":"gpt-4.1-mini","messages":[]}`, "messages", "empty array"},
		{"unknown role", body("", `{"role":"narrator","content":"x"}`), "messages[0].role", "Invalid value: 'narrator'. Supported values are: 'developer', 'system', 'user', 'assistant', 'tool', and 'function'."},
		{"message without a role", body("", `{"content":"x"}`), "messages[0].role", "Missing required parameter: 'messages[0].role'."},
		{"image in a system message", body("", `{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}`), "messages[0].content[0].type", "Invalid value: 'image_url'. Supported values are: 'text'."},
		{"tool message without tool_call_id", body("", callA, `{"role":"tool","content":"x"}`), "messages[1].tool_call_id", "Missing required parameter: 'messages[1].tool_call_id'."},
		{"dangling tool_call_id", body(toolDecl, user, callA, `{"role":"tool","tool_call_id":"call_z","content":"x"}`), "messages.[2].tool_call_id", UnknownToolCall},
		{"tool message after a user message", body("", user, `{"role":"tool","tool_call_id":"call_a","content":"x"}`), "messages.[1].role", ToolWithoutCalls},
		{"answered twice", body("", user, callA, answerA, answerA), "messages.[3].tool_call_id", "answered twice"},
		{"unanswered call", body("", user, callA, user), "messages.[1].role", UnansweredCalls + ". The following tool_call_ids did not have response messages: call_a"},
		{"unanswered call at the end", body("", user, callA), "messages.[1].role", UnansweredCalls},
		{"assistant without content", body("", user, `{"role":"assistant"}`), "messages[1].content", "Missing required parameter: 'messages[1].content'."},
		{"assistant with a null content and no calls", body("", user, `{"role":"assistant","content":null}`), "messages[1].content", "Missing required parameter"},
		{"text file as a file part", body("", `{"role":"user","content":[{"type":"file","file":{"filename":"a.txt","file_data":"data:text/plain;base64,aGk="}}]}`), "messages[0].content[0].file.file_data", NotPDF},
		{"PDF without a file name", body("", `{"role":"user","content":[{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBE"}}]}`), "messages[0].content[0].file.filename", "Missing required parameter: 'messages[0].content[0].file.filename'."},
		{"file data and id", body("", `{"role":"user","content":[{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVBE","file_id":"file-1"}}]}`), "messages[0].content[0].file", "exactly one of"},
		{"image that is not a URL", body("", `{"role":"user","content":[{"type":"image_url","image_url":{"url":"aGVsbG8="}}]}`), "messages[0].content[0].image_url.url", "without the 'data:' prefix"},
		{"unsupported image type", body("", `{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/tiff;base64,aGk="}}]}`), "messages[0].content[0].image_url.url", "unsupported image type"},
		{"image data not base64", body("", `{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,!!"}}]}`), "messages[0].content[0].image_url.url", "not base64"},
		{"bad function name", body(`"tools":[{"type":"function","function":{"name":"look up"}}]`), "tools[0].function.name", "does not match pattern"},
		{"duplicate function name", body(`"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]`), "tools[1].function.name", "duplicate tool name"},
		{"parameters not of an object", body(`"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"string"}}}]`), "tools[0].function.parameters", `must be a JSON Schema of 'type: "object"'`},
		{"strict parameters that are not strict", body(`"tools":[{"type":"function","function":{"name":"f","strict":true,"parameters":{"type":"object","properties":{"a":{"type":"string"}}}}}]`), "tools[0].function.parameters", "'additionalProperties' is required to be supplied and to be false"},
		{"tool_choice without tools", body(`"tool_choice":"auto"`), "tool_choice", "'tool_choice' is only allowed when 'tools' are specified"},
		{"tool_choice naming no tool", body(toolDecl + `,"tool_choice":{"type":"function","function":{"name":"g"}}`), "tool_choice", "no tool named 'g'"},
		{"response schema name", body(`"response_format":{"type":"json_schema","json_schema":{"name":"my schema","schema":{"type":"object"}}}`), "response_format.json_schema.name", "does not match pattern"},
		{"strict response schema missing a required key", body(`"response_format":{"type":"json_schema","json_schema":{"name":"r","strict":true,"schema":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}}}`), "response_format", "Missing 'a'"},
		{"json_schema without its object", body(`"response_format":{"type":"json_schema"}`), "response_format.json_schema", "Missing required parameter: 'response_format.json_schema'."},
		{"top_logprobs without logprobs", body(`"top_logprobs":3`), "top_logprobs", "'logprobs' must be set to true"},
		{"stream_options without stream", body(`"stream_options":{"include_usage":true}`), "stream_options", "only allowed when 'stream' is enabled"},
		{"temperature on a reasoning model", `{"model":"gpt-5-mini","messages":[` + user + `],"temperature":0.2}`, "temperature", "Unsupported value: 'temperature' does not support 0.2 with this model. Only the default (1) value is supported."},
		{"max_tokens on a reasoning model", `{"model":"o3","messages":[` + user + `],"max_tokens":10}`, "max_tokens", "Use 'max_completion_tokens' instead."},
		{"streaming", body(`"stream":true`), "stream", "stream: true would send chunks"},
	}
	s := start(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, answer := post(t, s, tt.body)
			if status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %v", status, answer)
			}
			e := errorOf(t, status, answer)
			if msg, _ := e["message"].(string); !strings.Contains(msg, tt.want) {
				t.Errorf("message %q lacks %q", msg, tt.want)
			}
			if param, _ := e["param"].(string); param != tt.param {
				t.Errorf("param %q, want %q", param, tt.param)
			}
			if e["type"] != "invalid_request_error" {
				t.Errorf("type %v", e["type"])
			}
			if err := Validate([]byte(tt.body)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate = %v", err)
			}
		})
	}
	s.RequireRefused(t)
}

// TestAcceptsDocumentedForms sends fields and forms the adapter does not
// use, so the fake is known to refuse only what the reference refuses.
func TestAcceptsDocumentedForms(t *testing.T) {
	var got *Request
	s := start(t, func(r *Request) Reply { got = r; return Text("ok") })
	b := `{
		"model": "gpt-4.1-mini",
		"messages": [
			{"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
			{"role": "system", "content": "You are QA.", "name": "qa"},
			{"role": "user", "name": "candidate", "content": [
				{"type": "text", "text": "look", "prompt_cache_breakpoint": {"mode": "explicit"}},
				{"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}},
				{"type": "image_url", "image_url": {"url": "data:image/webp;base64,UklGRg"}},
				{"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
				{"type": "file", "file": {"filename": "cv.pdf", "file_data": "data:application/pdf;base64,JVBERi0="}},
				{"type": "file", "file": {"file_id": "file-abc"}}
			]},
			{"role": "assistant", "content": [{"type": "text", "text": "Checking."}], "refusal": null, "tool_calls": [
				{"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\"id\":\"A\"}"}},
				{"id": "call_2", "type": "function", "function": {"name": "lookup", "arguments": "not json"}}
			]},
			{"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "closed"}]},
			{"role": "tool", "tool_call_id": "call_1", "content": "{\"status\": \"open\"}"},
			{"role": "assistant", "content": "Done.", "audio": null, "function_call": null}
		],
		"tools": [
			{"type": "function", "function": {"name": "lookup", "description": "d", "strict": true, "parameters": {
				"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"], "additionalProperties": false}}},
			{"type": "custom", "custom": {"name": "sql", "format": {"type": "grammar", "grammar": {"definition": "start: /.+/", "syntax": "lark"}}}}
		],
		"tool_choice": {"type": "function", "function": {"name": "lookup"}},
		"parallel_tool_calls": false,
		"response_format": {"type": "json_schema", "json_schema": {"name": "reply_v1", "strict": true, "schema": {
			"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": false}}},
		"temperature": null, "top_p": 0.5, "max_completion_tokens": 64, "seed": -3, "n": 1, "stream": false,
		"stop": ["END"], "metadata": {"k": "v"}, "logit_bias": {"50256": -100}, "logprobs": true, "top_logprobs": 2,
		"reasoning_effort": null, "verbosity": "low", "service_tier": "flex", "store": false, "user": "u1",
		"prompt_cache_key": "panel", "prompt_cache_options": {"ttl": "30m", "mode": "implicit"},
		"web_search_options": {"search_context_size": "low", "user_location": null}
	}`
	status, answer := post(t, s, b)
	if status != http.StatusOK {
		t.Fatalf("status %d: %v", status, answer)
	}
	if got == nil || len(got.Messages) != 7 || *got.MaxCompletionTokens != 64 || got.Temperature != nil || *got.TopP != 0.5 {
		t.Fatalf("request = %+v", got)
	}
	view := got.View()
	if view.System != "Be brief.\nYou are QA." {
		t.Errorf("system = %q", view.System)
	}
	if !reflect.DeepEqual(view.Tools, []string{"lookup", "sql"}) {
		t.Errorf("tools = %v", view.Tools)
	}
	if string(view.ResponseSchema) != `{
			"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": false}` {
		t.Errorf("response schema = %s", view.ResponseSchema)
	}
	parts := view.Messages[0].Parts
	if len(parts) != 6 || parts[0].Text != "look" || parts[2].Blob.MIME != "image/webp" || parts[3].Blob.MIME != "audio/wav" || string(parts[3].Blob.Data) != "RIFF" {
		t.Fatalf("user parts = %+v", parts)
	}
	if f := parts[4].Blob; f.Name != "cv.pdf" || f.MIME != "application/pdf" || string(f.Data) != "%PDF-" {
		t.Errorf("file = %+v", f)
	}
	model, results := view.Messages[1], view.Messages[2]
	if len(model.Parts) != 3 || model.Parts[0].Text != "Checking." || model.Parts[1].Call.ID != "call_1" || string(model.Parts[2].Call.Args) != "not json" {
		t.Errorf("model turn = %+v", model)
	}
	// Results in the order sent, named by the calls they answer; text that
	// is not JSON reads as a JSON string.
	want := []llm.ToolResult{
		{CallID: "call_2", Name: "lookup", Content: json.RawMessage(`"closed"`)},
		{CallID: "call_1", Name: "lookup", Content: json.RawMessage(`{"status": "open"}`)},
	}
	if len(results.Parts) != 2 || results.Role != llm.RoleUser {
		t.Fatalf("results turn = %+v", results)
	}
	for i, w := range want {
		if got := *results.Parts[i].Result; !reflect.DeepEqual(got, w) {
			t.Errorf("result %d = %+v (%s), want %+v", i, got, got.Content, w)
		}
	}
	if last := view.Messages[3]; last.Role != llm.RoleModel || last.Parts[0].Text != "Done." {
		t.Errorf("last turn = %+v", last)
	}
}

func TestCallerChecks(t *testing.T) {
	s := start(t, nil)
	ok := body("")
	send := func(method, url, key, contentType string) (int, map[string]any) {
		req, err := http.NewRequest(method, url, strings.NewReader(ok))
		if err != nil {
			t.Fatal(err)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		if key != "" {
			req.Header.Set("Authorization", key)
		}
		return vf.Do(t, req)
	}
	endpoint := s.URL + "/chat/completions"
	bearer := "Bearer " + s.APIKey
	tests := []struct {
		name, method, url, key, contentType string
		status                              int
		want                                string
	}{
		{"valid", http.MethodPost, endpoint, bearer, "application/json; charset=utf-8", 200, ""},
		{"GET", http.MethodGet, endpoint, bearer, "application/json", 405, "only POST"},
		{"no /v1", http.MethodPost, strings.TrimSuffix(s.URL, "/v1") + "/chat/completions", bearer, "application/json", 404, "Invalid URL (POST /chat/completions)"},
		{"responses endpoint", http.MethodPost, s.URL + "/responses", bearer, "application/json", 404, "Invalid URL"},
		{"no key", http.MethodPost, endpoint, "", "application/json", 401, "You didn't provide an API key"},
		{"not bearer", http.MethodPost, endpoint, "Basic " + s.APIKey, "application/json", 401, "You didn't provide an API key"},
		{"wrong key", http.MethodPost, endpoint, "Bearer sk-wrong-key-123", "application/json", 401, "Incorrect API key provided: sk-*********-123"},
		{"query parameter", http.MethodPost, endpoint + "?stream=true", bearer, "application/json", 400, "no query parameters"},
		{"not JSON", http.MethodPost, endpoint, bearer, "text/plain", 400, "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, answer := send(tt.method, tt.url, tt.key, tt.contentType)
			if status != tt.status {
				t.Fatalf("status %d, want %d: %v", status, tt.status, answer)
			}
			if status == 200 {
				return
			}
			if msg, _ := errorOf(t, status, answer)["message"].(string); !strings.Contains(msg, tt.want) {
				t.Errorf("message %q lacks %q", msg, tt.want)
			}
		})
	}
}

func choice(t *testing.T, answer map[string]any) (map[string]any, string) {
	t.Helper()
	choices, _ := answer["choices"].([]any)
	if len(choices) != 1 {
		t.Fatalf("choices = %v", answer["choices"])
	}
	c := choices[0].(map[string]any)
	return c["message"].(map[string]any), c["finish_reason"].(string)
}

func TestReplies(t *testing.T) {
	s := start(t, Script(
		Text("plain"),
		JSON(map[string]string{"text": "hi"}),
		Calls(Call{ID: "call_x", Name: "f", Args: map[string]int{"a": 1}}, Call{Name: "g", Args: "not json"}),
		Error(429, "slow down"),
		Reply{Status: 503, Body: []byte("upstream")},
		Reply{Refusal: "I can't help with that."},
	))
	b := body("")
	status, answer := post(t, s, b)
	msg, finish := choice(t, answer)
	if status != 200 || msg["content"] != "plain" || msg["role"] != "assistant" || finish != "stop" {
		t.Errorf("text reply: %d %v", status, answer)
	}
	if r, ok := msg["refusal"]; !ok || r != nil {
		t.Errorf("refusal must be present and null: %v", msg)
	}
	for _, k := range []string{"id", "object", "created", "model", "usage"} {
		if answer[k] == nil {
			t.Errorf("reply without %s: %v", k, answer)
		}
	}
	if answer["object"] != "chat.completion" || answer["model"] != "gpt-4.1-mini" {
		t.Errorf("reply metadata: %v", answer)
	}

	_, answer = post(t, s, b)
	if msg, _ := choice(t, answer); msg["content"] != `{"text":"hi"}` {
		t.Errorf("JSON reply: %v", msg)
	}

	_, answer = post(t, s, b)
	msg, finish = choice(t, answer)
	calls, _ := msg["tool_calls"].([]any)
	if finish != "tool_calls" || len(calls) != 2 {
		t.Fatalf("calls reply: %v", answer)
	}
	if c, ok := msg["content"]; !ok || c != nil {
		t.Errorf("content must be present and null with calls only: %v", msg)
	}
	first, second := calls[0].(map[string]any), calls[1].(map[string]any)
	if first["id"] != "call_x" || first["type"] != "function" || first["function"].(map[string]any)["arguments"] != `{"a":1}` {
		t.Errorf("first call = %v", first)
	}
	if id, _ := second["id"].(string); !strings.HasPrefix(id, "call_") || second["function"].(map[string]any)["arguments"] != "not json" {
		t.Errorf("second call = %v, want a derived ID and the arguments as given", second)
	}

	status, answer = post(t, s, b)
	if e := errorOf(t, status, answer); status != 429 || e["message"] != "slow down" || e["type"] != "requests" || e["code"] != "rate_limit_exceeded" {
		t.Errorf("error reply: %d %v", status, answer)
	}

	if status, raw, _ := vf.Send(t, newRequest(t, s, b)); status != 503 || string(raw) != "upstream" {
		t.Errorf("raw reply: %d %q", status, raw)
	}

	_, answer = post(t, s, b)
	if msg, _ := choice(t, answer); msg["refusal"] != "I can't help with that." || msg["content"] != nil {
		t.Errorf("refusal reply: %v", msg)
	}

	status, answer = post(t, s, b)
	if e := errorOf(t, status, answer); status != 500 || !strings.Contains(e["message"].(string), "unscripted") || e["type"] != "server_error" {
		t.Errorf("past the script: %d %v", status, answer)
	}
	if got := s.Requests(); len(got) != 7 || got[6].Request.Index != 6 {
		t.Errorf("recorded %d requests: %+v", len(got), got)
	}
}

// TestViewOfAToolRound reads a request's tool round the way llmtest
// compares it.
func TestViewOfAToolRound(t *testing.T) {
	req, err := validate([]byte(body(toolDecl, user, `{"role":"assistant","content":"Let me see.","tool_calls":[{"id":"call_a","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]}`, answerA, `{"role":"user","content":"and?"}`)))
	if err != nil {
		t.Fatal(err)
	}
	want := []llmtest.Message{
		{Role: llm.RoleUser, Parts: []llmtest.Part{{Text: "hi"}}},
		{Role: llm.RoleModel, Parts: []llmtest.Part{{Text: "Let me see."}, {Call: &llm.ToolCall{ID: "call_a", Name: "f", Args: json.RawMessage(`{"x":1}`)}}}},
		{Role: llm.RoleUser, Parts: []llmtest.Part{{Result: &llm.ToolResult{CallID: "call_a", Name: "f", Content: json.RawMessage(`{"ok":true}`)}}}},
		{Role: llm.RoleUser, Parts: []llmtest.Part{{Text: "and?"}}},
	}
	if got := req.View().Messages; !reflect.DeepEqual(got, want) {
		t.Errorf("view:\n got %+v\nwant %+v", got, want)
	}
}

func TestFixedSampling(t *testing.T) {
	for model, want := range map[string]bool{
		"o1": true, "o3-mini": true, "o4-mini-2025-04-16": true, "gpt-5": true, "gpt-5-mini": true,
		"gpt-5-nano-2025-08-07": true, "gpt-4.1-mini": false, "gpt-4o": false, "gpt-5-chat-latest": false,
		"omni-moderation-latest": false,
	} {
		if got := FixedSampling(model); got != want {
			t.Errorf("FixedSampling(%q) = %v, want %v", model, got, want)
		}
	}
}

// FuzzValidate: no body makes the validator panic, and a body it accepts
// decodes and has a View.
func FuzzValidate(f *testing.F) {
	f.Add([]byte(body("")))
	f.Add([]byte(body(toolDecl, user, callA, answerA)))
	f.Add([]byte(body(`"response_format":{"type":"json_schema","json_schema":{"name":"r","strict":true,"schema":{"type":"object","properties":{"a":{"anyOf":[{"type":"string"}]}}}}}`)))
	f.Add([]byte(body("", `{"role":"user","content":[{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVBE"}},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO"}}]}`)))
	f.Add([]byte(`{"model":"o3","messages":[{"role":"tool","tool_call_id":null,"content":[{"type":"text"}]}],"tool_choice":{"type":"custom"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := validate(b)
		if err == nil {
			_ = req.View()
		}
	})
}
