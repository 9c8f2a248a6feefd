package engine

import (
	"strconv"
	"strings"

	"github.com/batonhq/baton/rules"
)

// resolveRole turns a TurnSpec role (an id, or last, same, addressed or
// active) into a role id; same is the role "same" stands for.
func (s *Session) resolveRole(spec, same string) string {
	switch spec {
	case rules.RoleSame:
		if same != "" {
			return same
		}
		return s.resolveRole(rules.RoleLast, "")
	case rules.RoleAddressed:
		if s.env.Msg.AddressedTo != "" {
			if _, ok := s.p.Role(s.env.Msg.AddressedTo); ok {
				return s.env.Msg.AddressedTo
			}
		}
		return s.resolveRole(rules.RoleLast, "")
	case rules.RoleLast:
		if s.lastRole != "" {
			return s.lastRole
		}
		return s.p.Roles[0].ID
	case rules.RoleActive:
		if s.floor != "" {
			return s.floor
		}
		if t := s.p.Tickets; t != nil && len(t.Roles) > 0 {
			return t.Roles[0]
		}
		return s.resolveRole(rules.RoleLast, "")
	}
	return spec
}

func (s *Session) newTurn(spec *rules.TurnSpec, rule string, hard bool) *turn {
	return s.newTurnFor(spec, rule, hard, "")
}

