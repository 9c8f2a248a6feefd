package geminifake

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	vf "github.com/batonhq/baton/runtime/llm/internal/vendorfake"
)

const model3 = "gemini-3.8-flash"

func newRequest(t *testing.T, s *Server, model, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+pathPrefix+model+pathSuffix, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-goog-api-key", s.APIKey)
	return req
}

// post sends body as a generateContent request for model and returns the
// status and the decoded answer.
func post(t *testing.T, s *Server, model, body string) (int, map[string]any) {
	t.Helper()
	return vf.Do(t, newRequest(t, s, model, body))
}

func start(t *testing.T, b Behavior) *Server {
	t.Helper()
	s := New(b)
	t.Cleanup(s.Close)
	return s
}

// errorOf checks the Google error shape and returns the message.
func errorOf(t *testing.T, status int, body map[string]any) string {
	t.Helper()
	e, ok := body["error"].(map[string]any)
	if !ok {
		t.Fatalf("status %d without an error object: %v", status, body)
	}
	if code, _ := e["code"].(float64); int(code) != status {
		t.Errorf("error code %v, HTTP status %d", e["code"], status)
	}
	if _, ok := e["status"].(string); !ok {
		t.Errorf("error without a status name: %v", e)
	}
	msg, _ := e["message"].(string)
	return msg
}

func TestRejectsUndocumentedRequests(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"unknown top-level field", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"model":"x"}`, `Unknown name "model": Cannot find field.`},
		{"blob displayName", `{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"text/plain","data":"eA==","displayName":"a.txt"}}]}]}`, `Unknown name "displayName" at 'contents[0].parts[0].inline_data'`},
		{"unknown field deep in a tool", `{"contents":[{"parts":[{"text":"hi"}]}],"tools":[{"functionDeclarations":[{"name":"f","strict":true}]}]}`, `Unknown name "strict" at 'tools[0].function_declarations[0]'`},
		{"unknown generation option", `{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"reasoningEffort":"low"}}`, `Unknown name "reasoningEffort" at 'generation_config'`},
		{"text is not a string", `{"contents":[{"parts":[{"text":5}]}]}`, `Invalid value at 'contents[0].parts[0].text' (TYPE_STRING), 5`},
		{"data is not base64", `{"contents":[{"parts":[{"inlineData":{"mimeType":"text/plain","data":"not base64!"}}]}]}`, `Base64 decoding failed`},
		{"signature is not base64", `{"contents":[{"parts":[{"text":"hi","thoughtSignature":"%%%"}]}]}`, `'contents[0].parts[0].thought_signature' (TYPE_BYTES)`},
		{"unknown enum value", `{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"thinkingConfig":{"thinkingLevel":"ULTRA"}}}`, `ThinkingConfig.ThinkingLevel), "ULTRA"`},
		{"int32 out of range", `{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":3000000000}}`, `(TYPE_INT32)`},
		{"parts not a list", `{"contents":[{"parts":{"text":"hi"}}]}`, `Proto field is repeating`},
		{"two kinds of data in a part", `{"contents":[{"parts":[{"text":"hi","inlineData":{"mimeType":"text/plain","data":"eA=="}}]}]}`, `oneof field 'data' is already set`},
		{"a part without data", `{"contents":[{"parts":[{"thought":true}]}]}`, `required oneof field 'data' must have one initialized field`},
		{"no contents", `{}`, `contents is not specified`},
		{"bad role", `{"contents":[{"role":"assistant","parts":[{"text":"hi"}]}]}`, `Please use a valid role: user, model.`},
		{"unsupported response MIME type", `{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"responseMimeType":"application/yaml+json"}}`, `allowed mimetypes`},
		{"JSON schema without the JSON MIME type", `{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"responseJsonSchema":{"type":"object"}}}`, `requires response_mime_type "application/json"`},
		{"budget and level", `{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"thinkingConfig":{"thinkingBudget":10,"thinkingLevel":"LOW"}}}`, `cannot both be set`},
		{"bad function name", `{"contents":[{"parts":[{"text":"hi"}]}],"tools":[{"functionDeclarations":[{"name":"look up"}]}]}`, `Invalid function name`},
		{"response without call", `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}]}`, `function response turn comes immediately after a function call turn`},
		{"call right after a model turn", `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"a"}]},{"role":"model","parts":[{"functionCall":{"name":"f"}}]}]}`, `function call turn comes immediately after a user turn`},
		{"fewer responses than calls", `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"functionCall":{"name":"f"}},{"functionCall":{"name":"f"}}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}]}`, `number of function response parts is equal`},
		{"response with another id", `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"functionCall":{"id":"a","name":"f"}}]},{"role":"user","parts":[{"functionResponse":{"id":"b","name":"f","response":{}}}]}]}`, `answers no function call`},
		{"response without the call's id", `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"functionCall":{"id":"a","name":"f"}}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}]}`, `answers no function call`},
		{"response without response", `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"functionCall":{"name":"f"}}]},{"role":"user","parts":[{"functionResponse":{"name":"f"}}]}]}`, `the function response is required`},
	}
	s := start(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := post(t, s, "gemini-2.5-flash", tt.body)
			if status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %v", status, body)
			}
			if msg := errorOf(t, status, body); !strings.Contains(msg, tt.want) {
				t.Errorf("message %q lacks %q", msg, tt.want)
			}
			if st := body["error"].(map[string]any)["status"]; st != "INVALID_ARGUMENT" {
				t.Errorf("status name %v", st)
			}
			if err := Validate("gemini-2.5-flash", []byte(tt.body)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate = %v", err)
			}
		})
	}
	s.RequireRefused(t)
}

