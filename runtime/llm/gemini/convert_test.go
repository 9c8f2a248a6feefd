package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"google.golang.org/genai"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/llm"
)

func TestFunctionResponse(t *testing.T) {
	tests := []struct {
		name    string
		in      llm.ToolResult
		want    map[string]any
		wantErr bool
	}{
		{"object passes through", llm.ToolResult{Content: json.RawMessage(`{"a":1}`)}, map[string]any{"a": 1.0}, false},
		{"string is wrapped", llm.ToolResult{Content: json.RawMessage(`"done"`)}, map[string]any{"output": "done"}, false},
		{"array is wrapped", llm.ToolResult{Content: json.RawMessage(`[1,2]`)}, map[string]any{"output": []any{1.0, 2.0}}, false},
		{"empty content", llm.ToolResult{}, map[string]any{"output": nil}, false},
		{"error string is wrapped once", llm.ToolResult{Content: json.RawMessage(`"boom"`), IsError: true}, map[string]any{"error": "boom"}, false},
		{"error object is wrapped once", llm.ToolResult{Content: json.RawMessage(`{"code":7}`), IsError: true}, map[string]any{"error": map[string]any{"code": 7.0}}, false},
		{"refusal is sent as is", llm.ToolResult{Content: json.RawMessage(`{"error":"tool x is not available now"}`), IsError: true}, map[string]any{"error": "tool x is not available now"}, false},
		{"error object with an error key is sent as is", llm.ToolResult{Content: json.RawMessage(`{"error":{"code":7},"hint":"retry"}`), IsError: true}, map[string]any{"error": map[string]any{"code": 7.0}, "hint": "retry"}, false},
		{"empty error", llm.ToolResult{IsError: true}, map[string]any{"error": nil}, false},
		{"invalid JSON", llm.ToolResult{Content: json.RawMessage(`{oops`)}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.CallID, tt.in.Name = "c1", "tool"
			got, err := FunctionResponse(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatal("expected an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.ID != "c1" || got.Name != "tool" || !reflect.DeepEqual(got.Response, tt.want) {
				t.Fatalf("got %#v, want response %#v", got, tt.want)
			}
		})
	}
}

