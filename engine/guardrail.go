package engine

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/rules/text"
)

// Guardrail outcomes, as agent messages report them. A line the model
// gave again after a correction is "regenerated(N)", N its attempts.
const (
	OutcomePass      = "pass"
	OutcomeRewritten = "rewritten"
	OutcomeFallback  = "fallback"
	OutcomeTripped   = "tripped"
)

func outcomeRegenerated(attempts int) string { return "regenerated(" + strconv.Itoa(attempts) + ")" }

// guard is the guardrails' state for one generated line: how many answers
// the model has given for it and where its policy chain stands.
type guard struct {
	askedAt    int64 // the turn's first request, when its model budget started
	answers    int
	regens     int
	chain      int // next policy of guardrails.on_violation to try
	tripped    bool
	violations []string // of the first violating answer
	original   string
}

// check lists what a generated line breaks: the built-in limits, the
// repeat cap, and the tripwires, whose actions run here.
func (s *Session) check(t *turn, line string) []string {
	v := s.violations(t, line)
	if s.lines.atCap(s, line) {
		v = append(v, rules.GuardRepeat)
	}
	s.coverage.broke(s, v)
	g := &s.p.Guardrails
	if len(g.Tripwires) == 0 {
		return v
	}
	defer s.env.Scope(rules.Scope{Reply: s.replyView(t, line, v)})()
	for i := range g.Tripwires {
		tw := &g.Tripwires[i]
		if !s.evalBool(&tw.When, t.role) {
			continue
		}
		t.guard.tripped = true
		s.coverage.hit(s, rules.CoverGuardrail, tw.ID)
		v = append(v, tw.ID)
		for _, a := range tw.Do {
			if s.ended {
				return v
			}
			s.do(a, tw.ID)
		}
	}
	return v
}

// replyView is the reply guardrail conditions and templates read. Every
// generated line is checked, so the session's one buffer serves, unless
// a check runs inside another's scope (a tripwire's action said a line).
func (s *Session) replyView(t *turn, line string, v []string) *rules.ReplyView {
	r := &s.reply
	if s.env.Reply() == r {
		r = new(rules.ReplyView)
	}
	*r = rules.ReplyView{Text: line, Role: t.role, Violations: v, Attempt: t.guard.answers}
	if role, ok := s.p.Role(t.role); ok {
		r.Limits = role.GuardLimits()
	}
	return r
}

// correction renders the regenerate instruction for a line that broke v.
func (s *Session) correction(t *turn, line string, v []string) string {
	defer s.env.Scope(rules.Scope{Reply: s.replyView(t, line, v)})()
	return s.render(&s.p.Guardrails.Regenerate.Instruction, t.role)
}

// guardLine runs a generated line through the guardrails. It returns the
// line to say and its outcome, or ok=false when the turn waits for the
// model again (regenerate) or the session ended. An empty line means the
// answer was empty once cleaned for speech: the caller says the role's
// fallback line, as for a blank answer.
func (s *Session) guardLine(t *turn, line string, withCalls bool) (out, outcome string, ok bool) {
	line, t.cleaned = s.speech(t.role, line)
	gd := &t.guard
	if line == "" {
		// Nothing but markdown: an empty answer, which the role's
		// fallback line replaces, as it does a blank one.
		s.emit(Effect{Type: EffectAdapterError, ID: t.reqID, Agent: t.role, Kind: t.kind, Rule: t.rule,
			Reason: "empty reply: nothing left once cleaned for speech"})
		return "", OutcomeFallback, true
	}
	gd.answers++
	v := s.check(t, line)
	if s.ended {
		return "", "", false
	}
	if len(v) == 0 {
		switch {
		case gd.tripped:
			return line, OutcomeTripped, true
		case gd.answers > 1:
			return line, outcomeRegenerated(gd.answers), true
		}
		return line, OutcomePass, true
	}
	if gd.violations == nil {
		gd.violations, gd.original = v, line
	}
	chain := s.p.Guardrails.OnViolation
	why := "" // why a regeneration was not asked for, if it matters
	for ; gd.chain < len(chain); gd.chain++ {
		policy := chain[gd.chain]
		switch policy {
		case rules.ViolationRegenerate:
			if t.hard && s.now >= t.due && !withCalls {
				// A hard turn is said when due: the best line it has now,
				// not a better one later.
				why = "due now: a hard turn is not asked again"
				continue
			}
			if withCalls || !s.regenerate(t, line, v) {
				continue
			}
			return "", "", false
		case rules.ViolationRewrite:
			if r, ok := s.rewrite(t, line, v); ok {
				s.verdict(t, line, v, OutcomeRewritten, why)
				return r, s.tripOr(gd, OutcomeRewritten), true
			}
			if s.ended {
				return "", "", false
			}
		case rules.ViolationFallback:
			s.verdict(t, line, v, OutcomeFallback, why)
			return s.fallback(t), s.tripOr(gd, OutcomeFallback), true
		case rules.ViolationPass:
			// Passed as it is, but never past the length bound.
			said, reason := s.bounded(t, line), "said as it is"
			if said != line {
				reason = "said cut to its length bound"
			}
			s.verdict(t, line, v, OutcomePass, reason)
			return said, s.tripOr(gd, OutcomePass), true
		}
	}
	// Every policy passed: the role's fallback line is the last resort.
	if why == "" {
		why = "every policy of on_violation was tried"
	}
	s.verdict(t, line, v, OutcomeFallback, why)
	return s.fallback(t), s.tripOr(gd, OutcomeFallback), true
}

