package engine

import (
	"encoding/json"
	"strings"

	"github.com/batonhq/baton/rules"
)

// handoff is who holds the floor on a panel (the floor action moves it),
// and, in live voice mode, the live speech session that speaks for the
// holder: when the floor moves, the host is asked to reconnect it with the
// new holder's instructions, and what it says comes back as transcripts.
type handoff struct {
	holder string
	// what the holder has done since taking the floor (the floor view)
	since                        int64
	lines, answers, autoAdvances int
	liveVoice                    bool
	// pending is set when the floor moved in live voice mode; the
	// live_session effect goes out after the actions that moved it, so the
	// instructions they queued for the new holder are in it.
	pending bool
}

func (h *handoff) init(s *Session) {
	p, opts := s.p, s.opts
	h.liveVoice = p.Voice.Mode == rules.VoiceLive
	if m, ok := rules.ParseVoiceMode(opts.VoiceMode); ok {
		h.liveVoice = m == rules.VoiceLive
	}
}

// give moves the floor to role.
func (h *handoff) give(s *Session, role, rule string) {
	if _, known := s.p.Role(role); !known || role == h.holder {
		return
	}
	reason := ""
	if h.holder != "" {
		reason = "from " + h.holder
	}
	h.holder = role
	h.since, h.lines, h.answers, h.autoAdvances = s.now, 0, 0, 0
	s.emit(Effect{Type: EffectHandoff, Agent: role, Rule: rule, Reason: reason})
	if h.liveVoice {
		h.pending = true
	}
}

// said notes a line said by role.
func (h *handoff) said(role string) {
	if role == h.holder {
		h.lines++
	}
}

// answered notes a candidate message.
func (h *handoff) answered() {
	if h.lines > 0 {
		h.answers++
	}
}

// gaveUp notes a silence ladder that stopped waiting.
func (h *handoff) gaveUp() {
	if h.lines > 0 {
		h.autoAdvances++
	}
}

// flush asks the host to connect the floor holder's live speech session.
func (h *handoff) flush(s *Session) {
	if !h.pending {
		return
	}
	h.pending = false
	role := h.holder
	if role == "" || s.ended {
		return
	}
	system := s.injected(role, s.persona(role), true)
	tools, _ := json.Marshal(s.offeredTools(role))
	s.emit(Effect{Type: EffectLiveSession, Agent: role, Voice: s.voice(role), Text: system, Data: tools})
}

// onAgentLine records what a live session said as a role.
func (a *AgentLine) apply(s *Session) { s.onAgentLine(a) }

func (s *Session) onAgentLine(a *AgentLine) {
	if _, ok := s.p.Role(a.Role); !ok || strings.TrimSpace(a.Text) == "" {
		return
	}
	s.floor.lastRole = a.Role
	s.floor.turns++
	s.handoff.said(a.Role)
	s.transcript.add(s.now, a.Role, a.Text, false)
	s.fireRules(rules.EngineTrigger(rules.TriggerAgentTranscript))
}