func TestAcceptsDocumentedForms(t *testing.T) {
	var got *Request
	s := start(t, func(r *Request) Reply { got = r; return Text("ok") })
	// snake_case names, URL-safe base64, a null field, every part kind
	// the adapter uses, and options it does not.
	body := `{
		"system_instruction": {"parts": [{"text": "be brief"}]},
		"contents": [
			{"role": "user", "parts": [{"text": "hi"}, {"inline_data": {"mime_type": "image/png", "data": "-_8"}}]},
			{"role": "model", "parts": [{"text": ""}]},
			{"parts": [{"text": "again", "partMetadata": {"k": [1, 2]}}]}
		],
		"generation_config": {"temperature": 0.5, "max_output_tokens": "64", "response_mime_type": "application/json",
			"responseJsonSchema": {"type": "object"}, "thinkingConfig": {"thinkingLevel": "LOW"}, "seed": null},
		"tools": [{"function_declarations": [{"name": "ns.look_up:v1-2", "description": "d", "parameters": {"type": "OBJECT", "properties": {"id": {"type": "STRING"}}}}]}],
		"toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
		"safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}]
	}`
	status, answer := post(t, s, "gemini-2.5-flash", body)
	if status != http.StatusOK {
		t.Fatalf("status %d: %v", status, answer)
	}
	if got == nil || got.Model != "gemini-2.5-flash" || len(got.Contents) != 3 {
		t.Fatalf("request = %+v", got)
	}
	if b := got.Contents[0].Parts[1].InlineData; b == nil || b.MIMEType != "image/png" || string(b.Data) != "\xfb\xff" {
		t.Errorf("inline data = %+v", b)
	}
	if gc := got.GenerationConfig; gc == nil || *gc.MaxOutputTokens != 64 || string(gc.ResponseJSONSchema) != `{"type":"object"}` || gc.ThinkingConfig.ThinkingLevel != "LOW" {
		t.Errorf("generation config = %+v", gc)
	}
	if si := got.SystemInstruction; si == nil || si.Parts[0].TextOf() != "be brief" {
		t.Errorf("system instruction = %+v", si)
	}
	if got.Tools[0].FunctionDeclarations[0].Name != "ns.look_up:v1-2" {
		t.Errorf("tools = %+v", got.Tools)
	}
}

