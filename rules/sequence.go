package rules

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Sequence is a request-driven exchange among agents, where the timeline
// drives an interview: something asks (a user's prompt, started by a
// rule's sequence action), and the steps' roles answer in order, round
// after round, each seeing what the others said, until every agent asked
// in a round gives the until_all reply, the rounds or calls run out, or
// the exchange's time is up. One exchange of a sequence runs at a time;
// a session holds as many, one after another, as it is asked for.
type Sequence struct {
	Pos
	ID string `yaml:"id"`
	// Steps are the agents in the order they answer, each asked in a
	// round only if its when: holds then.
	Steps []SequenceStep `yaml:"steps"`
	// Gate, if set, reads routing flags from one step's reply and takes
	// them out of it; later steps' when: read them as sequence.flags.
	Gate *Gate `yaml:"gate"`
	// Rounds is the most rounds an exchange runs (default 1).
	Rounds Number `yaml:"rounds"`
	// UntilAll is the reply (compared whole, spaces around it ignored)
	// that, given by every agent asked in a round, ends the exchange.
	UntilAll string `yaml:"until_all"`
	// MaxCalls bounds the agent calls of one exchange (default: steps
	// times rounds).
	MaxCalls Number `yaml:"max_calls"`
	// CallTimeout is one agent's budget (default llm.timeout); Timeout,
	// if set, the whole exchange's, on the engine clock.
	CallTimeout Duration `yaml:"call_timeout"`
	Timeout     Duration `yaml:"timeout"`
	// OnTimeout and OnError say what an agent that timed out or failed
	// does to the exchange: continue with the next step, or end it.
	OnTimeout SequenceFailure `yaml:"on_timeout"`
	OnError   SequenceFailure `yaml:"on_error"`
	// History is how many finished exchanges later calls see (the
	// rolling window); 0 keeps none.
	History Number `yaml:"history"`

	rounds, maxCalls, history int
}

// SequenceStep is one agent of a sequence.
type SequenceStep struct {
	Pos
	Role string `yaml:"role"`
	// When, if set, must hold for the role to be asked in a round; it
	// sees the sequence view (sequence.flags, sequence.round...).
	When Expr `yaml:"when"`
}

// stepFields decodes a step written out in full; a step that is only a
// role may be written as its id.
type stepFields SequenceStep

func (s *SequenceStep) decodeNode(d *decoder, n *yaml.Node) {
	if n.Kind == yaml.ScalarNode {
		s.Pos = d.pos(n)
		d.decode(n, refValue(&s.Role))
		return
	}
	d.decode(n, refValue((*stepFields)(s)))
	s.Pos = d.pos(n)
}

// Gate reads flags that route the rest of an exchange from the end of one
// role's reply: a block of KEY=VALUE lines between two fence lines
// (declared flags), or whatever a script makes of the reply. The block is
// taken out of the reply before anyone sees or stores it. A reply
// without a valid block uses every flag's fallback, and says so.
type Gate struct {
	Pos
	// Role is the step whose replies carry the flags.
	Role string `yaml:"role"`
	// Fence is the line that opens and closes the block (default ---).
	Fence string     `yaml:"fence"`
	Flags []GateFlag `yaml:"flags"`
	// Script, if set, parses instead: it gets {text, flags: [ids]} and
	// returns {text, flags: {id: value}}, or null for no valid block.
	Script ScriptRef `yaml:"script"`
}

// GateFlag is one flag of a gate's block.
type GateFlag struct {
	Pos
	ID   string   `yaml:"id"`
	Type FlagType `yaml:"type"`
	// Fallback is the value used when the reply has no valid block.
	Fallback any `yaml:"fallback"`
}

// FlagType is what a gate flag's value may be.
type FlagType uint8

// Flag types: true or false; a short code (letters, digits, _ . -, at most
// 64); any text on the line.
const (
	FlagBool FlagType = iota
	FlagCode
	FlagText
)

var flagTypeWords = []string{"bool", "code", "text"}

func (t FlagType) String() string                       { return word(flagTypeWords, uint8(t)) }
func (FlagType) enumWords() []string                    { return flagTypeWords }
func (t *FlagType) decodeNode(d *decoder, n *yaml.Node) { decodeEnum(d, n, t, flagTypeWords) }

// Parse reads one value of the flag's type from the block, or says why
// it cannot.
func (f *GateFlag) Parse(v string) (any, error) {
	switch f.Type {
	case FlagBool:
		switch strings.ToLower(v) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("%s=%q: want true or false", f.ID, v)
	case FlagCode:
		if !isCode(v) {
			return nil, fmt.Errorf("%s=%q: want a short code (letters, digits, _ . -; at most 64)", f.ID, v)
		}
		return v, nil
	}
	if v == "" {
		return nil, fmt.Errorf("%s is empty", f.ID)
	}
	return v, nil
}

