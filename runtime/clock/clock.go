// Package clock is the service's only source of time. Production code uses
// Real; tests use clocktest.Fake, which moves only when told to, so a ten-minute
// interview, a webhook's 1 s and 2 s backoff, a model call's retries and
// budgets, or a recovery after downtime can be tested without sleeping and
// without timing assertions.
//
// Everything that decides what a session does or reports runs on the
// injected clock: engine time, simulated speech and model latency, model
// retries and their time budgets, webhook retries, and every latency the
// server measures. Only transport liveness stays on the kernel's clock:
// socket read and write deadlines, WebSocket keepalive pings and the
// handshake timeout, the bound on one webhook POST, the few seconds a
// client waits for room in a swamped session's inbox, and the shutdown
// grace. Those guard against stuck peers, sockets and goroutines, not
// anything a session does.
package clock

import (
	"context"
	"time"
)

// Clock tells the time and makes timers.
type Clock interface {
	// Now is the current time. The real clock's value carries a monotonic
	// reading, so differences between two Nows are immune to wall-clock steps.
	Now() time.Time
	// NewTimer returns a timer that fires once, d from now.
	NewTimer(d time.Duration) Timer
	// WithTimeout is context.WithTimeout on this clock: the context's
	// deadline is d from Now, and it ends with context.DeadlineExceeded
	// when this clock reaches it.
	WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc)
}

// Timer is a one-shot timer, like *time.Timer with Go 1.23 semantics: after
// Stop or Reset no stale value is received from C.
type Timer interface {
	C() <-chan time.Time
	// Reset re-arms the timer to fire d from now.
	Reset(d time.Duration)
	// Stop disarms it; it reports whether the timer was armed.
	Stop() bool
}

// Sleep waits for d on c or until ctx is done, returning ctx's error then.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

// Real is the system clock.
func Real() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

func (realClock) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, d)
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time   { return r.t.C }
func (r realTimer) Reset(d time.Duration) { r.t.Reset(d) }
func (r realTimer) Stop() bool            { return r.t.Stop() }
