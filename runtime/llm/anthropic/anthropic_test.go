package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/llm/anthropic/anthropicfake"
	"github.com/batonhq/baton/runtime/llm/llmtest"
)

// TestConformance runs the vendor-neutral suite against the adapter and
// anthropicfake, the strict stand-in written from the Messages API
// reference. Anthropic gives every tool call an ID and, with thinking off,
// no state to return with it.
func TestConformance(t *testing.T) {
	llmtest.Conformance(t, anthropicVendor{})
}

// anthropicVendor plugs the adapter and anthropicfake into llmtest.
type anthropicVendor struct{}

func (anthropicVendor) Caps() llmtest.Caps {
	return llmtest.Caps{OptionalCallIDs: false, Signatures: false}
}

func (anthropicVendor) Start(t *testing.T, script ...llmtest.Reply) llmtest.Fake {
	replies := make([]anthropicfake.Reply, len(script))
	for i, r := range script {
		replies[i] = anthropicfake.Render(r)
	}
	s, m := newFake(t, anthropicfake.Script(replies...))
	return &anthropicFake{s: s, m: m}
}

type anthropicFake struct {
	s *anthropicfake.Server
	m *Model
}

func (f *anthropicFake) Model() llm.Model { return f.m }

func (f *anthropicFake) Validate(body []byte) error { return f.s.Validate(body) }

func (f *anthropicFake) Requests() []llmtest.Received {
	return f.s.Neutral((*anthropicfake.Request).View)
}

