package clocktest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/batonhq/baton/runtime/clock"
)

var _ clock.Clock = (*Skip)(nil)

// Skip is a clock that never waits: a timer fires as soon as it is armed,
// moving the clock on by its duration, so code that sleeps on it (a
// retry's backoff) runs at once yet sees the time pass. A WithTimeout
// deadline is reckoned from Now and ends its context once the clock
// reaches it, by a timer or Advance. It suits code that waits on one
// thing at a time; concurrent sleepers would each move the clock by
// their own wait. It is safe for concurrent use.
type Skip struct {
	mu        sync.Mutex
	now       time.Time
	deadlines []*skipDeadline
}

type skipDeadline struct {
	at     time.Time
	cancel context.CancelCauseFunc
}

// NewSkip returns a skipping clock reading start.
func NewSkip(start time.Time) *Skip { return &Skip{now: start} }

// Now returns the clock's time.
func (s *Skip) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

// Advance moves the clock forward by d, ending the contexts whose
// deadline it reaches.
func (s *Skip) Advance(d time.Duration) {
	s.mu.Lock()
	if d > 0 {
		s.now = s.now.Add(d)
	}
	var due []*skipDeadline
	s.deadlines = slices.DeleteFunc(s.deadlines, func(dl *skipDeadline) bool {
		if dl.at.After(s.now) {
			return false
		}
		due = append(due, dl)
		return true
	})
	s.mu.Unlock()
	for _, dl := range due {
		dl.cancel(context.DeadlineExceeded)
	}
}

// NewTimer returns a timer that has already fired: the clock moved on by
// d and the timer's channel holds the new time.
func (s *Skip) NewTimer(d time.Duration) clock.Timer {
	t := &skipTimer{s: s, c: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// WithTimeout returns a context whose deadline is d from Now and that
// ends with context.DeadlineExceeded once the clock reaches it (at once
// when d <= 0), or when parent ends first.
func (s *Skip) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	s.mu.Lock()
	dl := &skipDeadline{at: s.now.Add(d), cancel: cancel}
	s.deadlines = append(s.deadlines, dl)
	s.mu.Unlock()
	s.Advance(0)
	return &deadlineCtx{Context: ctx, deadline: dl.at}, func() {
		s.mu.Lock()
		s.deadlines = slices.DeleteFunc(s.deadlines, func(x *skipDeadline) bool { return x == dl })
		s.mu.Unlock()
		cancel(context.Canceled)
	}
}

type skipTimer struct {
	s *Skip
	c chan time.Time
}

func (t *skipTimer) C() <-chan time.Time { return t.c }

// Reset fires the timer again at once, d later on the clock.
func (t *skipTimer) Reset(d time.Duration) {
	t.drain()
	t.s.Advance(d)
	t.c <- t.s.Now()
}

// Stop drops a firing not yet received; it reports whether there was one.
func (t *skipTimer) Stop() bool { return t.drain() }

func (t *skipTimer) drain() bool {
	select {
	case <-t.c:
		return true
	default:
		return false
	}
}
