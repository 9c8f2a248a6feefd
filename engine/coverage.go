package engine

import (
	"strconv"

	"github.com/batonhq/baton/rules"
)

// coverage counts how often each thing the pack declares was exercised
// (rules.Pack.CoverItems: a rule whose condition held, an anchor, a
// window's turn, a routing branch, a silence or confidence step, a broken
// guardrail, a tool call, a job, an end rule). It is not output: effects
// stay what they are, and pack tests, sweeps and timelines read the
// counts after the run (Session.Coverage).
type coverage struct {
	hits []uint32
}

// hit counts one use of kind's item id; an id the pack does not list
// (an engine rule stamp such as "silence") counts nothing.
func (c *coverage) hit(s *Session, kind rules.CoverKind, id string) {
	i := s.p.CoverIndex(kind, id)
	if i < 0 {
		return
	}
	if c.hits == nil {
		c.hits = make([]uint32, len(s.p.CoverItems()))
	}
	c.hits[i]++
}

// broke counts the guardrails a line broke (violation names).
func (c *coverage) broke(s *Session, violations []string) {
	for _, name := range violations {
		c.hit(s, rules.CoverGuardrail, name)
	}
}

// step counts a numbered ladder step (silence, speech confidence), i from 0.
func (c *coverage) step(s *Session, kind rules.CoverKind, i int) {
	c.hit(s, kind, strconv.Itoa(i+1))
}

// route counts the branch of route r that chose role with tag.
func (c *coverage) route(s *Session, r *rules.Route, role, tag string) {
	if r.Type != rules.RouteIntent || len(r.Intents) == 0 {
		c.hit(s, rules.CoverRoute, r.ID)
		return
	}
	for i := range r.Intents {
		if in := &r.Intents[i]; in.Role == role && in.Tag == tag {
			c.hit(s, rules.CoverRoute, rules.IntentBranch(r.ID, in))
			return
		}
	}
}

// Coverage says how often each of the pack's CoverItems was exercised so
// far, by index. The slice is the caller's.
func (s *Session) Coverage() []uint32 {
	out := make([]uint32, len(s.p.CoverItems()))
	copy(out, s.coverage.hits)
	return out
}