func newFake(t testing.TB, b anthropicfake.Behavior) (*anthropicfake.Server, *Model) {
	t.Helper()
	// Alternating: the adapter promises alternating turns, which Claude
	// on other platforms requires.
	s := anthropicfake.Start(anthropicfake.Config{Behavior: b, Alternating: true})
	t.Cleanup(s.Close)
	m, err := New(context.Background(), Config{APIKey: s.APIKey, BaseURL: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	return s, m
}

var hi = llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}

// TestGenerateText covers what the suite leaves to each vendor: answers in
// several text blocks, thinking blocks to skip, cached input tokens that
// input_tokens leaves out, and the stop reason.
func TestGenerateText(t *testing.T) {
	thought := "the candidate wants to ship"
	s, m := newFake(t, anthropicfake.Script(anthropicfake.Reply{
		Blocks: []anthropicfake.OutBlock{
			{Type: "thinking", Thinking: &thought, Signature: "sig"},
			{Type: "text", Text: ptr("Share your first ")},
		},
		Text:  "containment step.",
		Usage: &anthropicfake.Usage{InputTokens: 12, CacheReadInputTokens: 100, CacheCreationInputTokens: 3, OutputTokens: 7},
	}))
	resp, err := m.Generate(context.Background(), hi)
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Response{
		Text:         "Share your first containment step.",
		Usage:        llm.Usage{InputTokens: 115, OutputTokens: 7},
		FinishReason: "end_turn",
	}
	if !reflect.DeepEqual(resp, want) {
		t.Fatalf("response = %#v, want %#v", resp, want)
	}
	if got := s.RequireValid(t); got[0].Request.Model != DefaultModel {
		t.Errorf("model = %q, want %q", got[0].Request.Model, DefaultModel)
	}
}

func ptr[T any](v T) *T { return &v }

// TestGenerateFromTurn checks an engine turn end to end on the wire: the
// role's own line is its assistant turn, unlabelled; the other agent's and
// the candidate's words are attributed text in user turns, which
// alternate with the assistant's.
func TestGenerateFromTurn(t *testing.T) {
	s, _ := newFake(t, anthropicfake.Script(anthropicfake.Text("```json\n{\"text\":\"Show me the failing test.\",\"intent_tag\":\"qa_repro\"}\n```")))
	req := llm.FromTurn(&engine.LLMRequest{
		Role: "qa", TurnGoal: "ask_for_repro", System: "You are QA.", Model: "claude-haiku-4-5",
		CandidateLastMessage: "I can fix now",
		TranscriptTail: []engine.TranscriptLine{
			{Speaker: "tech_lead", Text: "We double charge."},
			{Speaker: "qa", Text: "Since when?"},
			{Speaker: "ba", Text: "Since Monday."},
			{Speaker: "candidate", Text: "I can fix now"},
		},
		ScenarioContext: []engine.KV{{Key: "bug_summary", Value: "double charge"}},
	})
	m, err := New(context.Background(), Config{APIKey: s.APIKey, BaseURL: s.URL, Model: "ignored-default"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if reply, tag := llm.ParseReply(resp.Text); reply != "Show me the failing test." || tag != "qa_repro" {
		t.Fatalf("ParseReply = (%q, %q)", reply, tag)
	}
	got := s.RequireValid(t)[0].Request
	if got.Model != "claude-haiku-4-5" {
		t.Errorf("model = %q, want the request's", got.Model)
	}
	sys := got.View().System
	for _, want := range []string{"You are QA.", llm.BriefBegin, "Turn goal: ask_for_repro", "- bug_summary: double charge", llm.BriefEnd} {
		if !strings.Contains(sys, want) {
			t.Errorf("system lacks %q:\n%s", want, sys)
		}
	}
	var turns []string
	for _, m := range got.Messages {
		var texts []string
		for _, b := range m.Content {
			texts = append(texts, b.Text)
		}
		turns = append(turns, m.Role+": "+strings.Join(texts, " | "))
	}
	want := []string{
		"user: (tech_lead said)\n> We double charge.",
		"assistant: Since when?",
		"user: (ba said)\n> Since Monday. | (candidate said)\n> I can fix now | [Turn goal: ask_for_repro]\n[Candidate's last message: I can fix now]",
	}
	if !reflect.DeepEqual(turns, want) {
		t.Errorf("turns:\n%q\nwant:\n%q", turns, want)
	}
}

// wireBody is a request body as sent, for checks on the exact wire.
type wireBody struct {
	MaxTokens    int                          `json:"max_tokens"`
	Temperature  *float64                     `json:"temperature"`
	Messages     []map[string]json.RawMessage `json:"messages"`
	Tools        []map[string]json.RawMessage `json:"tools"`
	OutputConfig *struct {
		Format struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	} `json:"output_config"`
}

func decodeWire(t *testing.T, body []byte) wireBody {
	t.Helper()
	var w wireBody
	if err := json.Unmarshal(body, &w); err != nil {
		t.Fatalf("request body: %v\n%s", err, body)
	}
	return w
}

func roles(w wireBody) []string {
	var out []string
	for _, m := range w.Messages {
		var r string
		_ = json.Unmarshal(m["role"], &r)
		out = append(out, r)
	}
	return out
}

// TestWireToolTurn pins the Anthropic wire of a tool round: one assistant
// message with the text and then every tool_use with the model's IDs, one
// user message answering them with tool_result blocks in call order (and
// then the next user text in the same message, strictly alternating),
// is_error on the failed call and the content exactly as the engine wrote
// it.
func TestWireToolTurn(t *testing.T) {
	s, m := newFake(t, anthropicfake.Script(
		anthropicfake.Reply{Text: "Checking.", Calls: []anthropicfake.Call{
			{ID: "toolu_1", Name: "lookup", Input: map[string]any{"id": "A"}},
			{ID: "toolu_2", Name: "lookup", Input: map[string]any{"id": "B"}},
		}},
		anthropicfake.Text("done"),
	))
	req := llm.Request{
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "Look up A and B."}},
		Tools:    []llm.ToolDecl{{Name: "lookup", Parameters: json.RawMessage(`{"properties":{"id":{"type":"string"}}}`)}},
	}
	first, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.ToolCalls) != 2 || first.ToolCalls[0].ID != "toolu_1" || first.ToolCalls[1].ID != "toolu_2" || string(first.ToolCalls[1].Args) != `{"id":"B"}` {
		t.Fatalf("tool calls = %+v", first.ToolCalls)
	}
	if first.FinishReason != "tool_use" {
		t.Errorf("finish reason = %q", first.FinishReason)
	}
	calls := first.ToolCalls
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleModel, Text: first.Text, ToolCalls: calls},
		llm.Message{Role: llm.RoleTool, ToolResult: &llm.ToolResult{CallID: "toolu_1", Name: "lookup", Content: json.RawMessage(`{"error":"refused"}`), IsError: true}},
		llm.Message{Role: llm.RoleTool, ToolResult: &llm.ToolResult{CallID: "toolu_2", Name: "lookup", Content: json.RawMessage(`"B is closed"`)}},
		llm.Message{Role: llm.RoleUser, Text: "Summarise."},
	)
	if _, err := m.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	got := s.RequireValid(t)
	w := decodeWire(t, got[1].Body)
	if r := roles(w); !reflect.DeepEqual(r, []string{"user", "assistant", "user"}) {
		t.Fatalf("roles = %v, want strictly alternating user, assistant, user", r)
	}
	var model, results []map[string]any
	_ = json.Unmarshal(w.Messages[1]["content"], &model)
	_ = json.Unmarshal(w.Messages[2]["content"], &results)
	wantModel := []map[string]any{
		{"type": "text", "text": "Checking."},
		{"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": map[string]any{"id": "A"}},
		{"type": "tool_use", "id": "toolu_2", "name": "lookup", "input": map[string]any{"id": "B"}},
	}
	if !reflect.DeepEqual(model, wantModel) {
		t.Errorf("assistant content = %v\nwant %v", model, wantModel)
	}
	wantResults := []map[string]any{
		{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true, "content": []any{map[string]any{"type": "text", "text": `{"error":"refused"}`}}},
		{"type": "tool_result", "tool_use_id": "toolu_2", "content": []any{map[string]any{"type": "text", "text": `"B is closed"`}}},
		{"type": "text", "text": "Summarise."},
	}
	if !reflect.DeepEqual(results, wantResults) {
		t.Errorf("user content = %v\nwant %v", results, wantResults)
	}
	// The schema gained the "type" the API requires, and nothing else.
	var schema map[string]any
	_ = json.Unmarshal(w.Tools[0]["input_schema"], &schema)
	if want := map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}}; !reflect.DeepEqual(schema, want) {
		t.Errorf("input_schema = %v, want %v", schema, want)
	}
}

