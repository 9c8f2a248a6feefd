package clocktest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/runtime/clock"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestFakeFiresInOrder(t *testing.T) {
	f := NewFake(t0)
	a := f.NewTimer(3 * time.Second)
	b := f.NewTimer(time.Second)
	c := f.NewTimer(2 * time.Second)
	if got := f.Armed(); len(got) != 3 || !got[0].Equal(t0.Add(time.Second)) {
		t.Fatalf("armed %v", got)
	}
	f.Advance(1500 * time.Millisecond)
	select {
	case at := <-b.C():
		if !at.Equal(t0.Add(time.Second)) {
			t.Fatalf("b fired at %v", at)
		}
	default:
		t.Fatal("b did not fire")
	}
	select {
	case <-a.C():
		t.Fatal("a fired early")
	case <-c.C():
		t.Fatal("c fired early")
	default:
	}
	if !c.Stop() {
		t.Fatal("Stop of an armed timer reported false")
	}
	f.Advance(2 * time.Second)
	select {
	case <-c.C():
		t.Fatal("stopped timer fired")
	case <-a.C():
	default:
		t.Fatal("a did not fire")
	}
	if !f.Now().Equal(t0.Add(3500 * time.Millisecond)) {
		t.Fatalf("now %v", f.Now())
	}
	if _, ok := f.Next(); ok {
		t.Fatal("timers left armed")
	}
}

func TestFakeResetDropsStaleValue(t *testing.T) {
	f := NewFake(t0)
	tm := f.NewTimer(time.Second)
	f.Advance(time.Second) // fired, value waiting
	tm.Reset(time.Second)
	select {
	case <-tm.C():
		t.Fatal("stale value received after Reset")
	default:
	}
	f.Advance(time.Second)
	<-tm.C()
	tm.Reset(0)
	<-tm.C() // a zero reset fires at once
}

func TestSleepAndWaitFor(t *testing.T) {
	f := NewFake(t0)
	done := make(chan error, 1)
	go func() { done <- clock.Sleep(context.Background(), f, 2*time.Second) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.WaitFor(ctx, func(a []time.Time) bool { return len(a) == 1 }); err != nil {
		t.Fatal(err)
	}
	f.Advance(2 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if err := clock.Sleep(cctx, f, time.Hour); err == nil {
		t.Fatal("Sleep ignored a cancelled context")
	}
	if err := clock.Sleep(context.Background(), clock.Real(), time.Millisecond); err != nil {
		t.Fatal(err)
	}
}

func TestFakeWithTimeout(t *testing.T) {
	f := NewFake(t0)
	ctx, cancel := f.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if dl, ok := ctx.Deadline(); !ok || !dl.Equal(t0.Add(time.Minute)) {
		t.Fatalf("deadline %v %v", dl, ok)
	}
	// The context ends inside Advance, not some time after it.
	f.Advance(59 * time.Second)
	select {
	case <-ctx.Done():
		t.Fatal("ended before its deadline")
	default:
	}
	f.Advance(time.Second)
	select {
	case <-ctx.Done():
	default:
		t.Fatal("not ended when Advance reached its deadline")
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("err %v, want deadline exceeded", ctx.Err())
	}
	// A child inherits the end, and the earlier of two deadlines.
	outer, cancelOuter := f.WithTimeout(context.Background(), time.Second)
	inner, cancelInner := f.WithTimeout(outer, time.Hour)
	if dl, _ := inner.Deadline(); !dl.Equal(f.Now().Add(time.Second)) {
		t.Fatalf("inner deadline %v", dl)
	}
	cancelOuter()
	<-inner.Done()
	if !errors.Is(inner.Err(), context.Canceled) {
		t.Fatalf("inner err %v, want canceled", inner.Err())
	}
	cancelInner()
	// Cancelling stops a context's timer.
	if a := f.Armed(); len(a) > 0 {
		t.Fatalf("timers left armed: %v", a)
	}
	// A deadline already past ends the context at once.
	past, cancelPast := f.WithTimeout(context.Background(), 0)
	defer cancelPast()
	if !errors.Is(past.Err(), context.DeadlineExceeded) {
		t.Fatalf("zero timeout: err %v, want deadline exceeded", past.Err())
	}
}

func TestSleepHonorsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := clock.Sleep(ctx, clock.Real(), time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on canceled ctx = %v", err)
	}
	if err := clock.Sleep(context.Background(), clock.Real(), 0); err != nil {
		t.Fatalf("clock.Sleep(0) = %v", err)
	}
}
