package rules

import (
	"slices"
	"strconv"
)

// CoverKind is a kind of thing a pack declares that a session may or may
// not exercise. Coverage reports (baton test -cover), sweep reports and
// timelines all name what a pack declares by the one list CoverItems
// makes, so each of them counts the same things.
type CoverKind string

// The kinds of things that can be covered, in the order CoverItems lists
// them.
const (
	// CoverRule is a rule of rules: whose condition held and whose
	// actions ran.
	CoverRule CoverKind = "rule"
	// CoverAnchor is an anchor that fired.
	CoverAnchor CoverKind = "anchor"
	// CoverWindow is a window whose turn was taken.
	CoverWindow CoverKind = "window"
	// CoverRoute is a routing branch that chose who replies: a route by
	// its id, an intent route's class as ROUTE/TAG (the class's tag, else
	// its role).
	CoverRoute CoverKind = "route"
	// CoverSilence is a silence step that fired, by its number from 1.
	CoverSilence CoverKind = "silence"
	// CoverConfidence is a speech-confidence step taken, numbered from 1.
	CoverConfidence CoverKind = "confidence"
	// CoverGuardrail is a guardrail a line or message broke: a built-in
	// check by its violation name, a tripwire or input check by its id.
	CoverGuardrail CoverKind = "guardrail"
	// CoverTool is a tool a model (or a live session) called.
	CoverTool CoverKind = "tool"
	// CoverJob is a job that was asked for.
	CoverJob CoverKind = "job"
	// CoverEnd is an end rule that ended the session.
	CoverEnd CoverKind = "end"
)

// CoverKinds lists the kinds in report order.
var CoverKinds = []CoverKind{CoverRule, CoverAnchor, CoverWindow, CoverRoute, CoverSilence, CoverConfidence,
	CoverGuardrail, CoverTool, CoverJob, CoverEnd}

// CoverItem is one thing a pack declares that a session can exercise,
// and where the pack declares it.
type CoverItem struct {
	Kind CoverKind `json:"kind"`
	ID   string    `json:"id"`
	Pos  Pos       `json:"pos"`
}

// Name is how reports show the item: "silence step 2", "route
// R3_INTENT/qa_repro".
func (it CoverItem) Name() string {
	switch it.Kind {
	case CoverSilence, CoverConfidence:
		return string(it.Kind) + " step " + it.ID
	}
	return string(it.Kind) + " " + it.ID
}

// coverIndex is the compiled list: items in pack order and each item's
// place by kind and id.
type coverIndex struct {
	items []CoverItem
	at    map[coverKey]int
}

type coverKey struct {
	kind CoverKind
	id   string
}

// CoverItems lists, in pack order by kind, everything in p a session can
// exercise. Sessions count hits by the same indexes
// (engine.Session.Coverage).
func (p *Pack) CoverItems() []CoverItem { return p.cover.items }

// CoverIndex is the index in CoverItems of kind's item id, or -1.
func (p *Pack) CoverIndex(kind CoverKind, id string) int {
	if i, ok := p.cover.at[coverKey{kind, id}]; ok {
		return i
	}
	return -1
}

// Where finds the item a rule stamp names (the Rule of an effect: an
// anchor, window, route, rule, job or check id) and says where the pack
// declares it. An id several kinds use is taken in CoverKinds order.
func (p *Pack) Where(id string) (CoverItem, bool) {
	for _, k := range CoverKinds {
		if i := p.CoverIndex(k, id); i >= 0 {
			return p.cover.items[i], true
		}
	}
	return CoverItem{}, false
}

// IntentBranch names an intent route's class as a routing branch.
func IntentBranch(route string, in *Intent) string {
	if in.Tag != "" {
		return route + "/" + in.Tag
	}
	return route + "/" + in.Role
}

// anyFocus says whether a role has focus words: without, role_fidelity
// never finds a line out of role.
func (p *Pack) anyFocus() bool {
	for i := range p.Roles {
		if len(p.Roles[i].Focus) > 0 {
			return true
		}
	}
	return false
}

// buildCover makes the list once the pack has compiled, so every
// session shares it read-only. Two things the list would name alike (a
// route id with a "/" and an intent class, say) are reported: counted as
// one, a report would say one was used when only the other was.
func (p *Pack) buildCover(c *compiler) {
	ci := coverIndex{at: map[coverKey]int{}}
	// branchOf: the intent route of each item, "" for others. Two classes
	// of one route alike are reported by the route's own check.
	var branchOf []string
	add := func(k CoverKind, id string, pos Pos, route ...string) {
		key := coverKey{k, id}
		r := ""
		if len(route) > 0 {
			r = route[0]
		}
		if first, dup := ci.at[key]; dup {
			// Reported by their own checks: two classes of one route, a
			// check named like a built-in guardrail.
			own := (r != "" && branchOf[first] == r) || (k == CoverGuardrail && slices.Contains(builtinGuards, id))
			if !own {
				c.errorf(pos, "this and %s are both %s in coverage and sweep reports; rename one", ci.items[first].Pos, ci.items[first].Name())
			}
			return
		}
		ci.at[key] = len(ci.items)
		ci.items = append(ci.items, CoverItem{Kind: k, ID: id, Pos: pos})
		branchOf = append(branchOf, r)
	}
	for i := range p.Rules {
		add(CoverRule, p.Rules[i].ID, p.Rules[i].Pos)
	}
	for i := range p.Timeline.Anchors {
		add(CoverAnchor, p.Timeline.Anchors[i].ID, p.Timeline.Anchors[i].Pos)
	}
	for i := range p.Timeline.Windows {
		add(CoverWindow, p.Timeline.Windows[i].ID, p.Timeline.Windows[i].Pos)
	}
	for i := range p.Routing {
		r := &p.Routing[i]
		if r.Type == RouteIntent && len(r.Intents) > 0 {
			for j := range r.Intents {
				add(CoverRoute, IntentBranch(r.ID, &r.Intents[j]), r.Intents[j].Pos, r.ID)
			}
			continue
		}
		add(CoverRoute, r.ID, r.Pos)
	}
	for i := range p.Silence.Steps {
		add(CoverSilence, strconv.Itoa(i+1), p.Silence.Steps[i].Pos)
	}
	for i := range p.SpeechConfidence.Steps {
		add(CoverConfidence, strconv.Itoa(i+1), p.SpeechConfidence.Steps[i].Pos)
	}
	g := &p.Guardrails
	for _, b := range []struct {
		on   bool
		name string
	}{
		{g.MaxQuestions > 0, GuardMaxQuestions},
		{g.MinSentences > 0 || g.MaxSentences.Int() > 0, GuardSentences},
		{g.RoleFidelity && p.anyFocus(), GuardRoleFidelity},
		{g.MaxRepeats > 0, GuardRepeat},
	} {
		if b.on {
			add(CoverGuardrail, b.name, g.Pos)
		}
	}
	for i := range g.Tripwires {
		add(CoverGuardrail, g.Tripwires[i].ID, g.Tripwires[i].Pos)
	}
	for i := range g.Input {
		add(CoverGuardrail, g.Input[i].ID, g.Input[i].Pos)
	}
	for i := range p.Tools {
		add(CoverTool, p.Tools[i].Name, p.Tools[i].Pos)
	}
	for i := range p.Jobs {
		add(CoverJob, p.Jobs[i].ID, p.Jobs[i].Pos)
	}
	for i := range p.End {
		add(CoverEnd, p.End[i].ID, p.End[i].Pos)
	}
	p.cover = ci
}
