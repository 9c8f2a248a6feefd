package openai

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

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/llm/llmtest"
	"github.com/batonhq/baton/runtime/llm/openai/openaifake"
)

// TestConformance runs the vendor-neutral suite against the adapter and
// openaifake, the strict stand-in written from OpenAI's API reference.
// Chat Completions takes PDFs only as file parts (the file-inputs guide
// tells callers to send other files' text as a text part, which the
// adapter does and TestAttachments pins); the fake refuses a text/plain
// file part as the API does, and TextFilesAsText tells the suite.
func TestConformance(t *testing.T) {
	llmtest.Conformance(t, openaiVendor{})
}

// openaiVendor plugs the adapter and openaifake into llmtest. Chat
// Completions gives every tool call an ID and carries no state with calls.
type openaiVendor struct{}

func (openaiVendor) Caps() llmtest.Caps {
	return llmtest.Caps{TextFilesAsText: true}
}

func (openaiVendor) Start(t *testing.T, script ...llmtest.Reply) llmtest.Fake {
	replies := make([]openaifake.Reply, len(script))
	for i, r := range script {
		replies[i] = openaifake.Render(r)
	}
	s, m := newFake(t, openaifake.Script(replies...))
	return &openaiFake{s: s, m: m}
}

type openaiFake struct {
	s *openaifake.Server
	m *Model
}

func (f *openaiFake) Model() llm.Model { return f.m }

func (f *openaiFake) Validate(body []byte) error { return f.s.Validate(body) }

func (f *openaiFake) Requests() []llmtest.Received { return f.s.Neutral((*openaifake.Request).View) }

