package rules

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// An Action is one step of a rule, a job handler or a script's answer.
// Each kind is its own type, listed once in actionKinds; YAML and scripts
// produce the same values, checked by the same method, and the engine
// executes them in one place (engine/actions.go). Adding a kind is a new
// type here, a line in actionKinds and a case in that executor.
type Action interface {
	// Position is where the action was written.
	Position() Pos
	// check validates the action; where names its owner for messages.
	check(c *compiler, where string)
}

// actionKinds is the one list of action kinds: the key a pack writes, and
// what the action does, for docs and the JSON Schema.
var actionKinds = [...]struct {
	key string
	new func() Action
	doc string
}{
	{"say", func() Action { return new(SayAction) }, "queue an agent turn"},
	{"set", func() Action { return new(SetAction) }, "assign a session variable"},
	{"emit", func() Action { return new(EmitAction) }, "report a note effect"},
	{"end", func() Action { return new(EndAction) }, "end the session"},
	{"run", func() Action { return new(RunAction) }, "call a script that returns actions"},
	{"tool_result", func() Action { return new(ToolResultAction) }, "answer the tool call being handled"},
	{"tool_error", func() Action { return new(ToolErrorAction) }, "refuse the tool call being handled"},
	{"ticket", func() Action { return new(TicketAction) }, "add to a role's tickets"},
	{"floor", func() Action { return new(FloorAction) }, "give a role the floor"},
	{"inject", func() Action { return new(InjectAction) }, "prepend an instruction to a role's next prompt"},
	{"job", func() Action { return new(JobAction) }, "start a background job"},
	{"sequence", func() Action { return new(SequenceAction) }, "start an exchange of a sequence (refused while one runs)"},
	{"cancel_sequence", func() Action { return new(CancelSequenceAction) }, "cancel a sequence's running exchange"},
	{"memory", func() Action { return new(MemoryAction) }, "append to a role's memory"},
	{"slot", func() Action { return new(SlotAction) }, "set a template slot of a role or the session"},
	{"write", func() Action { return new(WriteAction) }, "replace a context file's content (as its class allows)"},
	{"append", func() Action { return new(AppendAction) }, "add a line to a context file (as its class allows)"},
	{"record", func() Action { return new(RecordAction) }, "append a value to a session record"},
	{"report", func() Action { return new(ReportAction) }, "report a result such as a verdict"},
	{"flag", func() Action { return new(FlagAction) }, "report a flag effect operators alert on"},
	{"refuse", func() Action { return new(RefuseAction) }, "in an input check: keep the message from every model and say a line instead"},
	{"redact", func() Action { return new(RedactAction) }, "in an input check: replace the message's text"},
}

// ActionKeys lists the action kinds as packs write them.
func ActionKeys() []string {
	out := make([]string, len(actionKinds))
	for i, k := range actionKinds {
		out[i] = k.key
	}
	return out
}

// Actions is a list of actions, each written as a mapping with one key.
type Actions []Action

func (l *Actions) decodeNode(d *decoder, n *yaml.Node) {
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, "expected a list of actions, found %s", kindName(n))
		return
	}
	for _, item := range n.Content {
		if a := decodeAction(d, resolve(item)); a != nil {
			*l = append(*l, a)
		}
	}
}

func decodeAction(d *decoder, n *yaml.Node) Action {
	var pairs [][2]*yaml.Node
	if n != nil && n.Kind == yaml.MappingNode {
		pairs = d.pairs(n)
	}
	if len(pairs) != 1 {
		d.errorf(n, "each action is a mapping with exactly one of %s", strings.Join(ActionKeys(), ", "))
		return nil
	}
	key, val := pairs[0][0], resolve(pairs[0][1])
	for _, k := range actionKinds {
		if k.key != key.Value {
			continue
		}
		a := k.new()
		v := reflect.ValueOf(a).Elem()
		setPos(v, d.pos(key))
		_, valued := a.(valueBody)
		if sh, ok := a.(shorthand); ok && val != nil && (val.Kind != yaml.MappingNode || valued) {
			sh.setShorthand(d, val)
		} else {
			d.decode(val, v)
			setPos(v, d.pos(key))
		}
		return a
	}
	d.errorf(key, "unknown action %q%s (actions: %s)", key.Value, DidYouMean(key.Value, ActionKeys()), strings.Join(ActionKeys(), ", "))
	return nil
}

