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

// rejectSpan is the window over which a connection's refused frames are
// counted against Config.MaxRejected.
// A minute: the close then catches any client that keeps more than
// MaxRejected/60 frames a second over the rate (1.7 at the default),
// however it paces itself, while a burst now and then never adds up.
const rejectSpan = time.Minute

// rejectWindow counts refused frames over a sliding window of rejectSpan
// in one-second steps. A count of refusals in a row would reset whenever a
// token came back, so a client pacing itself just over the rate would
// never be closed; a count over time cannot be dodged that way.
type rejectWindow struct {
	counts [rejectSpan / time.Second]int
	// head is the second (since the first refusal) counts[head%len] holds.
	head    int64
	start   time.Time
	started bool
	total   int
}

// add records one refusal at now and returns how many fell within the
// window, this one included.
func (w *rejectWindow) add(now time.Time) int {
	if !w.started {
		w.start, w.started = now, true
	}
	sec := int64(now.Sub(w.start) / time.Second)
	if sec < w.head {
		sec = w.head // the clock went back: count it in the current second
	}
	n := int64(len(w.counts))
	if sec-w.head >= n {
		// A quiet spell as long as the window: everything has expired.
		w.counts, w.total, w.head = [len(w.counts)]int{}, 0, sec
	}
	for w.head < sec {
		// The slot of the second leaving the window becomes the new one.
		w.head++
		w.total -= w.counts[w.head%n]
		w.counts[w.head%n] = 0
	}
	w.counts[sec%n]++
	w.total++
	return w.total
}
