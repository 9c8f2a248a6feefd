// Package describe derives, from a compiled pack, the contract a client
// needs to drive it: the session inputs it declares, the candidate event
// types it accepts and the data fields each one's handling reads, the
// tools its client runs (and those its rules answer), the effects it can
// produce and its roles. Nothing is written per pack: every entry comes
// from the pack as loaded, the engine's own table of what it reads of
// built-in events (engine.EventData) and this package's table of which
// feature makes which effect possible (effectFeatures).
//
// The JSON form (Contract) is stable: fields are only added, lists are in
// pack order or sorted, and no map order reaches it. baton describe
// prints it, and baton serve answers it at GET /v1/packs/{name}/describe.
package describe

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/expr-lang/expr/ast"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/workspace"
)

// Contract is what a client needs to know to drive sessions of a pack.
type Contract struct {
	Pack        Pack    `json:"pack"`
	Inputs      []Input `json:"inputs"`
	Events      []Event `json:"events"`
	ClientTools []Tool  `json:"client_tools"`
	// ServerTools are called by the models and answered by the pack's
	// rules; a client never sees their calls.
	ServerTools []Tool   `json:"server_tools"`
	Effects     []Effect `json:"effects"`
	Roles       []Role   `json:"roles"`
}

// Pack is the pack's identity.
type Pack struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	DurationMS  int64  `json:"duration_ms"`
	Human       string `json:"human"`
	VoiceMode   string `json:"voice_mode"`
	Hash        string `json:"hash,omitempty"`
}

// Input is one declared session input. Min and Max are numbers, or for a
// duration input milliseconds; sizes are bytes.
type Input struct {
	ID           string          `json:"id"`
	Type         string          `json:"type"`
	Description  string          `json:"description,omitempty"`
	Required     bool            `json:"required"`
	Default      any             `json:"default,omitempty"`
	DefaultFiles []string        `json:"default_files,omitempty"`
	MaxChars     int             `json:"max_chars,omitempty"`
	Min          *float64        `json:"min,omitempty"`
	Max          *float64        `json:"max,omitempty"`
	Whole        bool            `json:"whole,omitempty"`
	Values       []string        `json:"values,omitempty"`
	MaxItems     int             `json:"max_items,omitempty"`
	Schema       json.RawMessage `json:"schema,omitempty"`
	Media        []string        `json:"media,omitempty"`
	MaxBytes     int64           `json:"max_bytes,omitempty"`
	MaxTotal     int64           `json:"max_total,omitempty"`
	MaxFiles     int             `json:"max_files,omitempty"`
}

// Event is one candidate event type.
type Event struct {
	Type string `json:"event_type"`
	// Accepted: a session takes it (engine.CheckEvent); false only for a
	// type an expression compares msg.type against that is neither
	// built in nor any rule's trigger.
	Accepted bool `json:"accepted"`
	// Sources say why it is listed: builtin, rules (a rule's trigger),
	// routing (candidate messages are routed), workspace.on_change (the
	// event a client reports after a workspace write), msg.type (an
	// expression compares msg.type against it).
	Sources []string `json:"sources"`
	// Rules are the ids of the rules it triggers, in pack order.
	Rules []string `json:"rules,omitempty"`
	// Data are the data fields its handling reads, in the wire's order.
	Data []DataField `json:"data"`
	// Scripted are rules it triggers that run scripts, which may read
	// more of the event than expressions show.
	Scripted []string `json:"scripted,omitempty"`
}

// DataField is one field of an event's data object that is read.
type DataField struct {
	Name string `json:"name"`
	// Required: the event is refused without it.
	Required bool `json:"required,omitempty"`
	// Engine says what the engine itself does with it, if anything.
	Engine string `json:"engine,omitempty"`
	// ReadBy are the pack parts whose expressions read it: rule:ID,
	// route:ID, input_check:ID.
	ReadBy []string `json:"read_by,omitempty"`
}