// SayAction queues an agent turn.
type SayAction struct {
	Pos
	Turn TurnSpec
}

func (a *SayAction) setShorthand(d *decoder, n *yaml.Node) {
	d.errorf(n, "say takes a turn such as {role: qa, kind: nudge, line: ...}")
}

func (a *SayAction) decodeNode(d *decoder, n *yaml.Node) {
	a.Pos = d.pos(n)
	d.decode(n, refValue(&a.Turn))
}

// SetAction assigns a value to a session variable.
type SetAction struct {
	Pos
	Var   string `yaml:"var"`
	Value Value  `yaml:"value"`
}

// EmitAction reports a note effect with Text.
type EmitAction struct {
	Pos
	Text string `yaml:"text"`
	// Level warning makes the note something operators see.
	Level Level `yaml:"level"`
}

func (a *EmitAction) setShorthand(d *decoder, n *yaml.Node) { d.decode(n, refValue(&a.Text)) }

// EndAction ends the session.
type EndAction struct {
	Pos
	Reason string `yaml:"reason"`
}

func (a *EndAction) setShorthand(d *decoder, n *yaml.Node) { d.decode(n, refValue(&a.Reason)) }

// RunAction calls a script that returns a list of actions.
type RunAction struct {
	Pos
	Hook Hook
}

func (a *RunAction) decodeNode(d *decoder, n *yaml.Node) {
	a.Pos = d.pos(n)
	d.decode(n, refValue(&a.Hook))
}

// valueBody marks actions whose whole body is one value: a mapping there
// is the value (an object a script answers with), not the action's fields.
type valueBody interface{ valueBody() }

func (*ToolResultAction) valueBody() {}
func (*FloorAction) valueBody()      {}

// ToolResultAction answers the tool call being handled with a value.
type ToolResultAction struct {
	Pos
	Value Value
}

func (a *ToolResultAction) setShorthand(d *decoder, n *yaml.Node) { a.Value.decodeNode(d, n) }

// ToolErrorAction refuses the tool call being handled; the text tells the
// model why, so it can act on it.
type ToolErrorAction struct {
	Pos
	Text Template
}

func (a *ToolErrorAction) setShorthand(d *decoder, n *yaml.Node) { a.Text.decodeNode(d, n) }

// TicketAction adds to a role's tickets (negative to spend).
type TicketAction struct {
	Pos
	Role Value `yaml:"role"`
	Add  int   `yaml:"add"`
}

// FloorAction gives the floor to a role.
type FloorAction struct {
	Pos
	Role Value
}

func (a *FloorAction) setShorthand(d *decoder, n *yaml.Node) { a.Role.decodeNode(d, n) }

// InjectAction queues an instruction prepended to a role's next prompt.
type InjectAction struct {
	Pos
	Role Value    `yaml:"role"`
	Text Template `yaml:"text"`
}

// JobAction starts a job.
type JobAction struct {
	Pos
	ID   string `yaml:"id"`
	Args []Arg  `yaml:"args"`
	// Overlap, if set, replaces the job's overlap policy for this start
	// (a periodic refresh skips, one on a change of subject reruns).
	Overlap *JobOverlap `yaml:"overlap"`

	job *Job
}

// Job is the job the action starts.
func (a *JobAction) Job() *Job { return a.job }

// OverlapPolicy is what this start does while a run is in flight.
func (a *JobAction) OverlapPolicy() JobOverlap {
	if a.Overlap != nil {
		return *a.Overlap
	}
	if a.job != nil {
		return a.job.Overlap
	}
	return OverlapAllow
}

func (a *JobAction) setShorthand(d *decoder, n *yaml.Node) { d.decode(n, refValue(&a.ID)) }

// MemoryAction appends to a role's memory.
type MemoryAction struct {
	Pos
	Role Value    `yaml:"role"`
	Text Template `yaml:"text"`
}

