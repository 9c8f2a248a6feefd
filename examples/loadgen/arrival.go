package main

import (
	"math/rand/v2"
	"sync"
	"time"
)

// arrivalStream keeps the arrivals' draws apart from anything else the
// same seed seeds.
const arrivalStream = 0x61727269766c // "arrivl"

// poisson makes the gaps between the arrivals of a Poisson process:
// independent exponential draws whose mean is 1/rate, so arrivals in any
// second are Poisson-distributed with mean rate and never come in step.
type poisson struct {
	rng  *rand.Rand
	rate float64 // arrivals a second
}

func newPoisson(rate float64, seed uint64) *poisson {
	return &poisson{rng: rand.New(rand.NewPCG(seed, arrivalStream)), rate: rate}
}

// gap is the time from one arrival to the next.
func (p *poisson) gap() time.Duration {
	return time.Duration(p.rng.ExpFloat64() / p.rate * float64(time.Second))
}

// gauge follows how many sessions are alive at once: the peak and the
// time-weighted mean over a window.
type gauge struct {
	mu    sync.Mutex
	cur   int
	peak  int
	area  float64 // session-seconds since from
	last  time.Time
	from  time.Time
	until time.Time // when the window closed; zero while it is open
}

func (g *gauge) add(d int, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.advance(now)
	g.cur += d
	if g.until.IsZero() {
		g.peak = max(g.peak, g.cur)
	}
}

// advance adds the time since the last change, at the level held since,
// to the window's area.
func (g *gauge) advance(now time.Time) {
	if !g.until.IsZero() {
		return
	}
	if !g.last.IsZero() && now.After(g.last) {
		g.area += float64(g.cur) * now.Sub(g.last).Seconds()
	}
	g.last = now
}

// open starts the window at now: what came before is not measured.
func (g *gauge) open(now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.from, g.last, g.until, g.area, g.peak = now, now, time.Time{}, 0, g.cur
}

// close ends the window at now.
func (g *gauge) close(now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.advance(now)
	g.until = now
}

// now is the number of sessions live at this moment.
func (g *gauge) now() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cur
}

// stats are the peak and the mean over the closed window.
func (g *gauge) stats() (peak int, mean float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if span := g.until.Sub(g.from).Seconds(); span > 0 {
		mean = g.area / span
	}
	return g.peak, mean
}
