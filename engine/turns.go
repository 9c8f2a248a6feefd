package engine

import (
	"strings"

	"github.com/batonhq/baton/rules"
)

// floor is who speaks: the turn holding the floor (being generated, ready
// or speaking) and the turns queued behind it. Hard turns (anchors) go
// first and cut off anything that is not hard.
type floor struct {
	queue    []*turn
	active   *turn
	lastRole string
	turns    int
}

type turnState uint8

const (
	tsQueued turnState = iota
	tsGenerating
	tsReady
	tsSpeaking
)

// turn is one agent utterance on its way out.
type turn struct {
	id         string
	role       string
	kind       string
	goal       string
	line       string
	intentTag  string
	rule       string
	hard       bool
	deferrable bool
	window     int // index of the window that created it, or -1
	silence    int // silence step that created it, or -1
	deferredAt int64
	held       bool // deferred now; when let go, its due time moves
	state      turnState
	reqID      string
	msgID      string
	text       string
	await      bool
	fallback   bool
	outcome    string
	violations []string
	original   string
	toolRounds []ToolRound
	// waiting counts client tool calls of its last round still to be
	// answered (clienttools.go); it starts when none are. clientRound
	// marks a turn going on after client calls: the agent is mid-action
	// (an edit under way), so a routed reply queues behind it rather
	// than drop it and the results its model has not seen.
	waiting     int
	clientRound bool
	guard       guard // guardrail.go
	// cleaned says what cleaning removed from the model's line (guardrail.go).
	cleaned string
	// due is when the turn could first be said (made, started, or let
	// go by defer), for its lateness.
	due int64
	// prep is the preparation made for it (prepare.go); stale, what had
	// changed when a stale prepared line was said anyway.
	prep  *prepEntry
	stale string
}

// resolveRole turns a turn's role reference into a role id; same is the
// role "same" stands for.
func (s *Session) resolveRole(ref rules.RoleRef, same string) string {
	switch ref.Kind {
	case rules.RoleRefSame:
		if same != "" {
			return same
		}
		return s.resolveRole(rules.RoleRef{Kind: rules.RoleRefLast}, "")
	case rules.RoleRefAddressed:
		if to := s.env.Msg.AddressedTo; to != "" {
			if _, ok := s.p.Role(to); ok {
				return to
			}
		}
		return s.resolveRole(rules.RoleRef{Kind: rules.RoleRefLast}, "")
	case rules.RoleRefLast:
		if s.floor.lastRole != "" {
			return s.floor.lastRole
		}
		return s.p.Roles[0].ID
	case rules.RoleRefActive:
		if h := s.handoff.holder; h != "" {
			return h
		}
		if t := s.p.Tickets; t != nil && len(t.Roles) > 0 {
			return t.Roles[0]
		}
		return s.resolveRole(rules.RoleRef{Kind: rules.RoleRefLast}, "")
	}
	return ref.Role
}

func (s *Session) newTurn(spec *rules.TurnSpec, rule string, hard bool) *turn {
	return s.newTurnFor(spec, rule, hard, "")
}

func (s *Session) newTurnFor(spec *rules.TurnSpec, rule string, hard bool, same string) *turn {
	t := s.makeTurn(spec, rule, hard, same)
	t.id = s.nextID('t')
	return &t
}

// makeTurn builds a turn without an id: newTurnFor's, or a preparation's
// stand-in for the turn its source will make.
func (s *Session) makeTurn(spec *rules.TurnSpec, rule string, hard bool, same string) turn {
	hard = hard || spec.Hard
	tag := spec.IntentTag
	if tag == "" {
		tag = spec.Goal
	}
	return turn{
		due:        s.now,
		role:       s.resolveRole(spec.Who, same),
		kind:       spec.Kind,
		goal:       spec.Goal,
		line:       spec.Line,
		intentTag:  tag,
		rule:       rule,
		hard:       hard,
		deferrable: !hard,
		window:     -1,
		silence:    -1,
		deferredAt: -1,
	}
}

// enqueue adds a turn. Hard turns go first and preempt any non-hard turn
// that has not started speaking.
func (s *Session) enqueue(t *turn) {
	s.prep.claim(t)
	f := &s.floor
	if !t.hard {
		f.queue = append(f.queue, t)
		return
	}
	if a := f.active; a != nil && !a.hard && a.state != tsSpeaking {
		s.preempt(a, t.rule)
		f.active = nil
	}
	i := 0
	for i < len(f.queue) && f.queue[i].hard {
		i++
	}
	f.queue = append(f.queue, nil)
	copy(f.queue[i+1:], f.queue[i:])
	f.queue[i] = t
}

