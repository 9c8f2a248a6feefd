package engine

import "github.com/batonhq/baton/rules"

// cover fills a slow model's silence: when a turn has waited llm.cover's
// after for its line, its role says a short line from the pack's library
// ("Let me think about that for a second."), at most once per turn and
// never over a candidate the defer rule is waiting for. The turn's line,
// when it comes, waits for the cover line to finish. A cover line is an
// agent message like any other (the host plays it and reports
// speech_done) but not a turn: it is not in the transcript a model
// reads, starts no silence ladder and runs no rules.
type cover struct {
	// playingID is the cover line being played, until its speech_done;
	// ownerID the turn it covers.
	playingID, ownerID string
}

// arm starts the wait for t's line.
func (c *cover) arm(s *Session, t *turn) {
	if cv := s.p.LLM.Cover; cv != nil {
		s.addTimer(timer{at: s.now + cv.After.MS, kind: tCover, key: t.id, rule: t.rule})
	}
}

// fire says a cover line for turn id if it is still waiting for its model.
func (c *cover) fire(s *Session, id string) {
	a := s.floor.active
	if a == nil || a.id != id || a.state != tsGenerating || c.playingID != "" || s.shouldDefer(a) || s.speaking() {
		return
	}
	role, _ := s.p.Role(a.role)
	line, ok := "", false
	for _, sets := range s.p.CoverLines(role) {
		if line, ok = s.lines.pick(s, a.role, "cover", sets, a.kind, "default"); ok {
			break
		}
	}
	if !ok {
		return // every line is at guardrails.max_repeats
	}
	c.playingID, c.ownerID = s.nextID('m'), a.id
	s.emit(Effect{Type: EffectAgentMessage, ID: c.playingID, Agent: a.role, Kind: rules.KindCover, Text: line,
		Voice: s.voice(a.role), Rule: a.rule, Lateness: s.lateness(a.due)})
	s.lines.spoken(line)
}

// holds reports whether turn t, ready to speak, must wait for the cover
// line being said. A hard turn does not wait for another turn's cover
// line: it cuts it off, as it cuts off any agent.
func (c *cover) holds(s *Session, t *turn) bool {
	if c.playingID == "" {
		return false
	}
	if !t.hard || t.id == c.ownerID {
		return true // a line waits for its own cover line to end
	}
	s.emit(Effect{Type: EffectPreempted, ID: c.playingID, Agent: t.role, Kind: rules.KindCover, Rule: t.rule, Reason: "interrupted by " + t.rule})
	c.playingID = ""
	return false
}

// done ends the cover line id; it reports whether id was one. A turn
// whose wait passed while another turn's cover line played (a reply that
// took over from one that gave way) gets its own now.
func (c *cover) done(s *Session, id string) bool {
	if id == "" || id != c.playingID {
		return false
	}
	owner := c.ownerID
	c.playingID, c.ownerID = "", ""
	if a := s.floor.active; a != nil && a.id != owner && s.p.LLM.Cover != nil && s.now >= a.due+s.p.LLM.Cover.After.MS {
		c.fire(s, a.id)
	}
	return true
}
