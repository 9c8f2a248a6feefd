package engine

import (
	"strings"

	"github.com/batonhq/baton/rules"
)

// Routing picks who answers a candidate message: routes are tried in pack
// order and the first that matches wins (the seed's priority: anchor >
// explicit address > intent > default is just the order a pack lists
// them in).
func (s *Session) route(ev *CandidateEvent) {
	for i := range s.p.Routing {
		r := &s.p.Routing[i]
		if !s.evalBool(&r.When, "") {
			continue
		}
		role, tag, goal, reason := "", "", r.Goal, ""
		switch r.Type {
		case rules.RouteAnchor:
			hard := s.hardTurn()
			if hard == nil {
				continue
			}
			s.coverage.hit(s, rules.CoverRoute, r.ID)
			s.emit(Effect{Type: EffectRouted, Agent: hard.role, Rule: r.ID, Reason: "anchor " + hard.rule + " is due"})
			return
		case rules.RouteAddressed:
			role, reason = s.addressed(r, ev)
		case rules.RouteIntent:
			role, tag, goal, reason = intent(r, ev, goal)
		case rules.RouteRole:
			role, reason = s.resolveRole(r.Who, ""), "default"
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
		// The intent tag is what the route read the message as (an intent
		// class's tag or a script's); a route that only picks a role has
		// none, and its id is already the effect's rule.
		s.coverage.route(s, r, role, tag)
		s.emit(Effect{Type: EffectRouted, Agent: role, Rule: r.ID, IntentTag: tag, Reason: reason})
		s.preemptScheduled(r.ID)
		spec := rules.TurnSpec{Role: role, Kind: r.Kind, Goal: goal, IntentTag: tag, Who: rules.RoleRef{Role: role}}
		s.enqueue(s.newTurn(&spec, r.ID, false))
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

// intent picks the keyword class with the most hits; ties go to the
// earlier class.
func intent(r *rules.Route, ev *CandidateEvent, goal string) (role, tag, g, reason string) {
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