// preempt drops a non-hard turn in favour of by. A window turn goes back to
// waiting if its window is still open.
func (s *Session) preempt(t *turn, by string) {
	s.timers.cancel(tDeferCap, 0, t.id)
	s.dropRequest(t.reqID)
	s.emit(Effect{Type: EffectPreempted, Agent: t.role, Kind: t.kind, Rule: t.rule, Reason: "preempted by " + by})
	// A window that waits again keeps the turn's preparation for its next
	// turn; any other source will not make this turn again.
	switch {
	case t.window >= 0 && s.timeline.reopen(s, t.window):
		s.prep.unclaim(s, t)
	case t.window >= 0:
		// A defer-cap follow-up left the window's preparation for a
		// next turn that will not come.
		s.prep.drop(s, t)
		s.prep.expire(s, t.rule)
	default:
		s.prep.drop(s, t)
	}
}

// preemptScheduled clears every non-hard turn not yet spoken: a routed reply
// answers the candidate now, and scheduled turns give way to it.
func (s *Session) preemptScheduled(by string) {
	f := &s.floor
	if a := f.active; a != nil && !a.hard && a.state != tsSpeaking {
		s.preempt(a, by)
		f.active = nil
	}
	kept := f.queue[:0]
	for _, t := range f.queue {
		if t.hard || t.clientRound {
			kept = append(kept, t)
			continue
		}
		s.preempt(t, by)
	}
	f.queue = kept
}

// hardTurn is the hard turn due but not yet speaking, if any.
func (s *Session) hardTurn() *turn {
	f := &s.floor
	if !s.hardPending() {
		return nil
	}
	if a := f.active; a != nil && a.hard {
		return a
	}
	for _, q := range f.queue {
		if q.hard {
			return q
		}
	}
	return nil
}

func (s *Session) hardPending() bool {
	f := &s.floor
	if f.active != nil && f.active.hard && f.active.state != tsSpeaking {
		return true
	}
	for _, t := range f.queue {
		if t.hard {
			return true
		}
	}
	return false
}

// floorFree reports whether the agents may start a window turn: no agent
// turn under way or queued, and no question waiting out its silence ladder.
// A candidate who is talking or typing does not block a window; the turn is
// created and the defer rule holds it, so the defer cap bounds the wait.
func (s *Session) floorFree() bool {
	return s.floor.active == nil && len(s.floor.queue) == 0 && s.silence.quiet()
}

// settleActive moves the turn holding the floor on; it reports whether
// more progress may be possible.
func (s *Session) settleActive() bool {
	f := &s.floor
	a := f.active
	if a.state == tsReady {
		if s.cover.holds(s, a) || s.holdTurn(a) {
			return false
		}
		s.speak(a)
	}
	if a.state == tsSpeaking && len(f.queue) > 0 && f.queue[0].hard && !a.hard {
		// A hard anchor does not wait for an agent to finish: the
		// speaker is cut off (the host stops its playback) and the
		// anchor's turn starts now.
		s.emit(Effect{Type: EffectPreempted, ID: a.msgID, Agent: a.role, Kind: a.kind, Rule: a.rule, Reason: "interrupted by " + f.queue[0].rule})
		f.active = nil
		return true
	}
	return false
}

// start begins producing a turn's text: a fixed line is ready at once,
// anything else is asked of the LLM.
func (s *Session) start(t *turn) {
	s.floor.active = t
	s.timers.cancel(tDeferCap, 0, t.id)
	t.due = max(t.due, s.now)
	if t.line != "" {
		s.deliver(t, t.line, false)
		return
	}
	if s.prep.release(s, t) {
		return
	}
	t.state = tsGenerating
	t.reqID = s.nextID('r')
	t.guard.askedAt = s.now
	req := s.buildRequest(t)
	s.emit(Effect{Type: EffectLLMRequest, ID: t.reqID, Agent: t.role, Kind: t.kind, Rule: t.rule, Request: req})
	s.openRequest(t.reqID, &s.floor, s.now+s.p.LLM.Timeout.MS)
	s.cover.arm(s, t)
}

