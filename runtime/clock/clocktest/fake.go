// Package clocktest is the clock tests drive: a Fake that moves only
// when told to, so a ten-minute interview, a backoff or a lease expiry
// is tested without sleeping and without timing assertions. Only tests
// import it; the service runs on clock.Real.
package clocktest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/batonhq/baton/runtime/clock"
)

var _ clock.Clock = (*Fake)(nil)

// Fake is a manual clock for tests. Timers fire, in deadline order, only
// when Advance or Set moves the clock past them. It is safe for concurrent
// use.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	// changed is closed and replaced whenever a timer is armed, so tests
	// can wait for a goroutine to start waiting without polling.
	changed chan struct{}
}

// NewFake returns a fake clock reading start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, changed: make(chan struct{})}
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer arms a fake timer.
func (f *Fake) NewTimer(d time.Duration) clock.Timer {
	t := &fakeTimer{f: f, c: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// WithTimeout returns a context that ends with context.DeadlineExceeded
// once the fake clock reaches d from now (or when parent ends first).
func (f *Fake) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	dc := &deadlineCtx{Context: ctx, deadline: f.Now().Add(d)}
	// The deadline is a timer that cancels when it fires, inside Advance
	// or Set: no goroutine waits for it, so a test that moves the clock
	// sees the context end before Advance returns, and a fuzzed run's
	// coverage does not depend on when such a goroutine is scheduled.
	if d <= 0 {
		cancel(context.DeadlineExceeded)
		return dc, func() { cancel(context.Canceled) }
	}
	t := &fakeTimer{f: f, c: make(chan time.Time, 1), fire: func() { cancel(context.DeadlineExceeded) }}
	t.Reset(d)
	return dc, func() {
		t.Stop()
		cancel(context.Canceled)
	}
}

// deadlineCtx carries a deadline on a clock other than the kernel's, which
// context.WithDeadline cannot express.
type deadlineCtx struct {
	context.Context
	deadline time.Time
}

func (c *deadlineCtx) Deadline() (time.Time, bool) {
	if d, ok := c.Context.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// Err reports DeadlineExceeded, as context.WithDeadline does, when it was
// the deadline that ended the context.
func (c *deadlineCtx) Err() error {
	err := c.Context.Err()
	if err != nil && errors.Is(context.Cause(c.Context), context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return err
}

// Advance moves the clock forward by d, firing due timers in order.
func (f *Fake) Advance(d time.Duration) { f.Set(f.Now().Add(d)) }

// Set moves the clock to t (never backwards), firing due timers in order.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.Before(f.now) {
		return
	}
	for {
		i := f.nextLocked()
		if i < 0 || f.timers[i].at.After(t) {
			break
		}
		ft := f.timers[i]
		f.timers = slices.Delete(f.timers, i, i+1)
		ft.armed = false
		f.now = ft.at
		if ft.fire != nil {
			// Outside the lock, in its turn: ending a context runs code
			// that may read the clock.
			f.mu.Unlock()
			ft.fire()
			f.mu.Lock()
			continue
		}
		select {
		case ft.c <- ft.at:
		default:
		}
	}
	// Another Set may have moved the clock on while a deadline fired.
	if t.After(f.now) {
		f.now = t
	}
}

func (f *Fake) nextLocked() int {
	best := -1
	for i, t := range f.timers {
		if best < 0 || t.at.Before(f.timers[best].at) {
			best = i
		}
	}
	return best
}

// Next reports the earliest armed timer's deadline.
func (f *Fake) Next() (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := f.nextLocked()
	if i < 0 {
		return time.Time{}, false
	}
	return f.timers[i].at, true
}

// Armed lists the deadlines of all armed timers, earliest first.
func (f *Fake) Armed() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]time.Time, len(f.timers))
	for i, t := range f.timers {
		out[i] = t.at
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// WaitFor blocks until cond, evaluated under the clock's lock each time a
// timer is armed, holds, or ctx ends.
func (f *Fake) WaitFor(ctx context.Context, cond func(armed []time.Time) bool) error {
	for {
		f.mu.Lock()
		armed := make([]time.Time, len(f.timers))
		for i, t := range f.timers {
			armed[i] = t.at
		}
		ch := f.changed
		f.mu.Unlock()
		slices.SortFunc(armed, func(a, b time.Time) int { return a.Compare(b) })
		if cond(armed) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

type fakeTimer struct {
	f     *Fake
	c     chan time.Time
	at    time.Time
	armed bool
	// fire, when set, is called instead of sending on c.
	fire func()
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Reset(d time.Duration) {
	f := t.f
	f.mu.Lock()
	defer f.mu.Unlock()
	t.removeLocked()
	// Drain so a value from before the reset is never received after it.
	select {
	case <-t.c:
	default:
	}
	t.at = f.now.Add(d)
	if d <= 0 {
		t.c <- t.at
		return
	}
	t.armed = true
	f.timers = append(f.timers, t)
	close(f.changed)
	f.changed = make(chan struct{})
}

func (t *fakeTimer) Stop() bool {
	f := t.f
	f.mu.Lock()
	defer f.mu.Unlock()
	was := t.armed
	t.removeLocked()
	select {
	case <-t.c:
	default:
	}
	return was
}

func (t *fakeTimer) removeLocked() {
	if !t.armed {
		return
	}
	if i := slices.Index(t.f.timers, t); i >= 0 {
		t.f.timers = slices.Delete(t.f.timers, i, i+1)
	}
	t.armed = false
}
