package llm

import (
	"context"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/clock"
)

// PolicyFor is the pack's declared failure policy: the whole budget of a
// turn is llm.timeout (the engine falls back after it), each call gets
// llm.attempt_timeout, and retryable failures are retried llm.retries times
// after llm.backoff.
func PolicyFor(p *rules.Pack) RetryPolicy {
	pol := RetryPolicy{
		MaxAttempts:    1 + *p.LLM.Retries,
		PerCallTimeout: time.Duration(p.LLM.AttemptTimeout.MS) * time.Millisecond,
		Total:          time.Duration(p.LLM.Timeout.MS) * time.Millisecond,
	}
	for _, b := range p.LLM.Backoff {
		pol.Backoff = append(pol.Backoff, time.Duration(b.MS)*time.Millisecond)
	}
	return pol
}

// Turns is the Answerer for a real Model: it turns each request into a
// generation call and its response into the engine's result. It is safe
// for concurrent use when the Model is.
type Turns struct {
	Model Model
	// Clock measures how long a call took (nil: the real clock).
	Clock clock.Clock
}

var _ Answerer = (*Turns)(nil)

// ForPack answers with m under p's declared failure policy (PolicyFor),
// waiting and timing out on c (nil: the real clock).
func ForPack(m Model, p *rules.Pack, c clock.Clock) *Turns {
	return &Turns{Model: WithPolicy(m, PolicyFor(p), c), Clock: c}
}

// Answer performs one request; After is how long it took. The request's
// own budget (TimeoutMS: a turn's due time, a job's declared timeout)
// bounds its retries in place of the pack's llm.timeout.
func (t *Turns) Answer(ctx context.Context, id string, req *engine.LLMRequest) Answer {
	c := t.Clock
	if c == nil {
		c = clock.Real()
	}
	start := c.Now()
	ctx = WithBudget(ctx, time.Duration(req.TimeoutMS)*time.Millisecond)
	resp, err := t.Model.Generate(ctx, FromTurn(req))
	elapsed := c.Now().Sub(start)
	if err != nil {
		return Answer{Result: engine.LLMResult{ID: id, Err: AsAdapterError(err)}, After: elapsed}
	}
	res := engine.LLMResult{ID: id, Finish: resp.Finish}
	if req.Job != "" || req.Sequence != nil {
		// Job output is validated by the engine against the job's schema,
		// and an exchange's answer is shown as written (a code block, a
		// JSON sample): both are passed on as the model wrote them.
		res.Text = resp.Text
	} else {
		res.Text, res.IntentTag = ParseReply(resp.Text)
	}
	for _, c := range resp.ToolCalls {
		res.ToolCalls = append(res.ToolCalls, engine.ToolCall{ID: c.ID, Name: c.Name, Args: c.Args, Signature: c.Signature})
	}
	return Answer{Result: res, After: elapsed}
}