func TestToolCallsIDs(t *testing.T) {
	fcs := []*genai.FunctionCall{
		{Name: "a"},
		nil,
		{ID: "x", Name: "b", Args: map[string]any{"z": 1, "a": 2}},
		{Name: "c"},
	}
	sigs := [][]byte{[]byte("s1"), nil, nil, nil}
	// generateContent: the model's IDs, none invented.
	got, err := toolCalls(fcs, sigs)
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.ToolCall{
		{Name: "a", Args: json.RawMessage(`{}`), Signature: []byte("s1")},
		{ID: "x", Name: "b", Args: json.RawMessage(`{"a":2,"z":1}`)},
		{Name: "c", Args: json.RawMessage(`{}`)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("toolCalls:\n got %#v\nwant %#v", got, want)
	}
	// Live: calls without an ID are numbered by position.
	live, err := ToolCalls(fcs, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range live {
		ids = append(ids, c.ID)
	}
	if wantIDs := []string{"call-1", "x", "call-4"}; !reflect.DeepEqual(ids, wantIDs) {
		t.Fatalf("ToolCalls IDs = %v, want %v", ids, wantIDs)
	}
}

func TestToGenaiRejectsBadInput(t *testing.T) {
	user := llm.Message{Role: llm.RoleUser, Text: "hi"}
	tests := []struct {
		name string
		req  llm.Request
	}{
		{"unknown role", llm.Request{Messages: []llm.Message{{Role: "system", Text: "x"}}}},
		{"tool message without result", llm.Request{Messages: []llm.Message{user, {Role: llm.RoleTool}}}},
		{"args not an object", llm.Request{Messages: []llm.Message{user, {Role: llm.RoleModel, ToolCalls: []llm.ToolCall{{Name: "f", Args: json.RawMessage(`[1]`)}}}}}},
		{"result not JSON", llm.Request{Messages: []llm.Message{user, {Role: llm.RoleTool, ToolResult: &llm.ToolResult{Name: "f", Content: json.RawMessage(`nope`)}}}}},
		{"tool without name", llm.Request{Messages: []llm.Message{user}, Tools: []llm.ToolDecl{{Description: "x"}}}},
		{"parameters not an object", llm.Request{Messages: []llm.Message{user}, Tools: []llm.ToolDecl{{Name: "f", Parameters: json.RawMessage(`"string"`)}}}},
		{"schema not an object", llm.Request{Messages: []llm.Message{user}, ResponseSchema: json.RawMessage(`[`)}},
		{"nothing to send", llm.Request{Messages: []llm.Message{{Role: llm.RoleUser}, {Role: llm.RoleModel}}}},
		{"no messages", llm.Request{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := toGenai(tt.req)
			var e *llm.Error
			if !errors.As(err, &e) || e.Kind != llm.KindBadRequest || e.Retryable {
				t.Fatalf("err = %v, want non-retryable bad_request", err)
			}
		})
	}
}

func TestToGenaiShapes(t *testing.T) {
	contents, cfg, err := toGenai(llm.Request{
		Messages: []llm.Message{
			{Role: llm.RoleUser, Text: "q", Blobs: []llm.Blob{{Name: "cv.pdf", MIME: "application/pdf", Data: []byte("%PDF")}, {MIME: "image/png", Data: []byte{1}}}},
			{Role: llm.RoleModel}, // nothing to send: left out
			{Role: llm.RoleModel, Text: "thinking aloud", ToolCalls: []llm.ToolCall{{ID: "1", Name: "f", Args: json.RawMessage(`{"k":"v"}`)}, {Name: "g"}}},
			{Role: llm.RoleTool, ToolResult: &llm.ToolResult{CallID: "1", Name: "f", Content: json.RawMessage(`{"ok":true}`)}},
			{Role: llm.RoleTool, ToolResult: &llm.ToolResult{Name: "g", Content: json.RawMessage(`1`)}},
			{Role: llm.RoleUser, Text: "and?"},
		},
		MaxOutputTokens: -5,
	})
	if err != nil {
		t.Fatal(err)
	}
	roles := []string{}
	for _, c := range contents {
		roles = append(roles, c.Role)
	}
	if want := []string{"user", "model", "user", "user"}; !reflect.DeepEqual(roles, want) {
		t.Fatalf("roles = %v, want %v", roles, want)
	}
	u := contents[0].Parts
	if len(u) != 5 || u[0].Text != "q" ||
		u[1].Text != `Attached file "cv.pdf" (application/pdf):` || u[2].InlineData == nil || u[2].InlineData.DisplayName != "" ||
		u[3].Text != "Attached file 2 (image/png):" || u[4].InlineData == nil || u[4].InlineData.MIMEType != "image/png" {
		t.Fatalf("user parts = %#v", u)
	}
	if p := contents[1].Parts; len(p) != 3 || p[0].Text != "thinking aloud" || p[1].FunctionCall.ID != "1" || p[1].FunctionCall.Args["k"] != "v" || p[2].FunctionCall.ID != "" {
		t.Fatalf("model parts = %#v", p)
	}
	if p := contents[2].Parts; len(p) != 2 || p[0].FunctionResponse.ID != "1" || p[1].FunctionResponse.Response["output"] != 1.0 {
		t.Fatalf("tool parts = %#v", p)
	}
	if cfg.MaxOutputTokens != 0 || cfg.SystemInstruction != nil || cfg.Tools != nil || cfg.ResponseMIMEType != "" {
		t.Fatalf("config = %#v", cfg)
	}
}

func TestFromAPIError(t *testing.T) {
	tests := []struct {
		in        genai.APIError
		kind      llm.Kind
		status    int
		retryable bool
	}{
		{genai.APIError{Code: 429}, llm.KindRateLimit, 429, true},
		{genai.APIError{Status: "RESOURCE_EXHAUSTED"}, llm.KindRateLimit, 429, true},
		{genai.APIError{Status: "429 Too Many Requests"}, llm.KindRateLimit, 429, true},
		{genai.APIError{Code: 408}, llm.KindTimeout, 408, true},
		{genai.APIError{Code: 500}, llm.KindServer, 500, true},
		{genai.APIError{Status: "UNAVAILABLE"}, llm.KindServer, 503, true},
		{genai.APIError{Code: 504}, llm.KindServer, 504, true},
		{genai.APIError{Code: 501}, llm.KindServer, 501, false},
		{genai.APIError{Code: 400}, llm.KindBadRequest, 400, false},
		{genai.APIError{Code: 404}, llm.KindBadRequest, 404, false},
		{genai.APIError{Code: 499}, llm.KindCanceled, 499, false},
		{genai.APIError{}, llm.KindUnknown, 0, false},
		{genai.APIError{Code: 302}, llm.KindUnknown, 302, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d_%s", tt.in.Code, tt.in.Status), func(t *testing.T) {
			// Wrapped the way an SDK caller would see it.
			e := classify(context.Background(), fmt.Errorf("sdk: %w", tt.in))
			if e.Kind != tt.kind || e.Status != tt.status || e.Retryable != tt.retryable {
				t.Fatalf("got %s/%d/%v, want %s/%d/%v", e.Kind, e.Status, e.Retryable, tt.kind, tt.status, tt.retryable)
			}
			var back genai.APIError
			if !errors.As(e, &back) {
				t.Error("APIError not reachable through the classified error")
			}
		})
	}
}

func TestFromGenaiEdges(t *testing.T) {
	tests := []struct {
		name string
		in   *genai.GenerateContentResponse
		want llm.Response
		kind llm.Kind
	}{
		{name: "nil response", in: nil, kind: llm.KindServer},
		{name: "no candidates", in: &genai.GenerateContentResponse{}, want: llm.Response{}},
		{name: "candidate without content", in: &genai.GenerateContentResponse{Candidates: []*genai.Candidate{{FinishReason: genai.FinishReasonSafety}}}, want: llm.Response{FinishReason: "SAFETY", Finish: engine.FinishBlocked}},
		{name: "cut by the token limit", in: &genai.GenerateContentResponse{Candidates: []*genai.Candidate{{FinishReason: genai.FinishReasonMaxTokens, Content: &genai.Content{Parts: []*genai.Part{{Text: `{"a":`}}}}}}, want: llm.Response{Text: `{"a":`, FinishReason: "MAX_TOKENS", Finish: engine.FinishTruncated}},
		{name: "prohibited content", in: &genai.GenerateContentResponse{Candidates: []*genai.Candidate{{FinishReason: genai.FinishReasonProhibitedContent}}}, want: llm.Response{FinishReason: "PROHIBITED_CONTENT", Finish: engine.FinishBlocked}},
		{name: "blocklist", in: &genai.GenerateContentResponse{Candidates: []*genai.Candidate{{FinishReason: genai.FinishReasonBlocklist}}}, want: llm.Response{FinishReason: "BLOCKLIST", Finish: engine.FinishBlocked}},
		{name: "spii", in: &genai.GenerateContentResponse{Candidates: []*genai.Candidate{{FinishReason: genai.FinishReasonSPII}}}, want: llm.Response{FinishReason: "SPII", Finish: engine.FinishBlocked}},
		{name: "recitation", in: &genai.GenerateContentResponse{Candidates: []*genai.Candidate{{FinishReason: genai.FinishReasonRecitation}}}, want: llm.Response{FinishReason: "RECITATION", Finish: engine.FinishBlocked}},
		{name: "stop", in: &genai.GenerateContentResponse{Candidates: []*genai.Candidate{{FinishReason: genai.FinishReasonStop, Content: &genai.Content{Parts: []*genai.Part{{Text: "a"}}}}}}, want: llm.Response{Text: "a", FinishReason: "STOP"}},
		{name: "prompt blocked", in: &genai.GenerateContentResponse{PromptFeedback: &genai.GenerateContentResponsePromptFeedback{BlockReason: genai.BlockedReasonSafety}}, want: llm.Response{FinishReason: "promptFeedback.blockReason SAFETY", Finish: engine.FinishBlocked}},
		{name: "nil parts skipped", in: &genai.GenerateContentResponse{Candidates: []*genai.Candidate{{Content: &genai.Content{Parts: []*genai.Part{nil, {Text: "a"}}}}}}, want: llm.Response{Text: "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := fromGenai(tt.in)
			if tt.kind != "" {
				if e := llm.Classify(err); e == nil || e.Kind != tt.kind {
					t.Fatalf("err = %v, want %s", err, tt.kind)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %#v, %v; want %#v", got, err, tt.want)
			}
		})
	}
}