// SlotAction sets a slot of a role, or of the session when Role is unset.
type SlotAction struct {
	Pos
	Role  Value    `yaml:"role"`
	Name  string   `yaml:"name"`
	Value Template `yaml:"value"`
}

// RecordAction appends a value to a named session record list.
type RecordAction struct {
	Pos
	Name  string `yaml:"name"`
	Value Value  `yaml:"value"`
}

// ReportAction emits a report effect (a verdict, a score) with a value.
type ReportAction struct {
	Pos
	Kind  string `yaml:"kind"`
	Value Value  `yaml:"value"`
}

// FlagAction reports a flag effect: something an operator should look
// at now (a guardrail tripped, an injection attempt).
type FlagAction struct {
	Pos
	Reason string `yaml:"reason"`
}

func (a *FlagAction) setShorthand(d *decoder, n *yaml.Node) { d.decode(n, refValue(&a.Reason)) }

// RefuseAction, in an input check, keeps the candidate message from
// every model request and routing: the transcript holds a placeholder,
// and Turn (a fixed line) is said instead.
type RefuseAction struct {
	Pos
	Turn TurnSpec
}

func (a *RefuseAction) setShorthand(d *decoder, n *yaml.Node) {
	d.errorf(n, "refuse takes a turn such as {role: last, kind: refusal, line: ...}")
}

func (a *RefuseAction) decodeNode(d *decoder, n *yaml.Node) {
	a.Pos = d.pos(n)
	d.decode(n, refValue(&a.Turn))
}

// RedactAction, in an input check, replaces the candidate message's text
// (a template) before anything else sees it.
type RedactAction struct {
	Pos
	Text Template `yaml:"text"`
}

func (a *RedactAction) setShorthand(d *decoder, n *yaml.Node) { d.decode(n, refValue(&a.Text)) }

// Position implementations: every action records where it was written.
func (a *SayAction) Position() Pos        { return a.Pos }
func (a *SetAction) Position() Pos        { return a.Pos }
func (a *EmitAction) Position() Pos       { return a.Pos }
func (a *EndAction) Position() Pos        { return a.Pos }
func (a *RunAction) Position() Pos        { return a.Pos }
func (a *ToolResultAction) Position() Pos { return a.Pos }
func (a *ToolErrorAction) Position() Pos  { return a.Pos }
func (a *TicketAction) Position() Pos     { return a.Pos }
func (a *FloorAction) Position() Pos      { return a.Pos }
func (a *InjectAction) Position() Pos     { return a.Pos }
func (a *JobAction) Position() Pos        { return a.Pos }
func (a *MemoryAction) Position() Pos     { return a.Pos }
func (a *SlotAction) Position() Pos       { return a.Pos }
func (a *RecordAction) Position() Pos     { return a.Pos }
func (a *ReportAction) Position() Pos     { return a.Pos }
func (a *FlagAction) Position() Pos       { return a.Pos }
func (a *RefuseAction) Position() Pos     { return a.Pos }
func (a *RedactAction) Position() Pos     { return a.Pos }
func (a *WriteAction) Position() Pos      { return a.Pos }
func (a *AppendAction) Position() Pos     { return a.Pos }

func (a *FlagAction) check(c *compiler, where string) {
	if len(a.Reason) > MaxActionText {
		c.errorf(a.Pos, "%s: flag reason is longer than %d characters", where, MaxActionText)
	}
}

func (a *RefuseAction) check(c *compiler, where string) {
	if !c.inputCheck {
		c.errorf(a.Pos, "%s: refuse only works in guardrails.input, where a candidate message is being checked", where)
	}
	c.turn(a.Pos, &a.Turn, where+": refuse", RoleLast, RoleAddressed, RoleActive)
	if a.Turn.Line == "" {
		c.errorf(a.Pos, "%s: refuse needs the line that is said instead", where)
	}
}

func (a *RedactAction) check(c *compiler, where string) {
	if !c.inputCheck {
		c.errorf(a.Pos, "%s: redact only works in guardrails.input, where a candidate message is being checked", where)
	}
}