// Tool is a tool the models may call.
type Tool struct {
	Name string `json:"name"`
	// Description is the template the role sees, as written.
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	// Choices are the parameters whose allowed values the session fills
	// in when the tool is offered.
	Choices   []string `json:"choices,omitempty"`
	TimeoutMS int64    `json:"timeout_ms,omitempty"`
	// Workspace is what the pack's workspace does with a client tool's
	// call, and the fields of its answer.
	Workspace *WorkspaceBinding `json:"workspace,omitempty"`
}

// WorkspaceBinding is a client tool bound to the workspace.
type WorkspaceBinding struct {
	Op     string   `json:"op"`
	Result []string `json:"result"`
	Note   string   `json:"note"`
}

// Effect is one effect type the pack can produce, and the feature of the
// pack that makes it possible ("" for every pack).
type Effect struct {
	Type    string `json:"type"`
	Feature string `json:"feature,omitempty"`
}

// Role is one agent of the panel.
type Role struct {
	ID       string `json:"id"`
	Name     string `json:"name,omitempty"`
	Voice    string `json:"voice,omitempty"`
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
}

// Describe derives the contract of p.
func Describe(p *rules.Pack) Contract {
	c := Contract{
		Pack: Pack{Name: p.Name, Description: strings.TrimSpace(p.Description), DurationMS: p.Duration.MS,
			Human: p.HumanName(), VoiceMode: p.Voice.Mode.String(), Hash: p.Hash},
		Inputs:      []Input{},
		ClientTools: []Tool{},
		ServerTools: []Tool{},
		Events:      eventsOf(p),
		Effects:     effects(p),
		Roles:       []Role{},
	}
	for i := range p.Inputs {
		c.Inputs = append(c.Inputs, inputOf(&p.Inputs[i]))
	}
	for i := range p.Tools {
		t := &p.Tools[i]
		d := Tool{Name: t.Name, Description: t.Description.Src, Parameters: t.ParamsWith(nil)}
		for _, ch := range t.Choices {
			d.Choices = append(d.Choices, ch.Param)
		}
		if t.Executor != rules.ExecClient {
			c.ServerTools = append(c.ServerTools, d)
			continue
		}
		d.TimeoutMS = t.Timeout.MS
		if op, ok := p.Workspace.WorkspaceOpOf(t.Name); ok {
			d.Workspace = workspaceBinding(op)
		}
		c.ClientTools = append(c.ClientTools, d)
	}
	for _, r := range p.Roles {
		d := Role{ID: r.ID, Name: r.Name, Voice: p.RoleVoice(&r, rules.VendorGemini), Model: r.Model}
		if r.Provider != 0 {
			d.Provider = r.Provider.String()
		}
		c.Roles = append(c.Roles, d)
	}
	return c
}

func clientTools(p *rules.Pack) []string {
	var out []string
	for _, t := range p.Tools {
		if t.Executor == rules.ExecClient {
			out = append(out, t.Name)
		}
	}
	return out
}

func inputOf(in *rules.Input) Input {
	d := Input{ID: in.ID, Type: in.Type.String(), Description: strings.TrimSpace(in.Description), Required: in.Required}
	switch in.Type {
	case rules.InputText:
		d.MaxChars = cmp(in.MaxChars, rules.DefaultInputChars)
	case rules.InputList:
		d.MaxChars = cmp(in.MaxChars, rules.DefaultInputChars)
		d.MaxItems = cmp(in.MaxItems, rules.DefaultInputItems)
	case rules.InputNumber, rules.InputDuration:
		lo, hi, hasLo, hasHi := in.Range()
		if hasLo {
			d.Min = &lo
		}
		if hasHi {
			d.Max = &hi
		}
		d.Whole = in.Whole
	case rules.InputEnum:
		d.Values = in.Values
	case rules.InputObject:
		d.Schema = in.SchemaJSON()
	case rules.InputFile:
		d.Media = in.Media
		d.MaxBytes, d.MaxTotal, d.MaxFiles = in.MaxBytesOf(), in.MaxTotalOf(), in.MaxFilesOf()
		for _, f := range in.DefaultFiles() {
			d.DefaultFiles = append(d.DefaultFiles, f.Name)
		}
		return d
	}
	d.Default = in.DefaultValue()
	return d
}

