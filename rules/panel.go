package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/batonhq/baton/rules/schema"
)

// The panel sections carry what multi-agent panels need beyond a timeline:
// prompt templates with slots, turn budgets (tickets), tools agents call,
// background model jobs and setup phases. Hot Seat uses all of them; none
// of them is specific to it.

// Template is text with {{SLOT}} placeholders (filled from the role's
// slots, then the session's) and ${expression} parts (evaluated when the
// text is rendered).
type Template struct {
	Pos
	Src   string
	parts []tplPart
}

type tplPart struct {
	lit  string
	slot string
	expr *Expr
}

func (t *Template) decodeNode(d *decoder, n *yaml.Node) {
	t.Pos = d.pos(n)
	if n.Kind != yaml.ScalarNode {
		d.errorf(n, "expected text, found %s", kindName(n))
		return
	}
	t.Src = n.Value
	if d.literal {
		// Text a script made is said as it is: no slots, no expressions.
		t.parts = []tplPart{{lit: n.Value}}
	}
}

// Set reports whether the template was written.
func (t *Template) Set() bool { return t != nil && t.Src != "" }

// parse splits the source; expressions are compiled by the compiler.
func (t *Template) parse() error {
	src := t.Src
	t.parts = t.parts[:0]
	for src != "" {
		i := strings.IndexAny(src, "{$")
		if i < 0 {
			t.parts = append(t.parts, tplPart{lit: src})
			break
		}
		switch {
		case strings.HasPrefix(src[i:], "{{"):
			end := strings.Index(src[i:], "}}")
			if end < 0 {
				return fmt.Errorf("unclosed {{ in template")
			}
			name := strings.TrimSpace(src[i+2 : i+end])
			if !isIdent(name) {
				return fmt.Errorf("{{%s}}: slot names are letters, digits and _", name)
			}
			t.parts = append(t.parts, tplPart{lit: src[:i]}, tplPart{slot: name})
			src = src[i+end+2:]
		case strings.HasPrefix(src[i:], "${"):
			end := strings.IndexByte(src[i:], '}')
			if end < 0 {
				return fmt.Errorf("unclosed ${ in template")
			}
			x := &Expr{Pos: t.Pos, Src: strings.TrimSpace(src[i+2 : i+end])}
			if x.Src == "" {
				return fmt.Errorf("empty ${} in template")
			}
			t.parts = append(t.parts, tplPart{lit: src[:i]}, tplPart{expr: x})
			src = src[i+end+1:]
		default:
			t.parts = append(t.parts, tplPart{lit: src[:i+1]})
			src = src[i+1:]
		}
	}
	return nil
}

// Render fills the template. slot looks a placeholder up; eval evaluates an
// expression (errors render as "" and are returned).
func (t *Template) Render(slot func(string) string, eval func(*Expr) (any, error)) (string, error) {
	if t == nil {
		return "", nil
	}
	var b strings.Builder
	var firstErr error
	for _, p := range t.parts {
		switch {
		case p.slot != "":
			b.WriteString(slot(p.slot))
		case p.expr != nil:
			v, err := eval(p.expr)
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			b.WriteString(Stringify(v))
		default:
			b.WriteString(p.lit)
		}
	}
	return b.String(), firstErr
}

// Stringify renders a value for a prompt: text as is, lists one per line,
// anything else as JSON-ish text.
func Stringify(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []string:
		return strings.Join(x, ", ")
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = Stringify(e)
		}
		return strings.Join(parts, ", ")
	case float64:
		if x == float64(int64(x)) {
			return fmt.Sprint(int64(x))
		}
	}
	return fmt.Sprint(v)
}

// TemplateDef is a named template.
type TemplateDef struct {
	Pos
	ID   string   `yaml:"id"`
	Text Template `yaml:"text"`
}

func (t *TemplateDef) setShorthand(d *decoder, n *yaml.Node) { t.Text.decodeNode(d, n) }

// Tickets is a turn budget split across roles.
type Tickets struct {
	// Roles that hold tickets, in order (ties in the split go to the first).
	Roles []string `yaml:"roles"`
	// Total tickets; raised to len(Roles) so every role gets at least one.
	Total Number `yaml:"total"`
	// Weights share the surplus (default 1 each).
	Weights []Weight `yaml:"weights"`
	// Distribute, if set, is a script returning {role: count}.
	Distribute *Hook `yaml:"distribute"`
}

