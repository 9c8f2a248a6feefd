package llm

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/runtime/clock"
)

// step is one scripted attempt: return err (or a response when nil), or
// block until the attempt's context is done when block is set.
type step struct {
	err   error
	block bool
	text  string
}

type scripted struct {
	steps    []step
	calls    atomic.Int32
	deadline []bool
}

func (s *scripted) Generate(ctx context.Context, _ Request) (Response, error) {
	n := int(s.calls.Add(1)) - 1
	_, ok := ctx.Deadline()
	s.deadline = append(s.deadline, ok)
	if n >= len(s.steps) {
		return Response{}, errors.New("script exhausted")
	}
	st := s.steps[n]
	if st.block {
		<-ctx.Done()
		return Response{}, ctx.Err()
	}
	if st.err != nil {
		return Response{}, st.err
	}
	return Response{Text: st.text}, nil
}

// sleepRecorder is the real clock except for timers, which only backoff
// waits use: each is recorded and fires at once. Timeouts stay real.
type sleepRecorder struct {
	clock.Clock
	slept []time.Duration
	// failAt, when set, makes the n-th wait (1-based) call cancel and never
	// fire, to simulate the caller giving up during a backoff.
	failAt int
	cancel context.CancelFunc
	// t, when set, fails the test on any wait.
	t *testing.T
}

func newRecorder() *sleepRecorder { return &sleepRecorder{Clock: clock.Real()} }

func (r *sleepRecorder) NewTimer(d time.Duration) clock.Timer {
	if r.t != nil {
		r.t.Errorf("waited %v", d)
	}
	r.slept = append(r.slept, d)
	t := firedTimer(make(chan time.Time, 1))
	if r.failAt == len(r.slept) {
		r.cancel()
		return t
	}
	t <- time.Time{}
	return t
}

type firedTimer chan time.Time

func (t firedTimer) C() <-chan time.Time { return t }
func (firedTimer) Reset(time.Duration)   {}
func (firedTimer) Stop() bool            { return false }

// top is a jitter source that always draws the whole backoff step.
func top() float64 { return 1 }

func errKind(k Kind, status int) *Error {
	return &Error{Kind: k, Status: status, Message: string(k), Retryable: DefaultRetryable(k)}
}

