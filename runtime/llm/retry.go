package llm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/runtime/clock"
)

// RetryPolicy bounds how long and how often a turn's generation is tried.
// A zero field disables its limit; use DefaultRetryPolicy for the seeds'
// numbers.
type RetryPolicy struct {
	// MaxAttempts counts the first try. Zero or less means one attempt per
	// backoff step plus the first (len(Backoff)+1).
	MaxAttempts int
	// Backoff[i] is the wait before retry i+1; the last entry repeats when
	// MaxAttempts exceeds len(Backoff)+1. Empty means retry at once.
	Backoff []time.Duration
	// PerCallTimeout bounds one attempt.
	PerCallTimeout time.Duration
	// Total bounds all attempts and waits together.
	Total time.Duration
}

// DefaultRetryPolicy returns the seeds' numbers: 30 s per agent call, 90 s
// in total, retries after 1 s then 2 s.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{
		MaxAttempts:    3,
		Backoff:        []time.Duration{time.Second, 2 * time.Second},
		PerCallTimeout: 30 * time.Second,
		Total:          90 * time.Second,
	}
}

func (p RetryPolicy) attempts() int {
	if p.MaxAttempts > 0 {
		return p.MaxAttempts
	}
	return len(p.Backoff) + 1
}

// backoff returns the wait after the n-th failed attempt (n >= 1).
func (p RetryPolicy) backoff(n int) time.Duration {
	if len(p.Backoff) == 0 {
		return 0
	}
	return p.Backoff[min(n-1, len(p.Backoff)-1)]
}

// WithPolicy wraps m so each Generate call retries retryable failures
// (rate_limit, server, network, and a timeout of a single attempt) per p.
// Backoff waits, the per-call timeout and the total budget all run on c
// (nil: the real clock), so a host with an injected clock sees every wait.
//
// The wrapper holds no mutable state, so it is as concurrency-safe as m and
// adds no locks to the call path.
func WithPolicy(m Model, p RetryPolicy, c clock.Clock) Model {
	if c == nil {
		c = clock.Real()
	}
	// Copy Backoff so a caller mutating its slice cannot change a live policy.
	p.Backoff = append([]time.Duration(nil), p.Backoff...)
	return &retrying{next: m, p: p, clock: c}
}

type retrying struct {
	next  Model
	p     RetryPolicy
	clock clock.Clock
}

func (r *retrying) Generate(ctx context.Context, req Request) (Response, error) {
	budget := ctx
	if r.p.Total > 0 {
		var cancel context.CancelFunc
		budget, cancel = r.clock.WithTimeout(ctx, r.p.Total)
		defer cancel()
	}
	maxAttempts := r.p.attempts()
	for n := 1; ; n++ {
		resp, err := r.attempt(ctx, budget, req)
		if err == nil {
			return resp, nil
		}
		if n >= maxAttempts || !err.Retryable || !DefaultRetryable(err.Kind) {
			return Response{}, giveUp(err, n, "")
		}
		wait := r.p.backoff(n)
		// Sleeping into an already doomed budget only delays the fallback
		// line the engine will say anyway.
		if dl, ok := budget.Deadline(); ok && dl.Sub(r.clock.Now()) <= wait {
			return Response{}, giveUp(err, n, fmt.Sprintf("total budget %v leaves no room for a %v backoff", r.p.Total, wait))
		}
		if serr := clock.Sleep(budget, r.clock, wait); serr != nil {
			return Response{}, giveUp(r.contextError(ctx, budget, err), n, "")
		}
	}
}

// attempt runs one call under the per-call timeout and classifies its error
// by which deadline, if any, ran out: the caller's, the total budget, or
// only this attempt's (the one case where a timeout is worth retrying).
func (r *retrying) attempt(ctx, budget context.Context, req Request) (Response, *Error) {
	call := budget
	if r.p.PerCallTimeout > 0 {
		var cancel context.CancelFunc
		call, cancel = r.clock.WithTimeout(budget, r.p.PerCallTimeout)
		defer cancel()
	}
	resp, err := r.next.Generate(call, req)
	if err == nil {
		return resp, nil
	}
	if budget.Err() != nil {
		return Response{}, r.contextError(ctx, budget, err)
	}
	if errors.Is(call.Err(), context.DeadlineExceeded) {
		return Response{}, &Error{
			Kind:      KindTimeout,
			Message:   fmt.Sprintf("attempt exceeded per-call timeout %v", r.p.PerCallTimeout),
			Retryable: true,
			Err:       err,
		}
	}
	return Response{}, Classify(err)
}

// contextError explains a failure once the caller's context or the total
// budget is done; neither is retryable. Otherwise err is classified as is.
func (r *retrying) contextError(ctx, budget context.Context, err error) *Error {
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return &Error{Kind: KindCanceled, Message: "canceled by caller", Err: err}
	case ctx.Err() != nil:
		return &Error{Kind: KindTimeout, Message: "caller deadline exceeded", Err: err}
	case budget.Err() != nil:
		return &Error{Kind: KindTimeout, Message: fmt.Sprintf("total budget %v exhausted", r.p.Total), Err: err}
	}
	return Classify(err)
}

// giveUp returns the final error, noting how many attempts were made so a
// log line tells a flaky provider from a dead one.
func giveUp(last *Error, attempts int, why string) *Error {
	if attempts == 1 && why == "" {
		return last
	}
	msg := last.Message
	if why != "" {
		msg = why + ": " + msg
	}
	return &Error{
		Kind:      last.Kind,
		Message:   fmt.Sprintf("gave up after %d attempt(s): %s", attempts, msg),
		Status:    last.Status,
		Retryable: last.Retryable,
		Err:       last,
	}
}