func (s *Session) newTurnFor(spec *rules.TurnSpec, rule string, hard bool, same string) *turn {
	tag := spec.IntentTag
	if tag == "" {
		tag = spec.Goal
	}
	return &turn{
		id:         s.nextID('t'),
		role:       s.resolveRole(spec.Role, same),
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
	if !t.hard {
		s.queue = append(s.queue, t)
		return
	}
	if a := s.active; a != nil && !a.hard && a.state != tsSpeaking {
		s.preempt(a, t.rule)
		s.active = nil
	}
	i := 0
	for i < len(s.queue) && s.queue[i].hard {
		i++
	}
	s.queue = append(s.queue, nil)
	copy(s.queue[i+1:], s.queue[i:])
	s.queue[i] = t
}

// preempt drops a non-hard turn in favour of by. A window turn goes back to
// waiting if its window is still open.
func (s *Session) preempt(t *turn, by string) {
	s.timers.cancel(tDeferCap, 0, t.id)
	if t.reqID != "" {
		s.timers.cancel(tLLMTimeout, 0, t.reqID)
	}
	s.emit(Effect{Type: EffectPreempted, Agent: t.role, Kind: t.kind, Rule: t.rule, Reason: "preempted by " + by})
	if t.window >= 0 && s.windows[t.window] == wDone && s.now < s.p.Timeline.Windows[t.window].Close.MS {
		s.windows[t.window] = wOpen
	}
}

// preemptScheduled clears every non-hard turn not yet spoken: a routed reply
// answers the candidate now, and scheduled turns give way to it.
func (s *Session) preemptScheduled(by string) {
	if a := s.active; a != nil && !a.hard && a.state != tsSpeaking {
		s.preempt(a, by)
		s.active = nil
	}
	kept := s.queue[:0]
	for _, t := range s.queue {
		if t.hard {
			kept = append(kept, t)
			continue
		}
		s.preempt(t, by)
	}
	s.queue = kept
}

// floorFree reports whether the agents may start a window turn: no agent
// turn under way or queued, and no question waiting out its silence ladder.
// A candidate who is talking or typing does not block a window; the turn is
// created and the defer rule holds it, so the defer cap bounds the wait.
func (s *Session) floorFree() bool {
	return s.active == nil && len(s.queue) == 0 && (s.await == nil || s.await.paused)
}

func (s *Session) shouldDefer(t *turn) bool {
	if !t.deferrable || !s.p.TurnTaking.Defer.When.Set() {
		return false
	}
	return s.evalBool(&s.p.TurnTaking.Defer.When, t.role)
}

// settle makes all the progress the current state allows: start or release
// the next turn, or let an open window take the free floor.
func (s *Session) settle() {
	for guard := 0; guard < 64 && !s.ended; guard++ {
		s.checkEnd()
		if s.ended {
			return
		}
		if a := s.active; a != nil {
			if a.state == tsReady {
				if s.holdTurn(a) {
					return
				}
				s.speak(a)
			}
			if a.state == tsSpeaking && len(s.queue) > 0 && s.queue[0].hard && !a.hard {
				// A hard anchor does not wait for an agent to finish: the
				// speaker is cut off (the host stops its playback) and the
				// anchor's turn starts now.
				s.emit(Effect{Type: EffectPreempted, ID: a.msgID, Agent: a.role, Kind: a.kind, Rule: a.rule, Reason: "interrupted by " + s.queue[0].rule})
				s.active = nil
				continue
			}
			return
		}
		if len(s.queue) > 0 {
			t := s.queue[0]
			if s.holdTurn(t) {
				return
			}
			s.queue = s.queue[1:]
			s.start(t)
			continue
		}
		if !s.openWindowTurn() {
			return
		}
	}
}

// holdTurn defers t if the defer rule says so, starting its cap.
func (s *Session) holdTurn(t *turn) bool {
	if !s.shouldDefer(t) {
		return false
	}
	if t.deferredAt < 0 {
		t.deferredAt = s.now
		s.emit(Effect{Type: EffectDeferred, Agent: t.role, Kind: t.kind, Rule: t.rule})
		s.addTimer(timer{at: s.now + s.p.TurnTaking.Defer.Max.MS, kind: tDeferCap, key: t.id, rule: t.rule})
	}
	return true
}

func (s *Session) openWindowTurn() bool {
	if !s.floorFree() {
		return false
	}
	for i := range s.p.Timeline.Windows {
		if s.windows[i] != wOpen {
			continue
		}
		w := &s.p.Timeline.Windows[i]
		if !s.evalBool(&w.When, w.Turn.Role) {
			continue
		}
		s.windows[i] = wDone
		t := s.newTurn(&w.Turn, w.ID, false)
		t.window = i
		s.enqueue(t)
		return true
	}
	return false
}

// deferCap fires when a turn has waited the longest the pack allows: it
// becomes the pack's on_cap turn (an assumption-based follow-up) and goes
// out without further deferral.
func (s *Session) deferCap(id string) {
	var t *turn
	inQueue := -1
	if s.active != nil && s.active.id == id {
		t = s.active
	}
	for i, q := range s.queue {
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
	if inQueue >= 0 {
		s.queue[inQueue] = repl
		return
	}
	if repl != t {
		s.active = nil
		s.queue = append([]*turn{repl}, s.queue...)
	}
}

// start begins producing a turn's text: a fixed line is ready at once,
// anything else is asked of the LLM.
func (s *Session) start(t *turn) {
	s.active = t
	s.timers.cancel(tDeferCap, 0, t.id)
	if t.line != "" {
		s.deliver(t, t.line, false)
		return
	}
	t.state = tsGenerating
	t.reqID = s.nextID('r')
	req := s.buildRequest(t)
	s.emit(Effect{Type: EffectLLMRequest, ID: t.reqID, Agent: t.role, Kind: t.kind, Rule: t.rule, Request: req})
	s.addTimer(timer{at: s.now + s.p.LLM.Timeout.MS, kind: tLLMTimeout, key: t.reqID})
}

func (s *Session) buildRequest(t *turn) *LLMRequest {
	p := s.p
	role, _ := p.Role(t.role)
	system := s.persona(t.role)
	if rs := s.rs(t.role); rs != nil && len(rs.inject) > 0 {
		// Instructions queued for this role (a handoff notice, a roster)
		// go first, once.
		system = strings.Join(rs.inject, "\n\n") + "\n\n" + system
		rs.inject = nil
	}
	req := &LLMRequest{
		Role:                 t.role,
		Kind:                 t.kind,
		TurnGoal:             t.goal,
		Model:                p.LLM.Model,
		System:               system,
		Tools:                s.offeredTools(t.role),
		Assembly:             p.LLM.Assembly,
		ToolSteps:            t.toolSteps,
		CandidateLastMessage: s.lastMsg,
		Constraints: Constraints{
			MaxSentences:     p.Guardrails.MaxSentences,
			MaxQuestionCount: p.Guardrails.MaxQuestions,
		},
		TimeoutMS: p.LLM.Timeout.MS,
	}
	if role.Model != "" {
		req.Model = role.Model
	}
	req.TranscriptTail = s.tail()
	req.ScenarioContext = s.context // read-only for hosts
	if h := p.LLM.Shape; h != nil {
		s.shapeRequest(h, t, req)
	}
	return req
}

// tail copies the transcript lines a request carries.
func (s *Session) tail() []TranscriptLine {
	tail := s.transcript
	if n := s.p.LLM.TranscriptTail; len(tail) > n {
		tail = tail[len(tail)-n:]
	}
	return append([]TranscriptLine(nil), tail...)
}

func (s *Session) onLLMResult(r *LLMResult) {
	if s.onJobResult(r, false) {
		return
	}
	a := s.active
	if a == nil || a.reqID != r.ID || a.state != tsGenerating {
		return // superseded or timed out: ignored, deterministically
	}
	s.timers.cancel(tLLMTimeout, 0, a.reqID)
	if len(r.ToolCalls) > 0 && r.Err == nil {
		s.turnTools(a, r)
		return
	}
	if r.Err != nil || strings.TrimSpace(r.Text) == "" {
		reason := "empty reply"
		if r.Err != nil {
			reason = r.Err.Kind
			if r.Err.Message != "" {
				reason += ": " + r.Err.Message
			}
		}
		s.emit(Effect{Type: EffectAdapterError, ID: a.reqID, Agent: a.role, Kind: a.kind, Rule: a.rule, Reason: reason})
		s.deliver(a, s.fallback(a), true)
		return
	}
	if r.IntentTag != "" {
		a.intentTag = r.IntentTag
	}
	s.deliver(a, r.Text, false)
}

// turnTools handles a reply that calls tools: any text is said first, then
// each call runs; a refused call goes back to the model (the tool loop),
// at most maxToolRounds times per turn.
func (s *Session) turnTools(a *turn, r *LLMResult) {
	if r.IntentTag != "" {
		a.intentTag = r.IntentTag
	}
	spoke := strings.TrimSpace(r.Text) != ""
	if spoke {
		s.deliver(a, r.Text, false)
	}
	refused := false
	var steps []ToolStep
	for _, c := range r.ToolCalls {
		if s.ended {
			return
		}
		st := s.handleTool(a.role, c)
		steps = append(steps, st)
		refused = refused || st.IsError
	}
	if s.ended {
		return
	}
	if !refused {
		if !spoke && s.active == a {
			s.active = nil // the turn was only a tool call
		}
		return
	}
	if a.toolRounds+1 >= maxToolRounds {
		if !spoke {
			s.emit(Effect{Type: EffectAdapterError, ID: a.reqID, Agent: a.role, Kind: a.kind, Rule: a.rule, Reason: "tool calls refused " + strconv.Itoa(maxToolRounds) + " times"})
			s.deliver(a, s.fallback(a), true)
		}
		return
	}
	again := *a
	again.id = s.nextID('t')
	again.toolSteps = append(append([]ToolStep(nil), a.toolSteps...), steps...)
	again.toolRounds = a.toolRounds + 1
	again.state = tsQueued
	again.reqID, again.msgID, again.text = "", "", ""
	again.deferrable = false
	if !spoke && s.active == a {
		s.active = nil
	}
	s.queue = append([]*turn{&again}, s.queue...)
}

func (s *Session) fallback(t *turn) string {
	role, _ := s.p.Role(t.role)
	if line, ok := role.Fallback.Get(t.kind); ok {
		return line
	}
	if line, ok := role.Fallback.Get("default"); ok {
		return line
	}
	return "Let's continue."
}

// deliver runs the guardrails and readies the turn; settle sends it once
// the defer rule allows.
func (s *Session) deliver(t *turn, text string, fallback bool) {
	var violations []string
	original := ""
	if !fallback && t.line == "" {
		var out string
		out, violations = s.guard(t, text)
		if len(violations) > 0 && out != text {
			original = text
		}
		text = out
	}
	t.text = text
	t.state = tsReady
	t.await = s.awaitsReply(text)
	t.fallback, t.violations, t.original = fallback, violations, original
	if t.hard || !s.holdTurn(t) {
		s.speak(t)
	}
}

func (s *Session) awaitsReply(text string) bool {
	switch s.p.Silence.StartAfter {
	case "any":
		return true
	case "question":
		return strings.Contains(text, "?")
	}
	return false
}

// speak emits the agent message; the turn holds the floor until the host
// reports speech_done.
func (s *Session) speak(t *turn) {
	s.timers.cancel(tDeferCap, 0, t.id)
	role, _ := s.p.Role(t.role)
	t.state = tsSpeaking
	t.msgID = s.nextID('m')
	s.emit(Effect{
		Type: EffectAgentMessage, ID: t.msgID, Agent: t.role, Kind: t.kind, Text: t.text,
		Voice: role.Voice, IntentTag: t.intentTag, Rule: t.rule,
		Fallback: t.fallback, Guardrail: t.violations, Original: t.original,
	})
	s.lastRole = t.role
	s.turns++
	s.transcript = append(s.transcript, TranscriptLine{T: s.now, Speaker: t.role, Text: t.text})
	s.stopSilence()
	s.fireRules(rules.EngineTrigger(rules.TriggerAgentMessage))
}

func (s *Session) onSpeechDone(d *SpeechDone) {
	a := s.active
	if a == nil || a.msgID != d.ID || a.state != tsSpeaking {
		return
	}
	s.active = nil
	s.fireRules(rules.EngineTrigger(rules.TriggerSpeechDone))
	if !a.await {
		return
	}
	step := 0
	if a.silence >= 0 {
		step = a.silence + 1
	}
	s.startSilence(step, a.role)
}

func (s *Session) startSilence(step int, role string) {
	s.stopSilence()
	if step >= len(s.p.Silence.Steps) {
		return
	}
	s.await = &awaiting{step: step, role: role}
	if s.speaking() || s.typing {
		s.await.paused = true
		return
	}
	s.addTimer(timer{at: s.now + s.p.Silence.Steps[step].After.MS, kind: tSilence, ref: step})
}

func (s *Session) stopSilence() {
	s.await = nil
	s.timers.cancelKind(tSilence)
}

func (s *Session) silenceStep() {
	w := s.await
	if w == nil {
		return
	}
	st := &s.p.Silence.Steps[w.step]
	switch st.Action {
	case "say":
		t := s.newTurnFor(&st.Turn, "silence", false, w.role)
		if st.Turn.Role == rules.RoleLast {
			t.role = w.role
		}
		t.silence = w.step
		s.await = nil
		s.enqueue(t)
	case "auto_advance":
		s.await = nil
		s.emit(Effect{Type: EffectAutoAdvance, Agent: w.role, Rule: "silence"})
	case "end":
		s.end("silence", "silence")
	}
}
