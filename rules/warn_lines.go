package rules

import "slices"

// warnUnusedLineSets warns of a line set a role keys by a goal or kind
// that no turn of the pack has: the engine and the scripted model look
// lines up by the turn's goal or kind, then default, so the lines of a
// misspelt key are never said. A pack whose scripts may name goals and
// kinds at run time (a script route, a run action, llm.shape) is left
// alone: its keys may be theirs.
func warnUnusedLineSets(c *compiler, w *ErrorList) {
	if c.dynamicGoals {
		return
	}
	goals, kinds := c.turnKeys()
	// The scripted model also plays jobs and sequences, whose calls have
	// kind job or sequence and the job's or sequence's id as goal.
	modelGoals, modelKinds := slices.Clone(goals), append(slices.Clone(kinds), "job", "sequence")
	for i := range c.p.Jobs {
		modelGoals = append(modelGoals, c.p.Jobs[i].ID)
	}
	modelGoals = append(modelGoals, c.p.sequenceNames()...)
	unused := func(where string, sets []LineSet, by string, keys ...[]string) {
		all := slices.Concat(keys...)
		for _, ls := range sets {
			if ls.ID == "default" || slices.Contains(all, ls.ID) {
				continue
			}
			w.add(ls.Pos, "%s.%s: no turn has %s %s, so these lines are never said%s", where, ls.ID, by, ls.ID, DidYouMean(ls.ID, all))
		}
	}
	for i := range c.p.Roles {
		r := &c.p.Roles[i]
		unused("roles."+r.ID+".lines", r.Lines, "the goal or kind", modelGoals, modelKinds)
		unused("roles."+r.ID+".rewrite", r.Rewrite, "the goal", goals)
		unused("roles."+r.ID+".fallback", r.Fallback, "the kind", kinds)
		unused("roles."+r.ID+".cover", r.Cover, "the kind", kinds)
	}
	if cv := c.p.LLM.Cover; cv != nil {
		unused("llm.cover.lines", cv.Lines, "the kind", kinds)
	}
}

// turnKeys lists the goals and kinds the pack's turns can have: those of
// every turn the checker saw and of the turns routing makes.
func (c *compiler) turnKeys() (goals, kinds []string) {
	add := func(list *[]string, s string) {
		if s != "" && !slices.Contains(*list, s) {
			*list = append(*list, s)
		}
	}
	for _, ct := range c.turns {
		add(&goals, ct.t.Goal)
		add(&kinds, ct.t.Kind)
	}
	for i := range c.p.Routing {
		r := &c.p.Routing[i]
		add(&goals, r.Goal)
		add(&kinds, r.Kind)
		for _, in := range r.Intents {
			add(&goals, in.Goal)
		}
	}
	return goals, kinds
}
