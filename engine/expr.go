package engine

import (
	"strings"

	"github.com/batonhq/baton/rules"
)

// Expressions read the session through envHost: the environment pulls the
// views before every evaluation (Refresh), and calls the functions
// (tickets, memory...) when an expression does, so there is nothing to
// keep in sync by hand.

// evalBool evaluates a pack condition for role; an evaluation error is
// reported and counts as false so one bad expression cannot stall a
// session.
func (s *Session) evalBool(x *rules.Expr, role string) bool {
	if !x.Set() {
		return true
	}
	if x.Script.Set() {
		return s.scriptCondition(x, role)
	}
	// Set first: the actions a condition guards read role as the
	// condition left it, however it was answered.
	s.env.SetRole(role)
	if ok, known := x.ClockCondition(s.now); known {
		return ok
	}
	ok, err := s.env.EvalBool(x)
	if err != nil {
		s.note("", "expression error: "+err.Error())
		return false
	}
	return ok
}

// evalString evaluates a value as text (a role id, say).
func (s *Session) evalString(x *rules.Value, rule string) (string, bool) {
	v, err := s.env.Eval(&x.Expr)
	if err != nil {
		s.note(rule, err.Error())
		return "", false
	}
	return rules.Stringify(v), true
}

// envHost exposes session state to expressions.
type envHost struct{ s *Session }

// Refresh copies the views expressions read as candidate, session and now.
func (h envHost) Refresh(e *rules.Env) {
	s := h.s
	e.Now = s.now
	c := &e.Candidate
	c.MicActive = s.cand.micActive
	c.Typing = s.cand.typing
	c.Speaking = s.speaking()
	c.LastKeystrokeMS = s.cand.lastKeystroke
	c.LastSpeechEndMS = s.cand.lastSpeechEnd
	c.LowSTTCount = s.conf.lowInRow
	c.Messages = s.cand.messages
	c.LastMessageMS = s.cand.lastMsgAt
	c.LastMessage = s.cand.lastMsg
	v := &e.Session
	v.LastRole = s.floor.lastRole
	v.Turns = s.floor.turns
	v.AgentSpeaking = s.floor.active != nil && s.floor.active.state == tsSpeaking
	v.AwaitingReply = s.silence.await != nil
	v.HardTurnPending = s.hardPending()
	v.TurnPending = s.floor.active != nil || len(s.floor.queue) > 0
	v.LiveVoice = s.handoff.liveVoice
	f := &s.handoff
	s.seqs.view(&e.Sequence)
	e.Floor = rules.FloorView{Holder: f.holder, SinceMS: f.since, Lines: f.lines, Answers: f.answers, AutoAdvances: f.autoAdvances}
}

func (h envHost) Tickets(role string) int       { return h.s.tickets.of(h.s, role) }
func (h envHost) TicketsTotal() int             { return h.s.tickets.total() }
func (h envHost) Finished(role string) bool     { return h.s.tickets.finished(h.s, role) }
func (h envHost) Available() []string           { return h.s.tickets.holders(h.s, true) }
func (h envHost) FinishedRoles() []string       { return h.s.tickets.holders(h.s, false) }
func (h envHost) Active() string                { return h.s.handoff.holder }
func (h envHost) Slot(role, name string) string { return h.s.slot(role, name) }
func (h envHost) Records(name string) []any     { return h.s.memory.records[name] }
func (h envHost) File(path string) (rules.FileView, error) {
	return h.s.fileView(path)
}
func (h envHost) Memory(role string) []string {
	if i := h.s.roleIdx(role); i >= 0 {
		return h.s.memory.notes[i]
	}
	return nil
}

func (h envHost) TranscriptText(n int) string {
	tail := h.s.transcript.lines
	if n >= 0 && len(tail) > n {
		tail = tail[len(tail)-n:]
	}
	var b strings.Builder
	for _, l := range tail {
		b.WriteString(l.Speaker)
		b.WriteString(": ")
		b.WriteString(l.Text)
		b.WriteByte('\n')
	}
	return b.String()
}
