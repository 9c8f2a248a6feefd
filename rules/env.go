package rules

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/batonhq/baton/rules/text"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
)

// CandidateView is what expressions see of the candidate as `candidate`.
type CandidateView struct {
	MicActive bool `expr:"mic_active"`
	// Typing is true within the typing debounce after a keystroke.
	Typing bool `expr:"typing"`
	// Speaking is true while the mic is open and for the speech-resume
	// buffer after speech ends.
	Speaking        bool  `expr:"speaking"`
	LastKeystrokeMS int64 `expr:"last_keystroke_ms"`
	LastSpeechEndMS int64 `expr:"last_speech_end_ms"`
	// LowSTTCount is the number of low-confidence messages in a row.
	LowSTTCount   int   `expr:"low_stt_count"`
	Messages      int   `expr:"messages"`
	LastMessageMS int64 `expr:"last_message_ms"`
	// LastMessage is the text of the newest message ("" before the
	// first), so a rule can ask what was last requested.
	LastMessage string `expr:"last_message"`
}

// MessageView is the candidate event being handled, as `msg`.
type MessageView struct {
	Type          string  `expr:"type"`
	Text          string  `expr:"text"`
	Source        string  `expr:"source"`
	Confidence    float64 `expr:"confidence"`
	AddressedTo   string  `expr:"addressed_to"`
	LowConfidence bool    `expr:"low_confidence"`
	Code          string  `expr:"code"`
	// RunID is the run the event is about (a prompt's, a cancel's).
	RunID string `expr:"run_id"`
	// Line is the line the event is about (an editor's cursor), or 0.
	Line int `expr:"line"`
}

// SessionView is the session's own state, as `session`.
type SessionView struct {
	LastRole      string `expr:"last_role"`
	Turns         int    `expr:"turns"`
	AgentSpeaking bool   `expr:"agent_speaking"`
	// LiveVoice is true when agents talk through live speech sessions.
	LiveVoice       bool `expr:"live_voice"`
	AwaitingReply   bool `expr:"awaiting_reply"`
	HardTurnPending bool `expr:"hard_turn_pending"`
	TurnPending     bool `expr:"turn_pending"`
}

// FloorView is what the role holding the floor has done since it took
// it, as `floor`: enough to tell "has asked and been answered" from
// "has just arrived".
type FloorView struct {
	Holder  string `expr:"holder"`
	SinceMS int64  `expr:"since_ms"`
	// Lines is how many lines the holder has said since taking the floor.
	Lines int `expr:"lines"`
	// Answers counts candidate messages after the holder's first line.
	Answers int `expr:"answers"`
	// AutoAdvances counts silence ladders that gave up waiting after the
	// holder's first line.
	AutoAdvances int `expr:"auto_advances"`
}

// ReplyView is the agent line being checked by the guardrails, as
// `reply`.
type ReplyView struct {
	Text       string   `expr:"text"`
	Role       string   `expr:"role"`
	Violations []string `expr:"violations"`
	// Attempt counts the model's answers for this line: 1, then one more
	// per regeneration.
	Attempt int `expr:"attempt"`
	// Limits describes the pack's limits in words ("at most 1 question,
	// 1 to 3 sentences"), for corrective instructions.
	Limits string `expr:"limits"`
}

// ToolView is the tool call being handled, as `tool`.
type ToolView struct {
	ID     string         `expr:"id"`
	Name   string         `expr:"name"`
	Caller string         `expr:"caller"`
	Args   map[string]any `expr:"args"`
}

// Host gives expressions the session state that lives in the engine. An
// Env pulls it: before every evaluation it asks the host to Refresh the
// views (candidate, session, now), so no expression can see stale state
// because a caller forgot to copy it; the functions (tickets, the floor,
// memories, slots, records) read the engine when called.
type Host interface {
	Refresh(e *Env)
	Tickets(role string) int
	TicketsTotal() int
	Finished(role string) bool
	Available() []string
	FinishedRoles() []string
	Active() string
	Memory(role string) []string
	Slot(role, name string) string
	Records(name string) []any
	TranscriptText(n int) string
	// File is the context file at path (shared/ID, ROLE/ID).
	File(path string) (FileView, error)
}

