package engine

import "github.com/batonhq/baton/rules"

// timeline is the fixed-time part of a session: hard anchors fire exactly
// at their time and preempt anything pending; adaptive windows take the
// floor at the first free moment in [open, close] (or at close, per the
// window's on_close); the pack's duration ends the session regardless.
type timeline struct {
	windows []windowState
}

type windowState uint8

const (
	wPending windowState = iota
	wOpen
	wDone
)

func (tl *timeline) init(s *Session) {
	p := s.p
	tl.windows = make([]windowState, len(p.Timeline.Windows))
	for i, a := range p.Timeline.Anchors {
		s.addTimer(timer{at: a.At.MS, kind: tAnchor, ref: i, rule: a.ID})
	}
	s.addTimer(timer{at: p.Duration.MS, kind: tDuration})
	for i, w := range p.Timeline.Windows {
		s.addTimer(timer{at: w.Open.MS, kind: tWindowOpen, ref: i, rule: w.ID})
		s.addTimer(timer{at: w.Close.MS, kind: tWindowClose, ref: i, rule: w.ID})
	}
	for i, r := range p.Rules {
		switch {
		case r.At.IsSet():
			s.addTimer(timer{at: r.At.MS, kind: tRule, ref: i, rule: r.ID, prio: r.Priority})
		case r.Every.IsSet():
			s.addTimer(timer{at: r.Every.MS, kind: tRule, ref: i, rule: r.ID, prio: r.Priority})
		}
	}
}

func (tl *timeline) anchor(s *Session, i int) {
	a := &s.p.Timeline.Anchors[i]
	s.coverage.hit(s, rules.CoverAnchor, a.ID)
	if a.Action == rules.AnchorEnd {
		s.emit(Effect{Type: EffectAnchor, Rule: a.ID, Reason: "end"})
		s.end(a.Reason, a.ID)
		return
	}
	s.emit(Effect{Type: EffectAnchor, Rule: a.ID, Agent: a.Turn.Role})
	s.enqueue(s.newTurn(&a.Turn, a.ID, true))
}

func (tl *timeline) open(i int) {
	if tl.windows[i] == wPending {
		tl.windows[i] = wOpen
	}
}

// close fires a window whose turn was not taken while it was open.
func (tl *timeline) close(s *Session, i int) {
	if tl.windows[i] != wOpen {
		return
	}
	w := &s.p.Timeline.Windows[i]
	tl.windows[i] = wDone
	if w.OnClose == rules.CloseSkip {
		s.emit(Effect{Type: EffectWindowSkipped, Rule: w.ID, Agent: w.Turn.Role})
		s.prep.expire(s, w.ID)
		return
	}
	t := s.newTurn(&w.Turn, w.ID, false)
	t.window = i
	s.enqueue(t)
}

// reopen puts a window whose turn was preempted back to waiting, if it
// has not closed yet.
// It reports whether the window waits again.
func (tl *timeline) reopen(s *Session, i int) bool {
	if tl.windows[i] == wDone && s.now < s.p.Timeline.Windows[i].Close.MS {
		tl.windows[i] = wOpen
	}
	return tl.windows[i] == wOpen
}

// takeFreeFloor lets the first open window whose condition holds take a
// free floor; it reports whether one did.
func (tl *timeline) takeFreeFloor(s *Session) bool {
	if !s.floorFree() {
		return false
	}
	for i := range s.p.Timeline.Windows {
		if tl.windows[i] != wOpen {
			continue
		}
		w := &s.p.Timeline.Windows[i]
		if !s.evalBool(&w.When, w.Turn.Role) {
			continue
		}
		tl.windows[i] = wDone
		t := s.newTurn(&w.Turn, w.ID, false)
		t.window = i
		s.enqueue(t)
		return true
	}
	return false
}
