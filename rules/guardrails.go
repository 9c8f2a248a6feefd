package rules

import (
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/batonhq/baton/rules/text"
)

// Guardrails check every agent line before it is sent, and the
// candidate's messages before they reach a model.
type Guardrails struct {
	// Pos is where the section starts: the built-in checks' place.
	Pos
	MaxQuestions int `yaml:"max_questions"`
	MinSentences int `yaml:"min_sentences"`
	// MaxSentences may name a number constant or input, so a session can
	// choose how long its lines are within what the pack allows.
	MaxSentences Number `yaml:"max_sentences"`
	// MaxWords and MaxSpeech bound every generated line's length: in
	// words, and in seconds of speech at the role's words_per_minute (as a
	// simulated voice times it). A role may set its own (roles.max_words,
	// roles.max_speech). They default to DefaultMaxWords and
	// DefaultMaxSpeechMS and cannot be turned off: a model that writes an
	// essay must not hold the floor for minutes.
	MaxWords  int      `yaml:"max_words"`
	MaxSpeech Duration `yaml:"max_speech"`
	// RoleFidelity requires a line to use at least one of its role's focus words.
	RoleFidelity bool `yaml:"role_fidelity"`
	// MaxRepeats caps how often one identical line may be said in a
	// session (0: no cap): a generated line at the cap is a violation
	// (max_repeats), and rewrite and fallback lines at the cap are passed
	// over. Lines the pack wrote for a turn are said as written.
	MaxRepeats int `yaml:"max_repeats"`
	// OnViolation is the chain of policies tried in order until one gives
	// a line that passes: regenerate, rewrite, fallback, pass. One word is
	// a chain of one; the default is rewrite. The role's fallback line is
	// the last resort of every chain.
	OnViolation Policies `yaml:"on_violation"`
	// Regenerate asks the same model again with a corrective instruction.
	Regenerate Regenerate `yaml:"regenerate" scope:"reply"`
	// Rewrite, if set, is a script that rewrites a violating line; its
	// answer is checked again and passed over if it still violates.
	Rewrite *Hook `yaml:"rewrite"`
	// Tripwires run on every generated line with reply in scope: when one
	// holds, its actions run (flag, end, anything a rule does) and the
	// line counts as violating it.
	Tripwires []Check `yaml:"tripwires" scope:"reply"`
	// wpm is the pack's voice rate, for lines of no role.
	wpm int
	// Input checks run on every candidate message before it is routed,
	// with msg in scope; besides any action they may refuse or redact it.
	Input []Check `yaml:"input"`
}

// Policies is a chain of guardrail policies.
type Policies []OnViolation

func (p *Policies) decodeNode(d *decoder, n *yaml.Node) {
	if n.Kind == yaml.SequenceNode {
		for _, c := range n.Content {
			var o OnViolation
			o.decodeNode(d, c)
			*p = append(*p, o)
		}
		return
	}
	var o OnViolation
	o.decodeNode(d, n)
	*p = Policies{o}
}

// Regenerate configures asking the model again.
type Regenerate struct {
	Pos
	// Attempts is how many times the model is asked again (default 2),
	// all within the turn's model budget (llm.timeout from the first ask).
	Attempts *int `yaml:"attempts"`
	// Instruction is the corrective instruction, a template with
	// `reply.violations`, `reply.text`, `reply.limits` and `role` in scope.
	Instruction Template `yaml:"instruction"`
}

// Check is a named condition with actions: a tripwire on agent lines or
// an input check on candidate messages.
type Check struct {
	Pos
	ID   string  `yaml:"id"`
	When Expr    `yaml:"when"`
	Do   Actions `yaml:"do"`
}

// Names of the built-in guardrails, as violations list them.
const (
	GuardMaxQuestions = "max_questions"
	GuardSentences    = "sentences"
	GuardRoleFidelity = "role_fidelity"
	// GuardRepeat: the line was already said max_repeats times.
	GuardRepeat = "max_repeats"
	// GuardMaxWords and GuardMaxSpeech: the line is longer than its
	// role's bound in words, or would take longer to say.
	GuardMaxWords  = "max_words"
	GuardMaxSpeech = "max_speech"
)