// buildRequest is the request for t as it stands; it takes the
// instructions queued for the role, which go out with it.
func (s *Session) buildRequest(t *turn) *LLMRequest { return s.request(t, true) }

// peekRequest is buildRequest leaving the queued instructions in place:
// what a request made now would be, for a preparation.
func (s *Session) peekRequest(t *turn) *LLMRequest { return s.request(t, false) }

// compareRequest is peekRequest built into the preparation's scratch
// request, valid until the next call: after most steps every prepared
// line's request is built again only to be found unchanged, and
// allocating each was a tenth of a sweep's allocations. One that is
// sent is copied first (LLMRequest.kept).
func (s *Session) compareRequest(t *turn) *LLMRequest {
	s.prep.scratch = s.fillRequest(s.prep.scratch, t, false)
	return s.prep.scratch
}

// kept is a copy of r that no later compareRequest changes (its
// transcript tail is shared, and never changes).
func (r *LLMRequest) kept() *LLMRequest {
	cp := *r
	return &cp
}

func (s *Session) request(t *turn, take bool) *LLMRequest { return s.fillRequest(nil, t, take) }

// fillRequest builds the request for t into req, or into a new one when
// req is nil.
func (s *Session) fillRequest(req *LLMRequest, t *turn, take bool) *LLMRequest {
	p := s.p
	if req == nil {
		req = new(LLMRequest)
	}
	*req = LLMRequest{
		SessionID:            s.opts.SessionID,
		Role:                 t.role,
		Kind:                 t.kind,
		TurnGoal:             t.goal,
		System:               s.injected(t.role, s.persona(t.role), take),
		Tools:                s.offeredTools(t.role),
		ToolRounds:           t.toolRounds,
		CandidateLastMessage: s.cand.lastMsg,
		Human:                s.human(),
		Constraints: Constraints{
			MaxSentences:     p.Guardrails.MaxSentences.Int(),
			MaxQuestionCount: p.Guardrails.MaxQuestions,
		},
		TimeoutMS: p.LLM.Timeout.MS,
	}
	if role, ok := p.Role(t.role); ok {
		req.Constraints.MaxWords = p.Guardrails.WordBound(role)
	}
	s.modelFor(req)
	req.TranscriptTail = s.transcript.tail(p.LLM.TranscriptTail)
	req.ScenarioContext = s.transcript.context
	req.Assembly, req.Files = s.files.assemble(s, t.role, nil)
	if h := p.LLM.Shape; h != nil {
		s.shapeRequest(h, t, req)
	}
	return req
}

// timedOut takes the timeout of a request the floor owns, if the turn
// that asked still holds the floor and waits for it: it says its
// fallback line.
func (f *floor) timedOut(s *Session, id string) {
	a := f.active
	if a == nil || a.reqID != id || a.state != tsGenerating {
		return
	}
	s.emit(Effect{Type: EffectAdapterError, ID: a.reqID, Agent: a.role, Kind: a.kind, Rule: a.rule,
		Reason: "timeout: no result within " + formatMS(s.p.LLM.Timeout.MS)})
	s.deliver(a, s.fallback(a), true)
}

// answered takes the answer to a request the floor owns, if the turn
// that asked still holds the floor and waits for it.
func (f *floor) answered(s *Session, r *LLMResult) {
	a := f.active
	if a == nil || a.reqID != r.ID || a.state != tsGenerating {
		s.unowned(r)
		return
	}
	s.turnResult(a, r)
}

// adapterReason says why a model call gave no line.
func adapterReason(e *AdapterError) string {
	if e == nil {
		return "empty reply"
	}
	if e.Message != "" {
		return e.Kind + ": " + e.Message
	}
	return e.Kind
}

// turnResult takes the model's answer for the turn a, now or held since
// it was prepared.
func (s *Session) turnResult(a *turn, r *LLMResult) {
	if len(r.ToolCalls) > 0 && r.Err == nil {
		s.turnTools(a, r)
		return
	}
	if r.Err == nil && strings.TrimSpace(r.Text) == "" && a.spokeInRounds() {
		// Asked again after a refused call, a model that has already said
		// its line may rightly have nothing to add.
		s.floor.active = nil
		return
	}
	if r.Err != nil || strings.TrimSpace(r.Text) == "" {
		s.emit(Effect{Type: EffectAdapterError, ID: a.reqID, Agent: a.role, Kind: a.kind, Rule: a.rule, Reason: adapterReason(r.Err)})
		s.deliver(a, s.fallback(a), true)
		return
	}
	if r.IntentTag != "" {
		a.intentTag = r.IntentTag
	}
	s.madeProgress(a.role)
	s.deliver(a, r.Text, false)
}