func TestWithPolicy(t *testing.T) {
	def := DefaultRetryPolicy()
	tests := []struct {
		name      string
		policy    RetryPolicy
		steps     []step
		failSleep int
		wantCalls int
		wantSleep []time.Duration
		wantText  string
		wantKind  Kind
		wantMsg   string
	}{
		{
			name:      "first try succeeds",
			policy:    def,
			steps:     []step{{text: "ok"}},
			wantCalls: 1,
			wantText:  "ok",
		},
		{
			name:      "rate limit then server then success",
			policy:    def,
			steps:     []step{{err: errKind(KindRateLimit, 429)}, {err: errKind(KindServer, 500)}, {text: "third time"}},
			wantCalls: 3,
			wantSleep: []time.Duration{time.Second, 2 * time.Second},
			wantText:  "third time",
		},
		{
			name:      "network error retried",
			policy:    def,
			steps:     []step{{err: errKind(KindNetwork, 0)}, {text: "back"}},
			wantCalls: 2,
			wantSleep: []time.Duration{time.Second},
			wantText:  "back",
		},
		{
			name:      "server errors exhaust attempts",
			policy:    def,
			steps:     []step{{err: errKind(KindServer, 503)}, {err: errKind(KindServer, 503)}, {err: errKind(KindServer, 503)}, {text: "never"}},
			wantCalls: 3,
			wantSleep: []time.Duration{time.Second, 2 * time.Second},
			wantKind:  KindServer,
			wantMsg:   "gave up after 3 attempt(s)",
		},
		{
			name:      "bad request not retried",
			policy:    def,
			steps:     []step{{err: errKind(KindBadRequest, 400)}, {text: "never"}},
			wantCalls: 1,
			wantKind:  KindBadRequest,
		},
		{
			name:      "unknown error not retried",
			policy:    def,
			steps:     []step{{err: errors.New("mystery")}, {text: "never"}},
			wantCalls: 1,
			wantKind:  KindUnknown,
		},
		{
			name:      "canceled kind not retried",
			policy:    def,
			steps:     []step{{err: errKind(KindCanceled, 0)}, {text: "never"}},
			wantCalls: 1,
			wantKind:  KindCanceled,
		},
		{
			name:      "adapter vetoes retry of a server error",
			policy:    def,
			steps:     []step{{err: &Error{Kind: KindServer, Status: 501, Message: "method unavailable"}}, {text: "never"}},
			wantCalls: 1,
			wantKind:  KindServer,
		},
		{
			name:      "retryable flag on a non-retryable kind is ignored",
			policy:    def,
			steps:     []step{{err: &Error{Kind: KindBadRequest, Retryable: true}}, {text: "never"}},
			wantCalls: 1,
			wantKind:  KindBadRequest,
		},
		{
			name:      "last backoff repeats",
			policy:    RetryPolicy{MaxAttempts: 4, Backoff: []time.Duration{time.Second}},
			steps:     []step{{err: errKind(KindServer, 500)}, {err: errKind(KindServer, 500)}, {err: errKind(KindServer, 500)}, {text: "fourth"}},
			wantCalls: 4,
			wantSleep: []time.Duration{time.Second, time.Second, time.Second},
			wantText:  "fourth",
		},
		{
			name:      "zero MaxAttempts follows backoff length",
			policy:    RetryPolicy{Backoff: []time.Duration{time.Second, 2 * time.Second}},
			steps:     []step{{err: errKind(KindServer, 500)}, {err: errKind(KindServer, 500)}, {err: errKind(KindServer, 500)}, {text: "never"}},
			wantCalls: 3,
			wantSleep: []time.Duration{time.Second, 2 * time.Second},
			wantKind:  KindServer,
		},
		{
			name:      "zero policy tries once",
			policy:    RetryPolicy{},
			steps:     []step{{err: errKind(KindServer, 500)}, {text: "never"}},
			wantCalls: 1,
			wantKind:  KindServer,
		},
		{
			name:      "empty backoff retries without waiting",
			policy:    RetryPolicy{MaxAttempts: 2},
			steps:     []step{{err: errKind(KindServer, 500)}, {text: "again"}},
			wantCalls: 2,
			wantSleep: nil, // a zero backoff arms no timer
			wantText:  "again",
		},
		{
			name:      "caller cancels during backoff",
			policy:    def,
			steps:     []step{{err: errKind(KindRateLimit, 429)}, {text: "never"}},
			failSleep: 1,
			wantCalls: 1,
			wantSleep: []time.Duration{time.Second},
			wantKind:  KindCanceled,
		},
		{
			name:      "single attempt timeout is retried",
			policy:    RetryPolicy{MaxAttempts: 2, Backoff: []time.Duration{time.Second}, PerCallTimeout: time.Millisecond},
			steps:     []step{{block: true}, {text: "fast enough"}},
			wantCalls: 2,
			wantSleep: []time.Duration{time.Second},
			wantText:  "fast enough",
		},
		{
			name:      "per-call timeouts exhaust attempts",
			policy:    RetryPolicy{MaxAttempts: 2, PerCallTimeout: time.Millisecond},
			steps:     []step{{block: true}, {block: true}},
			wantCalls: 2,
			wantSleep: nil, // a zero backoff arms no timer
			wantKind:  KindTimeout,
			wantMsg:   "per-call timeout",
		},
		{
			name:      "total budget exhausted during a call is final",
			policy:    RetryPolicy{MaxAttempts: 3, Total: time.Millisecond},
			steps:     []step{{block: true}, {text: "never"}},
			wantCalls: 1,
			wantKind:  KindTimeout,
			wantMsg:   "total budget",
		},
		{
			name:      "no backoff past the total budget",
			policy:    RetryPolicy{MaxAttempts: 3, Backoff: []time.Duration{time.Second, time.Hour}, Total: time.Minute},
			steps:     []step{{err: errKind(KindServer, 500)}, {err: errKind(KindServer, 500)}, {text: "never"}},
			wantCalls: 2,
			wantSleep: []time.Duration{time.Second},
			wantKind:  KindServer,
			wantMsg:   "leaves no room",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			model := &scripted{steps: tt.steps}
			rec := newRecorder()
			rec.failAt, rec.cancel = tt.failSleep, cancel
			if tt.policy.Rand == nil {
				tt.policy.Rand = top // the whole step, so waits are exact
			}
			resp, err := WithPolicy(model, tt.policy, rec).Generate(ctx, Request{})

			if got := int(model.calls.Load()); got != tt.wantCalls {
				t.Errorf("calls = %d, want %d", got, tt.wantCalls)
			}
			if !reflect.DeepEqual(rec.slept, tt.wantSleep) {
				t.Errorf("slept %v, want %v", rec.slept, tt.wantSleep)
			}
			if tt.wantKind == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				if resp.Text != tt.wantText {
					t.Errorf("text = %q, want %q", resp.Text, tt.wantText)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T) is not *Error", err, err)
			}
			if e.Kind != tt.wantKind {
				t.Errorf("kind = %s, want %s (%v)", e.Kind, tt.wantKind, err)
			}
			if !strings.Contains(e.Message, tt.wantMsg) {
				t.Errorf("message %q lacks %q", e.Message, tt.wantMsg)
			}
			if resp.Text != "" {
				t.Errorf("failed call returned text %q", resp.Text)
			}
		})
	}
}

