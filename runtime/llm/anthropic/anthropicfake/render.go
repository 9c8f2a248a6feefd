package anthropicfake

import (
	"net/http"
	"strconv"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/llm/llmtest"
)

// Render is r, a reply in the conformance suite's neutral terms, as this
// fake sends it: a failure in Anthropic's error shape with the wait it
// asks for in Retry-After (whole seconds, rounded up), the engine's
// finish reasons as the stop reasons max_tokens and refusal, tool calls
// as tool_use blocks.
func Render(r llmtest.Reply) Reply {
	out := Reply{Text: r.Text, Hang: r.Hang}
	if r.Status != 0 {
		out.Status, out.Message = r.Status, "scripted failure: "+http.StatusText(r.Status)
	}
	if r.RetryAfter > 0 {
		out.Header = http.Header{"Retry-After": {strconv.FormatInt(int64((r.RetryAfter+time.Second-1)/time.Second), 10)}}
	}
	switch r.Finish {
	case engine.FinishTruncated:
		out.StopReason = "max_tokens"
	case engine.FinishBlocked:
		out.StopReason = "refusal"
	}
	for _, c := range r.Calls {
		out.Calls = append(out.Calls, Call{ID: c.ID, Name: c.Name, Input: c.Args})
	}
	return out
}
