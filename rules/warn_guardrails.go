package rules

import "strings"

// warnFixedLineGuardrails warns of a line the pack wrote for a turn (an
// anchor's, a nudge's, a refusal's: any turn with line:) or a cover line
// that breaks the pack's own built-in guardrails (max_questions,
// min_sentences and max_sentences, role_fidelity). The engine says such
// lines as written, unchecked, so the panel would break its own rules.
// Role fidelity is only judged where the speaker is known (a turn's fixed
// role); cover lines are fillers and are not held to it. Script
// guardrails and tripwires judge lines at run time and are not run here.
func warnFixedLineGuardrails(c *compiler, w *ErrorList) {
	g := &c.p.Guardrails
	for _, ct := range c.turns {
		t := ct.t
		if t.Line == "" {
			continue
		}
		var r *Role
		if t.Who.Kind == RoleFixed {
			r, _ = c.p.Role(t.Who.Role)
		}
		if v := g.Violations(r, t.Line); len(v) > 0 {
			w.add(t.Pos, "%s: line %q breaks guardrails %s; a line written for a turn is said as written, so keep it within %s", ct.what, clip(t.Line), strings.Join(v, ", "), g.Limits(r))
		}
	}
	cover := func(where string, sets []LineSet) {
		for _, ls := range sets {
			for k, line := range ls.Text {
				if v := g.Violations(nil, line); len(v) > 0 {
					w.add(ls.Pos, "%s.%s line %d %q breaks guardrails %s; cover lines are said as written, so keep them within %s", where, ls.ID, k+1, clip(line), strings.Join(v, ", "), g.Limits(nil))
				}
			}
		}
	}
	if cv := c.p.LLM.Cover; cv != nil {
		cover("llm.cover.lines", cv.Lines)
	}
	for i := range c.p.Roles {
		cover("roles."+c.p.Roles[i].ID+".cover", c.p.Roles[i].Cover)
	}
}
