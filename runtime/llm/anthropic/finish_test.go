package anthropic

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/clock/clocktest"
	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/llm/anthropic/anthropicfake"
)

var hello = llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}

// TestFinishThroughTheSDK: max_tokens is a cut answer and refusal a
// withheld one, in the engine's names.
func TestFinishThroughTheSDK(t *testing.T) {
	tests := []struct {
		name  string
		reply anthropicfake.Reply
		want  string
	}{
		{"max_tokens", anthropicfake.Reply{Text: `{"verdict":"hi`, StopReason: "max_tokens"}, engine.FinishTruncated},
		{"refusal", anthropicfake.Reply{StopReason: "refusal"}, engine.FinishBlocked},
		{"end_turn", anthropicfake.Reply{Text: "fine"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, m := newFake(t, anthropicfake.Script(tt.reply))
			resp, err := m.Generate(context.Background(), hello)
			if err != nil || resp.Finish != tt.want {
				t.Fatalf("finish %q (vendor's %q), err %v; want %q", resp.Finish, resp.FinishReason, err, tt.want)
			}
		})
	}
}

// TestOverloadedIsRetried: a 529 overloaded_error is a retryable server
// fault that says so, and the policy retries it after its Retry-After.
func TestOverloadedIsRetried(t *testing.T) {
	_, m := newFake(t, anthropicfake.Script(
		anthropicfake.Reply{Status: statusOverloaded, ErrorType: "overloaded_error", Message: "Overloaded", Header: http.Header{"Retry-After": {"3"}}},
		anthropicfake.Text("back"),
	))
	_, err := m.Generate(context.Background(), hello)
	e := llm.Classify(err)
	if e == nil || e.Kind != llm.KindServer || !e.Retryable || e.Status != statusOverloaded || !strings.Contains(strings.ToLower(e.Message), "overloaded") || e.RetryAfter != 3*time.Second {
		t.Fatalf("err = %v (retryable %v, retry after %v), want a retryable overloaded server error asking for 3s", err, e.Retryable, e.RetryAfter)
	}

	_, m = newFake(t, anthropicfake.Script(
		anthropicfake.Reply{Status: statusOverloaded, ErrorType: "overloaded_error", Message: "Overloaded", Header: http.Header{"Retry-After": {"3"}}},
		anthropicfake.Text("back"),
	))
	clk := clocktest.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	pol := llm.RetryPolicy{MaxAttempts: 2, Backoff: []time.Duration{time.Second}, Total: time.Minute}
	done := make(chan error, 1)
	go func() {
		resp, err := llm.WithPolicy(m, pol, clk).Generate(context.Background(), hello)
		if err == nil && resp.Text != "back" {
			err = errUnexpected(resp.Text)
		}
		done <- err
	}()
	want := clk.Now().Add(3 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clk.WaitFor(ctx, func(armed []time.Time) bool { return slices.ContainsFunc(armed, want.Equal) }); err != nil {
		t.Fatalf("no 3s wait after a 529 (armed %v)", clk.Armed())
	}
	clk.Advance(3 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

type errUnexpected string

func (e errUnexpected) Error() string { return "unexpected text " + string(e) }
