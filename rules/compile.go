package rules

import (
	"path"

	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/batonhq/baton/rules/script"

	"github.com/batonhq/baton/rules/text"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
)

// Defaults applied when a pack leaves a setting out.
const (
	DefaultTickMS         = 100
	DefaultWordsPerMinute = 160
	DefaultLLMTimeoutMS   = 8000
	DefaultTranscriptTail = 6
	DefaultLLMLatencyMS   = 600
	DefaultLLMRetries     = 2
)

// Role specifiers a TurnSpec may use instead of a role id.
const (
	RoleLast      = "last"
	RoleSame      = "same"
	RoleAddressed = "addressed"
	// RoleActive is the role holding the floor (see the floor action).
	RoleActive = "active"
)

// Route types.
const (
	RouteAnchor    = "anchor"
	RouteAddressed = "addressed"
	RouteIntent    = "intent"
	RouteRole      = "role"
	RouteScript    = "script"
)

type compiler struct {
	p        *Pack
	errs     *ErrorList
	ids      map[string]Pos
	funcFile map[string]string // script function -> file
}

func compile(p *Pack, errs *ErrorList) {
	c := &compiler{p: p, errs: errs, ids: map[string]Pos{}}
	c.defaults()
	c.constants()
	p.buildEnvSpec()
	c.scripts()
	c.walk(reflect.ValueOf(p).Elem(), "")
	c.check()
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
	if !p.Scripting.Budget.IsSet() {
		p.Scripting.Budget = Duration{MS: script.DefaultBudget.Milliseconds(), set: true}
	}
	if len(p.scriptFiles) == 0 || len(*c.errs) > 0 {
		return
	}
	pool, err := script.NewPool(p.scriptFiles)
	if err != nil {
		c.errorf(Pos{File: ScriptsDir}, "%v", err)
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

func (c *compiler) hook(h *Hook, what string, policies ...string) {
	if h == nil {
		return
	}
	if !h.Script.Set() {
		c.errorf(h.Script.Pos, "%s needs a script", what)
	}
	if h.OnError == "" {
		h.OnError = policies[0]
	}
	if !oneOf(h.OnError, policies...) {
		c.errorf(h.Script.Pos, "%s: on_error must be one of %s, not %q", what, strings.Join(policies, ", "), h.OnError)
	}
}

func (c *compiler) errorf(pos Pos, format string, args ...any) {
	if pos.File == "" {
		pos = c.p.Pos // a value that was never written (null): blame the pack
	}
	c.errs.add(pos, format, args...)
}

func (c *compiler) defaults() {
	p := c.p
	if p.Schema == 0 {
		p.Schema = 1
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
	if !p.DryRun.LLMLatency.IsSet() {
		p.DryRun.LLMLatency = Duration{MS: DefaultLLMLatencyMS, set: true}
	}
	if p.Silence.StartAfter == "" {
		p.Silence.StartAfter = "question"
	}
	if p.Guardrails.OnViolation == "" {
		p.Guardrails.OnViolation = "rewrite"
	}
	for i := range p.Timeline.Anchors {
		a := &p.Timeline.Anchors[i]
		if a.Action == "" {
			a.Action = "say"
		}
		if a.Turn.Kind == "" {
			a.Turn.Kind = "anchor"
		}
	}
	for i := range p.Timeline.Windows {
		w := &p.Timeline.Windows[i]
		if w.OnClose == "" {
			w.OnClose = "fire"
		}
		if w.Turn.Kind == "" {
			w.Turn.Kind = "window"
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
	for i := range p.Silence.Steps {
		s := &p.Silence.Steps[i]
		if s.Action == "" {
			s.Action = "say"
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
}

func (c *compiler) constant(name string) (*Constant, bool) {
	for i := range c.p.Constants {
		if c.p.Constants[i].ID == name {
			return &c.p.Constants[i], true
		}
	}
	return nil, false
}

var (
	durationType = reflect.TypeFor[Duration]()
	numberType   = reflect.TypeFor[Number]()
	exprType     = reflect.TypeFor[Expr]()
	scriptType   = reflect.TypeFor[ScriptRef]()
	templateType = reflect.TypeFor[Template]()
)

// walk visits every Duration, Number and Expr in the pack, resolving
// constant references and compiling expressions, so no field can be
// forgotten by a hand-written list.
func (c *compiler) walk(v reflect.Value, tag string) {
	switch v.Type() {
	case durationType:
		c.resolveDuration(v.Addr().Interface().(*Duration))
		return
	case numberType:
		c.resolveNumber(v.Addr().Interface().(*Number))
		return
	case exprType:
		x := v.Addr().Interface().(*Expr)
		c.scriptRef(&x.Script)
		c.compileExpr(x, !strings.Contains(tag, ",any"))
		return
	case scriptType:
		c.scriptRef(v.Addr().Interface().(*ScriptRef))
		return
	case templateType:
		t := v.Addr().Interface().(*Template)
		if err := t.parse(); err != nil {
			c.errorf(t.Pos, "%v", err)
		}
		for _, part := range t.parts {
			if part.expr != nil {
				c.compileExpr(part.expr, false)
			}
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			c.walk(v.Elem(), tag)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if t.Field(i).IsExported() && t.Field(i).Tag.Get("yaml") != "-" {
				c.walk(v.Field(i), t.Field(i).Tag.Get("yaml"))
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			c.walk(v.Index(i), tag)
		}
	}
}

func (c *compiler) resolveDuration(d *Duration) {
	if d.Ref == "" {
		return
	}
	k, ok := c.constant(d.Ref)
	switch {
	case !ok:
		c.errorf(d.Pos, "unknown constant %q", d.Ref)
	case !k.IsDuration:
		c.errorf(d.Pos, "constant %q is not a duration (write it like 12s or 03:00)", d.Ref)
	default:
		d.MS = k.Norm.(int64)
	}
}

func (c *compiler) resolveNumber(n *Number) {
	if n.Ref == "" {
		return
	}
	k, ok := c.constant(n.Ref)
	if !ok {
		c.errorf(n.Pos, "unknown constant %q", n.Ref)
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
	opts := append([]expr.Option{expr.Env(c.p.env.decl)}, exprFunctions()...)
	if asBool {
		opts = append(opts, expr.AsBool())
	}
	prog, err := expr.Compile(x.Src, opts...)
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
		msg = strings.NewReplacer("type *rules.CandidateView", "candidate", "type rules.CandidateView", "candidate",
			"type *rules.MessageView", "msg", "type rules.MessageView", "msg",
			"type *rules.SessionView", "session", "type rules.SessionView", "session").Replace(msg)
		c.errorf(pos, "expression %q: %s", x.Src, msg)
		return
	}
	x.prog = prog
}

func (c *compiler) id(pos Pos, kind, id string) {
	if id == "" {
		c.errorf(pos, "%s needs an id", kind)
		return
	}
	if first, dup := c.ids[id]; dup {
		c.errorf(pos, "%s id %q is already used at %s", kind, id, first)
		return
	}
	c.ids[id] = pos
}

func (c *compiler) roleRef(pos Pos, what, role string, specifiers ...string) {
	if role == "" {
		c.errorf(pos, "%s needs a role", what)
		return
	}
	if slices.Contains(specifiers, role) {
		return
	}
	if _, ok := c.p.roles[role]; !ok {
		c.errorf(pos, "%s: unknown role %q (roles: %s)", what, role, strings.Join(c.p.RoleIDs(), ", "))
	}
}

func (c *compiler) turn(parent Pos, t *TurnSpec, what string, specifiers ...string) {
	if t.Pos.Line == 0 {
		t.Pos = parent // the turn was left out: point at its owner
	}
	c.roleRef(t.Pos, what, t.Role, specifiers...)
	if t.Kind == "" {
		c.errorf(t.Pos, "%s needs a kind", what)
	}
}

func (c *compiler) within(d Duration, what string) {
	if d.MS > c.p.Duration.MS {
		c.errorf(d.Pos, "%s %s is after the end of the session (%s)", what, FormatClock(d.MS), FormatClock(c.p.Duration.MS))
	}
}

func oneOf(v string, allowed ...string) bool { return slices.Contains(allowed, v) }

func (c *compiler) check() {
	p := c.p
	if p.Name == "" {
		c.errorf(p.Pos, "the pack needs a name")
	}
	if p.Schema != 1 {
		c.errorf(p.Pos, "schema %d is not supported (only 1)", p.Schema)
	}
	if b := p.Scripting.Budget.MS; b <= 0 || b > 1000 {
		c.errorf(p.Scripting.Budget.Pos, "scripting.budget must be between 1ms and 1s")
	}
	if p.Tick.MS <= 0 {
		c.errorf(p.Tick.Pos, "tick must be positive")
	}
	if p.Duration.MS <= 0 {
		c.errorf(p.Pos, "the pack needs a positive duration (the longest a session runs)")
	}
	if p.LLM.Timeout.MS <= 0 || p.LLM.AttemptTimeout.MS <= 0 || p.LLM.AttemptTimeout.MS > p.LLM.Timeout.MS {
		c.errorf(p.LLM.Timeout.Pos, "llm: timeout must be positive and attempt_timeout within it")
	}
	if *p.LLM.Retries < 0 || *p.LLM.Retries > 10 {
		c.errorf(p.Pos, "llm.retries must be between 0 and 10")
	}
	if p.Voice.Mode == "" {
		p.Voice.Mode = "tts"
	}
	if !oneOf(p.Voice.Mode, "tts", "live") {
		c.errorf(p.Pos, "voice.mode must be tts or live, not %q", p.Voice.Mode)
	}
	if p.Voice.WordsPerMinute < 0 {
		c.errorf(p.Pos, "voice.words_per_minute must be positive")
	}

	p.roles = map[string]int{}
	if len(p.Roles) == 0 {
		c.errorf(p.Pos, "the pack needs at least one role")
	}
	for i, r := range p.Roles {
		if !isIdent(r.ID) || oneOf(r.ID, RoleLast, RoleSame, RoleAddressed, RoleActive) {
			c.errorf(r.Pos, "role %q: ids are letters, digits and _, and not last/same/addressed/active", r.ID)
		}
		if _, dup := p.roles[r.ID]; dup {
			c.errorf(r.Pos, "role %q is defined twice", r.ID)
		}
		p.roles[r.ID] = i
		p.Roles[i].focus = c.keywords(r.Pos, "focus", r.Focus)
		if r.WordsPerMinute < 0 {
			c.errorf(r.Pos, "role %q: words_per_minute must be positive", r.ID)
		}
	}

	for i := range p.Timeline.Anchors {
		a := &p.Timeline.Anchors[i]
		c.id(a.Pos, "anchor", a.ID)
		c.within(a.At, "anchor "+a.ID)
		switch a.Action {
		case "say":
			c.turn(a.Pos, &a.Turn, "anchor "+a.ID)
		case "end":
		default:
			c.errorf(a.Pos, "anchor %s: action must be say or end, not %q", a.ID, a.Action)
		}
	}
	for i := range p.Timeline.Windows {
		w := &p.Timeline.Windows[i]
		c.id(w.Pos, "window", w.ID)
		if !w.Close.IsSet() || w.Close.MS <= w.Open.MS {
			c.errorf(w.Pos, "window %s: close must be after open", w.ID)
		}
		c.within(w.Close, "window "+w.ID+" close")
		c.turn(w.Pos, &w.Turn, "window "+w.ID)
		if !oneOf(w.OnClose, "fire", "skip") {
			c.errorf(w.Pos, "window %s: on_close must be fire or skip, not %q", w.ID, w.OnClose)
		}
	}

	for i := range p.Routing {
		r := &p.Routing[i]
		c.id(r.Pos, "route", r.ID)
		switch r.Type {
		case RouteAnchor:
		case RouteAddressed:
			if r.Field == "" && len(r.Mentions) == 0 {
				c.errorf(r.Pos, "route %s: addressed routes need a field or mentions", r.ID)
			}
			if r.Field != "" && r.Field != "addressed_to" {
				c.errorf(r.Pos, "route %s: field must be addressed_to", r.ID)
			}
			for _, m := range r.Mentions {
				c.roleRef(m.Pos, "mention "+m.Key, m.Value)
			}
		case RouteIntent:
			if len(r.Intents) == 0 {
				c.errorf(r.Pos, "route %s: intent routes need intents", r.ID)
			}
			for j := range r.Intents {
				in := &r.Intents[j]
				in.words = c.keywords(in.Pos, "keywords", in.Keywords)
				c.roleRef(in.Pos, "intent "+in.Tag, in.Role)
				if len(in.Keywords) == 0 {
					c.errorf(in.Pos, "intent %s needs keywords", in.Tag)
				}
			}
		case RouteRole:
			c.roleRef(r.Pos, "route "+r.ID, r.Role, RoleLast, RoleActive)
		case RouteScript:
			h := Hook{Script: r.Script, OnError: r.OnError}
			c.hook(&h, "route "+r.ID, "skip", "end")
			r.OnError = h.OnError
		default:
			c.errorf(r.Pos, "route %s: type must be anchor, addressed, intent, role or script, not %q", r.ID, r.Type)
		}
	}

	d := &p.TurnTaking.Defer
	if d.When.Set() {
		if d.Max.MS <= 0 {
			c.errorf(d.When.Pos, "turn_taking.defer needs a positive max")
		}
		if d.OnCap.Kind != "" || d.OnCap.Role != "" {
			c.turn(d.When.Pos, &d.OnCap, "turn_taking.defer.on_cap", RoleSame, RoleLast)
		}
	}

	if !oneOf(p.Silence.StartAfter, "question", "any", "none") {
		c.errorf(p.Pos, "silence.start_after must be question, any or none, not %q", p.Silence.StartAfter)
	}
	for i := range p.Silence.Steps {
		s := &p.Silence.Steps[i]
		if s.After.MS <= 0 {
			c.errorf(s.Pos, "silence step %d needs a positive after", i+1)
		}
		switch s.Action {
		case "say":
			c.turn(s.Pos, &s.Turn, fmt.Sprintf("silence step %d", i+1), RoleLast, RoleActive)
		case "auto_advance", "end":
		default:
			c.errorf(s.Pos, "silence step %d: action must be say, auto_advance or end, not %q", i+1, s.Action)
		}
	}

	sc := &p.SpeechConfidence
	if len(sc.Steps) > 0 && !sc.Threshold.IsSet() {
		c.errorf(p.Pos, "speech_confidence needs a threshold")
	}
	for i := range sc.Steps {
		s := &sc.Steps[i]
		if s.Count.Value < 1 || s.Count.Value != float64(int(s.Count.Value)) || (i > 0 && s.Count.Value <= sc.Steps[i-1].Count.Value) {
			c.errorf(s.Pos, "speech_confidence step counts must start at 1 or more and increase")
		}
		c.turn(s.Pos, &s.Turn, fmt.Sprintf("speech_confidence step %d", i+1), RoleLast, RoleAddressed)
	}

	g := &p.Guardrails
	if g.MaxSentences > 0 && g.MinSentences > g.MaxSentences {
		c.errorf(p.Pos, "guardrails: min_sentences is above max_sentences")
	}
	c.hook(g.Rewrite, "guardrails.rewrite", "skip", "fallback", "end")
	c.hook(p.LLM.Shape, "llm.shape", "skip", "end")
	seenPart := map[string]bool{}
	for _, part := range p.LLM.Assembly {
		if !oneOf(part, "persona", "role", "goal", "context", "constraints") || seenPart[part] {
			c.errorf(p.LLM.Timeout.Pos, "llm.assembly: %q is not one of persona, role, goal, context, constraints, or is listed twice", part)
		}
		seenPart[part] = true
	}
	if !oneOf(g.OnViolation, "rewrite", "fallback", "pass") {
		c.errorf(p.Pos, "guardrails.on_violation must be rewrite, fallback or pass, not %q", g.OnViolation)
	}

	for i := range p.Rules {
		r := &p.Rules[i]
		c.id(r.Pos, "rule", r.ID)
		triggers := 0
		for _, set := range []bool{r.On.Set(), r.At.IsSet(), r.Every.IsSet()} {
			if set {
				triggers++
			}
		}
		if triggers != 1 {
			c.errorf(r.Pos, "rule %s needs exactly one of on, at, every", r.ID)
		}
		if r.Every.IsSet() && r.Every.MS < p.Tick.MS {
			c.errorf(r.Every.Pos, "rule %s: every must be at least one tick", r.ID)
		}
		c.within(r.At, "rule "+r.ID)
		if len(r.Do) == 0 {
			c.errorf(r.Pos, "rule %s does nothing (add do:)", r.ID)
		}
		for j := range r.Do {
			c.action(&r.Do[j], "rule "+r.ID)
		}
	}
	c.checkPanel()
	p.ruleOn = map[Trigger][]*Rule{}
	for i := range p.Rules {
		r := &p.Rules[i]
		if !r.On.Set() {
			continue
		}
		if r.On.Kind == TriggerTool {
			if _, ok := p.Tool(r.On.Name); !ok {
				c.errorf(r.On.Pos, "rule %s: on: %s names no tool of this pack%s", r.ID, r.On.Trigger, c.suggest(r.On.Name, p.toolNames()))
			}
		}
		p.ruleOn[r.On.Trigger] = append(p.ruleOn[r.On.Trigger], r)
	}
	for _, rs := range p.ruleOn {
		slices.SortStableFunc(rs, func(a, b *Rule) int {
			return cmp.Or(cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.ID, b.ID))
		})
	}
	for i := range p.End {
		e := &p.End[i]
		c.id(e.Pos, "end rule", e.ID)
		if !e.When.Set() {
			c.errorf(e.Pos, "end rule %s needs when", e.ID)
		}
	}
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
func (p *Pack) RoleIDs() []string {
	out := make([]string, len(p.Roles))
	for i, r := range p.Roles {
		out[i] = r.ID
	}
	return out
}

// Role returns the role with id.
func (p *Pack) Role(id string) (*Role, bool) {
	i, ok := p.roles[id]
	if !ok {
		return nil, false
	}
	return &p.Roles[i], true
}
