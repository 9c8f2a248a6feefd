package engine

import (
	"strings"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/rules/text"
)

// Guardrail names reported on agent messages.
const (
	GuardMaxQuestions = "max_questions"
	GuardSentences    = "sentences"
	GuardRoleFidelity = "role_fidelity"
)

// guard checks a generated line against the pack's guardrails and, per
// on_violation, rewrites it. A list of questions or an off-role line is
// replaced by the role's rewrite line for the goal (a single pointed
// question); a line that is merely too long is trimmed.
func (s *Session) guard(t *turn, line string) (string, []string) {
	g := &s.p.Guardrails
	role, _ := s.p.Role(t.role)
	line = strings.TrimSpace(line)
	v := s.violations(t, line)
	n := text.CountSentences(line)
	tooLong := g.MaxSentences > 0 && n > g.MaxSentences
	if len(v) == 0 {
		return line, nil
	}
	switch g.OnViolation {
	case rules.ViolationPass:
		return line, v
	case rules.ViolationFallback:
		return s.fallback(t), v
	}
	if g.Rewrite != nil {
		if out, ok := s.scriptRewrite(t, line, v); ok {
			// The script's answer must itself pass; if not, the role's
			// fallback line goes out rather than a bad line.
			if len(s.violations(t, out)) > 0 {
				s.emit(Effect{Type: EffectScriptError, Rule: "guardrails.rewrite", Agent: t.role,
					Reason: g.Rewrite.Script.String() + ": result still breaks the guardrails: " + strings.Join(s.violations(t, out), ",")})
				return s.fallback(t), v
			}
			return out, v
		}
		if s.ended {
			return line, v
		}
	}
	if tooLong && len(v) == 1 {
		return strings.Join(text.SplitSentences(line)[:g.MaxSentences], " "), v
	}
	if line, ok := role.Rewrite.Get(t.goal); ok {
		return line, v
	}
	if line, ok := role.Rewrite.Get("default"); ok {
		return line, v
	}
	return trimToFirstQuestion(line, g.MaxSentences), v
}

// violations lists the guardrails a line breaks.
func (s *Session) violations(t *turn, line string) []string {
	g := &s.p.Guardrails
	role, _ := s.p.Role(t.role)
	var v []string
	if g.MaxQuestions > 0 && text.CountQuestions(line) > g.MaxQuestions {
		v = append(v, GuardMaxQuestions)
	}
	n := text.CountSentences(line)
	if (g.MaxSentences > 0 && n > g.MaxSentences) || n < g.MinSentences {
		v = append(v, GuardSentences)
	}
	if g.RoleFidelity && len(role.Focus) > 0 && role.FocusWords().Hits(line) == 0 {
		v = append(v, GuardRoleFidelity)
	}
	return v
}

// trimToFirstQuestion keeps statements up to and including the first
// question, within max sentences: the mechanical rewrite for packs without
// rewrite lines.
func trimToFirstQuestion(line string, max int) string {
	var kept []string
	for _, sen := range text.SplitSentences(line) {
		if max > 0 && len(kept) == max {
			break
		}
		kept = append(kept, sen)
		if strings.HasSuffix(sen, "?") {
			break
		}
	}
	return strings.Join(kept, " ")
}