func cmp(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// workspaceBinding is what the workspace answers a tool bound to op with:
// the JSON fields of its result type.
func workspaceBinding(op rules.WorkspaceOp) *WorkspaceBinding {
	switch op {
	case rules.WorkspaceOpen:
		return &WorkspaceBinding{Op: op.String(), Result: jsonFields(reflect.TypeFor[workspace.OpenResult]()),
			Note: `content is numbered "L1:first\nL2:second"; an error is {"error": "..."}`}
	case rules.WorkspaceWrite:
		return &WorkspaceBinding{Op: op.String(), Result: jsonFields(reflect.TypeFor[workspace.WriteResult]()),
			Note: `mode is "` + workspace.ModeReplace + `" or "` + workspace.ModeLineEdits + `"; an error is {"error": "..."}`}
	}
	return nil
}

// jsonFields lists t's JSON field names in declaration order.
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// msgData maps each field of the msg view (rules.MessageView, by its expr
// name) to the data field of the wire event it comes from; "" is the
// event's type, not a data field. A test holds it to both types.
var msgData = map[string]string{
	"type":           "",
	"text":           "text",
	"source":         "source",
	"confidence":     "stt_confidence",
	"low_confidence": "stt_confidence",
	"addressed_to":   "addressed_to",
	"code":           "code",
	"run_id":         "run_id",
	"line":           "line",
}

// wireOrder is the data object's fields in the wire's order.
var wireOrder = jsonFields(reflect.TypeFor[events.Data]())

// reads collects the msg fields x reads and the event types it compares
// msg.type against.
type reads struct {
	fields map[string]bool // data field names
	types  map[string]bool
}

func newReads() *reads { return &reads{fields: map[string]bool{}, types: map[string]bool{}} }

func (r *reads) expr(x *rules.Expr) {
	node := x.Program().Node()
	ast.Walk(&node, r)
}

func (r *reads) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.MemberNode:
		if f, ok := msgField(n); ok {
			if data := msgData[f]; data != "" {
				r.fields[data] = true
			}
		}
	case *ast.BinaryNode:
		if n.Operator != "==" && n.Operator != "!=" && n.Operator != "in" && n.Operator != "not in" {
			return
		}
		for _, side := range [][2]ast.Node{{n.Left, n.Right}, {n.Right, n.Left}} {
			if m, ok := side[0].(*ast.MemberNode); ok {
				if f, ok := msgField(m); ok && f == "type" {
					for _, s := range constStrings(side[1]) {
						r.types[s] = true
					}
				}
			}
		}
	}
}

// msgField is the field of msg a member access reads, if it is one.
func msgField(n *ast.MemberNode) (string, bool) {
	id, ok := n.Node.(*ast.IdentifierNode)
	if !ok || id.Value != "msg" {
		return "", false
	}
	switch p := n.Property.(type) {
	case *ast.StringNode:
		return p.Value, true
	case *ast.ConstantNode:
		s, ok := p.Value.(string)
		return s, ok
	}
	return "", false
}

// constStrings are the strings a literal holds: "a", ["a", "b"], or
// what the optimizer folds a list into.
func constStrings(n ast.Node) []string {
	switch n := n.(type) {
	case *ast.StringNode:
		return []string{n.Value}
	case *ast.ArrayNode:
		var out []string
		for _, e := range n.Nodes {
			out = append(out, constStrings(e)...)
		}
		return out
	case *ast.ConstantNode:
		v := reflect.ValueOf(n.Value)
		switch v.Kind() {
		case reflect.String:
			return []string{v.String()}
		case reflect.Map:
			var out []string
			for _, k := range v.MapKeys() {
				if k.Kind() == reflect.String {
					out = append(out, k.String())
				}
			}
			slices.Sort(out)
			return out
		case reflect.Slice, reflect.Array:
			var out []string
			for i := range v.Len() {
				if e := v.Index(i); e.Kind() == reflect.String {
					out = append(out, e.String())
				} else if e.Kind() == reflect.Interface && e.Elem().Kind() == reflect.String {
					out = append(out, e.Elem().String())
				}
			}
			return out
		}
	}
	return nil
}