// Weight is one role's share of the surplus.
type Weight struct {
	Pos
	ID     string `yaml:"id"`
	Weight Number `yaml:"weight"`
}

func (w *Weight) setShorthand(d *decoder, n *yaml.Node) { w.Weight.decodeNode(d, n) }

// Tool is a function agents may call.
type Tool struct {
	Pos
	Name string `yaml:"id"`
	// Description is rendered for the role each time the tool is offered,
	// so it can name what the model needs to call it well (who it may
	// hand over to now, say).
	Description Template `yaml:"description"`
	// Parameters is a JSON Schema object for the arguments.
	Parameters any `yaml:"parameters"`
	// Offered decides, per call, whether the tool is offered to a role.
	Offered Expr `yaml:"offered"`
	// Choices are parameters whose allowed values depend on the session.
	Choices []ToolChoice `yaml:"choices"`
	// Executor is who carries a valid call out: the pack's handler rules,
	// or the session's client (a client_tool_call it answers with a
	// client_tool_result, the model then asked again with the result).
	Executor ToolExecutor `yaml:"executor"`
	// Timeout bounds a client tool's round trip; when it passes, the call
	// is answered with a timeout error.
	Timeout Duration `yaml:"timeout"`

	params *schema.Schema
	// paramParts is the parameter schema's JSON cut where each choice's
	// enum goes, so offering the tool writes bytes instead of rebuilding
	// the schema.
	paramParts [][]byte
	paramOrder []int // which choice goes after each part
}

// ParamsWith is the parameter schema with each choice's values (in the
// order of Choices) as its enum.
func (t *Tool) ParamsWith(choices [][]string) json.RawMessage {
	if len(t.paramParts) == 0 || len(choices) != len(t.Choices) {
		return t.params.JSON()
	}
	n := 0
	for _, p := range t.paramParts {
		n += len(p)
	}
	out := make([]byte, 0, n+32*len(choices))
	for i, p := range t.paramParts {
		out = append(out, p...)
		if i < len(t.paramOrder) {
			out = append(out, '[')
			for j, v := range choices[t.paramOrder[i]] {
				if j > 0 {
					out = append(out, ',')
				}
				out = appendJSONString(out, v)
			}
			out = append(out, ']')
		}
	}
	return out
}

// appendJSONString appends v as a JSON string: plain ASCII as is (role
// ids, the common case), anything else through encoding/json.
func appendJSONString(out []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(v)
			return append(out, b...)
		}
	}
	out = append(out, '"')
	out = append(out, v...)
	return append(out, '"')
}

// cutParams prepares paramParts: the schema marshalled with a marker as
// each choice's enum, cut at the markers.
func (t *Tool) cutParams() {
	var sc map[string]any
	if len(t.Choices) == 0 || t.params == nil || json.Unmarshal(t.params.JSON(), &sc) != nil {
		return
	}
	props, _ := sc["properties"].(map[string]any)
	for i, ch := range t.Choices {
		if p, ok := props[ch.Param].(map[string]any); ok {
			p["enum"] = choiceMarker(i)
		}
	}
	raw, err := json.Marshal(sc)
	if err != nil {
		return
	}
	// Cut at the markers in the order they occur (encoding/json sorts
	// keys, so not necessarily the order of Choices).
	var parts [][]byte
	var order []int
	for range t.Choices {
		at, which := -1, -1
		for i := range t.Choices {
			m, _ := json.Marshal(choiceMarker(i))
			if j := bytes.Index(raw, m); j >= 0 && (at < 0 || j < at) {
				at, which = j, i
			}
		}
		if which < 0 {
			return
		}
		m, _ := json.Marshal(choiceMarker(which))
		parts = append(parts, raw[:at])
		order = append(order, which)
		raw = raw[at+len(m):]
	}
	t.paramParts, t.paramOrder = append(parts, raw), order
}

// choiceMarker cannot occur in a schema a pack wrote: YAML text holds no
// NUL characters.
func choiceMarker(i int) string { return "\x00choice:" + strconv.Itoa(i) }

