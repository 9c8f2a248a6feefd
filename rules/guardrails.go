package rules

import "go.yaml.in/yaml/v3"

// Guardrails check every agent line before it is sent, and the
// candidate's messages before they reach a model.
type Guardrails struct {
	MaxQuestions int `yaml:"max_questions"`
	MinSentences int `yaml:"min_sentences"`
	MaxSentences int `yaml:"max_sentences"`
	// RoleFidelity requires a line to use at least one of its role's focus words.
	RoleFidelity bool `yaml:"role_fidelity"`
	// MaxRepeats caps how often one identical line may be said in a
	// session (0: no cap); a line over it is a violation ("repeat"), and
	// rewrite and fallback lines at the cap are passed over.
	MaxRepeats int `yaml:"max_repeats"`
	// OnViolation is the chain of policies tried in order until one gives
	// a line that passes: regenerate, rewrite, fallback, pass. One word is
	// a chain of one; the default is rewrite. The role's fallback line is
	// the last resort of every chain.
	OnViolation Policies `yaml:"on_violation"`
	// Regenerate asks the same model again with a corrective instruction.
	Regenerate Regenerate `yaml:"regenerate"`
	// Rewrite, if set, is a script that rewrites a violating line; its
	// answer is checked again and passed over if it still violates.
	Rewrite *Hook `yaml:"rewrite"`
	// Tripwires run on every generated line with reply in scope: when one
	// holds, its actions run (flag, end, anything a rule does) and the
	// line counts as violating it.
	Tripwires []Check `yaml:"tripwires"`
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
	// `reply.violations`, `reply.text`, `limits` and `role` in scope.
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
