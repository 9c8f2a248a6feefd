package rules

import (
	"path"

	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/batonhq/baton/rules/script"

	"github.com/batonhq/baton/rules/text"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/checker"
	exprcompiler "github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/optimizer"
	"github.com/expr-lang/expr/vm"
)

// Defaults applied when a pack leaves a setting out.
const (
	DefaultTickMS         = 100
	DefaultWordsPerMinute = 160
	DefaultLLMTimeoutMS   = 8000
	// DefaultClientToolTimeoutMS bounds a client tool's round trip when
	// the tool sets no timeout.
	DefaultClientToolTimeoutMS = 5000
	DefaultTranscriptTail      = 6
	DefaultLLMLatencyMS        = 600
	DefaultLLMRetries          = 2
	// DefaultRegenerateAttempts is how often a violating line is asked
	// for again when the chain has regenerate.
	DefaultRegenerateAttempts = 2
	// MaxRegenerateAttempts bounds it: each attempt is a model call
	// inside one turn's budget.
	MaxRegenerateAttempts = 5
)

// Role specifiers a TurnSpec may use instead of a role id.
const (
	RoleLast      = "last"
	RoleSame      = "same"
	RoleAddressed = "addressed"
	// RoleActive is the role holding the floor (see the floor action).
	RoleActive = "active"
)

type compiler struct {
	p *Pack
	// exprConf is the expression configuration every expression of the
	// pack compiles with, built once (exprConfig).
	exprConf *conf.Config
	errs     *ErrorList
	ids      map[string]Pos
	funcFile map[string]string // script function -> file
	// inputCheck is set while guardrails.input is checked: the only place
	// refuse and redact mean something.
	inputCheck bool
	// sched says whether the turns being checked are scheduled, so may be
	// prepared ahead (prepare.go), and whether llm.prepare applies to them
	// unasked.
	sched turnTiming
	// script is set while a script's answer is checked: what only the
	// session can judge is left to it (a write a file's class refuses).
	script bool
	// exprs and exprText count the expressions compiled so far and their
	// text, against MaxExprs and MaxExprText.
	exprs, exprText int
	// times is set while walk resolves durations and numbers, which it
	// does before anything else (see compile).
	times bool
	// in is the scoped views (views.go) the expressions being walked
	// have: a tool rule's `tool`, a guardrail's `reply`.
	in viewScope
	// turns are the turns check saw, and dynamicGoals whether a script can
	// name a turn's goal at run time; warnings look at both.
	turns        []checkedTurn
	dynamicGoals bool
	// inputConsts are the inputs durations and numbers name, as constants.
	inputConsts map[string]*Constant
}

func compile(p *Pack, errs *ErrorList) {
	c := &compiler{p: p, errs: errs, ids: map[string]Pos{}}
	c.defaults()
	c.constants()
	// Durations and numbers are resolved first: a text constant used as a
	// duration is then reported once where it is defined, and is a
	// duration to the expressions compiled after, so none of its uses adds
	// a knock-on error of its own.
	c.times = true
	c.walk(reflect.ValueOf(p).Elem())
	c.times = false
	p.buildEnvSpec()
	c.scripts()
	c.walk(reflect.ValueOf(p).Elem())
	c.check()
	// Even with other errors: a pack's names are known by now, and two
	// that collide are reported with the rest.
	p.buildCover(c)
	if len(*errs) == 0 {
		p.Warnings = c.warnings()
	}
}

// scripts indexes the compiled script files and builds their pool, which
// runs their top-level code once to prove it loads.
func (c *compiler) scripts() {
	p := c.p
	c.funcFile = map[string]string{}
	for _, f := range p.scriptFiles {
		for _, fn := range f.Funcs() {
			if other, dup := c.funcFile[fn]; dup {
				c.errorf(Pos{File: f.Name}, "function %s is also declared in %s (script functions share one scope)", fn, other)
			}
			c.funcFile[fn] = f.Name
		}
	}
	if len(p.scriptFiles) == 0 || len(*c.errs) > 0 {
		return
	}
	pool, err := script.NewPool(p.scriptFiles)
	if err != nil {
		var se script.Error
		if errors.As(err, &se) && se.File != "" {
			c.errorf(Pos{File: se.File, Line: se.Line, Col: se.Col}, "%s", se.Msg)
		} else {
			c.errorf(Pos{File: ScriptsDir}, "%v", err)
		}
		return
	}
	p.Scripts = pool
}