func TestCallerChecks(t *testing.T) {
	s := start(t, nil)
	body := `{"contents":[{"parts":[{"text":"hi"}]}]}`
	send := func(method, path, key, contentType string) (int, string) {
		req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		if key != "" {
			req.Header.Set("x-goog-api-key", key)
		}
		status, answer := vf.Do(t, req)
		return status, errorOf(t, status, answer)
	}
	ok := pathPrefix + model3 + pathSuffix
	tests := []struct {
		name, method, path, key, contentType string
		status                               int
		want                                 string
	}{
		{"GET", http.MethodGet, ok, s.APIKey, "application/json", 404, "takes POST"},
		{"v1 path", http.MethodPost, "/v1/models/" + model3 + pathSuffix, s.APIKey, "application/json", 404, "no method"},
		{"streaming method", http.MethodPost, pathPrefix + model3 + ":streamGenerateContent", s.APIKey, "application/json", 404, "no method"},
		{"no key", http.MethodPost, ok, "", "application/json", 403, "unregistered callers"},
		{"wrong key", http.MethodPost, ok, "nope", "application/json", 400, "API key not valid"},
		{"key in the query", http.MethodPost, ok + "?key=" + s.APIKey, "", "application/json", 200, ""},
		{"unknown query parameter", http.MethodPost, ok + "?verbose=1", s.APIKey, "application/json", 400, "Cannot bind query parameter"},
		{"not JSON", http.MethodPost, ok, s.APIKey, "text/plain", 400, "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.status == 200 {
				req, _ := http.NewRequest(tt.method, s.URL+tt.path, strings.NewReader(body))
				req.Header.Set("Content-Type", tt.contentType)
				if status, answer := vf.Do(t, req); status != 200 {
					t.Fatalf("status %d: %v", status, answer)
				}
				return
			}
			status, msg := send(tt.method, tt.path, tt.key, tt.contentType)
			if status != tt.status || !strings.Contains(msg, tt.want) {
				t.Errorf("got %d %q, want %d containing %q", status, msg, tt.status, tt.want)
			}
		})
	}
}

// exchange holds a text prompt and a model turn of function calls as the
// server gave it, to build histories from.
type exchange struct {
	prompt string
	parts  []any
}

func callTurn(t *testing.T, s *Server, model string, calls ...Call) exchange {
	t.Helper()
	prompt := `{"role":"user","parts":[{"text":"go"}]}`
	status, answer := post(t, s, model, `{"contents":[`+prompt+`]}`)
	if status != 200 {
		t.Fatalf("status %d: %v", status, answer)
	}
	cand := answer["candidates"].([]any)[0].(map[string]any)
	parts := cand["content"].(map[string]any)["parts"].([]any)
	return exchange{prompt: prompt, parts: parts}
}

func contentJSON(role string, parts []any) string {
	b, _ := json.Marshal(map[string]any{"role": role, "parts": parts})
	return string(b)
}

func responsesFor(parts []any) string {
	var out []any
	for _, p := range parts {
		if fc, ok := p.(map[string]any)["functionCall"].(map[string]any); ok {
			fr := map[string]any{"name": fc["name"], "response": map[string]any{"ok": true}}
			if id, ok := fc["id"]; ok {
				fr["id"] = id
			}
			out = append(out, map[string]any{"functionResponse": fr})
		}
	}
	return contentJSON("user", out)
}