// spokeInRounds reports whether the turn said a line along with an
// earlier round of tool calls (a withheld one was not said).
func (t *turn) spokeInRounds() bool {
	for _, r := range t.toolRounds {
		if !r.Withheld && strings.TrimSpace(r.Text) != "" {
			return true
		}
	}
	return false
}

// fallback is the role's fallback line for the turn's kind (or its
// default), one not yet said guardrails.max_repeats times if there is one.
func (s *Session) fallback(t *turn) string {
	role, _ := s.p.Role(t.role)
	if line, ok := s.lines.pick(s, t.role, "fallback", role.Fallback, t.kind, "default"); ok {
		return line
	}
	// Every line is at its cap, but something must be said.
	for _, key := range []string{t.kind, "default"} {
		if list, ok := rules.FindLines(role.Fallback, key); ok {
			return list[0]
		}
	}
	return "Let's continue."
}

// deliver runs the guardrails and readies the turn; settle sends it once
// the defer rule allows.
func (s *Session) deliver(t *turn, text string, fallback bool) {
	s.deliverChecked(t, text, fallback, false)
}

// deliverChecked is deliver for a reply that may also call tools
// (withCalls), which cannot be asked for again.
func (s *Session) deliverChecked(t *turn, text string, fallback, withCalls bool) {
	outcome := ""
	switch {
	case fallback:
		outcome = OutcomeFallback
		t.stale = "" // the role's own line, not the held one
	case t.line == "":
		out, oc, ok := s.guardLine(t, text, withCalls)
		if !ok {
			return // asked again, or the session ended
		}
		text, outcome = out, oc
		if text == "" {
			text, fallback = s.fallback(t), true
		}
	}
	if fallback || outcome == OutcomeFallback {
		t.cleaned = "" // the role's own line, not the model's
	}
	t.text = text
	t.state = tsReady
	t.await = s.silence.awaits(s, text)
	t.fallback, t.outcome = fallback, outcome
	t.violations, t.original = t.guard.violations, ""
	if t.guard.original != text {
		t.original = t.guard.original
	}
	if !s.cover.holds(s, t) && (t.hard || !s.holdTurn(t)) {
		s.speak(t)
	}
}

// speak emits the agent message; the turn holds the floor until the host
// reports speech_done.
func (s *Session) speak(t *turn) {
	s.timers.cancel(tDeferCap, 0, t.id)
	t.state = tsSpeaking
	t.msgID = s.nextID('m')
	s.emit(Effect{
		Type: EffectAgentMessage, ID: t.msgID, Agent: t.role, Kind: t.kind, Text: t.text,
		Voice: s.voice(t.role), IntentTag: t.intentTag, Rule: t.rule,
		Fallback: t.fallback, Guardrail: t.violations, Original: t.original, Outcome: t.outcome,
		Lateness: s.lateness(t.due), Reason: staleReason(t.stale), Cleaned: t.cleaned,
	})
	s.lines.spoken(t.text)
	if t.window >= 0 {
		// Counted when said, not when queued: a preempted window turn
		// waits again, or is dropped once its window has closed.
		s.coverage.hit(s, rules.CoverWindow, s.p.Timeline.Windows[t.window].ID)
	}
	s.prep.expire(s, t.rule) // its source has spoken: what else was prepared for it is moot
	s.floor.lastRole = t.role
	s.floor.turns++
	s.handoff.said(t.role)
	s.transcript.add(s.now, t.role, t.text, false)
	s.silence.stop(s)
	s.fireRules(rules.EngineTrigger(rules.TriggerAgentMessage))
}

func (d *SpeechDone) apply(s *Session) { s.onSpeechDone(d) }

func (s *Session) onSpeechDone(d *SpeechDone) {
	if s.cover.done(s, d.ID) {
		return
	}
	a := s.floor.active
	if a == nil || a.msgID != d.ID || a.state != tsSpeaking {
		return
	}
	s.floor.active = nil
	s.fireRules(rules.EngineTrigger(rules.TriggerSpeechDone))
	if a.await {
		s.silence.start(s, a)
	}
}
