package engine

import "github.com/batonhq/baton/rules"

// inputGuard runs guardrails.input on each candidate message before it is
// routed, so no model request ever sees what a check refused, and sees
// what it redacted only as redacted.
type inputGuard struct {
	// checking is set while the checks of one message run: refuse and
	// redact act on it.
	checking bool
	refused  *rules.TurnSpec
	refuser  string // the check that refused
	redacted *string
}

// screen runs the input checks on ev. It returns the message to route (a
// copy when redacted; the input itself is never changed, as it is what
// the log holds) and whether it may reach the panel at all.
func (s *Session) screen(ev *CandidateEvent) (*CandidateEvent, bool) {
	checks := s.p.Guardrails.Input
	if len(checks) == 0 {
		return ev, true
	}
	ig := &s.input
	ig.checking, ig.refused, ig.refuser, ig.redacted = true, nil, "", nil
	defer func() { ig.checking = false }()
	for i := range checks {
		k := &checks[i]
		if !s.evalBool(&k.When, "") {
			continue
		}
		s.coverage.hit(s, rules.CoverGuardrail, k.ID)
		for _, a := range k.Do {
			if s.ended {
				return ev, false
			}
			s.do(a, k.ID)
		}
		if ig.refused != nil {
			// No one will see the message: later checks have nothing
			// left to flag or redact.
			ig.refuser = k.ID
			break
		}
	}
	if ig.redacted != nil {
		cp := *ev
		cp.Text = *ig.redacted
		ev = &cp
		s.env.Msg.Text = cp.Text
	}
	return ev, ig.refused == nil
}

// refuse answers a refused message with the check's line.
func (s *Session) refuse() {
	ig := &s.input
	if ig.refused == nil {
		return
	}
	t := s.newTurn(ig.refused, ig.refuser, false)
	t.deferrable = false
	s.enqueue(t)
}