// envSpec is the typed environment expressions are compiled against.
type envSpec struct {
	decl  map[string]any
	names map[string]string // name -> "constant" | "variable" | "built-in"
}

// builtinNames are the names expressions see besides the pack's
// constants and variables: the views, then the host functions.
var builtinNames = slices.Concat(viewNames(), []string{"now", "role", "args", "result", "scenario"}, hostFuncNames(), pureFuncNames())

// hostFuncs is the one list of functions expressions call into the
// session. Each binds an Env to a function value; bound to an Env without
// a host it is the typed stand-in the checker compiles against.
var hostFuncs = [...]struct {
	name string
	bind func(e *Env) any
}{
	{"tickets", func(e *Env) any { return func(r string) int { return e.hostOr().Tickets(r) } }},
	{"tickets_total", func(e *Env) any { return func() int { return e.hostOr().TicketsTotal() } }},
	{"finished", func(e *Env) any { return func(r string) bool { return e.hostOr().Finished(r) } }},
	{"available", func(e *Env) any { return func() []string { return e.hostOr().Available() } }},
	{"finished_roles", func(e *Env) any { return func() []string { return e.hostOr().FinishedRoles() } }},
	{"active", func(e *Env) any { return func() string { return e.hostOr().Active() } }},
	{"memory", func(e *Env) any { return func(r string) []string { return e.hostOr().Memory(r) } }},
	{"slot", func(e *Env) any { return func(r, n string) string { return e.hostOr().Slot(r, n) } }},
	{"records", func(e *Env) any { return func(n string) []any { return e.hostOr().Records(n) } }},
	{"transcript_text", func(e *Env) any { return func(n int) string { return e.hostOr().TranscriptText(n) } }},
	{"file", func(e *Env) any {
		return func(path string) (string, error) { f, err := e.hostOr().File(path); return f.Text, err }
	}},
	{"file_age", func(e *Env) any {
		return func(path string) (int64, error) {
			f, err := e.hostOr().File(path)
			if err != nil || f.UpdatedMS < 0 {
				return -1, err
			}
			return e.Now - f.UpdatedMS, nil
		}
	}},
	{"file_writes", func(e *Env) any {
		return func(path string) (int, error) { f, err := e.hostOr().File(path); return f.Writes, err }
	}},
}

func pureFuncNames() []string {
	out := make([]string, len(pureFuncs))
	for i, f := range pureFuncs {
		out[i] = f.name
	}
	return out
}

func hostFuncNames() []string {
	out := make([]string, len(hostFuncs))
	for i, f := range hostFuncs {
		out[i] = f.name
	}
	return out
}

// FileView is a context file as expressions and scripts see it.
type FileView struct {
	Text   string
	Writes int
	// UpdatedMS is when it was last written (-1: never; 0 for starting
	// content).
	UpdatedMS int64
}

// pureFuncs is the one list of the functions expressions call that need
// no session: the guardrails' own measures and a clock.
var pureFuncs = [...]struct {
	name  string
	fn    func(p ...any) (any, error)
	types []any
}{
	{"keys", func(p ...any) (any, error) {
		keys, _, err := sortedMap(p[0], "keys")
		return keys, err
	}, []any{new(func(any) []any)}},
	{"values", func(p ...any) (any, error) {
		_, values, err := sortedMap(p[0], "values")
		return values, err
	}, []any{new(func(any) []any)}},
	{"questions", func(p ...any) (any, error) { return text.CountQuestions(p[0].(string)), nil }, []any{new(func(string) int)}},
	{"sentences", func(p ...any) (any, error) { return text.CountSentences(p[0].(string)), nil }, []any{new(func(string) int)}},
	{"words", func(p ...any) (any, error) { return text.CountWords(p[0].(string)), nil }, []any{new(func(string) int)}},
	{"has_word", func(p ...any) (any, error) { return text.ContainsWord(p[0].(string), p[1].(string)), nil }, []any{new(func(string, string) bool)}},
	// clock(ms) writes a session time as mm:ss.s, as timelines do.
	{"clock", func(p ...any) (any, error) {
		switch ms := p[0].(type) {
		case int:
			return FormatClock(int64(ms)), nil
		case int64:
			return FormatClock(ms), nil
		case float64:
			return FormatClock(int64(ms)), nil
		}
		return nil, fmt.Errorf("clock: want milliseconds, got %T", p[0])
	}, []any{new(func(int64) string), new(func(int) string), new(func(float64) string)}},
}