// Check says whether v, from a script, is a value of the flag's type.
func (f *GateFlag) Check(v any) error {
	switch f.Type {
	case FlagBool:
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: want true or false, got %s", f.ID, Describe(v))
		}
		return nil
	}
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("%s: want text, got %s", f.ID, Describe(v))
	}
	_, err := f.Parse(s)
	return err
}

func isCode(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// SequenceFailure is what a failed agent call does to its exchange.
type SequenceFailure uint8

// Failure policies.
const (
	FailContinue SequenceFailure = iota
	FailEnd
)

var sequenceFailureWords = []string{"continue", "end"}

func (f SequenceFailure) String() string    { return word(sequenceFailureWords, uint8(f)) }
func (SequenceFailure) enumWords() []string { return sequenceFailureWords }
func (f *SequenceFailure) decodeNode(d *decoder, n *yaml.Node) {
	decodeEnum(d, n, f, sequenceFailureWords)
}

// RoundLimit, CallLimit and HistoryLimit are the compiled limits.
func (s *Sequence) RoundLimit() int   { return s.rounds }
func (s *Sequence) CallLimit() int    { return s.maxCalls }
func (s *Sequence) HistoryLimit() int { return s.history }

// Bounds on a sequence's settings: each round and call is a model call,
// each kept exchange is carried by every later call.
const (
	MaxSequenceRounds  = 50
	MaxSequenceCalls   = 200
	MaxSequenceHistory = 100
)

// The context parts a sequence's calls carry, named in llm.assembly (or
// a role's) like the built-in parts and trimmed by llm.context_budget
// like files: earlier exchanges, the rounds finished in this one, and
// what this round's earlier agents said.
const (
	PartHistory = "history"
	PartRounds  = "rounds"
	PartRound   = "round"
)

// SequenceParts lists them in their default order.
var SequenceParts = []string{PartHistory, PartRounds, PartRound}

func (s *Sequence) check(c *compiler) {
	c.id(s.Pos, "sequence", "sequence:"+s.ID)
	where := "sequence " + s.ID
	if !isName(s.ID) {
		c.errorf(s.Pos, "sequence %q: its id is what rules name (trigger: sequence:ID): letters, digits, '_' and '-'", s.ID)
	}
	if len(s.Steps) == 0 {
		c.errorf(s.Pos, "%s needs steps: the roles that answer, in order", where)
	}
	for i := range s.Steps {
		st := &s.Steps[i]
		c.roleRef(st.Pos, fmt.Sprintf("%s step %d", where, i+1), st.Role)
		if slices.ContainsFunc(s.Steps[:i], func(o SequenceStep) bool { return o.Role == st.Role }) {
			c.errorf(st.Pos, "%s: %s is a step twice; each role answers once a round", where, st.Role)
		}
	}
	s.rounds = c.count(s.Rounds, where+" rounds", 1, 1, MaxSequenceRounds)
	s.maxCalls = c.count(s.MaxCalls, where+" max_calls", min(s.rounds*max(len(s.Steps), 1), MaxSequenceCalls), 1, MaxSequenceCalls)
	s.history = c.count(s.History, where+" history", 0, 0, MaxSequenceHistory)
	if !s.CallTimeout.IsSet() {
		s.CallTimeout.MS = c.p.LLM.Timeout.MS
	}
	if s.CallTimeout.MS <= 0 && s.CallTimeout.ok() {
		c.errorf(s.CallTimeout.Pos, "%s: call_timeout must be positive", where)
	}
	if s.Timeout.IsSet() && s.Timeout.MS <= 0 && s.Timeout.ok() {
		c.errorf(s.Timeout.Pos, "%s: timeout must be positive", where)
	}
	if s.Gate != nil {
		s.Gate.check(c, s, where)
	}
}

// count resolves a whole-number setting: def when unset, else within
// [lo, hi].
func (c *compiler) count(n Number, what string, def, lo, hi int) int {
	if !n.IsSet() {
		return def
	}
	v := int(n.Value)
	if float64(v) != n.Value || v < lo || v > hi {
		c.errorf(n.Pos, "%s must be a whole number from %d to %d", what, lo, hi)
		return def
	}
	return v
}

func (g *Gate) check(c *compiler, s *Sequence, where string) {
	where += " gate"
	if !slices.ContainsFunc(s.Steps, func(st SequenceStep) bool { return st.Role == g.Role }) {
		c.errorf(g.Pos, "%s: role %q is not a step of the sequence%s", where, g.Role, c.suggest(g.Role, names(s.Steps, func(st *SequenceStep) string { return st.Role })))
	}
	if g.Fence == "" {
		g.Fence = "---"
	}
	if strings.ContainsAny(g.Fence, "\n=") || strings.TrimSpace(g.Fence) != g.Fence {
		c.errorf(g.Pos, "%s: fence is one line without '=' or spaces around it", where)
	}
	if len(g.Flags) == 0 {
		c.errorf(g.Pos, "%s needs flags: the KEY=VALUE lines its block holds", where)
	}
	for i := range g.Flags {
		f := &g.Flags[i]
		if !isIdent(f.ID) {
			c.errorf(f.Pos, "%s: flag %q: use letters, digits and _", where, f.ID)
		}
		if slices.ContainsFunc(g.Flags[:i], func(o GateFlag) bool { return o.ID == f.ID }) {
			c.errorf(f.Pos, "%s: flag %s is declared twice", where, f.ID)
		}
		if f.Type == badEnum {
			continue
		}
		if f.Fallback == nil {
			c.errorf(f.Pos, "%s: flag %s needs a fallback, the value used when a reply has no valid block", where, f.ID)
		} else if err := f.Check(f.Fallback); err != nil {
			c.errorf(f.Pos, "%s: fallback %v", where, err)
		}
	}
}

// Sequence returns the sequence with id.
func (p *Pack) Sequence(id string) (*Sequence, bool) {
	for i := range p.Sequences {
		if p.Sequences[i].ID == id {
			return &p.Sequences[i], true
		}
	}
	return nil, false
}

func (p *Pack) sequenceNames() []string {
	return names(p.Sequences, func(s *Sequence) string { return s.ID })
}

// SequenceAction starts an exchange of a sequence. Prompt and RunID are
// expressions; they default to the event being handled's text and
// run_id (a run id left empty is made by the engine).
type SequenceAction struct {
	Pos
	ID     string `yaml:"id"`
	Prompt Value  `yaml:"prompt"`
	RunID  Value  `yaml:"run_id"`

	seq *Sequence
}

// Target is the sequence started.
func (a *SequenceAction) Target() *Sequence { return a.seq }

func (a *SequenceAction) setShorthand(d *decoder, n *yaml.Node) { d.decode(n, refValue(&a.ID)) }

func (a *SequenceAction) check(c *compiler, where string) {
	a.seq = c.sequenceRef(a.Pos, where, a.ID)
}

// CancelSequenceAction cancels the running exchange of a sequence, if its
// run id is RunID (default: the event's run_id; empty cancels whichever
// is running).
type CancelSequenceAction struct {
	Pos
	ID    string `yaml:"id"`
	RunID Value  `yaml:"run_id"`

	seq *Sequence
}

// Target is the sequence cancelled.
func (a *CancelSequenceAction) Target() *Sequence { return a.seq }

func (a *CancelSequenceAction) setShorthand(d *decoder, n *yaml.Node) { d.decode(n, refValue(&a.ID)) }

func (a *CancelSequenceAction) check(c *compiler, where string) {
	a.seq = c.sequenceRef(a.Pos, where, a.ID)
}

func (c *compiler) sequenceRef(pos Pos, where, id string) *Sequence {
	s, ok := c.p.Sequence(id)
	if !ok {
		c.missingf(pos, "sequences", "%s: unknown sequence %q%s", where, id, c.suggest(id, c.p.sequenceNames()))
	}
	return s
}

// SequenceView is an exchange as expressions see it, `sequence`: the one
// being run in a step's when:, the one that ended in a sequence:NAME
// rule, and elsewhere the last one that ran.
type SequenceView struct {
	ID      string `expr:"id"`
	RunID   string `expr:"run_id"`
	Running bool   `expr:"running"`
	Prompt  string `expr:"prompt"`
	// Round is the round being run (1, 2...); Calls the agent calls made.
	Round int `expr:"round"`
	Calls int `expr:"calls"`
	// Flags are the gate's flags as of the latest block (or fallback).
	Flags map[string]any `expr:"flags"`
	// Gated says whether a valid block was read in this exchange.
	Gated bool `expr:"gated"`
	// Exchanges counts the sequence's exchanges started in the session.
	Exchanges int `expr:"exchanges"`
}

func (a *SequenceAction) Position() Pos       { return a.Pos }
func (a *CancelSequenceAction) Position() Pos { return a.Pos }