func (c *compiler) scriptRef(r *ScriptRef) {
	if !r.Set() {
		return
	}
	file, ok := c.funcFile[r.Func]
	switch {
	case !ok:
		c.errorf(r.Pos, "script function %s is not declared in %s/*.js", r.Func, ScriptsDir)
	case r.File != "" && path.Join(ScriptsDir, r.File) != file:
		c.errorf(r.Pos, "script function %s is declared in %s, not %s", r.Func, file, r.File)
	}
}

func (c *compiler) errorf(pos Pos, format string, args ...any) {
	if pos.File == "" {
		pos = c.p.Pos // a value that was never written (null): blame the pack
	}
	c.errs.add(pos, format, args...)
}

// missingf reports a reference to something the pack does not define, or
// a section it lacks. A root cause that dropped the section that would
// define it (one of sections, separated by spaces) explains it.
func (c *compiler) missingf(pos Pos, sections, format string, args ...any) {
	if pos.File == "" {
		pos = c.p.Pos
	}
	c.errs.addNeeds(pos, sections, format, args...)
}

func (c *compiler) defaults() {
	p := c.p
	if p.Schema == 0 {
		p.Schema = 1
	}
	if !p.Scripting.Budget.IsSet() {
		p.Scripting.Budget = Duration{MS: script.DefaultBudget.Milliseconds(), set: true}
	}
	if !p.Tick.IsSet() {
		p.Tick = Duration{MS: DefaultTickMS, set: true}
	}
	if p.Voice.WordsPerMinute == 0 {
		p.Voice.WordsPerMinute = DefaultWordsPerMinute
	}
	if !p.LLM.Timeout.IsSet() {
		p.LLM.Timeout = Duration{MS: DefaultLLMTimeoutMS, set: true}
	}
	if !p.LLM.AttemptTimeout.IsSet() {
		p.LLM.AttemptTimeout = p.LLM.Timeout
	}
	if p.LLM.Retries == nil {
		n := DefaultLLMRetries
		p.LLM.Retries = &n
	}
	if len(p.LLM.Backoff) == 0 {
		p.LLM.Backoff = []Duration{{MS: 1000, set: true}, {MS: 2000, set: true}}
	}
	if p.LLM.TranscriptTail == 0 {
		p.LLM.TranscriptTail = DefaultTranscriptTail
	}
	if !p.Workspace.Latency.IsSet() {
		p.Workspace.Latency = Duration{MS: DefaultClientLatencyMS, set: true}
	}
	if !p.DryRun.LLMLatency.IsSet() {
		p.DryRun.LLMLatency = Duration{MS: DefaultLLMLatencyMS, set: true}
	}
	for i := range p.Timeline.Anchors {
		if a := &p.Timeline.Anchors[i]; a.Turn.Kind == "" {
			a.Turn.Kind = "anchor"
		}
	}
	for i := range p.Timeline.Windows {
		if w := &p.Timeline.Windows[i]; w.Turn.Kind == "" {
			w.Turn.Kind = "window"
		}
	}
	for i := range p.Tools {
		t := &p.Tools[i]
		if t.Parameters == nil {
			t.Parameters = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		if t.Executor == ExecClient && !t.Timeout.IsSet() {
			t.Timeout = Duration{MS: DefaultClientToolTimeoutMS, set: true}
		}
	}
	p.Guardrails.wpm = p.Voice.WordsPerMinute
	if p.Guardrails.MaxWords == 0 {
		p.Guardrails.MaxWords = DefaultMaxWords
	}
	if !p.Guardrails.MaxSpeech.IsSet() {
		p.Guardrails.MaxSpeech = Duration{MS: DefaultMaxSpeechMS, set: true}
	}
	if p.Guardrails.Regenerate.Attempts == nil {
		n := DefaultRegenerateAttempts
		p.Guardrails.Regenerate.Attempts = &n
	}
	if len(p.Guardrails.OnViolation) == 0 {
		p.Guardrails.OnViolation = Policies{ViolationRewrite}
	}
	for i := range p.Jobs {
		if j := &p.Jobs[i]; !j.Timeout.IsSet() {
			j.Timeout = p.LLM.Timeout
		}
	}
	for i := range p.Routing {
		r := &p.Routing[i]
		if r.Kind == "" {
			r.Kind = "reply"
		}
		if r.Goal == "" {
			r.Goal = "respond_to_candidate"
		}
	}
}

// constants normalizes constant values; text that reads as a duration
// becomes milliseconds so it can stand wherever a duration is expected.
func (c *compiler) constants() {
	seen := map[string]Pos{}
	for i := range c.p.Constants {
		k := &c.p.Constants[i]
		if !isIdent(k.ID) {
			c.errorf(k.Pos, "constant %q: names are letters, digits and _", k.ID)
		}
		if first, dup := seen[k.ID]; dup {
			c.errorf(k.Pos, "constant %q is already defined at %s", k.ID, first)
		}
		seen[k.ID] = k.Pos
		switch v := normalize(k.Value).(type) {
		case string:
			if ms, err := ParseDuration(v); err == nil && v != "" && !isIdent(v) {
				k.Norm, k.IsDuration = ms, true
			} else {
				k.Norm = v
			}
		case int64, float64, bool:
			k.Norm = v
		default:
			c.errorf(k.Pos, "constant %q: must be a number, text, boolean or duration", k.ID)
			k.Norm = int64(0)
		}
	}
	for i := range c.p.Vars {
		v := &c.p.Vars[i]
		if !isIdent(v.ID) {
			c.errorf(v.Pos, "variable %q: names are letters, digits and _", v.ID)
		}
		if first, dup := seen[v.ID]; dup {
			c.errorf(v.Pos, "variable %q is already defined at %s", v.ID, first)
		}
		if slices.Contains(builtinNames, v.ID) {
			c.errorf(v.Pos, "variable %q shadows a built-in name", v.ID)
		}
		seen[v.ID] = v.Pos
		switch normalize(v.Initial).(type) {
		case int64, float64, bool, string:
		default:
			c.errorf(v.Pos, "variable %q: initial value must be a number, text or boolean", v.ID)
			v.Initial = int64(0)
		}
	}
	for _, k := range c.p.Constants {
		if slices.Contains(builtinNames, k.ID) {
			c.errorf(k.Pos, "constant %q shadows a built-in name", k.ID)
		}
	}
	for _, in := range c.p.Inputs {
		if first, dup := seen[in.ID]; dup {
			c.errorf(in.Pos, "input %q: a constant or variable of that name is defined at %s", in.ID, first)
		}
	}
}

func (c *compiler) constant(name string) (*Constant, bool) {
	for i := range c.p.Constants {
		if c.p.Constants[i].ID == name {
			return &c.p.Constants[i], true
		}
	}
	return c.inputConstant(name)
}

func (c *compiler) isConstant(name string) bool {
	return slices.ContainsFunc(c.p.Constants, func(k Constant) bool { return k.ID == name })
}

// inputConstant is a session input standing where a constant would: a
// duration or number input, with the value the pack is compiled with
// (its default, or the session's in a pack Bind compiled).
func (c *compiler) inputConstant(name string) (*Constant, bool) {
	in, ok := c.p.Input(name)
	if !ok {
		return nil, false
	}
	if k, ok := c.inputConsts[name]; ok {
		return k, true
	}
	in.timed = true
	v := in.def
	if o, ok := c.p.over[name]; ok {
		v = o
	}
	k := &Constant{Pos: in.Pos, ID: name, Value: v, Norm: v, IsDuration: in.Type == InputDuration}
	switch in.Type {
	case InputNumber, InputDuration:
	default:
		// Text where a time or a number belongs cannot be checked once
		// for every session: say so where the input is declared.
		k.Norm = in.Type.String() + " input"
	}
	if c.inputConsts == nil {
		c.inputConsts = map[string]*Constant{}
	}
	c.inputConsts[name] = k
	return k, true
}

var (
	durationType = reflect.TypeFor[Duration]()
	numberType   = reflect.TypeFor[Number]()
	exprType     = reflect.TypeFor[Expr]()
	valueType    = reflect.TypeFor[Value]()
	scriptType   = reflect.TypeFor[ScriptRef]()
	templateType = reflect.TypeFor[Template]()
)

// walk visits every Duration, Number, Expr, Value, script reference and
// Template in the pack, actions included, resolving constant references
// and compiling expressions, so no field can be forgotten by a
// hand-written list. With c.times it resolves durations and numbers
// only; without, it does the rest.
func (c *compiler) walk(v reflect.Value) {
	switch t := v.Type(); {
	case t == durationType:
		if c.times {
			c.resolveDuration(v.Addr().Interface().(*Duration))
		}
		return
	case t == numberType:
		if c.times {
			c.resolveNumber(v.Addr().Interface().(*Number))
		}
		return
	case c.times && (t == exprType || t == valueType || t == scriptType || t == templateType):
		return // compiled in the second pass
	case t == exprType:
		x := v.Addr().Interface().(*Expr)
		c.scriptRef(&x.Script)
		c.compileExpr(x, true)
		return
	case t == valueType:
		x := &v.Addr().Interface().(*Value).Expr
		c.scriptRef(&x.Script)
		c.compileExpr(x, false)
		return
	case t == scriptType:
		c.scriptRef(v.Addr().Interface().(*ScriptRef))
		return
	case t == templateType:
		tpl := v.Addr().Interface().(*Template)
		if err := tpl.parse(); err != nil {
			c.errorf(tpl.Pos, "%v", err)
		}
		for _, part := range tpl.parts {
			if part.expr != nil {
				c.compileExpr(part.expr, false)
			}
		}
		return
	}
	if !walked(v.Type()) {
		return
	}
	if v.Type() == ruleType && v.CanAddr() {
		defer func(in viewScope) { c.in = in }(c.in)
		c.in |= v.Addr().Interface().(*Rule).scopeOf()
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			c.walk(v.Elem())
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && f.Tag.Get("yaml") != "-" {
				in := c.in
				c.in |= scopeTag(f)
				c.walk(v.Field(i))
				c.in = in
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			c.walk(v.Index(i))
		}
	}
}

// walked reports whether a value of type t can hold anything walk acts
// on. Most of a pack is text; skipping it keeps a load's cost in what it
// has to compile.
func walked(t reflect.Type) bool {
	if b, ok := walkCache.Load(t); ok {
		return b.(bool)
	}
	b := reaches(t, map[reflect.Type]bool{})
	walkCache.Store(t, b)
	return b
}

var walkCache sync.Map // reflect.Type -> bool

func reaches(t reflect.Type, seen map[reflect.Type]bool) bool {
	switch t {
	case durationType, numberType, exprType, valueType, scriptType, templateType:
		return true
	}
	if seen[t] {
		return false // a type that contains itself adds no other field types
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Interface:
		return true // what it holds is only known at run time
	case reflect.Pointer, reflect.Slice:
		return reaches(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if f.IsExported() && f.Tag.Get("yaml") != "-" && reaches(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

func (c *compiler) resolveDuration(d *Duration) {
	if d.Ref == "" {
		return
	}
	if in, ok := c.p.Input(d.Ref); ok && !c.isConstant(d.Ref) && in.Type != InputDuration {
		c.errorf(d.Pos, "input %q is a %s input; a duration names a duration input (type: duration)", d.Ref, in.Type)
		d.broken = true
		return
	}
	k, ok := c.constant(d.Ref)
	switch {
	case !ok:
		c.missingf(d.Pos, "constants", "unknown constant %q%s", d.Ref, c.suggest(d.Ref, c.p.constantNames()))
		d.broken = true
	case k.badDuration:
		d.broken = true // reported where the constant is defined
	case !k.IsDuration:
		if text, ok := k.Norm.(string); ok {
			c.badDurationConstant(k, text, d.Pos)
		} else {
			// A number is a number written right; using it for a time
			// is the mistake, at each place it is made.
			c.errorf(d.Pos, "constant %q is not a duration (write it like 12s or 03:00)", d.Ref)
		}
		d.broken = true
	default:
		d.MS = k.Norm.(int64)
	}
}

// badDurationConstant reports text constant k, used as a duration at use,
// once, where it is defined: text where a time belongs is a time written
// wrong. From then on it is a duration to the rest of the pack, so that
// its other uses and the expressions that read it add no knock-on error.
func (c *compiler) badDurationConstant(k *Constant, text string, use Pos) {
	fix := "a number with a unit (800ms, 12s, 1m30s) or mm:ss"
	if d, ok := durationFix(text); ok {
		fix = d
	}
	c.errs.addRoot(k.Pos, "constant:"+k.ID, "constant %s is %q, which is not a duration, and %s uses it as one: write %s", k.ID, clip(text), use, fix)
	k.Norm, k.IsDuration, k.badDuration = int64(0), true, true
}

func (c *compiler) resolveNumber(n *Number) {
	if n.Ref == "" {
		return
	}
	if in, ok := c.p.Input(n.Ref); ok && !c.isConstant(n.Ref) && in.Type != InputNumber {
		c.errorf(n.Pos, "input %q is a %s input; a number names a number input (type: number)", n.Ref, in.Type)
		return
	}
	k, ok := c.constant(n.Ref)
	if !ok {
		c.missingf(n.Pos, "constants", "unknown constant %q", n.Ref)
		return
	}
	switch v := k.Norm.(type) {
	case int64:
		n.Value = float64(v)
	case float64:
		n.Value = v
	default:
		c.errorf(n.Pos, "constant %q is not a number", n.Ref)
	}
}

func (c *compiler) compileExpr(x *Expr, asBool bool) {
	if x.Src == "" {
		return
	}
	if !c.exprWithinLimits(x) {
		return
	}
	prog, err := compileWith(c.exprConfig(asBool), x.Src)
	if err != nil {
		pos, msg := x.Pos, err.Error()
		var fe *file.Error
		if errors.As(err, &fe) {
			msg = fe.Message
			if fe.Line > 1 {
				pos.Line += fe.Line - 1
				pos.Col = fe.Column + 1
			} else {
				pos.Col += fe.Column
			}
		}
		msg = viewWords(msg)
		if strings.HasPrefix(msg, "unknown name ") {
			// A name a dropped file or section would have declared.
			c.missingf(pos, "constants vars", "expression %q: %s", clip(x.Src), msg)
			return
		}
		c.errorf(pos, "expression %q: %s", clip(x.Src), msg)
		return
	}
	if node := prog.Node(); node != nil {
		if name, where, at, ok := outOfScope(&node, c.in); ok {
			c.errorf(offsetPos(x.Pos, x.Src, at), "expression %q: %s exists only %s; here it would always be empty", clip(x.Src), name, where)
			return
		}
	}
	x.prog = prog
	if asBool {
		x.clock = c.clockCondOf(prog.Node())
	}
}

// offsetPos is the position of the rune at offset at in src, which
// starts at start.
func offsetPos(start Pos, src string, at int) Pos {
	line, col := 0, 0
	for i, r := range []rune(src) {
		if i == at {
			break
		}
		col++
		if r == '\n' {
			line, col = line+1, 0
		}
	}
	if line > 0 {
		start.Line += line
		start.Col = col + 1
	} else {
		start.Col += col
	}
	return start
}

// exprConfig is the configuration an expression compiles with. expr's
// own Compile builds one from scratch for every expression (the builtin
// table, the environment's types), which was most of the time a pack with
// many expressions took to load; the environment is the same for all of a
// pack's, so it is built once and copied, the copy differing only in the
// result type asked for.
func (c *compiler) exprConfig(asBool bool) *conf.Config {
	if c.exprConf == nil {
		base := conf.CreateNew()
		for _, op := range append([]expr.Option{expr.Env(c.p.env.decl)}, exprFunctions()...) {
			op(base)
		}
		for name := range base.Disabled {
			delete(base.Builtins, name)
		}
		base.Check()
		c.exprConf = base
	}
	cfg := *c.exprConf
	if asBool {
		expr.AsBool()(&cfg)
	}
	return &cfg
}

// compileWith runs the steps of expr.Compile with a configuration made
// once per pack.
func compileWith(cfg *conf.Config, src string) (*vm.Program, error) {
	tree, err := checker.ParseCheck(src, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Optimize {
		if err := optimizer.Optimize(&tree.Node, cfg); err != nil {
			var fe *file.Error
			if errors.As(err, &fe) {
				return nil, fe.Bind(tree.Source)
			}
			return nil, err
		}
	}
	return exprcompiler.Compile(tree, cfg)
}

// exprWithinLimits keeps compiling a pack's expressions bounded: past a
// limit an expression is reported and not compiled.
func (c *compiler) exprWithinLimits(x *Expr) bool {
	c.exprs++
	c.exprText += len(x.Src)
	switch {
	case c.exprs == MaxExprs+1:
		c.errorf(x.Pos, "more than %d expressions in the pack; move repeated logic into a script function", MaxExprs)
		return false
	case c.exprs > MaxExprs:
		return false
	case len(x.Src) > MaxExprLen:
		c.errorf(x.Pos, "expression %q is %d bytes long; at most %d (a script function can hold longer logic)", clip(x.Src), len(x.Src), MaxExprLen)
		return false
	case c.exprText > MaxExprText && c.exprText-len(x.Src) <= MaxExprText:
		c.errorf(x.Pos, "the pack's expressions are longer than %d bytes together; move long logic into script functions", MaxExprText)
		return false
	case c.exprText > MaxExprText:
		return false
	}
	if n := exprNesting(x.Src); n > MaxExprNesting {
		c.errorf(x.Pos, "expression %q nests brackets %d deep; at most %d", clip(x.Src), n, MaxExprNesting)
		return false
	}
	return true
}

func (c *compiler) keywords(pos Pos, what string, list []string) *text.Keywords {
	if len(list) > text.MaxKeywords {
		c.errorf(pos, "%s: at most %d keywords in one list", what, text.MaxKeywords)
	}
	return text.CompileKeywords(list)
}

// RulesOn returns the rules t triggers in firing order (priority high to
// low, then id).
func (p *Pack) RulesOn(t Trigger) []*Rule { return p.ruleOn[t] }

// RoleIDs lists the role ids in pack order.
func (p *Pack) RoleIDs() []string { return names(p.Roles, func(r *Role) string { return r.ID }) }

// RoleIndex is the index of role id in Roles, or -1.
func (p *Pack) RoleIndex(id string) int {
	if i, ok := p.roles[id]; ok {
		return i
	}
	return -1
}

// SpeakerLabels are the names a generated line of role may start with
// (text.SpeakerNames): the role's own, and the other roles'; for a line
// of no known role, every role's as others.
func (p *Pack) SpeakerLabels(role string) (own, others []string) {
	if r, ok := p.Role(role); ok {
		return r.ownNames, r.otherNames
	}
	return nil, p.speakers
}

// Role returns the role with id.
func (p *Pack) Role(id string) (*Role, bool) {
	i, ok := p.roles[id]
	if !ok {
		return nil, false
	}
	return &p.Roles[i], true
}
