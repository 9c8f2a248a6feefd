package engine

import (
	"strings"

	"github.com/batonhq/baton/rules"
)

// silence is the ladder that runs while the agents wait for an answer:
// each step fires its after-time past the previous one (or past the end
// of the question being spoken) if the candidate stays silent. Talking or
// typing pauses it; a message stops it.
type silence struct {
	// await is the question waiting out its ladder, or nil; it points at
	// cur, so that a ladder started for every question asked costs no
	// allocation.
	await *awaiting
	cur   awaiting
}

type awaiting struct {
	step   int
	role   string
	paused bool
}

// awaits reports whether an agent line starts the ladder once spoken.
func (sl *silence) awaits(s *Session, text string) bool {
	switch s.p.Silence.StartAfter {
	case rules.AfterAny:
		return true
	case rules.AfterQuestion:
		return strings.Contains(text, "?")
	}
	return false
}

// quiet reports whether no question is waiting out its ladder.
func (sl *silence) quiet() bool { return sl.await == nil || sl.await.paused }

// start begins the ladder after t was spoken: at the step after the one
// that made t, or at the first.
func (sl *silence) start(s *Session, t *turn) {
	step := 0
	if t.silence >= 0 {
		step = t.silence + 1
	}
	sl.stop(s)
	if step >= len(s.p.Silence.Steps) {
		return
	}
	sl.cur = awaiting{step: step, role: t.role}
	sl.await = &sl.cur
	if s.speaking() || s.cand.typing {
		sl.await.paused = true
		return
	}
	s.addTimer(timer{at: s.now + s.p.Silence.Steps[step].After.MS, kind: tSilence, ref: step})
}

func (sl *silence) stop(s *Session) {
	sl.await = nil
	s.timers.cancelKind(tSilence)
	s.prep.expire(s, "silence")
}

func (sl *silence) pause(s *Session) {
	if w := sl.await; w != nil && !w.paused {
		w.paused = true
		s.timers.cancelKind(tSilence)
	}
}

func (sl *silence) resume(s *Session) {
	w := sl.await
	if w == nil || !w.paused {
		return
	}
	w.paused = false
	s.addTimer(timer{at: s.now + s.p.Silence.Steps[w.step].After.MS, kind: tSilence, ref: w.step})
}

// step runs the ladder's current step.
func (sl *silence) step(s *Session) {
	if sl.await == nil {
		return
	}
	// A copy: what the step starts may start the ladder again.
	w := *sl.await
	st := &s.p.Silence.Steps[w.step]
	s.coverage.step(s, rules.CoverSilence, w.step)
	switch st.Action {
	case rules.SilenceSay:
		t := s.newTurnFor(&st.Turn, "silence", false, w.role)
		if st.Turn.Who.Kind == rules.RoleRefLast {
			t.role = w.role
		}
		t.silence = w.step
		sl.await = nil
		s.enqueue(t)
	case rules.SilenceAutoAdvance:
		sl.await = nil
		s.handoff.gaveUp()
		s.emit(Effect{Type: EffectAutoAdvance, Agent: w.role, Rule: "silence"})
	case rules.SilenceEnd:
		s.end("silence", "silence")
	}
}
