package gemini

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/runtime/internal/wiretest"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/clock"
	"github.com/batonhq/baton/runtime/llm"
)

const (
	testKey   = "test-key"
	testModel = "gemini-test"
)

// fakeGemini implements the public Gemini REST wire format for
// generateContent. Each test scripts it with a handler that receives the
// decoded request body and the request number (0-based); the fake itself
// checks the method, path and API key header.
type fakeGemini struct {
	t       *testing.T
	srv     *httptest.Server
	handler func(n int, body map[string]any, w http.ResponseWriter, r *http.Request)
	wantKey string

	mu     sync.Mutex
	bodies []map[string]any
}

func newFake(t *testing.T, handler func(n int, body map[string]any, w http.ResponseWriter, r *http.Request)) *fakeGemini {
	t.Helper()
	f := &fakeGemini{t: t, handler: handler, wantKey: testKey}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGemini) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		f.t.Errorf("method = %s, want POST", r.Method)
	}
	if want := "/v1beta/models/" + testModel + ":generateContent"; r.URL.Path != want {
		f.t.Errorf("path = %q, want %q", r.URL.Path, want)
	}
	if got := r.Header.Get("x-goog-api-key"); got != f.wantKey {
		f.t.Errorf("x-goog-api-key = %q, want %q", got, f.wantKey)
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Errorf("read body: %v", err)
		return
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		f.t.Errorf("request body is not JSON: %v\n%s", err, raw)
		return
	}
	f.mu.Lock()
	n := len(f.bodies)
	f.bodies = append(f.bodies, body)
	f.mu.Unlock()
	f.handler(n, body, w, r)
}

func (f *fakeGemini) hits() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies)
}

func (f *fakeGemini) model(t *testing.T) *Model {
	t.Helper()
	m, err := New(context.Background(), Config{APIKey: testKey, BaseURL: f.srv.URL, Model: testModel})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func textResponse(parts ...map[string]any) map[string]any {
	ps := make([]any, len(parts))
	for i, p := range parts {
		ps[i] = p
	}
	return map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": ps},
			"finishReason": "STOP",
		}},
		"usageMetadata": map[string]any{"promptTokenCount": 12, "candidatesTokenCount": 7, "thoughtsTokenCount": 3, "totalTokenCount": 22},
	}
}

func TestGenerateText(t *testing.T) {
	temp := float32(0.25)
	f := newFake(t, func(_ int, body map[string]any, w http.ResponseWriter, _ *http.Request) {
		wiretest.Expect(t, body, "systemInstruction.parts.0.text", "You are QA.")
		wiretest.Expect(t, body, "contents.0.role", "user")
		wiretest.Expect(t, body, "contents.0.parts.0.text", "Hello")
		wiretest.Expect(t, body, "contents.1.role", "model")
		wiretest.Expect(t, body, "contents.1.parts.0.text", "tech_lead: Hi.")
		wiretest.Expect(t, body, "contents.2.role", "user")
		wiretest.Expect(t, body, "generationConfig.temperature", 0.25)
		wiretest.Expect(t, body, "generationConfig.maxOutputTokens", 256.0)
		wiretest.Expect(t, body, "generationConfig.responseMimeType", nil)
		wiretest.Expect(t, body, "tools", nil)
		wiretest.WriteJSON(w, 200, textResponse(
			map[string]any{"text": "I am thinking", "thought": true},
			map[string]any{"text": "Share your first "},
			map[string]any{"text": "containment step."},
		))
	})
	resp, err := f.model(t).Generate(context.Background(), llm.Request{
		System: "You are QA.",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Text: "Hello"},
			{Role: llm.RoleModel, Text: "tech_lead: Hi."},
			{Role: llm.RoleUser, Text: "Go on"},
		},
		MaxOutputTokens: 256,
		Temperature:     &temp,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Response{
		Text:         "Share your first containment step.",
		Usage:        llm.Usage{InputTokens: 12, OutputTokens: 10},
		FinishReason: "STOP",
	}
	if !reflect.DeepEqual(resp, want) {
		t.Fatalf("response = %#v, want %#v", resp, want)
	}
}

