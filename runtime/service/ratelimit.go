package service

import "time"

// bucket is a token bucket: rate tokens a second up to burst. It is used
// by one goroutine (a connection's reader) or under its owner's lock, so
// it has no lock of its own. x/time/rate is not a dependency and this is
// all of it that is needed.
type bucket struct {
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

func newBucket(rate float64, burst int, now time.Time) *bucket {
	return &bucket{rate: rate, burst: float64(burst), tokens: float64(burst), last: now}
}

// allow takes one token if there is one.
func (b *bucket) allow(now time.Time) bool {
	if b.rate <= 0 {
		return true
	}
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.tokens = min(b.burst, b.tokens+dt*b.rate)
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true
	}
	return false
}