func TestThoughtSignatures(t *testing.T) {
	calls := []Call{{ID: "c1", Name: "f", Args: map[string]any{"x": 1}}, {Name: "g"}}
	s := start(t, func(r *Request) Reply {
		if len(r.Contents) == 1 {
			return Reply{Text: "calling", Calls: calls}
		}
		return Text("done")
	})
	for _, model := range []string{model3, "gemini-2.5-flash"} {
		ex := callTurn(t, s, model)
		if len(ex.parts) != 3 {
			t.Fatalf("parts = %v", ex.parts)
		}
		first, second := ex.parts[1].(map[string]any), ex.parts[2].(map[string]any)
		sig, _ := first["thoughtSignature"].(string)
		if _, err := base64.StdEncoding.DecodeString(sig); sig == "" || err != nil {
			t.Fatalf("first call's signature %q", sig)
		}
		if _, ok := second["thoughtSignature"]; ok {
			t.Errorf("the second parallel call has a signature: %v", second)
		}
		if _, ok := ex.parts[0].(map[string]any)["thoughtSignature"]; ok {
			t.Errorf("the text before calls has a signature")
		}
		if id := first["functionCall"].(map[string]any)["id"]; id != "c1" {
			t.Errorf("scripted id = %v", id)
		}
		if _, ok := second["functionCall"].(map[string]any)["id"]; ok {
			t.Errorf("the fake invented an id: %v", second)
		}

		history := func(parts []any, more ...string) string {
			contents := append([]string{ex.prompt, contentJSON("model", parts), responsesFor(parts)}, more...)
			return `{"contents":[` + strings.Join(contents, ",") + `]}`
		}
		strip := func(i int) []any {
			out := make([]any, len(ex.parts))
			for k, p := range ex.parts {
				m := map[string]any{}
				for key, v := range p.(map[string]any) {
					if !(k == i && key == "thoughtSignature") {
						m[key] = v
					}
				}
				out[k] = m
			}
			return out
		}
		if status, body := post(t, s, model, history(ex.parts)); status != 200 {
			t.Errorf("%s: the history as given: %d %v", model, status, body)
		}
		// Without the signature: Gemini 3 refuses, Gemini 2.5 does not.
		status, body := post(t, s, model, history(strip(1)))
		if model == model3 {
			if status != 400 || !strings.Contains(errorOf(t, status, body), MissingSignature) {
				t.Errorf("%s: missing signature: %d %v", model, status, body)
			}
		} else if status != 200 {
			t.Errorf("%s: missing signature: %d %v", model, status, body)
		}
		// A turn closed by a new user prompt is not checked any more.
		if status, body := post(t, s, model, history(strip(1), `{"role":"user","parts":[{"text":"next question"}]}`)); status != 200 {
			t.Errorf("%s: an old turn without its signature: %d %v", model, status, body)
		}
		// The documented dummy passes; a made-up or moved signature does not.
		for _, tc := range []struct {
			sig  string
			part int
			ok   bool
		}{
			{"skip_thought_signature_validator", 1, true},
			{base64.StdEncoding.EncodeToString([]byte("made up")), 1, false},
			{sig, 2, false}, // moved to the other call
		} {
			parts := strip(1)
			parts[tc.part].(map[string]any)["thoughtSignature"] = tc.sig
			status, body := post(t, s, model, history(parts))
			if tc.ok != (status == 200) {
				t.Errorf("%s: signature %q on part %d: %d %v", model, tc.sig, tc.part, status, body)
			}
			if tc.ok {
				continue
			}
			// Gemini 3 may report the first call's missing signature first.
			if msg := errorOf(t, status, body); !strings.Contains(msg, CorruptedSignature) && (model != model3 || !strings.Contains(msg, MissingSignature)) {
				t.Errorf("%s: signature %q on part %d: %s", model, tc.sig, tc.part, msg)
			}
		}
	}
}

func TestReplies(t *testing.T) {
	s := start(t, Script(
		Text("plain"),
		JSON(map[string]string{"text": "hi"}),
		Error(429, "slow down"),
		Reply{Status: 503, Body: []byte("upstream")},
		Reply{BlockReason: "SAFETY"},
	))
	body := `{"contents":[{"parts":[{"text":"hi"}]}]}`
	status, answer := post(t, s, model3, body)
	parts := answer["candidates"].([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]any)
	if status != 200 || len(parts) != 1 || parts[0].(map[string]any)["text"] != "plain" || parts[0].(map[string]any)["thoughtSignature"] == nil {
		t.Errorf("text reply: %d %v", status, answer)
	}
	if answer["usageMetadata"] == nil || answer["modelVersion"] != model3 {
		t.Errorf("reply metadata: %v", answer)
	}
	_, answer = post(t, s, model3, body)
	text := answer["candidates"].([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]any)[0].(map[string]any)["text"]
	if text != `{"text":"hi"}` {
		t.Errorf("JSON reply text = %v", text)
	}
	status, answer = post(t, s, model3, body)
	if status != 429 || errorOf(t, status, answer) != "slow down" || answer["error"].(map[string]any)["status"] != "RESOURCE_EXHAUSTED" {
		t.Errorf("error reply: %d %v", status, answer)
	}
	if status, raw, _ := vf.Send(t, newRequest(t, s, model3, body)); status != 503 || string(raw) != "upstream" {
		t.Errorf("raw reply: %d %q", status, raw)
	}
	status, answer = post(t, s, model3, body)
	if status != 200 || answer["candidates"] != nil || answer["promptFeedback"].(map[string]any)["blockReason"] != "SAFETY" {
		t.Errorf("blocked reply: %d %v", status, answer)
	}
	status, answer = post(t, s, model3, body)
	if status != 500 || !strings.Contains(errorOf(t, status, answer), "unscripted") {
		t.Errorf("past the script: %d %v", status, answer)
	}
	if got := s.Requests(); len(got) != 6 || got[5].Request.Index != 5 {
		t.Errorf("recorded %d requests: %+v", len(got), got)
	}
}
