package engine

import (
	"strconv"
	"strings"

	"github.com/batonhq/baton/rules"
)

func (s *Session) onCandidate(ev *CandidateEvent) {
	m := &s.env.Msg
	*m = rules.MessageView{Type: ev.Type, Text: ev.Text, Source: ev.Source, AddressedTo: ev.AddressedTo, Code: ev.Code, Confidence: 1}
	if ev.STTConfidence != nil {
		m.Confidence = *ev.STTConfidence
	}
	tt := &s.p.TurnTaking
	switch ev.Type {
	case EventMicState:
		active := ev.MicActive != nil && *ev.MicActive
		if active == s.micActive {
			break
		}
		s.micActive = active
		if active {
			s.candidateActive()
		} else {
			s.speechEnded()
		}
	case EventSpeechEnd:
		s.speechEnded()
	case EventTypingState:
		if ev.Typing != nil && *ev.Typing {
			s.lastKeystroke = s.now
			s.typing = true
			s.timers.cancelKind(tTyping)
			s.addTimer(timer{at: s.now + tt.TypingDebounce.MS, kind: tTyping})
			s.candidateActive()
		} else if s.typing {
			s.typing = false
			s.timers.cancelKind(tTyping)
			s.candidateIdle()
		}
	case EventMessage:
		s.onMessage(ev)
	case EventCodeSubmitted:
		s.transcript = append(s.transcript, TranscriptLine{T: s.now, Speaker: "candidate", Text: "[code submitted]"})
	}
	s.fireRules(rules.EventTrigger(ev.Type))
}

func (s *Session) speechEnded() {
	s.lastSpeechEnd = s.now
	s.timers.cancelKind(tSpeechResume)
	s.addTimer(timer{at: s.now + s.p.TurnTaking.SpeechResume.MS, kind: tSpeechResume})
	s.candidateIdle()
}

// candidateActive pauses the silence ladder: someone who is talking or
// typing is not silent.
func (s *Session) candidateActive() {
	if w := s.await; w != nil && !w.paused {
		w.paused = true
		s.timers.cancelKind(tSilence)
	}
}

// candidateIdle restarts a paused silence ladder once the candidate has
// stopped talking and typing without sending anything.
func (s *Session) candidateIdle() {
	w := s.await
	if w == nil || !w.paused || s.speaking() || s.typing {
		return
	}
	w.paused = false
	s.addTimer(timer{at: s.now + s.p.Silence.Steps[w.step].After.MS, kind: tSilence, ref: w.step})
}

func (s *Session) onMessage(ev *CandidateEvent) {
	s.messages++
	s.lastMsgAt = s.now
	s.lastMsg = ev.Text
	if s.typing {
		s.typing = false
		s.timers.cancelKind(tTyping)
	}
	s.stopSilence()

	sc := &s.p.SpeechConfidence
	low := len(sc.Steps) > 0 && ev.STTConfidence != nil && *ev.STTConfidence < sc.Threshold.Value
	s.env.Msg.LowConfidence = low
	s.transcript = append(s.transcript, TranscriptLine{T: s.now, Speaker: "candidate", Text: ev.Text, Unclear: low})

	if low {
		s.lowSTT++
		step := &sc.Steps[0]
		for i := range sc.Steps {
			if float64(s.lowSTT) >= sc.Steps[i].Count.Value {
				step = &sc.Steps[i]
			}
		}
		t := s.newTurn(&step.Turn, "speech_confidence", false)
		s.emit(Effect{Type: EffectRouted, Agent: t.role, Kind: t.kind, Rule: "speech_confidence",
			Reason: "low confidence " + strconv.FormatFloat(*ev.STTConfidence, 'f', 2, 64) + ", " + strconv.Itoa(s.lowSTT) + " in a row"})
		s.preemptScheduled("speech_confidence")
		s.enqueue(t)
		return
	}
	s.lowSTT = 0
	s.route(ev)
}