// sortedMap is a map's keys in order, and its values in that order.
func sortedMap(m any, fn string) ([]any, []any, error) {
	v := reflect.ValueOf(m)
	if v.Kind() != reflect.Map {
		return nil, nil, fmt.Errorf("%s: want a map, got %s", fn, Describe(m))
	}
	type kv struct {
		k string
		v any
	}
	list := make([]kv, 0, v.Len())
	for it := v.MapRange(); it.Next(); {
		list = append(list, kv{fmt.Sprint(it.Key().Interface()), it.Value().Interface()})
	}
	slices.SortFunc(list, func(a, b kv) int { return strings.Compare(a.k, b.k) })
	keys, values := make([]any, len(list)), make([]any, len(list))
	for i, e := range list {
		keys[i], values[i] = e.k, e.v
	}
	return keys, values, nil
}

func exprFunctions() []expr.Option {
	// expr's own keys() and values() follow Go's map order, which
	// changes from run to run; a session's effects may not.
	opts := []expr.Option{expr.DisableBuiltin("now"), expr.DisableBuiltin("keys"), expr.DisableBuiltin("values")}
	for _, f := range pureFuncs {
		opts = append(opts, expr.Function(f.name, f.fn, f.types...))
	}
	return opts
}

// Scope is what an expression sees of the thing being handled, besides
// the session's own state: the tool call (`tool`, in rules on tool:NAME
// and tool_loop), the line the guardrails check (`reply`), a job's or a
// sequence's `args` and `result`. Scopes nest as a stack: Env.Scope
// pushes one and returns the function that pops it, so a caller writes
//
//	defer s.env.Scope(rules.Scope{Tool: &tv})()
//
// While a scope is in force, a view it leaves unset reads as absent (its
// zero value): nothing handled earlier can leak into a later expression.
type Scope struct {
	Tool   *ToolView
	Reply  *ReplyView
	Args   map[string]any
	Result any
}

// Env is one session's expression environment. It is not safe for
// concurrent use; a session owns exactly one.
type Env struct {
	Candidate CandidateView
	Msg       MessageView
	Session   SessionView
	Floor     FloorView
	Sequence  SequenceView
	Now       int64
	host      Host
	m         map[string]any
	vm        vm.VM
	vars      map[string]reflect.Kind
	roleVals  map[string]any // role ids boxed once, so SetRole does not allocate

	scope  Scope
	scopes []Scope // the scopes under the current one
	pop    func()  // popScope, bound once so a push does not allocate
	// What an absent view reads as. Expressions cannot write to them.
	noTool  ToolView
	noReply ReplyView
	noArgs  map[string]any
}

// NewEnv builds a fresh environment for one session of p.
func (p *Pack) NewEnv() *Env {
	e := &Env{m: make(map[string]any, len(p.Constants)+len(p.Vars)+len(builtinNames)), vars: map[string]reflect.Kind{}}
	for _, c := range p.Constants {
		e.m[c.ID] = c.Norm
	}
	for _, v := range p.Vars {
		e.m[v.ID] = normalize(v.Initial)
		e.vars[v.ID] = reflect.ValueOf(e.m[v.ID]).Kind()
	}
	for i := range p.Inputs {
		e.m[p.Inputs[i].ID] = p.Inputs[i].def
	}
	e.m["candidate"] = &e.Candidate
	e.m["msg"] = &e.Msg
	e.m["session"] = &e.Session
	e.m["floor"] = &e.Floor
	e.m["now"] = func() int64 { return e.Now }
	e.m["role"] = ""
	e.m["sequence"] = &e.Sequence
	if d := p.defaults; d != nil && d.pack == p {
		e.m["scenario"] = d.scenario
	} else {
		e.m["scenario"] = p.scenarioMap()
	}
	e.noArgs = map[string]any{}
	e.pop = e.popScope
	e.setScope(Scope{})
	for _, f := range hostFuncs {
		e.m[f.name] = f.bind(e)
	}
	e.roleVals = make(map[string]any, len(p.Roles)+1)
	e.roleVals[""] = ""
	for _, r := range p.Roles {
		e.roleVals[r.ID] = r.ID
	}
	return e
}

