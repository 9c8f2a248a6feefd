package service

import (
	"log/slog"
	"sync"
	"time"

	"github.com/batonhq/baton/runtime/clock"

	"github.com/prometheus/client_golang/prometheus"
)

// Admission control. A node past its capacity answers every session late,
// and a log that cannot keep up (a JetStream cluster short of CPU, a disk
// stalling) ends in failed writes, which fail sessions. Taking more
// sessions only deepens both. So while the client events of the last
// admitWindow were answered late — more than admitLateShare of them
// acknowledged more than AdmitLatency after they were read — a new session
// is refused with overloaded (HTTP 503), and the client tries later or
// another node. The sessions already running, and their resumes, are
// never refused: they are what the refusal protects.
//
// Refusing needs admitMinEvents answers in the window, so a handful of
// slow ones on a quiet node do not close it. Reopening needs the late
// share well below the bar (admitReopenShare), or no late answer at all,
// however few the answers: a quiet node, or one whose sessions have gone,
// reopens once its late answers have left the window. Only answered
// events count: a node stuck so hard that nothing is answered reopens
// after the window, and its next late answers close it again.

const (
	admitSlot      = 250 * time.Millisecond
	admitSlots     = 8 // a window of admitSlot × admitSlots = 2 s
	admitWindow    = admitSlot * admitSlots
	admitMinEvents = 50
	admitLateShare = 0.01
	// admitReopenShare is the late share below which a refusing node
	// reopens: lower than admitLateShare, so that a node at the bar does
	// not open and close with every answer.
	admitReopenShare = 0.001
)

type admission struct {
	limit time.Duration // 0: never refuses
	clock clock.Clock
	log   *slog.Logger

	mu       sync.Mutex
	slots    [admitSlots]admitCount
	refusing bool

	refused prometheus.Counter
}

// admitCount is the answers of one slot of time.
type admitCount struct {
	slot    int64 // which slot since the epoch these counts are for
	n, late int
}

func newAdmission(cfg *Config, reg prometheus.Registerer) *admission {
	clk := cfg.Clock
	if clk == nil {
		clk = clock.Real()
	}
	a := &admission{
		limit: cfg.AdmitLatency,
		clock: clk,
		log:   cfg.Logger,
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "baton_sessions_refused_total",
			Help: "New sessions refused with overloaded because the running ones were answered late (AdmitLatency).",
		}),
	}
	refusing := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "baton_admission_refusing",
		Help: "1 while new sessions are refused because the running ones are answered late, else 0.",
	}, func() float64 {
		if a.limit <= 0 {
			return 0
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		if refusing, _, _ := a.judgeLocked(a.clock.Now()); refusing {
			return 1
		}
		return 0
	})
	reg.MustRegister(a.refused, refusing)
	return a
}

// answered records a client event acknowledged d after it was read.
func (a *admission) answered(now time.Time, d time.Duration) {
	if a.limit <= 0 {
		return
	}
	slot := now.UnixNano() / int64(admitSlot)
	a.mu.Lock()
	defer a.mu.Unlock()
	c := &a.slots[slot%admitSlots]
	if c.slot != slot {
		*c = admitCount{slot: slot}
	}
	c.n++
	if d > a.limit {
		c.late++
	}
}

// admit returns nil when a new session may start now, or the refusal.
func (a *admission) admit(now time.Time) *ProtoError {
	if a.limit <= 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	refusing, n, late := a.judgeLocked(now)
	if !refusing {
		return nil
	}
	a.refused.Inc()
	return perr(CodeOverloaded, "server overloaded: %d of the %d events answered in the last %s took over %s; try again shortly or another node",
		late, n, admitWindow, a.limit)
}

// judgeLocked brings the refusing state up to now, from the window's
// answers, and returns it with them.
func (a *admission) judgeLocked(now time.Time) (refusing bool, n, late int) {
	n, late = a.windowLocked(now.UnixNano() / int64(admitSlot))
	switch {
	case !a.refusing && n >= admitMinEvents && float64(late) > admitLateShare*float64(n):
		a.refusing = true
		a.log.Warn("refusing new sessions: the running ones are answered late", "late", late, "answered", n, "window", admitWindow, "admit_latency", a.limit)
	case a.refusing && (late == 0 || n >= admitMinEvents && float64(late) <= admitReopenShare*float64(n)):
		a.refusing = false
		a.log.Info("taking new sessions again", "late", late, "answered", n, "window", admitWindow)
	}
	return a.refusing, n, late
}

// window returns the answers, and the late ones, of the window up to now.
func (a *admission) window(now time.Time) (n, late int) {
	slot := now.UnixNano() / int64(admitSlot)
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.windowLocked(slot)
}

func (a *admission) windowLocked(slot int64) (n, late int) {
	for _, c := range a.slots {
		if c.slot > slot-admitSlots && c.slot <= slot {
			n += c.n
			late += c.late
		}
	}
	return n, late
}