func TestGenerateFromTurn(t *testing.T) {
	f := newFake(t, func(_ int, body map[string]any, w http.ResponseWriter, _ *http.Request) {
		sys, _ := wiretest.At(body, "systemInstruction.parts.0.text").(string)
		for _, s := range []string{"You are QA.", llm.BriefBegin, "Turn goal: ask_for_repro", "- bug_summary: double charge", llm.BriefEnd} {
			if !strings.Contains(sys, s) {
				t.Errorf("system instruction lacks %q:\n%s", s, sys)
			}
		}
		wiretest.Expect(t, body, "contents.0.role", "model")
		wiretest.Expect(t, body, "contents.1.role", "user")
		last, _ := wiretest.At(body, "contents.1.parts.0.text").(string)
		if !strings.Contains(last, "[Candidate's last message: I can fix now]") {
			t.Errorf("last user turn = %q", last)
		}
		wiretest.WriteJSON(w, 200, textResponse(map[string]any{"text": "```json\n{\"text\":\"Show me the failing test.\",\"intent_tag\":\"qa_repro\"}\n```"}))
	})
	req := llm.FromTurn(&engine.LLMRequest{
		Role: "qa", TurnGoal: "ask_for_repro", System: "You are QA.", Model: testModel,
		CandidateLastMessage: "I can fix now",
		TranscriptTail: []engine.TranscriptLine{
			{Speaker: "tech_lead", Text: "We double charge."},
			{Speaker: "candidate", Text: "I can fix now"},
		},
		ScenarioContext: []engine.KV{{Key: "bug_summary", Value: "double charge"}},
	})
	m, err := New(context.Background(), Config{APIKey: testKey, BaseURL: f.srv.URL, Model: "ignored-default"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	reply, tag := llm.ParseReply(resp.Text)
	if reply != "Show me the failing test." || tag != "qa_repro" {
		t.Fatalf("ParseReply = (%q, %q)", reply, tag)
	}
}

func TestGenerateJSONSchema(t *testing.T) {
	f := newFake(t, func(_ int, body map[string]any, w http.ResponseWriter, _ *http.Request) {
		wiretest.Expect(t, body, "generationConfig.responseMimeType", "application/json")
		wiretest.Expect(t, body, "generationConfig.responseJsonSchema", decode(t, string(llm.ReplySchema)))
		wiretest.Expect(t, body, "generationConfig.responseSchema", nil)
		wiretest.WriteJSON(w, 200, textResponse(map[string]any{"text": `{"text":"Pick one: hotfix or launch?","intent_tag":"tl_priority"}`}))
	})
	resp, err := f.model(t).Generate(context.Background(), llm.Request{
		Messages:       []llm.Message{{Role: llm.RoleUser, Text: "Go"}},
		ResponseSchema: llm.ReplySchema,
	})
	if err != nil {
		t.Fatal(err)
	}
	if reply, tag := llm.ParseReply(resp.Text); reply != "Pick one: hotfix or launch?" || tag != "tl_priority" {
		t.Fatalf("ParseReply(%q) = (%q, %q)", resp.Text, reply, tag)
	}
}

func TestGenerateToolRoundTrip(t *testing.T) {
	params := `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`
	sig := []byte("opaque-signature")
	f := newFake(t, func(n int, body map[string]any, w http.ResponseWriter, _ *http.Request) {
		wiretest.Expect(t, body, "tools.0.functionDeclarations.0.name", "lookup_ticket")
		wiretest.Expect(t, body, "tools.0.functionDeclarations.0.description", "Fetch a ticket")
		wiretest.Expect(t, body, "tools.0.functionDeclarations.0.parametersJsonSchema", decode(t, params))
		wiretest.Expect(t, body, "tools.0.functionDeclarations.0.parameters", nil)
		switch n {
		case 0:
			wiretest.Expect(t, body, "contents.0.parts.0.text", "What is PAY-1?")
			wiretest.WriteJSON(w, 200, map[string]any{
				"candidates": []any{map[string]any{
					"content": map[string]any{"role": "model", "parts": []any{
						map[string]any{"functionCall": map[string]any{"name": "lookup_ticket", "args": map[string]any{"id": "PAY-1"}}, "thoughtSignature": base64.StdEncoding.EncodeToString(sig)},
						map[string]any{"functionCall": map[string]any{"id": "srv-9", "name": "lookup_ticket", "args": map[string]any{"id": "PAY-2"}}},
					}},
					"finishReason": "STOP",
				}},
			})
		case 1:
			wiretest.Expect(t, body, "contents.1.role", "model")
			wiretest.Expect(t, body, "contents.1.parts.0.functionCall", map[string]any{"id": "call-1", "name": "lookup_ticket", "args": map[string]any{"id": "PAY-1"}})
			wiretest.Expect(t, body, "contents.1.parts.0.thoughtSignature", base64.StdEncoding.EncodeToString(sig))
			wiretest.Expect(t, body, "contents.1.parts.1.functionCall.id", "srv-9")
			wiretest.Expect(t, body, "contents.2.role", "user")
			wiretest.Expect(t, body, "contents.2.parts.0.functionResponse", map[string]any{"id": "call-1", "name": "lookup_ticket", "response": map[string]any{"status": "open"}})
			wiretest.Expect(t, body, "contents.2.parts.1.functionResponse", map[string]any{"id": "srv-9", "name": "lookup_ticket", "response": map[string]any{"error": "not found"}})
			wiretest.Expect(t, body, "contents.3", nil)
			wiretest.WriteJSON(w, 200, textResponse(map[string]any{"text": "PAY-1 is open."}))
		default:
			t.Errorf("unexpected request %d", n)
		}
	})
	m := f.model(t)
	req := llm.Request{
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "What is PAY-1?"}},
		Tools:    []llm.ToolDecl{{Name: "lookup_ticket", Description: "Fetch a ticket", Parameters: json.RawMessage(params)}},
	}
	first, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	wantCalls := []llm.ToolCall{
		{ID: "call-1", Name: "lookup_ticket", Args: json.RawMessage(`{"id":"PAY-1"}`), Signature: sig},
		{ID: "srv-9", Name: "lookup_ticket", Args: json.RawMessage(`{"id":"PAY-2"}`)},
	}
	if !reflect.DeepEqual(first.ToolCalls, wantCalls) {
		t.Fatalf("tool calls = %#v, want %#v", first.ToolCalls, wantCalls)
	}
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleModel, ToolCalls: first.ToolCalls},
		llm.Message{Role: llm.RoleTool, ToolResult: &llm.ToolResult{CallID: "call-1", Name: "lookup_ticket", Content: json.RawMessage(`{"status":"open"}`)}},
		llm.Message{Role: llm.RoleTool, ToolResult: &llm.ToolResult{CallID: "srv-9", Name: "lookup_ticket", Content: json.RawMessage(`"not found"`), IsError: true}},
	)
	second, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if second.Text != "PAY-1 is open." || len(second.ToolCalls) != 0 {
		t.Fatalf("second response = %#v", second)
	}
	if f.hits() != 2 {
		t.Fatalf("server saw %d requests, want 2", f.hits())
	}
}