func (a *SayAction) check(c *compiler, where string) {
	c.turn(a.Pos, &a.Turn, where+": say", RoleLast, RoleSame, RoleAddressed, RoleActive)
	if a.Turn.Line == "" && a.Turn.Goal == "" {
		c.errorf(a.Pos, "%s: say needs a line or a goal", where)
	}
}

func (a *SetAction) check(c *compiler, where string) {
	kind, declared := c.p.varKind(a.Var)
	if !declared {
		c.missingf(a.Pos, "vars", "%s: set: %q is not a declared variable%s", where, a.Var, c.suggest(a.Var, c.p.varNames()))
	}
	if !a.Value.Set() {
		c.errorf(a.Pos, "%s: set needs a value", where)
	}
	if declared && a.Value.isLit {
		if _, err := varValue(a.Var, kind, a.Value.lit); err != nil {
			c.errorf(a.Pos, "%s: set: %v", where, err)
		}
	}
}

func (a *EmitAction) check(c *compiler, where string) {
	if len(a.Text) > MaxActionText {
		c.errorf(a.Pos, "%s: emit text is longer than %d characters", where, MaxActionText)
	}
}

func (a *EndAction) check(c *compiler, where string) {
	if len(a.Reason) > MaxActionText {
		c.errorf(a.Pos, "%s: end reason is longer than %d characters", where, MaxActionText)
	}
}

func (a *RunAction) check(c *compiler, where string) {
	c.dynamicGoals = true // the actions it returns may say turns of any goal
	c.hook(&a.Hook, a.Pos, where+" run", ErrorSkip, ErrorEnd)
}

func (a *ToolResultAction) check(c *compiler, where string) {
	if !a.Value.Set() {
		c.errorf(a.Pos, "%s: tool_result needs a value", where)
	}
}

func (a *ToolErrorAction) check(c *compiler, where string) {
	if !a.Text.Set() {
		c.errorf(a.Pos, "%s: tool_error needs the text the model is told", where)
	}
}

func (a *TicketAction) check(c *compiler, where string) {
	if !a.Role.Set() {
		c.errorf(a.Pos, "%s: ticket needs a role", where)
	}
}

func (a *FloorAction) check(c *compiler, where string) {
	if !a.Role.Set() {
		c.errorf(a.Pos, "%s: floor needs a role", where)
	}
}

func (a *InjectAction) check(c *compiler, where string) {
	if !a.Role.Set() {
		c.errorf(a.Pos, "%s: inject needs a role", where)
	}
}

func (a *JobAction) check(c *compiler, where string) {
	var ok bool
	if a.job, ok = c.p.Job(a.ID); !ok {
		c.missingf(a.Pos, "jobs", "%s: unknown job %q%s", where, a.ID, c.suggest(a.ID, c.p.jobNames()))
		return
	}
	if name := a.job.RoleArg(); name != "" && !slices.ContainsFunc(a.Args, func(x Arg) bool { return x.ID == name }) {
		c.errorf(a.Pos, "%s: job %s runs as the role in args.%s; pass it: args: {%s: ...}", where, a.ID, name, name)
	}
}

func (a *MemoryAction) check(c *compiler, where string) {
	if !a.Role.Set() {
		c.errorf(a.Pos, "%s: memory needs a role", where)
	}
}

func (a *SlotAction) check(c *compiler, where string) {
	if !isIdent(a.Name) {
		c.errorf(a.Pos, "%s: slot needs a name (letters, digits and _)", where)
	}
	c.slotAction(a, where)
}

func (a *RecordAction) check(c *compiler, where string) {
	if !isIdent(a.Name) {
		c.errorf(a.Pos, "%s: record needs a name (letters, digits and _)", where)
	}
	if !a.Value.Set() {
		c.errorf(a.Pos, "%s: record needs a value", where)
	}
}

func (a *ReportAction) check(c *compiler, where string) {
	if a.Kind == "" {
		c.errorf(a.Pos, "%s: report needs a kind", where)
	}
	if !a.Value.Set() {
		c.errorf(a.Pos, "%s: report needs a value", where)
	}
}

