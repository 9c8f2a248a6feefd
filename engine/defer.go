package engine

import "slices"

// Defer holds agent turns while the pack's defer condition is true (the
// candidate talking or typing), at most the defer max; at that cap the
// turn becomes the pack's on_cap turn (an assumption-based follow-up) and
// goes out without further deferral. Hard turns are never deferred.

func (s *Session) shouldDefer(t *turn) bool {
	d := &s.p.TurnTaking.Defer
	if !t.deferrable || !d.When.Set() {
		return false
	}
	return s.evalBool(&d.When, t.role)
}

// holdTurn defers t if the defer rule says so, starting its cap.
func (s *Session) holdTurn(t *turn) bool {
	if !s.shouldDefer(t) {
		if t.held {
			// Deferring is the pack's choice, not lateness: the turn is
			// due from when it may go.
			t.held, t.due = false, max(t.due, s.now)
		}
		return false
	}
	t.held = true
	if t.deferredAt < 0 {
		t.deferredAt = s.now
		s.emit(Effect{Type: EffectDeferred, Agent: t.role, Kind: t.kind, Rule: t.rule})
		s.addTimer(timer{at: s.now + s.p.TurnTaking.Defer.Max.MS, kind: tDeferCap, key: t.id, rule: t.rule})
	}
	return true
}

// deferCap fires when turn id has waited the longest the pack allows.
func (s *Session) deferCap(id string) {
	f := &s.floor
	var t *turn
	inQueue := -1
	if f.active != nil && f.active.id == id {
		t = f.active
	}
	for i, q := range f.queue {
		if q.id == id {
			t, inQueue = q, i
		}
	}
	if t == nil {
		return
	}
	s.emit(Effect{Type: EffectDeferCap, Agent: t.role, Kind: t.kind, Rule: t.rule})
	repl := t
	if spec := &s.p.TurnTaking.Defer.OnCap; spec.Kind != "" {
		repl = s.newTurnFor(spec, t.rule, false, t.role)
		repl.window = t.window
	}
	repl.deferrable = false
	if repl != t {
		// The follow-up is a turn of another kind: the preparation waits
		// for the window's next turn, if the follow-up gives way and the
		// window waits again.
		if repl.window >= 0 && s.now < s.p.Timeline.Windows[repl.window].Close.MS {
			s.prep.unclaim(s, t)
		} else {
			s.prep.drop(s, t)
		}
	}
	if inQueue >= 0 {
		f.queue[inQueue] = repl
		return
	}
	if repl != t {
		f.active = nil
		f.queue = slices.Insert(f.queue, 0, repl)
	}
}
