package openai

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/llm/openai/openaifake"
)

// TestFinishThroughTheSDK: each finish_reason OpenAI documents for an
// answer that is not whole maps to the engine's name; a refusal is a
// withheld answer, not an error.
func TestFinishThroughTheSDK(t *testing.T) {
	tests := []struct {
		name  string
		reply openaifake.Reply
		want  string
	}{
		{"length", openaifake.Reply{Text: `{"verdict":"hi`, FinishReason: "length"}, engine.FinishTruncated},
		{"content_filter", openaifake.Reply{FinishReason: "content_filter"}, engine.FinishBlocked},
		{"refusal", openaifake.Reply{Refusal: "I can't help with that."}, engine.FinishBlocked},
		{"stop", openaifake.Reply{Text: "fine"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, m := newFake(t, openaifake.Script(tt.reply))
			resp, err := m.Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}})
			if err != nil || resp.Finish != tt.want {
				t.Fatalf("finish %q (vendor's %q), err %v; want %q", resp.Finish, resp.FinishReason, err, tt.want)
			}
		})
	}
}

// TestRetryAfterMS: retry-after-ms is read to the millisecond, and wins
// over the coarser Retry-After.
func TestRetryAfterMS(t *testing.T) {
	_, m := newFake(t, openaifake.Script(openaifake.Reply{
		Status: http.StatusTooManyRequests, Message: "Rate limit reached",
		Header: http.Header{"Retry-After-Ms": {"1250"}, "Retry-After": {"2"}},
	}))
	_, err := m.Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}})
	e := llm.Classify(err)
	if e == nil || e.Kind != llm.KindRateLimit || e.RetryAfter != 1250*time.Millisecond {
		t.Fatalf("err = %v (retry after %v), want a rate limit asking for 1.25s", err, e.RetryAfter)
	}
}