// TestMismatchedHistoryIsRefused shows what pairing by ID guards against:
// a result for a call the previous turn did not make (and so no result for
// the call it did make) is a 400, classified bad_request, with the
// service's message.
func TestMismatchedHistoryIsRefused(t *testing.T) {
	s, m := newFake(t, nil)
	req := llm.Request{Messages: []llm.Message{
		{Role: llm.RoleUser, Text: "Look up A."},
		{Role: llm.RoleModel, ToolCalls: []llm.ToolCall{{ID: "toolu_1", Name: "lookup", Args: json.RawMessage(`{"id":"A"}`)}}},
		{Role: llm.RoleTool, ToolResult: &llm.ToolResult{CallID: "toolu_9", Name: "lookup", Content: json.RawMessage(`{}`)}},
	}}
	_, err := m.Generate(context.Background(), req)
	e := llm.Classify(err)
	if e.Kind != llm.KindBadRequest || e.Status != 400 || !strings.Contains(e.Message, "`tool_result` block") || !strings.HasPrefix(e.Message, "anthropic: ") {
		t.Fatalf("err = %v, want a 400 about the unanswered call", err)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("server saw %d requests", n)
	}
}

func TestGenerateErrors(t *testing.T) {
	tests := []struct {
		name      string
		reply     anthropicfake.Reply
		kind      llm.Kind
		status    int
		retryable bool
		msg       string
	}{
		{"429 rate limit", anthropicfake.Error(429, "Number of request tokens has exceeded your per-minute rate limit"), llm.KindRateLimit, 429, true, "per-minute rate limit"},
		{"529 overloaded", anthropicfake.Error(529, "Overloaded"), llm.KindServer, 529, true, "Overloaded"},
		{"500 api error", anthropicfake.Error(500, "Internal server error"), llm.KindServer, 500, true, "Internal server error"},
		{"503 plain text body", anthropicfake.Reply{Status: 503, Body: []byte("upstream connect error\nor disconnect")}, llm.KindServer, 503, true, "upstream connect error"},
		{"504 timeout error", anthropicfake.Error(504, "Request timed out"), llm.KindServer, 504, true, "timed out"},
		{"501 is not retried", anthropicfake.Error(501, "nope"), llm.KindServer, 501, false, "nope"},
		{"408 request timeout", anthropicfake.Error(408, "slow upload"), llm.KindTimeout, 408, true, "slow upload"},
		{"400 bad request", anthropicfake.Error(400, "messages: text content blocks must be non-empty"), llm.KindBadRequest, 400, false, "text content blocks must be non-empty"},
		{"401 bad key", anthropicfake.Reply{Status: 401, ErrorType: "authentication_error", Message: "invalid x-api-key"}, llm.KindBadRequest, 401, false, "invalid x-api-key"},
		{"error body without a message", anthropicfake.Reply{Status: 429, Body: []byte(`{"type":"error","error":{"type":"rate_limit_error"}}`)}, llm.KindRateLimit, 429, true, "rate_limit_error"},
		{"empty 529 body", anthropicfake.Reply{Status: 529, Body: []byte{}}, llm.KindServer, 529, true, "overloaded"},
		{"malformed 200 body", anthropicfake.Reply{Body: []byte(`{"content": [`)}, llm.KindServer, 0, true, "malformed response body"},
		{"200 body of the wrong shape", anthropicfake.Reply{Body: []byte(`{"type":"message","content":"not a list"}`)}, llm.KindServer, 0, true, "malformed response body"},
		{"200 text of the wrong type", anthropicfake.Reply{Body: []byte(`{"type":"message","content":[{"type":"text","text":5}]}`)}, llm.KindServer, 0, true, "malformed response body"},
		{"200 body without content", anthropicfake.Reply{Body: []byte(`{"type":"message"}`)}, llm.KindServer, 0, true, "no content"},
		{"200 tool_use without an id", anthropicfake.Reply{Body: []byte(`{"type":"message","content":[{"type":"tool_use","name":"f","input":{}}]}`)}, llm.KindServer, 0, true, "needs an id"},
		{"200 tool_use with a string input", anthropicfake.Reply{Body: []byte(`{"type":"message","content":[{"type":"tool_use","id":"t","name":"f","input":"x"}]}`)}, llm.KindServer, 0, true, "object input"},
		{"200 HTML page", anthropicfake.Reply{Body: []byte(`<html>gateway</html>`)}, llm.KindServer, 0, true, "malformed response body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, m := newFake(t, anthropicfake.Script(tt.reply))
			_, err := m.Generate(context.Background(), hi)
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T) is not *llm.Error", err, err)
			}
			if e.Kind != tt.kind || e.Status != tt.status || e.Retryable != tt.retryable {
				t.Errorf("got kind=%s status=%d retryable=%v, want kind=%s status=%d retryable=%v (%v)",
					e.Kind, e.Status, e.Retryable, tt.kind, tt.status, tt.retryable, err)
			}
			if !strings.Contains(e.Message, tt.msg) || !strings.HasPrefix(e.Message, "anthropic: ") {
				t.Errorf("message %q lacks %q or the anthropic prefix", e.Message, tt.msg)
			}
			if strings.Contains(e.Message, "\n") {
				t.Errorf("message spans lines: %q", e.Message)
			}
			// The SDK must not retry behind WithPolicy's back.
			if n := len(s.RequireValid(t)); n != 1 {
				t.Errorf("server saw %d requests, want exactly 1", n)
			}
		})
	}
}