func TestGenerateErrors(t *testing.T) {
	tests := []struct {
		name      string
		respond   func(w http.ResponseWriter)
		kind      llm.Kind
		status    int
		retryable bool
		msg       string
	}{
		{
			name: "429 rate limit",
			respond: func(w http.ResponseWriter) {
				wiretest.WriteJSON(w, 429, map[string]any{"error": map[string]any{"code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": "RESOURCE_EXHAUSTED"}})
			},
			kind: llm.KindRateLimit, status: 429, retryable: true, msg: "exhausted",
		},
		{
			name: "429 with status name only",
			respond: func(w http.ResponseWriter) {
				wiretest.WriteJSON(w, 429, map[string]any{"error": map[string]any{"message": "quota", "status": "RESOURCE_EXHAUSTED"}})
			},
			kind: llm.KindRateLimit, status: 429, retryable: true, msg: "quota",
		},
		{
			name: "500 internal",
			respond: func(w http.ResponseWriter) {
				wiretest.WriteJSON(w, 500, map[string]any{"error": map[string]any{"code": 500, "message": "An internal error has occurred.", "status": "INTERNAL"}})
			},
			kind: llm.KindServer, status: 500, retryable: true, msg: "internal error",
		},
		{
			name: "503 plain text body",
			respond: func(w http.ResponseWriter) {
				w.WriteHeader(503)
				_, _ = io.WriteString(w, "upstream connect error")
			},
			kind: llm.KindServer, status: 503, retryable: true, msg: "upstream connect error",
		},
		{
			name: "501 is not retried",
			respond: func(w http.ResponseWriter) {
				wiretest.WriteJSON(w, 501, map[string]any{"error": map[string]any{"code": 501, "message": "nope", "status": "UNIMPLEMENTED"}})
			},
			kind: llm.KindServer, status: 501, retryable: false, msg: "nope",
		},
		{
			name: "400 bad request",
			respond: func(w http.ResponseWriter) {
				wiretest.WriteJSON(w, 400, map[string]any{"error": map[string]any{"code": 400, "message": "Invalid JSON payload", "status": "INVALID_ARGUMENT"}})
			},
			kind: llm.KindBadRequest, status: 400, retryable: false, msg: "Invalid JSON payload",
		},
		{
			name: "403 bad key",
			respond: func(w http.ResponseWriter) {
				wiretest.WriteJSON(w, 403, map[string]any{"error": map[string]any{"code": 403, "message": "API key not valid", "status": "PERMISSION_DENIED"}})
			},
			kind: llm.KindBadRequest, status: 403, retryable: false, msg: "API key not valid",
		},
		{
			name: "malformed 200 body",
			respond: func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"candidates": [{"content": `)
			},
			kind: llm.KindServer, retryable: true, msg: "malformed response body",
		},
		{
			name: "200 body of the wrong shape",
			respond: func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"candidates": "not a list"}`)
			},
			kind: llm.KindServer, retryable: true, msg: "malformed response body",
		},
		{
			name: "blocked prompt",
			respond: func(w http.ResponseWriter) {
				wiretest.WriteJSON(w, 200, map[string]any{"promptFeedback": map[string]any{"blockReason": "SAFETY"}})
			},
			kind: llm.KindBadRequest, retryable: false, msg: "prompt blocked: SAFETY",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, func(_ int, _ map[string]any, w http.ResponseWriter, _ *http.Request) { tt.respond(w) })
			_, err := f.model(t).Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}})
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T) is not *llm.Error", err, err)
			}
			if e.Kind != tt.kind || e.Status != tt.status || e.Retryable != tt.retryable {
				t.Errorf("got kind=%s status=%d retryable=%v, want kind=%s status=%d retryable=%v (%v)",
					e.Kind, e.Status, e.Retryable, tt.kind, tt.status, tt.retryable, err)
			}
			if !strings.Contains(e.Message, tt.msg) {
				t.Errorf("message %q lacks %q", e.Message, tt.msg)
			}
			if strings.Contains(e.Message, "\n") {
				t.Errorf("message spans lines: %q", e.Message)
			}
			// The SDK must not retry behind WithPolicy's back.
			if f.hits() != 1 {
				t.Errorf("server saw %d requests, want exactly 1", f.hits())
			}
			if ae := llm.AsAdapterError(err); ae.Kind != string(tt.kind) {
				t.Errorf("adapter error kind = %q", ae.Kind)
			}
		})
	}
}