// MaxActionText bounds text an action carries (a note, an end reason, a
// line a script makes).
const MaxActionText = 2000

// ScriptAction is one action a script returned, or why it was refused.
type ScriptAction struct {
	Action Action
	Err    error
}

// maxScriptDepth bounds how deeply a script's answer may nest.
const maxScriptDepth = 32

// ScriptActions turns what a script returned into actions of p, each
// decoded and checked exactly as the same action written in YAML would
// be, except that values are values, not expressions, and text is said
// as it is. A say without a kind is of kind "script". A script may not
// return run: a script that wants another's actions calls it. Each item
// gets its own outcome, so a host can do the good ones in order and
// report the others where they stood.
func (p *Pack) ScriptActions(out any) ([]ScriptAction, error) {
	list, ok := out.([]any)
	if !ok {
		return nil, fmt.Errorf("want a list of actions, got %s", Describe(out))
	}
	acts := make([]ScriptAction, len(list))
	for i, item := range list {
		acts[i] = p.scriptAction(i, item)
	}
	return acts, nil
}

func (p *Pack) scriptAction(i int, item any) (sa ScriptAction) {
	fail := func(format string, args ...any) ScriptAction {
		return ScriptAction{Err: fmt.Errorf("action %d: "+format, append([]any{i}, args...)...)}
	}
	if err := plainData(item, 0); err != nil {
		return fail("%v", err)
	}
	n := dataNode(item)
	var errs ErrorList
	d := &decoder{file: "script", errs: &errs, literal: true}
	a := decodeAction(d, n)
	if a != nil {
		if _, isRun := a.(*RunAction); isRun {
			return fail("a script cannot return run (call the other function from this one)")
		}
		if say, ok := a.(*SayAction); ok && say.Turn.Kind == "" {
			say.Turn.Kind = "script"
		}
		c := &compiler{p: p, errs: &errs, ids: map[string]Pos{}, script: true}
		a.check(c, fmt.Sprintf("action %d", i))
	}
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for k, e := range errs {
			msgs[k] = strings.TrimPrefix(e.Msg, fmt.Sprintf("action %d: ", i))
		}
		return fail("%s", strings.Join(msgs, "; "))
	}
	return ScriptAction{Action: a}
}

// dataNode builds the YAML node of plain data (plainData's kinds)
// directly: a script's answer is decoded as the same action written in
// YAML would be, without printing and parsing it. Keys are sorted so the
// node does not depend on map order.
func dataNode(v any) *yaml.Node {
	switch x := v.(type) {
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(x)}
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: x}
	case int64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(x, 10)}
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 64)
		switch {
		case math.IsNaN(x):
			s = ".nan"
		case math.IsInf(x, 1):
			s = ".inf"
		case math.IsInf(x, -1):
			s = "-.inf"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: s}
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: make([]*yaml.Node, len(x))}
		for i, e := range x {
			n.Content[i] = dataNode(e)
		}
		return n
	case map[string]any:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: make([]*yaml.Node, 0, 2*len(x))}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, dataNode(x[k]))
		}
		return n
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"} // plainData refused it already
}

// plainData accepts only what a script can mean: text, numbers, booleans,
// null, lists and objects (not functions or other host values).
func plainData(v any, depth int) error {
	if depth > maxScriptDepth {
		return fmt.Errorf("nested more than %d deep", maxScriptDepth)
	}
	switch x := v.(type) {
	case nil, bool, string, int64, float64:
		return nil
	case []any:
		for _, e := range x {
			if err := plainData(e, depth+1); err != nil {
				return err
			}
		}
		return nil
	case map[string]any:
		for _, e := range x {
			if err := plainData(e, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%s is not data a pack action takes", Describe(v))
}

// Describe names the shape of a value a script returned, for messages.
func Describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "nothing (undefined or null)"
	case string:
		return fmt.Sprintf("text (%d characters)", len(x))
	case bool:
		return "a boolean"
	case int64, float64, int:
		return fmt.Sprintf("a number (%v)", x)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	if reflect.ValueOf(v).Kind() == reflect.Func {
		return "a function"
	}
	return fmt.Sprintf("%T", v)
}
