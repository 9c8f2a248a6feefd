package llm

import (
	"context"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
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

// Turns answers engine llm_request effects with a Model. It is safe for
// concurrent use when the Model is.
type Turns struct {
	Model Model
	// Now measures latency; nil means time.Now.
	Now func() time.Time
}

// Answer performs one request and returns the engine input payload and how
// long it took. Failures come back inside the result (Err), never as a Go
// error: for the engine a failed call is just another input.
func (t *Turns) Answer(ctx context.Context, id string, req *engine.LLMRequest) (engine.LLMResult, time.Duration) {
	now := t.Now
	if now == nil {
		now = time.Now
	}
	start := now()
	resp, err := t.Model.Generate(ctx, FromTurn(req))
	elapsed := now().Sub(start)
	if err != nil {
		return engine.LLMResult{ID: id, Err: AsAdapterError(err)}, elapsed
	}
	res := engine.LLMResult{ID: id}
	if req.Job != "" {
		// Job output is validated by the engine against the job's schema;
		// it is passed on as the model wrote it.
		res.Text = resp.Text
	} else {
		res.Text, res.IntentTag = ParseReply(resp.Text)
	}
	for _, c := range resp.ToolCalls {
		res.ToolCalls = append(res.ToolCalls, engine.ToolCall{ID: c.ID, Name: c.Name, Args: c.Args})
	}
	return res, elapsed
}