// stall blocks a handler until the client gives up, or until the test ends
// so a stuck server never outlives it.
func stall(t *testing.T) func(int, map[string]any, http.ResponseWriter, *http.Request) {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	return func(_ int, _ map[string]any, _ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}
}

func TestGenerateDeadlineExceeded(t *testing.T) {
	f := newFake(t, stall(t))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := f.model(t).Generate(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}})
	e := llm.Classify(err)
	if e == nil || e.Kind != llm.KindTimeout || !e.Retryable {
		t.Fatalf("err = %v, want retryable timeout", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cause lost: %v", err)
	}
}

func TestGenerateCanceled(t *testing.T) {
	f := newFake(t, stall(t))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once the request is in flight.
		for f.hits() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := f.model(t).Generate(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}})
	if e := llm.Classify(err); e == nil || e.Kind != llm.KindCanceled || e.Retryable {
		t.Fatalf("err = %v, want non-retryable canceled", err)
	}
}

func TestGenerateNetworkError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	m, err := New(context.Background(), Config{APIKey: testKey, BaseURL: url, Model: testModel})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}})
	if e := llm.Classify(err); e == nil || e.Kind != llm.KindNetwork || !e.Retryable {
		t.Fatalf("err = %v, want retryable network", err)
	}
}

func TestRetryPolicyOverSDK(t *testing.T) {
	f := newFake(t, func(n int, _ map[string]any, w http.ResponseWriter, _ *http.Request) {
		switch n {
		case 0:
			wiretest.WriteJSON(w, 429, map[string]any{"error": map[string]any{"code": 429, "message": "quota"}})
		case 1:
			wiretest.WriteJSON(w, 503, map[string]any{"error": map[string]any{"code": 503, "message": "overloaded"}})
		default:
			wiretest.WriteJSON(w, 200, textResponse(map[string]any{"text": "finally"}))
		}
	})
	// The backoffs wait on the policy's clock, here a fake one that the
	// test moves past each wait.
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := llm.WithPolicy(f.model(t), llm.DefaultRetryPolicy(), clk)
	type result struct {
		resp llm.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := m.Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}})
		done <- result{resp, err}
	}()
	for _, wait := range []time.Duration{time.Second, 2 * time.Second} {
		want := clk.Now().Add(wait)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := clk.WaitFor(ctx, func(armed []time.Time) bool { return slices.ContainsFunc(armed, want.Equal) })
		cancel()
		if err != nil {
			t.Fatalf("no %v backoff on the clock (armed: %v)", wait, clk.Armed())
		}
		clk.Advance(wait)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.resp.Text != "finally" || f.hits() != 3 {
		t.Fatalf("text %q after %d requests", r.resp.Text, f.hits())
	}
}

