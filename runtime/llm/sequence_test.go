package llm

import (
	"context"
	"strings"
	"testing"

	"github.com/batonhq/baton/engine"
)

// A sequence's call: the persona and what came before in the system
// prompt, in the assembly's order; the exchange's prompt alone as the
// user's message; the role's vendor and token cap on the request.
func TestFromTurnSequence(t *testing.T) {
	req := &engine.LLMRequest{
		Role: "claude", Kind: "sequence", TurnGoal: "exchange", Provider: "anthropic", MaxTokens: 1000,
		System: "You are Claude.", Prompt: "Should we log the tag?",
		Assembly: []string{"persona", "history", "rounds", "round"},
		Files: []engine.FilePart{
			{Path: "sequence/history", Text: "## exchange r1\nuser: Hi\nGPT: Hello.\n"},
			{Path: "sequence/round", Text: "GPT: Log it server-side.\n"},
		},
		Sequence: &engine.SequenceCall{ID: "exchange", RunID: "r2", Round: 1, Call: 2},
	}
	got := FromTurn(req)
	if got.Provider != "anthropic" || got.MaxOutputTokens != 1000 {
		t.Errorf("provider %q, max tokens %d", got.Provider, got.MaxOutputTokens)
	}
	if len(got.Messages) != 1 || got.Messages[0].Role != RoleUser || got.Messages[0].Text != "Should we log the tag?" {
		t.Fatalf("messages %+v, want the prompt alone", got.Messages)
	}
	hist := strings.Index(got.System, `<file path="sequence/history">`)
	round := strings.Index(got.System, `<file path="sequence/round">`)
	if !strings.HasPrefix(got.System, "You are Claude.") || hist < 0 || round < hist {
		t.Errorf("system prompt out of order:\n%s", got.System)
	}
}

// An exchange's answer is kept as the model wrote it: a reply that looks
// like the turn's JSON shape, or a code block, is content, not a wrapper.
func TestTurnsKeepSequenceAnswers(t *testing.T) {
	for _, text := range []string{`{"text": "only this", "intent_tag": "x"}`, "```go\nfmt.Println(1)\n```"} {
		turns := &Turns{Model: ModelFunc(func(context.Context, Request) (Response, error) { return Response{Text: text}, nil })}
		a := turns.Answer(context.Background(), "q1", &engine.LLMRequest{Role: "gpt", Prompt: "p", Sequence: &engine.SequenceCall{ID: "s"}})
		if a.Result.Text != text {
			t.Errorf("answer %q became %q", text, a.Result.Text)
		}
	}
}