// SetInputs gives expressions a session's input values in place of the
// defaults NewEnv starts with.
func (e *Env) SetInputs(in *Inputs) {
	for id, v := range in.vals {
		e.m[id] = v
	}
	if in.scenario != nil {
		e.m["scenario"] = in.scenario
	} else if in.pack.contextNamesInput() {
		e.m["scenario"] = scenarioMap(in.pack, in.pack.ScenarioContext(in))
	}
}

// SetHost connects the session state behind the panel functions.
func (e *Env) SetHost(h Host) { e.host = h }

// Scope makes sc the scope expressions see until the returned function
// is called, which restores the scope it replaced.
func (e *Env) Scope(sc Scope) (pop func()) {
	e.scopes = append(e.scopes, e.scope)
	e.setScope(sc)
	return e.pop
}

func (e *Env) popScope() {
	n := len(e.scopes) - 1
	e.setScope(e.scopes[n])
	e.scopes[n] = Scope{}
	e.scopes = e.scopes[:n]
}

func (e *Env) setScope(sc Scope) {
	e.scope = sc
	if sc.Tool != nil {
		e.m["tool"] = sc.Tool
	} else {
		e.m["tool"] = &e.noTool
	}
	if sc.Reply != nil {
		e.m["reply"] = sc.Reply
	} else {
		e.m["reply"] = &e.noReply
	}
	if sc.Args != nil {
		e.m["args"] = sc.Args
	} else {
		e.m["args"] = e.noArgs
	}
	e.m["result"] = sc.Result
}

// Current is the scope in force, for a caller that narrows it: a
// scope that adds to the one it is in starts from this.
func (e *Env) Current() Scope { return e.scope }

// Tool is the tool call in scope, or nil.
func (e *Env) Tool() *ToolView { return e.scope.Tool }

// Reply is the line the guardrails check in scope, or nil.
func (e *Env) Reply() *ReplyView { return e.scope.Reply }

// Args is the `args` in scope (a job's, in its handlers), or nil.
func (e *Env) Args() map[string]any { return e.scope.Args }

// Result is the `result` in scope (a job's, in its handlers).
func (e *Env) Result() any { return e.scope.Result }

func (e *Env) hostOr() Host {
	if e.host == nil {
		return noHost{}
	}
	return e.host
}

type noHost struct{}

func (noHost) Refresh(*Env)               {}
func (noHost) Tickets(string) int         { return 0 }
func (noHost) TicketsTotal() int          { return 0 }
func (noHost) Finished(string) bool       { return false }
func (noHost) Available() []string        { return nil }
func (noHost) FinishedRoles() []string    { return nil }
func (noHost) Active() string             { return "" }
func (noHost) Memory(string) []string     { return nil }
func (noHost) Slot(string, string) string { return "" }
func (noHost) Records(string) []any       { return nil }
func (noHost) TranscriptText(int) string  { return "" }
func (noHost) File(string) (FileView, error) {
	return FileView{UpdatedMS: -1}, nil
}

// SetRole sets `role`, the role a role-scoped expression is evaluated for.
func (e *Env) SetRole(r string) {
	if cur, _ := e.m["role"].(string); cur != r {
		if v, ok := e.roleVals[r]; ok {
			e.m["role"] = v
		} else {
			e.m["role"] = r
		}
	}
}

// EvalBool runs a boolean expression; an unset expression is true.
func (e *Env) EvalBool(x *Expr) (bool, error) {
	if x.isLit {
		b, _ := x.lit.(bool)
		return b, nil
	}
	if x.prog == nil {
		return true, nil
	}
	e.hostOr().Refresh(e)
	out, err := e.vm.Run(x.prog, e.m)
	if err != nil {
		return false, fmt.Errorf("%s: %w", x.Pos, err)
	}
	b, _ := out.(bool)
	return b, nil
}