// Default length bounds of a generated line. 120 words is a long spoken
// turn (a paragraph, about 45 seconds at the default 160 words a
// minute): longer and the candidate stops listening, and a panel's
// timeline slips. 45 seconds holds a slower voice to the same time.
const (
	DefaultMaxWords    = 120
	DefaultMaxSpeechMS = 45000
)

// builtinGuards are the built-in guardrails' violation names.
var builtinGuards = []string{GuardMaxQuestions, GuardSentences, GuardRoleFidelity, GuardRepeat, GuardMaxWords, GuardMaxSpeech}

// Violations lists the built-in limits a line of role r breaks. The
// engine checks every generated line with it, and the loader every
// rewrite and fallback line, which are said instead of violating ones.
func (g *Guardrails) Violations(r *Role, line string) []string {
	var v []string
	if g.MaxQuestions > 0 && text.CountQuestions(line) > g.MaxQuestions {
		v = append(v, GuardMaxQuestions)
	}
	n := text.CountSentences(line)
	if (g.MaxSentences.Int() > 0 && n > g.MaxSentences.Int()) || n < g.MinSentences {
		v = append(v, GuardSentences)
	}
	if g.RoleFidelity && r != nil && len(r.Focus) > 0 && r.FocusWords().Hits(line) == 0 {
		v = append(v, GuardRoleFidelity)
	}
	words, speechMS, wpm := g.bounds(r)
	if w := int64(text.CountWords(line)); w > words {
		v = append(v, GuardMaxWords)
		if w*60000/wpm > speechMS {
			v = append(v, GuardMaxSpeech)
		}
	} else if w*60000/wpm > speechMS {
		v = append(v, GuardMaxSpeech)
	}
	return v
}

// bounds are role r's length bounds (r may be nil: the pack's) and its
// speaking rate.
func (g *Guardrails) bounds(r *Role) (words, speechMS, wpm int64) {
	words, speechMS, wpm = int64(g.MaxWords), g.MaxSpeech.MS, int64(g.wpm)
	if r != nil {
		if r.MaxWords > 0 {
			words = int64(r.MaxWords)
		}
		if r.MaxSpeech.MS > 0 {
			speechMS = r.MaxSpeech.MS
		}
		if r.WordsPerMinute > 0 {
			wpm = int64(r.WordsPerMinute)
		}
	}
	if words <= 0 {
		words = DefaultMaxWords
	}
	if speechMS <= 0 {
		speechMS = DefaultMaxSpeechMS
	}
	if wpm <= 0 {
		wpm = DefaultWordsPerMinute
	}
	return words, speechMS, wpm
}

// WordBound is the most words a line of role r (nil: of no role) may
// have within both its bounds: max_words, and max_speech at its rate.
func (g *Guardrails) WordBound(r *Role) int {
	words, speechMS, wpm := g.bounds(r)
	// The longest line whose speech, words*60000/wpm in whole ms, is
	// within speechMS.
	return int(max(1, min(words, ((speechMS+1)*wpm-1)/60000)))
}

// Limits says the built-in limits for role r in words, as the reply
// view's limits hands them to a corrective instruction.
func (g *Guardrails) Limits(r *Role) string {
	var limits []string
	if g.MaxQuestions > 0 {
		limits = append(limits, "at most "+strconv.Itoa(g.MaxQuestions)+" "+text.Plural(g.MaxQuestions, "question", "questions"))
	}
	if g.MaxSentences.Int() > 0 {
		limits = append(limits, strconv.Itoa(max(g.MinSentences, 1))+" to "+strconv.Itoa(g.MaxSentences.Int())+" sentences")
	} else if g.MinSentences > 0 {
		limits = append(limits, "at least "+strconv.Itoa(g.MinSentences)+" "+text.Plural(g.MinSentences, "sentence", "sentences"))
	}
	_, _, wpm := g.bounds(r)
	bound := g.WordBound(r)
	limits = append(limits, "at most "+strconv.Itoa(bound)+" words (about "+strconv.FormatInt(max(1, int64(bound)*60/wpm), 10)+" seconds spoken)")
	if g.RoleFidelity && r != nil && len(r.Focus) > 0 {
		limits = append(limits, "stay on your role's focus ("+strings.Join(r.Focus, ", ")+")")
	}
	return strings.Join(limits, "; ")
}