// TestTimeout: a call whose deadline passes while the server holds it is a
// retryable timeout that keeps the context's error.
func TestTimeout(t *testing.T) {
	s, m := newFake(t, anthropicfake.Script(anthropicfake.Hang()))
	// The deadline passes once the request is in the server, so the
	// outcome does not depend on the machine's speed.
	expired := &expiring{Context: context.Background(), done: make(chan struct{})}
	go func() {
		for len(s.Requests()) == 0 {
			time.Sleep(time.Millisecond)
		}
		expired.expire()
	}()
	_, err := m.Generate(expired, hi)
	e := llm.Classify(err)
	if e == nil || e.Kind != llm.KindTimeout || !e.Retryable || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a retryable timeout wrapping context.DeadlineExceeded", err)
	}
	if !strings.HasPrefix(e.Message, "anthropic: ") {
		t.Errorf("message = %q", e.Message)
	}
}

// expiring is a context whose deadline passes when expire is called.
type expiring struct {
	context.Context
	done chan struct{}
}

func (x *expiring) expire()               { close(x.done) }
func (x *expiring) Done() <-chan struct{} { return x.done }
func (x *expiring) Err() error {
	select {
	case <-x.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func TestGenerateNetworkError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	m, err := New(context.Background(), Config{APIKey: "k", BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Generate(context.Background(), hi)
	if e := llm.Classify(err); e == nil || e.Kind != llm.KindNetwork || !e.Retryable || !strings.HasPrefix(e.Message, "anthropic: ") {
		t.Fatalf("err = %v, want retryable network", err)
	}
}

// TestMaxTokens: MaxOutputTokens is max_tokens on the wire, and a request
// without one gets DefaultMaxTokens, never 0 (which the API reads as "only
// fill the prompt cache": the answer would be empty).
func TestMaxTokens(t *testing.T) {
	for _, tt := range []struct {
		in, want int
	}{{256, 256}, {0, DefaultMaxTokens}, {-5, DefaultMaxTokens}, {64000, 64000}} {
		s, m := newFake(t, anthropicfake.Script(anthropicfake.Text("ok")))
		req := hi
		req.MaxOutputTokens = tt.in
		resp, err := m.Generate(context.Background(), req)
		if err != nil {
			t.Fatalf("MaxOutputTokens %d: %v", tt.in, err)
		}
		if resp.Text != "ok" {
			t.Errorf("MaxOutputTokens %d: text %q", tt.in, resp.Text)
		}
		if got := s.RequireValid(t)[0].Request.MaxTokens; got != tt.want {
			t.Errorf("MaxOutputTokens %d: max_tokens = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// TestTemperature: a float32 setting reaches the wire as the decimal the
// caller wrote, and no setting sends no temperature.
func TestTemperature(t *testing.T) {
	for _, tt := range []struct {
		in   *float32
		want *float64
	}{{ptr[float32](0.7), ptr(0.7)}, {ptr[float32](0), ptr(0.0)}, {nil, nil}} {
		s, m := newFake(t, nil)
		req := hi
		req.Temperature = tt.in
		if _, err := m.Generate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		got := decodeWire(t, s.RequireValid(t)[0].Body).Temperature
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("temperature %v: wire %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestStructuredOutput: the response schema goes to output_config.format
// with every open object closed, as the API requires, and nothing else
// changed; a schema that already closes its objects goes out as written.
func TestStructuredOutput(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		// The order of the properties is kept: it is the order in which
		// the model writes the answer's fields.
		{"reply schema", string(llm.ReplySchema), `{"type":"object","properties":{"text":{"type":"string"},"intent_tag":{"type":"string"}},"required":["text"],"additionalProperties":false}`},
		{"nested objects", `{"type":"object","properties":{"a":{"type":["object","null"],"properties":{"n":{"type":"integer","enum":[12345678901234567890]}}},"b":{"type":"array","items":{"type":"object"}}},"$defs":{"d":{"anyOf":[{"type":"object"},{"type":"string"}]}},"additionalProperties":false}`,
			`{"type":"object","properties":{"a":{"type":["object","null"],"properties":{"n":{"type":"integer","enum":[12345678901234567890]}},"additionalProperties":false},"b":{"type":"array","items":{"type":"object","additionalProperties":false}}},"$defs":{"d":{"anyOf":[{"type":"object","additionalProperties":false},{"type":"string"}]}},"additionalProperties":false}`},
		{"already closed", `{"type":"object","additionalProperties":false,"properties":{"x":{"type":"number","description":"<b>"}}}`, `{"type":"object","additionalProperties":false,"properties":{"x":{"type":"number","description":"<b>"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, m := newFake(t, anthropicfake.Script(anthropicfake.Text(`{"text":"ok"}`)))
			req := hi
			req.ResponseSchema = json.RawMessage(tt.in)
			resp, err := m.Generate(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != `{"text":"ok"}` {
				t.Errorf("text = %q", resp.Text)
			}
			oc := decodeWire(t, s.RequireValid(t)[0].Body).OutputConfig
			if oc == nil || oc.Format.Type != "json_schema" {
				t.Fatalf("output_config = %+v", oc)
			}
			got := oc.Format.Schema
			if !strings.Contains(tt.want, "<") && string(got) != tt.want || !sameJSON(t, got, []byte(tt.want)) {
				t.Errorf("schema = %s\nwant %s", got, tt.want)
			}
		})
	}
	// An object left open on purpose is the author's to fix: the API's
	// refusal comes back as a bad request.
	_, m := newFake(t, nil)
	req := hi
	req.ResponseSchema = json.RawMessage(`{"type":"object","additionalProperties":true}`)
	if _, err := m.Generate(context.Background(), req); llm.Classify(err).Kind != llm.KindBadRequest || !strings.Contains(err.Error(), "additionalProperties") {
		t.Errorf("an open object: err = %v, want a bad request about additionalProperties", err)
	}
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	da, db := json.NewDecoder(strings.NewReader(string(a))), json.NewDecoder(strings.NewReader(string(b)))
	da.UseNumber()
	db.UseNumber()
	if err := da.Decode(&x); err != nil {
		t.Fatalf("%v: %s", err, a)
	}
	if err := db.Decode(&y); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return reflect.DeepEqual(x, y)
}

// TestAttachmentsWire: each file goes in the block the API reads it from,
// after its label, a document titled with the file's name; a file type
// with no block fails locally.
func TestAttachmentsWire(t *testing.T) {
	s, m := newFake(t, nil)
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "Read these.", Blobs: []llm.Blob{
		{Name: "cv.pdf", MIME: "application/pdf", Data: []byte("%PDF-1.7\n")},
		{Name: "notes.md", MIME: "text/markdown; charset=utf-8", Data: []byte("# Notes\n")},
		{MIME: "image/webp", Data: []byte("RIFF\x00\x00\x00\x00WEBPVP8 ")},
	}}}}
	if _, err := m.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var content []map[string]any
	_ = json.Unmarshal(decodeWire(t, s.RequireValid(t)[0].Body).Messages[0]["content"], &content)
	want := []map[string]any{
		{"type": "text", "text": "Read these."},
		{"type": "text", "text": `Attached file "cv.pdf" (application/pdf):`},
		{"type": "document", "title": "cv.pdf", "source": map[string]any{"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjcK"}},
		{"type": "text", "text": `Attached file "notes.md" (text/markdown; charset=utf-8):`},
		{"type": "document", "title": "notes.md", "source": map[string]any{"type": "text", "media_type": "text/plain", "data": "# Notes\n"}},
		{"type": "text", "text": "Attached file 3 (image/webp):"},
		{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/webp", "data": "UklGRgAAAABXRUJQVlA4IA=="}},
	}
	if !reflect.DeepEqual(content, want) {
		t.Errorf("content =\n%v\nwant\n%v", content, want)
	}
	for _, b := range []llm.Blob{{MIME: "audio/wav", Data: []byte("RIFF")}, {MIME: "text/plain", Data: []byte{0xff, 0xfe}}, {MIME: "not a type"}} {
		req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "x", Blobs: []llm.Blob{b}}}}
		if _, err := m.Generate(context.Background(), req); llm.Classify(err).Kind != llm.KindBadRequest {
			t.Errorf("%s: err = %v, want a local bad request", b.MIME, err)
		}
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("the server saw %d requests, want 1", n)
	}
}

func TestNewAPIKey(t *testing.T) {
	tests := []struct {
		name, explicit, env, want string
		err                       error
	}{
		{name: "missing", err: ErrNoAPIKey},
		{name: "blank is missing", explicit: "  ", env: " ", err: ErrNoAPIKey},
		{name: "explicit wins", explicit: "cfg", env: "env", want: "cfg"},
		{name: "ANTHROPIC_API_KEY", env: "env", want: "env"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("ANTHROPIC_API_KEY", tt.env)
			s := anthropicfake.Start(anthropicfake.Config{APIKey: tt.want})
			t.Cleanup(s.Close)
			m, err := New(context.Background(), Config{APIKey: tt.explicit, BaseURL: s.URL})
			if tt.err != nil {
				if !errors.Is(err, tt.err) || m != nil {
					t.Fatalf("New = %v, %v; want %v", m, err, tt.err)
				}
				if !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
					t.Errorf("the error does not name ANTHROPIC_API_KEY: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// The fake refuses any other key.
			if _, err := m.Generate(context.Background(), hi); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestNewBaseURL(t *testing.T) {
	s, _ := newFake(t, nil)
	// From the environment when Config.BaseURL is empty.
	t.Setenv("ANTHROPIC_BASE_URL", s.URL)
	m, err := New(context.Background(), Config{APIKey: s.APIKey})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), hi); err != nil {
		t.Fatalf("via $ANTHROPIC_BASE_URL: %v", err)
	}
	// Config.BaseURL wins over the environment.
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	m, err = New(context.Background(), Config{APIKey: s.APIKey, BaseURL: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), hi); err != nil {
		t.Fatalf("via Config.BaseURL: %v", err)
	}
	if n := len(s.RequireValid(t)); n != 2 {
		t.Errorf("the fake saw %d requests, want 2", n)
	}
	for _, bad := range []string{"not a url", "/v1", "http://"} {
		if _, err := New(context.Background(), Config{APIKey: "k", BaseURL: bad}); err == nil {
			t.Errorf("New accepted base URL %q", bad)
		}
	}
	t.Setenv("ANTHROPIC_BASE_URL", "")
	if got, err := BaseURL(""); got != "" || err != nil {
		t.Errorf(`BaseURL("") = %q, %v; want the SDK default ("")`, got, err)
	}
}

func TestDefaultModel(t *testing.T) {
	m, err := New(context.Background(), Config{APIKey: "k", BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if m.model != DefaultModel || DefaultModel != sdk.ModelClaudeSonnet4_6 {
		t.Fatalf("model = %q, DefaultModel = %q", m.model, DefaultModel)
	}
}

// TestInvalidRequestsStayLocal lists what the adapter cannot express; each
// fails before any traffic.
func TestInvalidRequestsStayLocal(t *testing.T) {
	user := llm.Message{Role: llm.RoleUser, Text: "hi"}
	call := llm.Message{Role: llm.RoleModel, ToolCalls: []llm.ToolCall{{ID: "t1", Name: "f"}}}
	tests := []struct {
		name string
		req  llm.Request
	}{
		{"unknown role", llm.Request{Messages: []llm.Message{{Role: "system", Text: "x"}}}},
		{"tool message without result", llm.Request{Messages: []llm.Message{user, call, {Role: llm.RoleTool}}}},
		{"call without an ID", llm.Request{Messages: []llm.Message{user, {Role: llm.RoleModel, ToolCalls: []llm.ToolCall{{Name: "f"}}}}}},
		{"result without a call ID", llm.Request{Messages: []llm.Message{user, call, {Role: llm.RoleTool, ToolResult: &llm.ToolResult{Name: "f", Content: json.RawMessage(`1`)}}}}},
		{"args not an object", llm.Request{Messages: []llm.Message{user, {Role: llm.RoleModel, ToolCalls: []llm.ToolCall{{ID: "t1", Name: "f", Args: json.RawMessage(`[1]`)}}}}}},
		{"result not JSON", llm.Request{Messages: []llm.Message{user, call, {Role: llm.RoleTool, ToolResult: &llm.ToolResult{CallID: "t1", Name: "f", Content: json.RawMessage(`nope`)}}}}},
		{"tool without name", llm.Request{Messages: []llm.Message{user}, Tools: []llm.ToolDecl{{Description: "x"}}}},
		{"parameters not an object", llm.Request{Messages: []llm.Message{user}, Tools: []llm.ToolDecl{{Name: "f", Parameters: json.RawMessage(`"string"`)}}}},
		{"parameters of another type", llm.Request{Messages: []llm.Message{user}, Tools: []llm.ToolDecl{{Name: "f", Parameters: json.RawMessage(`{"type":"array"}`)}}}},
		{"schema not an object", llm.Request{Messages: []llm.Message{user}, ResponseSchema: json.RawMessage(`[`)}},
		{"nothing to send", llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "  "}, {Role: llm.RoleModel}}}},
		{"no messages", llm.Request{}},
	}
	s, m := newFake(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := m.Generate(context.Background(), tt.req)
			var e *llm.Error
			if !errors.As(err, &e) || e.Kind != llm.KindBadRequest || e.Retryable || !strings.HasPrefix(e.Message, "anthropic: ") {
				t.Fatalf("err = %v, want non-retryable bad_request", err)
			}
		})
	}
	if n := len(s.Requests()); n != 0 {
		t.Errorf("the server saw %d requests, want none", n)
	}
}