func TestWithPolicySetsPerCallDeadline(t *testing.T) {
	model := &scripted{steps: []step{{text: "x"}}}
	if _, err := WithPolicy(model, RetryPolicy{PerCallTimeout: time.Hour}, nil).Generate(context.Background(), Request{}); err != nil {
		t.Fatal(err)
	}
	if len(model.deadline) != 1 || !model.deadline[0] {
		t.Fatalf("attempt context had no deadline: %v", model.deadline)
	}
}

func TestWithPolicyCallerAlreadyCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	model := &scripted{steps: []step{{block: true}, {text: "never"}}}
	rec := newRecorder()
	rec.t = t
	_, err := WithPolicy(model, DefaultRetryPolicy(), rec).Generate(ctx, Request{})
	if e := Classify(err); e == nil || e.Kind != KindCanceled {
		t.Fatalf("err = %v, want canceled", err)
	}
	if n := model.calls.Load(); n != 1 {
		t.Fatalf("calls = %d, want 1", n)
	}
}

func TestWithPolicyCopiesBackoff(t *testing.T) {
	backoff := []time.Duration{time.Second}
	rec := newRecorder()
	m := WithPolicy(&scripted{steps: []step{{err: errKind(KindServer, 500)}, {text: "ok"}}},
		RetryPolicy{MaxAttempts: 2, Backoff: backoff, Rand: top}, rec)
	backoff[0] = time.Hour
	if _, err := m.Generate(context.Background(), Request{}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rec.slept, []time.Duration{time.Second}) {
		t.Fatalf("slept %v: policy shares the caller's slice", rec.slept)
	}
}

// TestWaitJitterAndHint: a wait is half the step plus a random share of
// the other half, and never shorter than the vendor's hint.
func TestWaitJitterAndHint(t *testing.T) {
	p := RetryPolicy{Backoff: []time.Duration{time.Second, 4 * time.Second}}
	for _, r := range []float64{0, 0.25, 0.5, 0.999} {
		got := p.Wait(2, 0, func() float64 { return r })
		if got < 2*time.Second || got > 4*time.Second {
			t.Errorf("r=%v: wait %v outside [2s, 4s]", r, got)
		}
		if want := 2*time.Second + time.Duration(r*float64(2*time.Second)); got != want {
			t.Errorf("r=%v: wait %v, want %v", r, got, want)
		}
	}
	if got := p.Wait(1, 3*time.Second, func() float64 { return 0.9 }); got != 3*time.Second {
		t.Errorf("a 3s hint over a 1s step waits %v", got)
	}
	if got := p.Wait(1, 100*time.Millisecond, func() float64 { return 0.5 }); got != 750*time.Millisecond {
		t.Errorf("a short hint under a 1s step waits %v, want the jittered step 750ms", got)
	}
}

// TestWithBudgetReplacesTotal: a call's own budget bounds it, not the
// policy's Total.
func TestWithBudgetReplacesTotal(t *testing.T) {
	model := &scripted{steps: []step{{err: errKind(KindRateLimit, 429)}, {text: "ok"}}}
	rec := newRecorder()
	pol := RetryPolicy{MaxAttempts: 2, Backoff: []time.Duration{5 * time.Second}, Total: 2 * time.Second, Rand: top}
	if _, err := WithPolicy(model, pol, rec).Generate(context.Background(), Request{}); err == nil {
		t.Fatal("a 5s backoff fit a 2s total budget")
	}
	model = &scripted{steps: []step{{err: errKind(KindRateLimit, 429)}, {text: "ok"}}}
	ctx := WithBudget(context.Background(), time.Minute)
	if resp, err := WithPolicy(model, pol, rec).Generate(ctx, Request{}); err != nil || resp.Text != "ok" {
		t.Fatalf("with a minute's budget: %v", err)
	}
}