func ruleName(p *rules.Pack, r *rules.Rule) string {
	if r.ID != "" {
		return r.ID
	}
	for i := range p.Rules {
		if &p.Rules[i] == r {
			return fmt.Sprintf("rules[%d]", i)
		}
	}
	return "rule"
}

// eventsOf lists the events p accepts (engine.EventTypes' order), then
// those only compared against, sorted.
func eventsOf(p *rules.Pack) []Event {
	compared := newReads()
	rules.EachExpr(p, compared.expr)

	var out []Event
	accepted := engine.EventTypes(p)
	for _, typ := range accepted {
		out = append(out, eventOf(p, typ, true, compared))
	}
	for _, typ := range slices.Sorted(mapKeys(compared.types)) {
		if !slices.Contains(accepted, typ) {
			out = append(out, eventOf(p, typ, false, compared))
		}
	}
	return out
}

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func eventOf(p *rules.Pack, typ string, accepted bool, compared *reads) Event {
	ev := Event{Type: typ, Accepted: accepted}
	fields := map[string]*DataField{}
	field := func(name string) *DataField {
		if f, ok := fields[name]; ok {
			return f
		}
		f := &DataField{Name: name}
		fields[name] = f
		return f
	}
	readBy := func(who string, x any) {
		r := newReads()
		rules.EachExpr(x, r.expr)
		for name := range r.fields {
			f := field(name)
			f.ReadBy = append(f.ReadBy, who)
		}
	}
	if rules.IsBuiltinEvent(typ) {
		ev.Sources = append(ev.Sources, "builtin")
		for _, f := range engine.EventData(typ) {
			d := field(f.Name)
			d.Required, d.Engine = f.Required, f.Why
		}
	}
	ons := p.RulesOn(rules.EventTrigger(typ))
	if len(ons) > 0 {
		ev.Sources = append(ev.Sources, "rules")
	}
	for _, r := range ons {
		id := ruleName(p, r)
		ev.Rules = append(ev.Rules, id)
		readBy("rule:"+id, r)
		scripted := r.When.Script.Set()
		for _, a := range r.Do {
			switch a := a.(type) {
			case *rules.SequenceAction:
				if !a.Prompt.Set() {
					engineReads(field, engine.SequencePromptField)
				}
				if !a.RunID.Set() {
					engineReads(field, engine.SequenceRunField)
				}
			case *rules.CancelSequenceAction:
				if !a.RunID.Set() {
					engineReads(field, engine.SequenceRunField)
				}
			case *rules.RunAction:
				scripted = true
			case *rules.SlotAction:
				// A declared slot's own expressions (its focus line) are
				// evaluated as the rule writes it, on this event.
				for i := range p.Slots {
					if p.Slots[i].ID == a.Name {
						readBy("slot:"+a.Name, &p.Slots[i])
					}
				}
			}
		}
		if scripted {
			ev.Scripted = append(ev.Scripted, id)
		}
	}
	if typ == rules.EventMessage {
		if len(p.Routing) > 0 {
			ev.Sources = append(ev.Sources, "routing")
		}
		for i := range p.Routing {
			readBy("route:"+p.Routing[i].ID, &p.Routing[i])
		}
		for i := range p.Guardrails.Input {
			readBy("input_check:"+p.Guardrails.Input[i].ID, &p.Guardrails.Input[i])
		}
	}
	if p.Workspace.OnChange.Val == typ {
		ev.Sources = append(ev.Sources, "workspace.on_change")
	}
	if compared.types[typ] {
		ev.Sources = append(ev.Sources, "msg.type")
	}
	ev.Data = []DataField{}
	for _, name := range wireOrder {
		if f, ok := fields[name]; ok {
			slices.Sort(f.ReadBy)
			f.ReadBy = slices.Compact(f.ReadBy)
			ev.Data = append(ev.Data, *f)
		}
	}
	return ev
}

// engineReads notes a field the engine reads for a rule's action, unless
// the engine already reads it for the type.
func engineReads(field func(string) *DataField, f engine.EventField) {
	d := field(f.Name)
	if d.Engine == "" {
		d.Engine = f.Why
	}
}
