package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/llm/gemini/geminifake"
	"github.com/batonhq/baton/runtime/llm/llmtest"
)

// TestConformance runs the vendor-neutral suite against the adapter and
// geminifake, the strict stand-in written from the Gemini API reference.
// The model is DefaultModel, a Gemini 3 model, so thought signatures are
// enforced on every tool call the suite makes.
func TestConformance(t *testing.T) {
	llmtest.Conformance(t, geminiVendor{})
}

// geminiVendor plugs the adapter and geminifake into llmtest.
type geminiVendor struct{}

func (geminiVendor) Caps() llmtest.Caps {
	return llmtest.Caps{OptionalCallIDs: true, Signatures: true}
}

func (geminiVendor) Start(t *testing.T, script ...llmtest.Reply) llmtest.Fake {
	replies := make([]geminifake.Reply, len(script))
	for i, r := range script {
		replies[i] = geminifake.Render(r)
	}
	s := geminifake.New(geminifake.Script(replies...))
	t.Cleanup(s.Close)
	m, err := New(context.Background(), Config{APIKey: s.APIKey, BaseURL: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	return &geminiFake{s: s, m: m}
}

type geminiFake struct {
	s *geminifake.Server
	m *Model
}

func (f *geminiFake) Model() llm.Model { return f.m }

func (f *geminiFake) Validate(body []byte) error { return f.s.Validate(DefaultModel, body) }

func (f *geminiFake) Requests() []llmtest.Received { return f.s.Neutral(view) }

// view reads a request the way the model does.
func view(req *geminifake.Request) llmtest.View {
	var v llmtest.View
	if si := req.SystemInstruction; si != nil {
		var texts []string
		for _, p := range si.Parts {
			texts = append(texts, p.TextOf())
		}
		v.System = strings.Join(texts, "\n")
	}
	for _, c := range req.Contents {
		m := llmtest.Message{Role: llm.RoleUser}
		if c.Role == "model" {
			m.Role = llm.RoleModel
		}
		for _, p := range c.Parts {
			var part llmtest.Part
			switch {
			case p.InlineData != nil:
				part.Blob = &llm.Blob{MIME: p.InlineData.MIMEType, Data: p.InlineData.Data}
			case p.FunctionCall != nil:
				part.Call = &llm.ToolCall{ID: p.FunctionCall.ID, Name: p.FunctionCall.Name, Args: p.FunctionCall.Args, Signature: p.ThoughtSignature}
			case p.FunctionResponse != nil:
				part.Result = &llm.ToolResult{CallID: p.FunctionResponse.ID, Name: p.FunctionResponse.Name, Content: p.FunctionResponse.Response}
			default:
				part.Text = p.TextOf()
			}
			m.Parts = append(m.Parts, part)
		}
		v.Messages = append(v.Messages, m)
	}
	for _, tool := range req.Tools {
		for _, fd := range tool.FunctionDeclarations {
			v.Tools = append(v.Tools, fd.Name)
		}
	}
	if gc := req.GenerationConfig; gc != nil {
		for _, s := range []json.RawMessage{gc.ResponseJSONSchema, gc.ResponseJSONSchemaLegacy, gc.ResponseSchema} {
			if len(s) > 0 {
				v.ResponseSchema = s
				break
			}
		}
	}
	return v
}

func newFake(t *testing.T, b geminifake.Behavior) (*geminifake.Server, *Model) {
	t.Helper()
	s := geminifake.New(b)
	t.Cleanup(s.Close)
	m, err := New(context.Background(), Config{APIKey: s.APIKey, BaseURL: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	return s, m
}

var hi = llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}

// TestGenerateText covers what the suite leaves to each vendor: Gemini
// splits an answer across parts, sends thoughts as parts to skip, and bills
// thinking tokens as output.
func TestGenerateText(t *testing.T) {
	s, m := newFake(t, geminifake.Script(geminifake.Reply{
		Parts: []geminifake.Part{{Text: ptr("I am thinking"), Thought: true}, geminifake.TextPart("Share your first ")},
		Text:  "containment step.",
		Usage: &geminifake.UsageMetadata{PromptTokenCount: 12, CandidatesTokenCount: 7, ThoughtsTokenCount: 3, TotalTokenCount: 22},
	}))
	resp, err := m.Generate(context.Background(), hi)
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
	if got := s.RequireValid(t); got[0].Model != DefaultModel {
		t.Errorf("model = %q, want %q", got[0].Model, DefaultModel)
	}
}

func ptr[T any](v T) *T { return &v }

// TestGenerateFromTurn checks an engine turn end to end on the wire: the
// role's own line is its model content, unlabelled; the other agents' and
// the candidate's words are attributed text, consecutive ones in one user
// content.
func TestGenerateFromTurn(t *testing.T) {
	s, _ := newFake(t, geminifake.Script(geminifake.Text("```json\n{\"text\":\"Show me the failing test.\",\"intent_tag\":\"qa_repro\"}\n```")))
	req := llm.FromTurn(&engine.LLMRequest{
		Role: "qa", TurnGoal: "ask_for_repro", System: "You are QA.", Model: "gemini-3-flash-preview",
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
	got := s.RequireValid(t)[0]
	if got.Model != "gemini-3-flash-preview" {
		t.Errorf("model = %q, want the request's", got.Model)
	}
	sys := got.Request.SystemInstruction.Parts[0].TextOf()
	for _, want := range []string{"You are QA.", llm.BriefBegin, "Turn goal: ask_for_repro", "- bug_summary: double charge", llm.BriefEnd} {
		if !strings.Contains(sys, want) {
			t.Errorf("system instruction lacks %q:\n%s", want, sys)
		}
	}
	var turns []string
	for _, c := range got.Request.Contents {
		var texts []string
		for _, p := range c.Parts {
			texts = append(texts, p.TextOf())
		}
		turns = append(turns, c.Role+": "+strings.Join(texts, " | "))
	}
	want := []string{
		"user: (tech_lead said)\n> We double charge.",
		"model: Since when?",
		"user: (ba said)\n> Since Monday. | (candidate said)\n> I can fix now | [Turn goal: ask_for_repro]\n[Candidate's last message: I can fix now]",
	}
	if !reflect.DeepEqual(turns, want) {
		t.Errorf("contents:\n%q\nwant:\n%q", turns, want)
	}
}

// TestWireToolTurn pins the Gemini wire of a tool round: one model content
// with the text and then every call, the signature only where the model put
// it (the first of parallel calls), IDs on both sides only when the call
// has one, results in one user content in call order.
func TestWireToolTurn(t *testing.T) {
	s, m := newFake(t, geminifake.Script(
		geminifake.Reply{Text: "Checking.", Calls: []geminifake.Call{
			{ID: "srv-1", Name: "lookup", Args: map[string]any{"id": "A"}},
			{Name: "lookup", Args: map[string]any{"id": "B"}},
		}},
		geminifake.Text("done"),
	))
	req := llm.Request{
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "Look up A and B."}},
		Tools:    []llm.ToolDecl{{Name: "lookup", Parameters: json.RawMessage(`{"type":"object"}`)}},
	}
	first, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.ToolCalls) != 2 || first.ToolCalls[0].ID != "srv-1" || first.ToolCalls[1].ID != "" {
		t.Fatalf("tool calls = %+v, want IDs srv-1 and none", first.ToolCalls)
	}
	if len(first.ToolCalls[0].Signature) == 0 || first.ToolCalls[1].Signature != nil {
		t.Fatalf("signatures = %q, %q; want the first call's only", first.ToolCalls[0].Signature, first.ToolCalls[1].Signature)
	}
	calls := first.ToolCalls
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleModel, Text: first.Text, ToolCalls: calls},
		llm.Message{Role: llm.RoleTool, ToolResult: &llm.ToolResult{Name: "lookup", Content: json.RawMessage(`"B is closed"`)}},
	)
	// The model gave the second call no ID and the engine has not given
	// it one here: the result of the first call is missing, so the fake
	// must refuse the mismatched history.
	req.Messages[len(req.Messages)-1].ToolResult.CallID = ""
	if _, err := m.Generate(context.Background(), req); llm.Classify(err).Kind != llm.KindBadRequest {
		t.Fatalf("a history answering one of two calls: err = %v, want bad_request", err)
	}
	req.Messages = append(req.Messages[:len(req.Messages)-1],
		llm.Message{Role: llm.RoleTool, ToolResult: &llm.ToolResult{CallID: "srv-1", Name: "lookup", Content: json.RawMessage(`{"error":"refused"}`), IsError: true}},
		llm.Message{Role: llm.RoleTool, ToolResult: &llm.ToolResult{Name: "lookup", Content: json.RawMessage(`"B is closed"`)}},
	)
	if _, err := m.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	last := s.Requests()[2]
	if last.Err != nil {
		t.Fatal(last.Err)
	}
	c := last.Request.Contents
	if len(c) != 3 {
		t.Fatalf("contents = %+v", c)
	}
	model, results := c[1], c[2]
	if model.Role != "model" || len(model.Parts) != 3 || model.Parts[0].TextOf() != "Checking." {
		t.Fatalf("model content = %+v", model)
	}
	if fc := model.Parts[1].FunctionCall; fc == nil || fc.ID != "srv-1" || string(model.Parts[1].ThoughtSignature) != string(calls[0].Signature) {
		t.Errorf("first call part = %+v", model.Parts[1])
	}
	if fc := model.Parts[2].FunctionCall; fc == nil || fc.ID != "" || model.Parts[2].ThoughtSignature != nil {
		t.Errorf("second call part = %+v", model.Parts[2])
	}
	if results.Role != "user" || len(results.Parts) != 2 {
		t.Fatalf("results content = %+v", results)
	}
	for i, want := range []struct{ id, response string }{{"srv-1", `{"error":"refused"}`}, {"", `{"output":"B is closed"}`}} {
		fr := results.Parts[i].FunctionResponse
		if fr == nil || fr.ID != want.id || string(fr.Response) != want.response {
			t.Errorf("result %d = %+v, want id %q response %s", i, fr, want.id, want.response)
		}
	}
}