func TestNewAPIKey(t *testing.T) {
	tests := []struct {
		name, explicit, gemini, google, want string
		err                                  error
	}{
		{name: "missing", err: ErrNoAPIKey},
		{name: "blank is missing", explicit: "  ", err: ErrNoAPIKey},
		{name: "explicit wins", explicit: "cfg", gemini: "g1", google: "g2", want: "cfg"},
		{name: "GEMINI_API_KEY", gemini: "g1", google: "g2", want: "g1"},
		{name: "GOOGLE_API_KEY", google: "g2", want: "g2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GEMINI_API_KEY", tt.gemini)
			t.Setenv("GOOGLE_API_KEY", tt.google)
			f := newFake(t, func(_ int, _ map[string]any, w http.ResponseWriter, _ *http.Request) {
				wiretest.WriteJSON(w, 200, textResponse(map[string]any{"text": "ok"}))
			})
			f.wantKey = tt.want
			m, err := New(context.Background(), Config{APIKey: tt.explicit, BaseURL: f.srv.URL, Model: testModel})
			if tt.err != nil {
				if !errors.Is(err, tt.err) || m != nil {
					t.Fatalf("New = %v, %v; want %v", m, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestNewRejectsBadBaseURL(t *testing.T) {
	if _, err := New(context.Background(), Config{APIKey: testKey, BaseURL: "not a url"}); err == nil {
		t.Fatal("New accepted a base URL without scheme and host")
	}
}

func TestDefaultModel(t *testing.T) {
	m, err := New(context.Background(), Config{APIKey: testKey, BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if m.model != DefaultModel {
		t.Fatalf("model = %q, want %q", m.model, DefaultModel)
	}
}