func (s *Session) tripOr(gd *guard, outcome string) string {
	if gd.tripped {
		return OutcomeTripped
	}
	return outcome
}

// verdict reports what the guardrails did with a violating answer.
func (s *Session) verdict(t *turn, line string, v []string, policy, reason string) {
	s.emit(Effect{Type: EffectGuardrail, ID: t.reqID, Agent: t.role, Kind: policy, Rule: t.rule, Text: line,
		Guardrail: v, Reason: reason})
}

// regenerate asks the model for the line again with the violations named,
// if attempts and the turn's model budget remain.
func (s *Session) regenerate(t *turn, line string, v []string) bool {
	g := &s.p.Guardrails
	gd := &t.guard
	deadline := gd.askedAt + s.p.LLM.Timeout.MS
	if gd.regens >= *g.Regenerate.Attempts || s.now >= deadline {
		return false
	}
	gd.regens++
	t.stale = "" // the new line is written from the state as it is now
	instruction := s.correction(t, line, v)
	s.verdict(t, line, v, "regenerate", fmt.Sprintf("attempt %d of %d", gd.regens, *g.Regenerate.Attempts))
	t.state = tsGenerating
	t.reqID = s.nextID('r')
	req := s.buildRequest(t)
	req.Correction = &Correction{Rejected: line, Instruction: instruction, Attempt: gd.regens}
	req.TimeoutMS = deadline - s.now
	s.emit(Effect{Type: EffectLLMRequest, ID: t.reqID, Agent: t.role, Kind: t.kind, Rule: t.rule, Request: req})
	s.openRequest(t.reqID, &s.floor, deadline)
	return true
}

// rewrite replaces a violating line: the pack's rewrite script, a line
// that is only too long trimmed, the role's rewrite lines for the goal,
// or the line cut after its first question. A replacement that still
// breaks a limit is passed over.
func (s *Session) rewrite(t *turn, line string, v []string) (string, bool) {
	g := &s.p.Guardrails
	role, _ := s.p.Role(t.role)
	if g.Rewrite != nil {
		if out, ok := s.scriptRewrite(t, line, v); ok {
			// The script is the pack's rewrite: if its answer breaks the
			// limits too, this policy has failed.
			if bad := s.violations(t, out); len(bad) > 0 {
				s.emit(Effect{Type: EffectScriptError, Rule: "guardrails.rewrite", Agent: t.role,
					Reason: g.Rewrite.Script.String() + ": result still breaks the guardrails: " + strings.Join(bad, ",")})
				return "", false
			}
			if !s.lines.atCap(s, out) {
				return out, true
			}
		}
		if s.ended {
			return "", false
		}
	}
	if onlyTooLong(v) {
		// Too many sentences or words: the longest run of whole sentences
		// within the bounds.
		if out := text.Cut(line, g.WordBound(role), g.MaxSentences.Int()); out != line && !s.lines.atCap(s, out) {
			return out, true
		}
	}
	if out, ok := s.lines.pick(s, t.role, "rewrite", role.Rewrite, t.goal, "default"); ok {
		return out, true
	}
	if _, written := rules.FindLines(role.Rewrite, "default"); written {
		return "", false // the role's lines are all at their cap
	}
	out := trimToFirstQuestion(line, g.MaxSentences.Int())
	if out == "" || len(s.violations(t, out)) > 0 || s.lines.atCap(s, out) {
		return "", false
	}
	return out, true
}

// onlyTooLong reports whether violations v are all of length: too many
// sentences, words or seconds of speech.
func onlyTooLong(v []string) bool {
	for _, x := range v {
		switch x {
		case rules.GuardSentences, rules.GuardMaxWords, rules.GuardMaxSpeech:
		default:
			return false
		}
	}
	return len(v) > 0
}

// bounded is line cut to its role's length bound, if it is longer: what
// is said of a line passed as it is.
func (s *Session) bounded(t *turn, line string) string {
	role, _ := s.p.Role(t.role)
	return text.Cut(line, s.p.Guardrails.WordBound(role), 0)
}

// speech cleans role's generated line for speech: markdown and leading
// speaker labels go (role's own id, name or first name before ':' or a
// dash; another role's only before ':', as a dash after it addresses
// them). It returns the line and what was removed ("" when nothing: the
// common case, which allocates nothing). A line that was all markdown
// comes back empty.
func (s *Session) speech(role, line string) (string, string) {
	line = strings.TrimSpace(line)
	own, others := s.p.SpeakerLabels(role)
	md := text.StripMarkdown(line)
	out := text.StripLabels(md, own, others)
	label := out != md
	if label {
		out = text.StripMarkdown(out) // a label may have hidden a heading
	}
	out = strings.TrimSpace(out)
	switch {
	case out == line:
		return line, ""
	case md != line && label:
		return out, CleanedMarkdown + ", " + CleanedLabel
	case label:
		return out, CleanedLabel
	}
	return out, CleanedMarkdown
}

// What cleaning removed from a generated line, as agent messages report it.
const (
	CleanedMarkdown = "markdown"
	CleanedLabel    = "speaker label"
)

// violations lists the built-in limits a line breaks.
func (s *Session) violations(t *turn, line string) []string {
	role, _ := s.p.Role(t.role)
	return s.p.Guardrails.Violations(role, line)
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