// TestMissingSignatureIsRefused shows what the signature round trip
// guards against: Gemini 3 refuses a tool history without it.
func TestMissingSignatureIsRefused(t *testing.T) {
	_, m := newFake(t, geminifake.Script(
		geminifake.Calls(geminifake.Call{Name: "lookup", Args: map[string]any{"id": "A"}}),
		geminifake.Text("unreachable"),
	))
	req := llm.Request{
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "Look up A."}},
		Tools:    []llm.ToolDecl{{Name: "lookup"}},
	}
	first, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	call := first.ToolCalls[0]
	call.ID, call.Signature = "engine-1", nil
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleModel, ToolCalls: []llm.ToolCall{call}},
		llm.Message{Role: llm.RoleTool, ToolResult: &llm.ToolResult{CallID: "engine-1", Name: "lookup", Content: json.RawMessage(`{"ok":true}`)}},
	)
	_, err = m.Generate(context.Background(), req)
	e := llm.Classify(err)
	if e.Kind != llm.KindBadRequest || e.Status != 400 || !strings.Contains(e.Message, geminifake.MissingSignature) {
		t.Fatalf("err = %v, want 400 %q", err, geminifake.MissingSignature)
	}
}

func TestGenerateErrors(t *testing.T) {
	tests := []struct {
		name      string
		reply     geminifake.Reply
		kind      llm.Kind
		status    int
		retryable bool
		msg       string
	}{
		{"429 rate limit", geminifake.Error(429, "Resource has been exhausted (e.g. check quota)."), llm.KindRateLimit, 429, true, "exhausted"},
		{"429 with status name only", geminifake.Reply{Status: 429, Body: []byte(`{"error":{"message":"quota","status":"RESOURCE_EXHAUSTED"}}`)}, llm.KindRateLimit, 429, true, "quota"},
		{"500 internal", geminifake.Error(500, "An internal error has occurred."), llm.KindServer, 500, true, "internal error"},
		{"503 plain text body", geminifake.Reply{Status: 503, Body: []byte("upstream connect error")}, llm.KindServer, 503, true, "upstream connect error"},
		{"501 is not retried", geminifake.Error(501, "nope"), llm.KindServer, 501, false, "nope"},
		{"400 bad request", geminifake.Error(400, "Invalid JSON payload"), llm.KindBadRequest, 400, false, "Invalid JSON payload"},
		{"403 bad key", geminifake.Error(403, "API key not valid"), llm.KindBadRequest, 403, false, "API key not valid"},
		{"malformed 200 body", geminifake.Reply{Body: []byte(`{"candidates": [{"content": `)}, llm.KindServer, 0, true, "malformed response body"},
		// The SDK panics on this one; Generate recovers.
		{"200 body of the wrong shape", geminifake.Reply{Body: []byte(`{"candidates": "not a list"}`)}, llm.KindServer, 0, true, "malformed response body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, m := newFake(t, geminifake.Script(tt.reply))
			_, err := m.Generate(context.Background(), hi)
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
			if n := len(s.RequireValid(t)); n != 1 {
				t.Errorf("server saw %d requests, want exactly 1", n)
			}
		})
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
	if e := llm.Classify(err); e == nil || e.Kind != llm.KindNetwork || !e.Retryable {
		t.Fatalf("err = %v, want retryable network", err)
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
			s := geminifake.Start(geminifake.Config{APIKey: tt.want})
			t.Cleanup(s.Close)
			m, err := New(context.Background(), Config{APIKey: tt.explicit, BaseURL: s.URL})
			if tt.err != nil {
				if !errors.Is(err, tt.err) || m != nil {
					t.Fatalf("New = %v, %v; want %v", m, err, tt.err)
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

func TestNewRejectsBadBaseURL(t *testing.T) {
	if _, err := New(context.Background(), Config{APIKey: "k", BaseURL: "not a url"}); err == nil {
		t.Fatal("New accepted a base URL without scheme and host")
	}
}

func TestDefaultModel(t *testing.T) {
	m, err := New(context.Background(), Config{APIKey: "k", BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if m.model != DefaultModel {
		t.Fatalf("model = %q, want %q", m.model, DefaultModel)
	}
	// The default must be a model that enforces thought signatures, so
	// the conformance suite tests their round trip as the normal path.
	if !geminifake.RequiresSignatures(DefaultModel) {
		t.Fatalf("DefaultModel %q is not a Gemini 3 model", DefaultModel)
	}
}
