package engine

import "github.com/batonhq/baton/rules"

// liveness notices a session that has nothing left to do: no turn on the
// floor or queued, no job running, no silence step or timer waiting (the
// session's duration limit aside), and a candidate neither talking nor
// typing. After the pack's stall_after of that, the rules trigger: stalled run
// once; the watch starts again when something happens. Without it a panel
// whose candidate stopped answering would idle to its hard limit and end
// with no outcome.
type liveness struct {
	// idleSince is when the session last became idle, -1 while busy.
	idleSince int64
	// fired is set once stalled ran for the current idle stretch.
	fired bool
}

func (l *liveness) init(*Session) { l.idleSince = -1 }

// idle reports whether nothing is pending.
func (s *Session) idle() bool {
	if s.floor.active != nil || len(s.floor.queue) > 0 || len(s.jobs.running) > 0 || s.waits.pending() || !s.jobs.live {
		return false
	}
	if s.silence.await != nil || s.speaking() || s.cand.typing {
		return false
	}
	for i := range s.timers.ts {
		if k := s.timers.ts[i].kind; k != tDuration && k != tStall {
			return false
		}
	}
	return true
}

// watch runs after every settle: it arms the stall timer when the session
// has just become idle and disarms it when it is busy again.
func (l *liveness) watch(s *Session) {
	after := s.p.Liveness.StallAfter.MS
	if after <= 0 || s.ended {
		return
	}
	if !s.idle() {
		if l.idleSince >= 0 {
			l.idleSince, l.fired = -1, false
			s.timers.cancelKind(tStall)
		}
		return
	}
	if l.idleSince < 0 {
		l.idleSince = s.now
		s.addTimer(timer{at: s.now + after, kind: tStall})
	}
}

// activity restarts the watch: an input other than the clock moving is
// something happening (a candidate's message, a live session's line),
// even when it leaves nothing pending.
func (l *liveness) activity(s *Session) {
	if l.idleSince >= 0 {
		l.idleSince, l.fired = -1, false
		s.timers.cancelKind(tStall)
	}
}

// stall fires the stalled rules for the current idle stretch.
func (l *liveness) stall(s *Session) {
	if l.fired || l.idleSince < 0 {
		return
	}
	l.fired = true
	s.emit(Effect{Type: EffectNote, Rule: "liveness", Reason: "stalled: nothing pending since " + rules.FormatClock(l.idleSince)})
	s.fireRules(rules.EngineTrigger(rules.TriggerStalled))
}
