package geminifake

import (
	"net/http"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/llm/llmtest"
)

// Render is r, a reply in the conformance suite's neutral terms, as this
// fake sends it: a failure in Google's error shape with the wait it asks
// for as a google.rpc.RetryInfo retryDelay in its details, the engine's
// finish reasons as MAX_TOKENS and SAFETY, tool calls as functionCall
// parts.
func Render(r llmtest.Reply) Reply {
	out := Reply{Text: r.Text, Hang: r.Hang}
	if r.Status != 0 {
		out.Status, out.Message = r.Status, "scripted failure: "+http.StatusText(r.Status)
	}
	if r.RetryAfter > 0 {
		out.Details = []any{RetryInfo(r.RetryAfter)}
	}
	switch r.Finish {
	case engine.FinishTruncated:
		out.FinishReason = "MAX_TOKENS"
	case engine.FinishBlocked:
		out.FinishReason = "SAFETY"
	}
	for _, c := range r.Calls {
		out.Calls = append(out.Calls, Call{ID: c.ID, Name: c.Name, Args: c.Args})
	}
	return out
}
