package engine

import (
	"strings"

	"github.com/batonhq/baton/rules"
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
func (s *Session) guard(t *turn, text string) (string, []string) {
	g := &s.p.Guardrails
	role, _ := s.p.Role(t.role)
	text = strings.TrimSpace(text)
	var v []string
	if g.MaxQuestions > 0 && rules.CountQuestions(text) > g.MaxQuestions {
		v = append(v, GuardMaxQuestions)
	}
	n := rules.CountSentences(text)
	tooLong := g.MaxSentences > 0 && n > g.MaxSentences
	if tooLong || n < g.MinSentences {
		v = append(v, GuardSentences)
	}
	if g.RoleFidelity && len(role.Focus) > 0 && role.FocusWords().Hits(text) == 0 {
		v = append(v, GuardRoleFidelity)
	}
	if len(v) == 0 {
		return text, nil
	}
	switch g.OnViolation {
	case "pass":
		return text, v
	case "fallback":
		return s.fallback(t), v
	}
	if tooLong && len(v) == 1 {
		return strings.Join(rules.SplitSentences(text)[:g.MaxSentences], " "), v
	}
	if line, ok := role.Rewrite.Get(t.goal); ok {
		return line, v
	}
	if line, ok := role.Rewrite.Get("default"); ok {
		return line, v
	}
	return trimToFirstQuestion(text, g.MaxSentences), v
}

// trimToFirstQuestion keeps statements up to and including the first
// question, within max sentences: the mechanical rewrite for packs without
// rewrite lines.
func trimToFirstQuestion(text string, max int) string {
	var kept []string
	for _, sen := range rules.SplitSentences(text) {
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
