package engine

import (
	"cmp"
	"slices"
	"strconv"
)

// The timer table: every deadline a session waits for is a timer here.
// A feature that needs one adds its kind below, in the order kinds fire
// at a shared deadline, and its case in fire.

// timerKind orders timers that share a deadline: hard things first, so an
// anchor due at 03:00 always wins over a window closing at 03:00.
type timerKind uint8

const (
	// tPrepare comes first: a line asked for at T is for a turn due
	// later, and asking never changes what else is due at T.
	tPrepare timerKind = iota
	tAnchor
	tDuration
	tDeferCap
	tLLMTimeout
	tClientTool
	tSlot
	tTyping
	tSpeechResume
	tSilence
	tWindowClose
	tWindowOpen
	tRule
	tStall
	tCover
	tWaitFor
)

// fire hands a due timer to the feature that set it.
func (s *Session) fire(tm timer) {
	switch tm.kind {
	case tAnchor:
		s.timeline.anchor(s, tm.ref)
	case tDuration:
		s.end("duration", "")
	case tWindowOpen:
		s.timeline.open(tm.ref)
	case tWindowClose:
		s.timeline.close(s, tm.ref)
	case tDeferCap:
		s.deferCap(tm.key)
	case tLLMTimeout:
		s.requestTimedOut(tm.key)
	case tSlot:
		s.slots.fire(s, tm.ref)
	case tClientTool:
		s.clientTools.timedOut(s, tm.key)
	case tTyping:
		s.cand.typingLapsed(s)
	case tSpeechResume:
		s.candidateIdle()
	case tSilence:
		s.silence.step(s)
	case tStall:
		s.liveness.stall(s)
	case tRule:
		r := &s.p.Rules[tm.ref]
		if r.Every.IsSet() {
			s.addTimer(timer{at: s.now + r.Every.MS, kind: tRule, ref: tm.ref, rule: r.ID, prio: r.Priority})
		}
		s.runRule(r)
		s.prep.expire(s, r.ID)
	case tPrepare:
		s.prep.fire(s, tm)
	case tCover:
		s.cover.fire(s, tm.key)
	case tWaitFor:
		s.waits.gaveUp(s, tm.key)
	}
}

// timer is one entry of the timer table. ref identifies what it belongs to
// (anchor or window index, turn or request id) so it can be cancelled.
type timer struct {
	at   int64
	kind timerKind
	prio int // rule priority, higher first; 0 elsewhere
	rule string
	seq  uint64
	ref  int
	key  string
	// of is, for a tPrepare timer, the kind of the timer whose turn it
	// prepares (same ref): cancelling that timer cancels it too.
	of timerKind
}

func (a *timer) less(b *timer) bool {
	return cmp.Or(
		cmp.Compare(a.at, b.at),
		cmp.Compare(a.kind, b.kind),
		cmp.Compare(b.prio, a.prio),
		cmp.Compare(a.rule, b.rule),
		cmp.Compare(a.seq, b.seq),
	) < 0
}

// timerTable is kept sorted, latest first: sessions hold a few dozen
// timers at most, so a sorted slice beats a heap on both speed and
// simplicity, and with the next due at the end, taking it moves nothing
// and a new timer (most are due soon) moves the few due before it. With
// the soonest first, every pop shifted the whole table, each move of a
// timer's strings a write barrier while the collector runs.
type timerTable struct {
	ts  []timer
	seq uint64
}

func (tt *timerTable) add(t timer) {
	tt.seq++
	t.seq = tt.seq
	// After every timer due later, found by binary search.
	lo, hi := 0, len(tt.ts)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.less(&tt.ts[m]) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	tt.ts = slices.Insert(tt.ts, lo, t)
}

// cancel removes every timer of kind matching ref and key, and the
// preparations for them. Like cancelKind, it writes nothing when nothing
// matches (the usual case).
func (tt *timerTable) cancel(kind timerKind, ref int, key string) {
	tt.ts = slices.DeleteFunc(tt.ts, func(t timer) bool {
		return (t.kind == kind || (t.kind == tPrepare && t.of == kind)) && t.ref == ref && t.key == key
	})
}

// cancelKind removes every timer of kind and the preparations for them.
func (tt *timerTable) cancelKind(kind timerKind) {
	tt.ts = slices.DeleteFunc(tt.ts, func(t timer) bool {
		return t.kind == kind || (t.kind == tPrepare && t.of == kind)
	})
}

// find returns the first timer due of kind with ref.
func (tt *timerTable) find(kind timerKind, ref int) (timer, bool) {
	for i := len(tt.ts) - 1; i >= 0; i-- {
		if t := tt.ts[i]; t.kind == kind && t.ref == ref {
			return t, true
		}
	}
	return timer{}, false
}

// first is the next timer due, or nil.
func (tt *timerTable) first() *timer {
	if len(tt.ts) == 0 {
		return nil
	}
	return &tt.ts[len(tt.ts)-1]
}

// popDue removes and returns the first timer due at or before t.
func (tt *timerTable) popDue(t int64) (timer, bool) {
	f := tt.first()
	if f == nil || f.at > t {
		return timer{}, false
	}
	first := *f
	*f = timer{}
	tt.ts = tt.ts[:len(tt.ts)-1]
	return first, true
}

func (tt *timerTable) next() (int64, bool) {
	if f := tt.first(); f != nil {
		return f.at, true
	}
	return 0, false
}

func formatMS(ms int64) string { return strconv.FormatInt(ms, 10) + "ms" }