// Eval runs an expression and returns its value.
func (e *Env) Eval(x *Expr) (any, error) {
	if x.isLit {
		return x.lit, nil
	}
	if x.prog == nil {
		return nil, fmt.Errorf("%s: no expression", x.Pos)
	}
	e.hostOr().Refresh(e)
	out, err := e.vm.Run(x.prog, e.m)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", x.Pos, err)
	}
	return out, nil
}

// SetVar assigns a session variable, converting numbers to its type.
func (e *Env) SetVar(name string, v any) error {
	kind, ok := e.vars[name]
	if !ok {
		return fmt.Errorf("unknown variable %q", name)
	}
	nv, err := varValue(name, kind, v)
	if err != nil {
		return err
	}
	e.m[name] = nv
	return nil
}

// varValue converts v to the kind of variable name holds, or says why it
// cannot. Numbers convert between whole and fractional; NaN, infinities
// and whole numbers out of range are refused, since what they convert to
// differs between machines.
func varValue(name string, kind reflect.Kind, v any) (any, error) {
	nv := normalize(v)
	if f, ok := nv.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return nil, fmt.Errorf("variable %q cannot hold %v", name, f)
	}
	switch {
	case kind == reflect.Int64 && isNumber(nv):
		f := toFloat(nv)
		if i, isInt := nv.(int64); isInt {
			return i, nil
		}
		if f < math.MinInt64 || f >= math.MaxInt64 {
			return nil, fmt.Errorf("variable %q holds whole numbers; %v is out of range", name, f)
		}
		return int64(f), nil
	case kind == reflect.Float64 && isNumber(nv):
		return toFloat(nv), nil
	case reflect.ValueOf(nv).Kind() != kind:
		return nil, fmt.Errorf("variable %q holds %s, cannot set %T", name, kind, v)
	}
	return nv, nil
}

// varKind is the kind of value variable name holds.
func (p *Pack) varKind(name string) (reflect.Kind, bool) {
	for _, v := range p.Vars {
		if v.ID == name {
			return reflect.ValueOf(normalize(v.Initial)).Kind(), true
		}
	}
	return reflect.Invalid, false
}

// Var reads a session variable.
func (e *Env) Var(name string) any { return e.m[name] }

func isNumber(v any) bool {
	switch v.(type) {
	case int64, float64:
		return true
	}
	return false
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}

// normalize maps YAML and expr values onto int64, float64, bool, string.
func normalize(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case uint64:
		return int64(x)
	case float32:
		return float64(x)
	case nil:
		return ""
	}
	return v
}

func (p *Pack) buildEnvSpec() {
	s := &envSpec{decl: map[string]any{}, names: map[string]string{}}
	for _, c := range p.Constants {
		s.decl[c.ID] = c.Norm
		s.names[c.ID] = "constant"
	}
	for _, v := range p.Vars {
		s.decl[v.ID] = normalize(v.Initial)
		s.names[v.ID] = "variable"
	}
	for i := range p.Inputs {
		s.decl[p.Inputs[i].ID] = p.Inputs[i].def
		s.names[p.Inputs[i].ID] = "input"
	}
	for _, v := range views {
		s.decl[v.name] = reflect.New(v.typ).Interface()
	}
	s.decl["now"] = func() int64 { return 0 }
	s.decl["role"] = ""
	s.decl["scenario"] = p.scenarioMap()
	s.decl["args"] = map[string]any{}
	s.decl["result"] = map[string]any{}
	for _, f := range hostFuncs {
		s.decl[f.name] = f.bind(&Env{})
	}
	for _, n := range builtinNames {
		s.names[n] = "built-in"
	}
	p.env = s
}

// scenarioMap is the scenario context as `scenario.KEY`.
func (p *Pack) scenarioMap() map[string]string { return scenarioMap(p, p.scenarioContext(nil)) }

// scenarioMap is scenario as expressions see it, with context ctx.
func scenarioMap(p *Pack, ctx []StrEntry) map[string]string {
	m := make(map[string]string, len(ctx)+2)
	m["id"], m["title"] = p.Scenario.ID, p.Scenario.Title
	for _, kv := range ctx {
		m[kv.Key] = kv.Value
	}
	return m
}
