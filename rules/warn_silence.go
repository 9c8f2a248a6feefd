package rules

import (
	"fmt"
	"strings"
)

// warnSilenceWithoutQuestion warns of a silence step whose line asks
// nothing while a later step waits behind it. The engine stops the ladder
// whenever an agent speaks, and starts it again once a line has been
// spoken only if the line awaits an answer: with start_after: question
// (the default), a line containing '?'. It then goes on at the step after
// the one that said the line. So a nudge without '?' ends the ladder there
// and the later steps (an auto_advance, an end) never run. Lines the step
// may say are its own line, else the role's fallback lines for its kind
// and the scripted model's lines for its goal (dry runs and pack tests).
func warnSilenceWithoutQuestion(c *compiler, w *ErrorList) {
	s := &c.p.Silence
	if s.StartAfter != AfterQuestion {
		return
	}
	for i := 0; i+1 < len(s.Steps); i++ {
		st := &s.Steps[i]
		if st.Action != SilenceSay {
			continue
		}
		what := fmt.Sprintf("silence step %d", i+1)
		next := fmt.Sprintf("step %d (%s)", i+2, s.Steps[i+1].Action)
		if st.Turn.Line != "" {
			if !strings.Contains(st.Turn.Line, "?") {
				w.add(st.Turn.Pos, "%s: its line %q has no '?'; with start_after: question only a line that asks something starts the silence ladder again, so %s never follows it: make it a question, or set silence.start_after: any", what, clip(st.Turn.Line), next)
			}
			continue
		}
		for _, r := range c.speakers(&st.Turn) {
			for _, src := range []struct {
				name string
				sets []LineSet
				keys []string
			}{
				{"fallback", r.Fallback, []string{st.Turn.Kind, "default"}},
				{"lines", r.Lines, []string{st.Turn.Goal, st.Turn.Kind, "default"}},
			} {
				ls := firstLineSet(src.sets, src.keys...)
				if ls == nil {
					continue
				}
				for k, line := range ls.Text {
					if !strings.Contains(line, "?") {
						w.add(ls.Pos, "roles.%s.%s.%s line %d %q has no '?': said for %s, it ends the silence ladder, since with start_after: question only a line that asks something starts it again, and %s never follows", r.ID, src.name, ls.ID, k+1, clip(line), what, next)
					}
				}
			}
		}
	}
}

// speakers lists the roles that may say turn t: its own role, or any for
// one resolved when the turn is made.
func (c *compiler) speakers(t *TurnSpec) []*Role {
	if t.Who.Kind == RoleFixed {
		if r, ok := c.p.Role(t.Who.Role); ok {
			return []*Role{r}
		}
		return nil
	}
	out := make([]*Role, len(c.p.Roles))
	for i := range c.p.Roles {
		out[i] = &c.p.Roles[i]
	}
	return out
}

// firstLineSet is the set the engine picks for keys: the first key with
// lines.
func firstLineSet(sets []LineSet, keys ...string) *LineSet {
	for _, key := range keys {
		for i := range sets {
			if key != "" && sets[i].ID == key && len(sets[i].Text) > 0 {
				return &sets[i]
			}
		}
	}
	return nil
}
