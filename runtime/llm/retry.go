package llm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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
	// Total bounds all attempts and waits together. A call's own budget
	// (WithBudget) replaces it for that call.
	Total time.Duration
	// Rand returns a number in [0, 1) for the jitter of each backoff step;
	// nil is math/rand/v2's Float64. Tests pass a fixed source.
	Rand func() float64
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

// Wait is how long to wait after the attempt-th failed attempt (from 1)
// when the vendor asked for hint (0: no hint): the backoff step with
// equal jitter (half the step, plus up to the other half at random, from
// rnd or, when nil, from p.Rand), but never less than the hint. Anything
// that spaces calls the way a live model is retried (a simulated model)
// computes its waits here.
func (p RetryPolicy) Wait(attempt int, hint time.Duration, rnd func() float64) time.Duration {
	if rnd == nil {
		rnd = p.Rand
	}
	if rnd == nil {
		rnd = rand.Float64
	}
	step := p.backoff(attempt)
	half := step / 2
	r := min(max(rnd(), 0), 1)
	wait := step - half + time.Duration(r*float64(half))
	return max(wait, hint)
}

type budgetKey struct{}

// WithBudget gives one call its own total budget, in place of the
// policy's Total: a turn is bounded by its due time, a setup job by its
// declared timeout. d <= 0 leaves the policy's Total.
func WithBudget(ctx context.Context, d time.Duration) context.Context {
	if d <= 0 {
		return ctx
	}
	return context.WithValue(ctx, budgetKey{}, d)
}

// budgetOf is ctx's own budget, or the policy's Total.
func (p RetryPolicy) budgetOf(ctx context.Context) time.Duration {
	if d, ok := ctx.Value(budgetKey{}).(time.Duration); ok {
		return d
	}
	return p.Total
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
// Each wait is p.Wait: the backoff step with jitter, or longer when the
// vendor said when to come back (Error.RetryAfter). A wait never runs past
// the call's budget (WithBudget, else p.Total): when what is left cannot
// hold it, the call gives up at once and says why. Backoff waits, the
// per-call timeout and the total budget all run on c (nil: the real
// clock), so a host with an injected clock sees every wait.
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
	total := r.p.budgetOf(ctx)
	if total > 0 {
		var cancel context.CancelFunc
		budget, cancel = r.clock.WithTimeout(ctx, total)
		defer cancel()
	}
	maxAttempts := r.p.attempts()
	for n := 1; ; n++ {
		resp, err := r.attempt(ctx, budget, total, req)
		if err == nil {
			return resp, nil
		}
		if n >= maxAttempts || !err.Retryable || !DefaultRetryable(err.Kind) {
			return Response{}, giveUp(err, n, "")
		}
		wait := r.p.Wait(n, err.RetryAfter, nil)
		// Sleeping into an already doomed budget only delays the fallback
		// line the engine will say anyway.
		if dl, ok := budget.Deadline(); ok {
			left := dl.Sub(r.clock.Now())
			switch {
			case err.RetryAfter > 0 && err.RetryAfter >= left:
				return Response{}, giveUp(err, n, fmt.Sprintf("the vendor asked to retry after %v, more than the %v left of the %v budget", err.RetryAfter, left.Round(time.Millisecond), total))
			case left <= wait:
				return Response{}, giveUp(err, n, fmt.Sprintf("total budget %v leaves no room for a %v backoff", total, wait))
			}
		}
		if serr := clock.Sleep(budget, r.clock, wait); serr != nil {
			return Response{}, giveUp(r.contextError(ctx, budget, total, err), n, "")
		}
	}
}

// attempt runs one call under the per-call timeout and classifies its error
// by which deadline, if any, ran out: the caller's, the total budget, or
// only this attempt's (the one case where a timeout is worth retrying).
func (r *retrying) attempt(ctx, budget context.Context, total time.Duration, req Request) (Response, *Error) {
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
		return Response{}, r.contextError(ctx, budget, total, err)
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
func (r *retrying) contextError(ctx, budget context.Context, total time.Duration, err error) *Error {
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return &Error{Kind: KindCanceled, Message: "canceled by caller", Err: err}
	case ctx.Err() != nil:
		return &Error{Kind: KindTimeout, Message: "caller deadline exceeded", Err: err}
	case budget.Err() != nil:
		return &Error{Kind: KindTimeout, Message: fmt.Sprintf("total budget %v exhausted", total), Err: err}
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
		Kind:       last.Kind,
		Message:    fmt.Sprintf("gave up after %d attempt(s): %s", attempts, msg),
		Status:     last.Status,
		Retryable:  last.Retryable,
		RetryAfter: last.RetryAfter,
		Err:        last,
	}
}