// route picks who answers a candidate message: routes are tried in pack
// order and the first that matches wins.
func (s *Session) route(ev *CandidateEvent) {
	for i := range s.p.Routing {
		r := &s.p.Routing[i]
		if !s.evalBool(&r.When, "") {
			continue
		}
		role, tag, goal, reason := "", "", r.Goal, ""
		switch r.Type {
		case rules.RouteAnchor:
			if !s.hardPending() {
				continue
			}
			hard := s.active
			if hard == nil || !hard.hard {
				for _, q := range s.queue {
					if q.hard {
						hard = q
						break
					}
				}
			}
			s.emit(Effect{Type: EffectRouted, Agent: hard.role, Rule: r.ID, Reason: "anchor " + hard.rule + " is due"})
			return
		case rules.RouteAddressed:
			role, reason = s.addressed(r, ev)
		case rules.RouteIntent:
			role, tag, goal, reason = s.intent(r, ev, goal)
		case rules.RouteRole:
			role, reason = s.resolveRole(r.Role, ""), "default"
		case rules.RouteScript:
			var ok bool
			if role, tag, goal, ok = s.scriptRoute(r); ok {
				reason = "script " + r.Script.String()
			}
			if s.ended {
				return
			}
		}
		if role == "" {
			continue
		}
		if tag == "" {
			tag = r.ID
		}
		s.emit(Effect{Type: EffectRouted, Agent: role, Rule: r.ID, IntentTag: tag, Reason: reason})
		s.preemptScheduled(r.ID)
		t := s.newTurn(&rules.TurnSpec{Role: role, Kind: r.Kind, Goal: goal, IntentTag: tag}, r.ID, false)
		s.enqueue(t)
		return
	}
	s.emit(Effect{Type: EffectRouted, Reason: "no route matched"})
}

func (s *Session) addressed(r *rules.Route, ev *CandidateEvent) (role, reason string) {
	if r.Field != "" && ev.AddressedTo != "" {
		if _, ok := s.p.Role(ev.AddressedTo); ok {
			return ev.AddressedTo, "addressed_to " + ev.AddressedTo
		}
	}
	// The earliest mention in the text wins, so "@ba then @qa" goes to ba.
	best := -1
	for _, m := range r.Mentions {
		if at := mentionAt(ev.Text, m.Key); at >= 0 && (best < 0 || at < best) {
			best, role, reason = at, m.Value, "mention "+m.Key
		}
	}
	return role, reason
}

// mentionAt is the byte offset of the first whole-word, case-insensitive
// occurrence of word in text, or -1.
func mentionAt(text, word string) int {
	if word == "" {
		return -1
	}
	// Mentions usually start with a sigil such as '@': jump between its
	// occurrences instead of comparing at every byte.
	first := word[0]
	for i := 0; i+len(word) <= len(text); i++ {
		if !isWordChar(first) {
			j := strings.IndexByte(text[i:], first)
			if j < 0 {
				return -1
			}
			i += j
			if i+len(word) > len(text) {
				return -1
			}
		}
		if !strings.EqualFold(text[i:i+len(word)], word) {
			continue
		}
		end := i + len(word)
		if (i == 0 || !isWordChar(text[i-1])) && (end == len(text) || !isWordChar(text[end])) {
			return i
		}
	}
	return -1
}

func isWordChar(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

func (s *Session) intent(r *rules.Route, ev *CandidateEvent, goal string) (role, tag, g, reason string) {
	best := 0
	for i := range r.Intents {
		in := &r.Intents[i]
		if n := in.Words().Hits(ev.Text); n > best {
			best, role, tag = n, in.Role, in.Tag
			g = goal
			if in.Goal != "" {
				g = in.Goal
			}
		}
	}
	if best == 0 {
		return "", "", goal, ""
	}
	return role, tag, g, "intent " + tag
}

func (s *Session) fireRules(t rules.Trigger) {
	for _, r := range s.p.RulesOn(t) {
		if s.ended {
			return
		}
		s.runRule(r)
	}
}

func (s *Session) runRule(r *rules.Rule) {
	if !s.evalBool(&r.When, "") {
		return
	}
	for i := range r.Do {
		if s.ended {
			return
		}
		s.doAction(&r.Do[i], r.ID)
	}
}

// doAction performs one rule or job action.
func (s *Session) doAction(a *rules.Action, rule string) {
	switch {
	case a.Run != nil:
		s.runActions(rule, a.Run)
	case a.Say != nil:
		s.enqueue(s.newTurn(a.Say, rule, false))
	case a.Set != nil:
		s.syncEnv()
		v, err := s.env.Eval(&a.Set.Value)
		if err == nil {
			err = s.env.SetVar(a.Set.Var, v)
		}
		if err != nil {
			s.emit(Effect{Type: EffectNote, Rule: rule, Reason: "set " + a.Set.Var + ": " + err.Error()})
		}
	case a.Emit != nil:
		s.emit(Effect{Type: EffectNote, Rule: rule, Text: a.Emit.Text})
	case a.End != nil:
		s.end(a.End.Reason, rule)
	default:
		s.panelAction(a, rule)
	}
}

func (s *Session) checkEnd() {
	for i := range s.p.End {
		e := &s.p.End[i]
		if s.evalBool(&e.When, "") {
			s.end(e.Reason, e.ID)
			return
		}
	}
}
