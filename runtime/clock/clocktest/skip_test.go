package clocktest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/runtime/clock"
)

// TestSkipWaitsNoRealTime sleeps and times out on a skipping clock: each
// sleep returns at once, moving the clock by its length, and a deadline
// ends its context only once the clock reaches it.
func TestSkipWaitsNoRealTime(t *testing.T) {
	s := NewSkip(t0)
	ctx, cancel := s.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if dl, ok := ctx.Deadline(); !ok || !dl.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("deadline %v %v, want %v", dl, ok, t0.Add(5*time.Second))
	}
	if err := clock.Sleep(ctx, s, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := s.Now().Sub(t0); got != 2*time.Second {
		t.Fatalf("after a 2s sleep the clock moved %v", got)
	}
	if ctx.Err() != nil {
		t.Fatalf("context ended 3s before its deadline: %v", ctx.Err())
	}
	tm := s.NewTimer(3 * time.Second)
	if at := <-tm.C(); !at.Equal(t0.Add(5 * time.Second)) {
		t.Fatalf("timer fired at %v", at)
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("context at its deadline: %v", ctx.Err())
	}
	if tm.Stop() {
		t.Fatal("Stop found a firing that was received")
	}

	// A context cancelled before its deadline is forgotten, and a later
	// one is not ended early.
	c2, cancel2 := s.WithTimeout(context.Background(), time.Second)
	cancel2()
	if !errors.Is(c2.Err(), context.Canceled) {
		t.Fatalf("cancelled context: %v", c2.Err())
	}
	c3, cancel3 := s.WithTimeout(context.Background(), time.Second)
	defer cancel3()
	s.Advance(999 * time.Millisecond)
	if c3.Err() != nil {
		t.Fatalf("context ended a millisecond early: %v", c3.Err())
	}
	s.Advance(time.Millisecond)
	if !errors.Is(c3.Err(), context.DeadlineExceeded) {
		t.Fatalf("context at its deadline: %v", c3.Err())
	}
	if c4, cancel4 := s.WithTimeout(context.Background(), 0); !errors.Is(c4.Err(), context.DeadlineExceeded) {
		t.Fatalf("zero timeout: %v", c4.Err())
	} else {
		cancel4()
	}
}
