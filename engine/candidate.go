package engine

import (
	"github.com/batonhq/baton/rules"
)

// candidate is what the engine knows of the human: whether they are
// talking or typing, and their messages. Talking and typing hold agent
// turns back (defer.go) and pause the silence ladder (silence.go).
type candidate struct {
	micActive     bool
	typing        bool
	lastKeystroke int64
	lastSpeechEnd int64
	messages      int
	lastMsg       string
	lastMsgAt     int64
	// handling is the event whose rules are running, nil otherwise.
	handling *CandidateEvent
}

func (c *candidate) init(*Session) {
	c.lastKeystroke, c.lastSpeechEnd, c.lastMsgAt = -1, -1, -1
}

// speaking is true while the mic is open and for the speech-resume buffer
// after speech ends.
func (s *Session) speaking() bool {
	c := &s.cand
	return c.micActive || (c.lastSpeechEnd >= 0 && s.now < c.lastSpeechEnd+s.p.TurnTaking.SpeechResume.MS)
}

func (ev *CandidateEvent) apply(s *Session) { s.onCandidate(ev) }

func (s *Session) onCandidate(ev *CandidateEvent) {
	m := &s.env.Msg
	*m = rules.MessageView{Type: ev.Type, Text: ev.Text, Source: ev.Source, AddressedTo: ev.AddressedTo, Code: ev.Code, RunID: ev.RunID, Line: ev.Line, Confidence: 1}
	if ev.STTConfidence != nil {
		m.Confidence = *ev.STTConfidence
	}
	c := &s.cand
	switch ev.Type {
	case EventMicState:
		active := ev.MicActive != nil && *ev.MicActive
		if active == c.micActive {
			break
		}
		c.micActive = active
		if active {
			s.candidateActive()
		} else {
			s.speechEnded()
		}
	case EventSpeechEnd:
		s.speechEnded()
	case EventTypingState:
		if ev.Typing != nil && *ev.Typing {
			c.lastKeystroke = s.now
			c.typing = true
			s.timers.cancelKind(tTyping)
			s.addTimer(timer{at: s.now + s.p.TurnTaking.TypingDebounce.MS, kind: tTyping})
			s.candidateActive()
		} else if c.typing {
			c.typing = false
			s.timers.cancelKind(tTyping)
			s.candidateIdle()
		}
	case EventMessage:
		s.onMessage(ev)
	case EventCodeSubmitted:
		s.transcript.add(s.now, s.p.HumanName(), "[code submitted]", false)
	}
	// Actions that default to what the event says (a sequence's prompt
	// and run id) read it while its rules run, and only then.
	s.cand.handling = ev
	s.fireRules(rules.EventTrigger(ev.Type))
	s.cand.handling = nil
}

// typingLapsed ends typing once the debounce has passed without a keystroke.
func (c *candidate) typingLapsed(s *Session) {
	if c.typing && s.now >= c.lastKeystroke+s.p.TurnTaking.TypingDebounce.MS {
		c.typing = false
		s.candidateIdle()
	}
}

func (s *Session) speechEnded() {
	s.cand.lastSpeechEnd = s.now
	s.timers.cancelKind(tSpeechResume)
	s.addTimer(timer{at: s.now + s.p.TurnTaking.SpeechResume.MS, kind: tSpeechResume})
	s.candidateIdle()
}

// candidateActive pauses the silence ladder: someone who is talking or
// typing is not silent.
func (s *Session) candidateActive() { s.silence.pause(s) }

// candidateIdle restarts a paused silence ladder once the candidate has
// stopped talking and typing without sending anything.
func (s *Session) candidateIdle() {
	if s.speaking() || s.cand.typing {
		return
	}
	s.silence.resume(s)
}

func (s *Session) onMessage(ev *CandidateEvent) {
	c := &s.cand
	c.messages++
	s.handoff.answered()
	c.lastMsgAt = s.now
	if c.typing {
		c.typing = false
		s.timers.cancelKind(tTyping)
	}
	s.silence.stop(s)
	ev, allowed := s.screen(ev)
	if s.ended {
		return
	}
	if !allowed {
		// The panel hears that something was said, never what.
		s.transcript.add(s.now, s.p.HumanName(), "(message withheld by the input guardrails)", false)
		s.refuse()
		return
	}
	c.lastMsg = ev.Text
	low := s.conf.low(s, ev)
	s.env.Msg.LowConfidence = low
	s.transcript.add(s.now, s.p.HumanName(), ev.Text, low)
	if low {
		s.conf.ask(s, ev)
		return
	}
	s.conf.reset()
	s.route(ev)
}