// ToolChoice gives a string parameter its allowed values from session
// state: the expression's list is evaluated whenever the tool is offered,
// sent to the model as the parameter's enum and enforced on calls. An
// empty list means no call could be valid, so the tool is not offered.
type ToolChoice struct {
	Pos
	Param  string `yaml:"id"`
	Values Value  `yaml:"values"`
}

func (c *ToolChoice) setShorthand(d *decoder, n *yaml.Node) { d.decode(n, refValue(&c.Values)) }

// Params is the compiled parameter schema.
func (t *Tool) Params() *schema.Schema { return t.params }

// Job is a model call outside the live turn: a setup phase or background
// work such as grading an answer. It never holds the floor.
type Job struct {
	Pos
	ID string `yaml:"id"`
	// Role whose persona, model and context files the job uses: a role
	// id, or args.NAME for the role an argument names (one job, run for
	// each board member, say).
	Role   string   `yaml:"role"`
	Prompt Template `yaml:"prompt"`
	// Schema, if set, asks for JSON output and validates it.
	Schema any `yaml:"schema"`
	// Attachments sends the scenario's attachments with the prompt.
	Attachments bool     `yaml:"attachments"`
	Timeout     Duration `yaml:"timeout"`
	// OnResult runs with `result` (the parsed JSON, or the text) and `args`.
	OnResult Actions `yaml:"on_result"`
	// OnError runs when the call fails or the result is invalid.
	OnError Actions `yaml:"on_error"`
	// Overlap is what a start does while a run of the job for the same
	// role is still waiting for its model: allow (start another), skip
	// (start nothing) or rerun (start once more when it lands, with the
	// newest arguments).
	Overlap JobOverlap `yaml:"overlap"`
	// WaitFor holds a start of the job while runs of the jobs it names
	// are still waiting for their model, at most Max: a verdict that
	// waits for the grades still being written.
	WaitFor *JobWait `yaml:"wait_for"`

	schema *schema.Schema
}

// JobWait is a job's wait_for: the jobs whose runs in flight a start
// waits for, and for how long at most before it starts anyway.
type JobWait struct {
	Pos
	Jobs []string `yaml:"jobs"`
	Max  Duration `yaml:"max"`
}

// RoleArg is the argument naming the job's role (role: args.NAME), or "".
func (j *Job) RoleArg() string {
	name, _ := strings.CutPrefix(j.Role, "args.")
	if name == j.Role {
		return ""
	}
	return name
}

// JobOverlap is what starting a job does while a run of it for the same
// role is in flight.
type JobOverlap uint8

// Overlap policies.
const (
	OverlapAllow JobOverlap = iota
	OverlapSkip
	OverlapRerun
)

var jobOverlapWords = []string{"allow", "skip", "rerun"}

func (o JobOverlap) String() string                       { return word(jobOverlapWords, uint8(o)) }
func (JobOverlap) enumWords() []string                    { return jobOverlapWords }
func (o *JobOverlap) decodeNode(d *decoder, n *yaml.Node) { decodeEnum(d, n, o, jobOverlapWords) }

// OutputSchema is the compiled result schema, nil for free text.
func (j *Job) OutputSchema() *schema.Schema { return j.schema }

// Phase runs a job before the live session starts; with ForEach, once per
// element (bound to args.item), in order.
type Phase struct {
	Pos
	Job     string `yaml:"job"`
	ForEach Value  `yaml:"for_each"`
	Args    []Arg  `yaml:"args"`

	job *Job
}

// Target is the job the phase runs.
func (ph *Phase) Target() *Job { return ph.job }

// Arg is a named expression passed to a job.
type Arg struct {
	Pos
	ID    string `yaml:"id"`
	Value Value  `yaml:"value"`
}

func (a *Arg) setShorthand(d *decoder, n *yaml.Node) { a.Value.decodeNode(d, n) }

// Template returns the named template.
func (p *Pack) Template(id string) (*Template, bool) {
	i, ok := p.tpls[id]
	if !ok {
		return nil, false
	}
	return &p.Templates[i].Text, true
}

// Tool returns the named tool.
func (p *Pack) Tool(name string) (*Tool, bool) {
	i, ok := p.tools[name]
	if !ok {
		return nil, false
	}
	return &p.Tools[i], true
}

// Job returns the named job.
func (p *Pack) Job(id string) (*Job, bool) {
	i, ok := p.jobs[id]
	if !ok {
		return nil, false
	}
	return &p.Jobs[i], true
}
