package openaifake

import (
	"net/http"
	"strconv"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/llm/llmtest"
)

// Render is r, a reply in the conformance suite's neutral terms, as this
// fake sends it: a failure in OpenAI's error shape with the wait it asks
// for in both retry-after-ms and Retry-After, the engine's finish reasons
// as length and content_filter, tool calls as tool_calls.
func Render(r llmtest.Reply) Reply {
	out := Reply{Text: r.Text, Hang: r.Hang}
	if r.Status != 0 {
		out.Status, out.Message = r.Status, "scripted failure: "+http.StatusText(r.Status)
	}
	if r.RetryAfter > 0 {
		// OpenAI sends both: the milliseconds, and whole seconds rounded up.
		out.Header = http.Header{
			"Retry-After-Ms": {strconv.FormatInt(r.RetryAfter.Milliseconds(), 10)},
			"Retry-After":    {strconv.FormatInt(int64((r.RetryAfter+time.Second-1)/time.Second), 10)},
		}
	}
	switch r.Finish {
	case engine.FinishTruncated:
		out.FinishReason = "length"
	case engine.FinishBlocked:
		out.FinishReason = "content_filter"
	}
	for _, c := range r.Calls {
		out.Calls = append(out.Calls, Call{ID: c.ID, Name: c.Name, Args: c.Args})
	}
	return out
}