func newFake(t *testing.T, b openaifake.Behavior) (*openaifake.Server, *Model) {
	t.Helper()
	s := openaifake.New(b)
	t.Cleanup(s.Close)
	m, err := New(context.Background(), Config{APIKey: s.APIKey, BaseURL: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	return s, m
}

var hi = llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}

func TestGenerateText(t *testing.T) {
	s, m := newFake(t, openaifake.Script(openaifake.Reply{
		Text:  "Share your first containment step.",
		Usage: &openaifake.Usage{PromptTokens: 12, CompletionTokens: 10, TotalTokens: 22},
	}))
	resp, err := m.Generate(context.Background(), hi)
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Response{
		Text:         "Share your first containment step.",
		Usage:        llm.Usage{InputTokens: 12, OutputTokens: 10},
		FinishReason: "stop",
	}
	if !equalResponse(resp, want) {
		t.Fatalf("response = %#v, want %#v", resp, want)
	}
	if got := s.RequireValid(t); got[0].Request.Model != DefaultModel {
		t.Errorf("model = %q, want %q", got[0].Request.Model, DefaultModel)
	}
}

func equalResponse(a, b llm.Response) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// TestWire pins what the reference leaves to the adapter: a system
// message first, max_completion_tokens (not the deprecated max_tokens,
// which reasoning models refuse), temperature as its decimal, the request's
// model over the default, and the response schema under a name.
func TestWire(t *testing.T) {
	s, m := newFake(t, nil)
	temp := float32(0.1)
	_, err := m.Generate(context.Background(), llm.Request{
		Model:           "gpt-4.1",
		System:          "You are QA.",
		Messages:        hi.Messages,
		MaxOutputTokens: 300,
		Temperature:     &temp,
		ResponseSchema:  llm.ReplySchema,
	})
	if err != nil {
		t.Fatal(err)
	}
	got := s.RequireValid(t)[0]
	var body map[string]any
	if err := json.Unmarshal(got.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body["max_completion_tokens"] != 300.0 {
		t.Errorf("max_completion_tokens = %v, want 300", body["max_completion_tokens"])
	}
	if _, ok := body["max_tokens"]; ok {
		t.Errorf("max_tokens is sent: %s", got.Body)
	}
	if !strings.Contains(string(got.Body), `"temperature":0.1`) {
		t.Errorf("temperature is not sent as 0.1: %s", got.Body)
	}
	req := got.Request
	if req.Model != "gpt-4.1" {
		t.Errorf("model = %q, want the request's", req.Model)
	}
	if len(req.Messages) != 2 || req.Messages[0].Role != "system" || req.Messages[0].Content.String() != "You are QA." {
		t.Errorf("messages = %+v, want the system message first", req.Messages)
	}
	rf := req.ResponseFormat
	if rf == nil || rf.Type != "json_schema" || rf.JSONSchema == nil || rf.JSONSchema.Name != ResponseFormatName || rf.JSONSchema.Strict != nil {
		t.Fatalf("response_format = %+v, want a non-strict json_schema", rf)
	}
	if string(rf.JSONSchema.Schema) != string(llm.ReplySchema) {
		t.Errorf("schema = %s, want the bytes given", rf.JSONSchema.Schema)
	}

	// Without a limit, no limit is sent.
	if _, err := m.Generate(context.Background(), hi); err != nil {
		t.Fatal(err)
	}
	if b := s.RequireValid(t)[1].Body; strings.Contains(string(b), "max_completion_tokens") || strings.Contains(string(b), "temperature") {
		t.Errorf("unset options are sent: %s", b)
	}
}

// TestWireToolTurn pins the wire of a tool round: the assistant message
// with its text and every call, each with the model's ID and arguments as
// the model gave them; one tool message per result, by call ID; an error
// result that is not already {"error": ...} wrapped once so the model can
// tell it failed.
func TestWireToolTurn(t *testing.T) {
	s, m := newFake(t, openaifake.Script(
		openaifake.Reply{Text: "Checking.", Calls: []openaifake.Call{
			{ID: "call_a", Name: "lookup", Args: `{"id": "A"}`},
			{ID: "call_b", Name: "lookup", Args: json.RawMessage(`{"id":"B"}`)},
		}},
		openaifake.Text("done"),
	))
	req := llm.Request{
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "Look up A and B."}},
		Tools:    []llm.ToolDecl{{Name: "lookup", Parameters: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`)}},
	}
	first, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if first.FinishReason != "tool_calls" || len(first.ToolCalls) != 2 || first.ToolCalls[0].ID != "call_a" || string(first.ToolCalls[0].Args) != `{"id": "A"}` {
		t.Fatalf("first = %+v", first)
	}
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleModel, Text: first.Text, ToolCalls: first.ToolCalls},
		llm.Message{Role: llm.RoleTool, ToolResult: &llm.ToolResult{CallID: "call_a", Name: "lookup", Content: json.RawMessage(`{ "status": "open" }`)}},
		llm.Message{Role: llm.RoleTool, ToolResult: &llm.ToolResult{CallID: "call_b", Name: "lookup", Content: json.RawMessage(`"no such ticket"`), IsError: true}},
	)
	if _, err := m.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	msgs := s.RequireValid(t)[1].Request.Messages
	if len(msgs) != 4 {
		t.Fatalf("messages = %+v", msgs)
	}
	a := msgs[1]
	if a.Role != "assistant" || a.Content.String() != "Checking." || len(a.ToolCalls) != 2 {
		t.Fatalf("assistant message = %+v", a)
	}
	if c := a.ToolCalls[0]; c.ID != "call_a" || c.Type != "function" || c.Function.Name != "lookup" || c.Function.Arguments != `{"id": "A"}` {
		t.Errorf("first call = %+v, want the model's ID and arguments byte for byte", c)
	}
	for i, want := range []struct{ id, content string }{{"call_a", `{"status":"open"}`}, {"call_b", `{"error":"no such ticket"}`}} {
		tm := msgs[2+i]
		if tm.Role != "tool" || tm.ToolCallID != want.id || tm.Content.String() != want.content {
			t.Errorf("tool message %d = %+v, want %s answering %s", i, tm, want.content, want.id)
		}
	}
}

// TestDanglingToolCallIDIsRefused shows what sending the call ID guards
// against: a tool message whose ID matches no call is refused.
func TestDanglingToolCallIDIsRefused(t *testing.T) {
	_, m := newFake(t, nil)
	req := llm.Request{Messages: []llm.Message{
		{Role: llm.RoleUser, Text: "Look up A."},
		{Role: llm.RoleModel, ToolCalls: []llm.ToolCall{{ID: "call_a", Name: "lookup", Args: json.RawMessage(`{"id":"A"}`)}}},
		{Role: llm.RoleTool, ToolResult: &llm.ToolResult{CallID: "call_z", Name: "lookup", Content: json.RawMessage(`{}`)}},
	}}
	_, err := m.Generate(context.Background(), req)
	e := llm.Classify(err)
	if e.Kind != llm.KindBadRequest || e.Status != 400 || !strings.Contains(e.Message, openaifake.UnknownToolCall) {
		t.Fatalf("err = %v, want 400 %q", err, openaifake.UnknownToolCall)
	}
}

// TestAttachments pins the parts of each kind of file: images as data
// URLs, PDFs as named file parts, text as text, each after its label.
func TestAttachments(t *testing.T) {
	s, m := newFake(t, nil)
	blobs := []llm.Blob{
		{Name: "cv.pdf", MIME: "application/pdf", Data: []byte("%PDF-1.7")},
		{Name: "notes.md", MIME: "text/markdown; charset=utf-8", Data: []byte("# Notes\n")},
		{MIME: "image/jpeg", Data: []byte{0xff, 0xd8, 0xff}},
		{Name: "take.wav", MIME: "audio/wav", Data: []byte("RIFF")},
	}
	if _, err := m.Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "Review.", Blobs: blobs}}}); err != nil {
		t.Fatal(err)
	}
	parts := s.RequireValid(t)[0].Request.Messages[0].Content.Parts
	if len(parts) != 9 {
		t.Fatalf("parts = %+v", parts)
	}
	for i, label := range []string{`Attached file "cv.pdf" (application/pdf):`, `Attached file "notes.md" (text/markdown; charset=utf-8):`, `Attached file 3 (image/jpeg):`, `Attached file "take.wav" (audio/wav):`} {
		if p := parts[1+2*i]; p.Type != "text" || p.Text != label {
			t.Errorf("part %d = %+v, want the label %q", 1+2*i, p, label)
		}
	}
	if f := parts[2].File; f == nil || f.Filename != "cv.pdf" || f.FileData != "data:application/pdf;base64,JVBERi0xLjc=" {
		t.Errorf("PDF part = %+v", parts[2])
	}
	if p := parts[4]; p.Type != "text" || p.Text != "# Notes\n" {
		t.Errorf("text file part = %+v", p)
	}
	if p := parts[6]; p.ImageURL == nil || p.ImageURL.URL != "data:image/jpeg;base64,/9j/" {
		t.Errorf("image part = %+v", p)
	}
	if p := parts[8]; p.InputAudio == nil || p.InputAudio.Format != "wav" || p.InputAudio.Data != "UklGRg==" {
		t.Errorf("audio part = %+v", p)
	}
}

func TestGenerateErrors(t *testing.T) {
	tests := []struct {
		name      string
		reply     openaifake.Reply
		kind      llm.Kind
		status    int
		retryable bool
		msg       string
	}{
		{"429 rate limit", openaifake.Error(429, "Rate limit reached for gpt-4.1-mini"), llm.KindRateLimit, 429, true, "Rate limit reached"},
		{"500 server error", openaifake.Error(500, "The server had an error while processing your request."), llm.KindServer, 500, true, "server had an error"},
		{"503 overloaded", openaifake.Error(503, "The engine is currently overloaded."), llm.KindServer, 503, true, "overloaded"},
		{"503 plain text body", openaifake.Reply{Status: 503, Body: []byte("upstream connect error\nor disconnect")}, llm.KindServer, 503, true, "upstream connect error"},
		{"500 error as a string", openaifake.Reply{Status: 500, Body: []byte(`{"error":"boom"}`)}, llm.KindServer, 500, true, "boom"},
		{"501 is not retried", openaifake.Error(501, "nope"), llm.KindServer, 501, false, "nope"},
		{"408 timeout", openaifake.Error(408, "Request timed out."), llm.KindTimeout, 408, true, "timed out"},
		{"400 bad request", openaifake.Error(400, "Invalid 'messages'"), llm.KindBadRequest, 400, false, "Invalid 'messages'"},
		{"401 bad key", openaifake.Error(401, "Incorrect API key provided"), llm.KindBadRequest, 401, false, "Incorrect API key"},
		{"truncated 200 body", openaifake.Malformed(`{"id":"chatcmpl-1","choices":[{"message":`), llm.KindServer, 0, true, "malformed response body"},
		{"200 body of the wrong shape", openaifake.Malformed(`{"id":"chatcmpl-1","choices":"not a list"}`), llm.KindServer, 0, true, "malformed response body"},
		{"200 message of the wrong shape", openaifake.Malformed(`{"choices":[{"index":0,"message":{"role":"assistant","content":7},"finish_reason":"stop"}]}`), llm.KindServer, 0, true, "malformed response body"},
		{"200 HTML page", openaifake.Malformed(`<html>gateway</html>`), llm.KindServer, 0, true, "malformed response body"},
		{"200 with no choices", openaifake.Malformed(`{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[]}`), llm.KindServer, 0, true, "no choices"},
		{"arguments that are not JSON", openaifake.Calls(openaifake.Call{ID: "call_1", Name: "lookup", Args: `{"id": "A"`}), llm.KindServer, 0, true, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, m := newFake(t, openaifake.Script(tt.reply))
			_, err := m.Generate(context.Background(), hi)
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T) is not *llm.Error", err, err)
			}
			if e.Kind != tt.kind || e.Status != tt.status || e.Retryable != tt.retryable {
				t.Errorf("got kind=%s status=%d retryable=%v, want kind=%s status=%d retryable=%v (%v)",
					e.Kind, e.Status, e.Retryable, tt.kind, tt.status, tt.retryable, err)
			}
			if !strings.Contains(e.Message, tt.msg) || !strings.HasPrefix(e.Message, "openai: ") {
				t.Errorf("message %q lacks %q or the openai prefix", e.Message, tt.msg)
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

// TestGenerateContextEnds: a deadline that passes while the request is in
// the server is a retryable timeout keeping the context's error; a cancel
// is canceled and not retried.
func TestGenerateContextEnds(t *testing.T) {
	for _, tt := range []struct {
		cause     error
		kind      llm.Kind
		retryable bool
	}{
		{context.DeadlineExceeded, llm.KindTimeout, true},
		{context.Canceled, llm.KindCanceled, false},
	} {
		t.Run(string(tt.kind), func(t *testing.T) {
			s, m := newFake(t, openaifake.Script(openaifake.Hang()))
			ctx := &endingContext{Context: context.Background(), done: make(chan struct{}), cause: tt.cause}
			stop := make(chan struct{})
			go func() {
				// End the context once the request is in the fake, not
				// after a set time.
				for len(s.Requests()) == 0 {
					select {
					case <-stop:
						return
					case <-time.After(time.Millisecond):
					}
				}
				close(ctx.done)
			}()
			_, err := m.Generate(ctx, hi)
			close(stop)
			e := llm.Classify(err)
			if e == nil || e.Kind != tt.kind || e.Retryable != tt.retryable || !strings.HasPrefix(e.Message, "openai: ") {
				t.Fatalf("err = %v, want kind %s retryable %v", err, tt.kind, tt.retryable)
			}
			if !errors.Is(err, tt.cause) {
				t.Errorf("the context's error is lost: %v", err)
			}
		})
	}
}

// endingContext is a context that ends with cause when done is closed.
type endingContext struct {
	context.Context
	done  chan struct{}
	cause error
}

func (c *endingContext) Done() <-chan struct{} { return c.done }

func (c *endingContext) Err() error {
	select {
	case <-c.done:
		return c.cause
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
	if e := llm.Classify(err); e == nil || e.Kind != llm.KindNetwork || !e.Retryable || !strings.HasPrefix(e.Message, "openai: ") {
		t.Fatalf("err = %v, want retryable network", err)
	}
}

func TestAPIKey(t *testing.T) {
	tests := []struct {
		name, explicit, env, want string
	}{
		{name: "missing"},
		{name: "blank is missing", explicit: "  ", env: " "},
		{name: "explicit wins", explicit: "sk-cfg", env: "sk-env", want: "sk-cfg"},
		{name: "OPENAI_API_KEY", env: "sk-env", want: "sk-env"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("OPENAI_API_KEY", tt.env)
			t.Setenv("OPENAI_BASE_URL", "")
			s := openaifake.Start(openaifake.Config{APIKey: tt.want})
			t.Cleanup(s.Close)
			m, err := New(context.Background(), Config{APIKey: tt.explicit, BaseURL: s.URL})
			if tt.want == "" {
				if !errors.Is(err, ErrNoAPIKey) || m != nil {
					t.Fatalf("New = %v, %v; want ErrNoAPIKey", m, err)
				}
				if !strings.Contains(err.Error(), "OPENAI_API_KEY") {
					t.Errorf("the error %q does not name OPENAI_API_KEY", err)
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

func TestBaseURL(t *testing.T) {
	s, _ := newFake(t, nil)
	t.Setenv("OPENAI_API_KEY", s.APIKey)

	// $OPENAI_BASE_URL stands in for Config.BaseURL...
	t.Setenv("OPENAI_BASE_URL", s.URL)
	m, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), hi); err != nil {
		t.Fatal(err)
	}
	if n := len(s.RequireValid(t)); n != 1 {
		t.Fatalf("the fake at $OPENAI_BASE_URL saw %d requests", n)
	}

	// ...which wins over it, and both over the default.
	if _, err := New(context.Background(), Config{BaseURL: "not a url"}); err == nil {
		t.Error("New accepted a base URL without scheme and host")
	}
	t.Setenv("OPENAI_BASE_URL", "")
	if got, err := BaseURL(""); got != DefaultBaseURL || err != nil {
		t.Errorf("BaseURL() = %q, %v; want %q", got, err, DefaultBaseURL)
	}
	t.Setenv("OPENAI_BASE_URL", "ftp://example.com")
	if _, err := New(context.Background(), Config{}); err == nil || !strings.Contains(err.Error(), "ftp://example.com") {
		t.Errorf("New with a bad $OPENAI_BASE_URL: err = %v", err)
	}
}

func TestNewMakesNoCall(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("New called %s %s", r.Method, r.URL)
	}))
	defer srv.Close()
	m, err := New(context.Background(), Config{APIKey: "k", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if m.model != DefaultModel {
		t.Fatalf("model = %q, want %q", m.model, DefaultModel)
	}
}

// TestDefaultModelTakesTemperature: the default must accept every field the
// adapter sends, temperature included, which the reasoning models refuse.
func TestDefaultModelTakesTemperature(t *testing.T) {
	if openaifake.FixedSampling(DefaultModel) {
		t.Fatalf("DefaultModel %q refuses temperature", DefaultModel)
	}
	_, m := newFake(t, nil)
	temp := float32(0.25)
	req := llm.Request{Model: "gpt-5-mini", Messages: hi.Messages, Temperature: &temp}
	_, err := m.Generate(context.Background(), req)
	if e := llm.Classify(err); e == nil || e.Kind != llm.KindBadRequest || !strings.Contains(e.Message, "temperature") {
		t.Fatalf("gpt-5-mini with temperature: err = %v, want a 400 about temperature", err)
	}
}

// TestGenerateFromTurn checks an engine turn end to end on the wire: the
// role's own line is its assistant message, unlabelled; everyone else's
// words are user messages named by their speaker, the field the reference
// gives "to differentiate between participants of the same role".
func TestGenerateFromTurn(t *testing.T) {
	s, m := newFake(t, openaifake.Script(openaifake.Text("Show me the failing test.")))
	req := llm.FromTurn(&engine.LLMRequest{
		Role: "qa", TurnGoal: "ask_for_repro", System: "You are QA.", Model: "gpt-4.1-mini",
		CandidateLastMessage: "I can fix now",
		TranscriptTail: []engine.TranscriptLine{
			{Speaker: "tech_lead", Text: "We double charge."},
			{Speaker: "qa", Text: "Since when?"},
			{Speaker: "Marcus Webb", Text: "Since Monday."},
			{Speaker: "李", Text: "And Tuesday."},
			{Speaker: "candidate", Text: "I can fix now"},
		},
	})
	if _, err := m.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, msg := range s.RequireValid(t)[0].Request.Messages {
		got = append(got, msg.Role+"/"+msg.Name+": "+msg.Content.String())
	}
	want := []string{
		"system/: " + req.System,
		"user/tech_lead: We double charge.",
		"assistant/: Since when?",
		"user/Marcus_Webb: Since Monday.",
		"user/: (李 said)\n> And Tuesday.",
		"user/candidate: I can fix now",
		"user/: [Turn goal: ask_for_repro]\n[Candidate's last message: I can fix now]",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("messages:\n%q\nwant:\n%q", got, want)
	}
}

func TestParticipantName(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"tech_lead", "tech_lead"},
		{"Marcus Webb", "Marcus_Webb"},
		{"James O'Brien", "James_O_Brien"},
		{"  Dr.  Who  ", "Dr_Who"},
		{"Zoë", "Zo"},
		{"李明", ""},
		{"--", ""},
		{strings.Repeat("a", 70), strings.Repeat("a", 64)},
	} {
		if got := participantName(tt.in); got != tt.want {
			t.Errorf("participantName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
