package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/rules/script"
)

// Scripts run in the rules/script sandbox. Everything a script can observe
// comes from the session (the clock, the seeded random source, the data
// handed to it), so a script is as deterministic as the engine. The one
// thing that is not is a live session's time budget: a script that runs
// past it is stopped, and whether it got that far can depend on the
// machine. Packs should stay well inside the budget; the budget is a
// safety net.

// maxScriptLine bounds a line a script may return for an agent to say.
const maxScriptLine = rules.MaxActionText

// scriptRuns numbers the script calls of one step and holds what a replay
// knows of them.
//
// A session measures the pack's budget on the wall clock only when its
// host runs it live (Options.LiveBudgets), and that budget is the one
// input the engine does not get from its caller. So its outcome is made a
// recorded fact: a call whose wall time reached its budget is stopped and
// reported in an effect with the time it ran, the host records that with
// the step, and a replay passes the facts back in (Input.Scripts): a call
// stopped live is stopped again without running, and every other call
// runs to completion.
//
// Every other call, offline or replayed, runs under script.ReplayBudget,
// far above any budget: only a runaway reaches it, and a machine's speed
// changes nothing else. A stop there is reported the same way, so a log
// of an offline run replays too.
type scriptRuns struct {
	n     int
	facts *ScriptFacts
	// labels names script conditions in reports, made once each: an
	// input check runs on every message and its name is rarely shown.
	labels map[*rules.Expr]string
	// draws is the running call's random source.
	draws drawCounter
}

// conditionLabel is how reports name the script condition x.
func (s *Session) conditionLabel(x *rules.Expr) string {
	if l, ok := s.scripts.labels[x]; ok {
		return l
	}
	if s.scripts.labels == nil {
		s.scripts.labels = map[*rules.Expr]string{}
	}
	l := "condition " + x.Pos.String()
	s.scripts.labels[x] = l
	return l
}

// drawCounter is a call's random source: the session's, counting what
// the call drew, which a replay of a stopped call draws again.
type drawCounter struct {
	rng *rand.Rand
	n   int
}

func (d *drawCounter) Float64() float64 {
	d.n++
	return d.rng.Float64()
}

func (r *scriptRuns) begin(f *ScriptFacts) { r.n, r.facts = 0, f }

// callScript runs a pack function. A failure is reported as a
// script_error effect naming the rule and the script's file:line:col.
func (s *Session) callScript(ref *rules.ScriptRef, arg any, rule string) (any, bool) {
	call := s.scripts.n
	s.scripts.n++
	if s.p.Scripts == nil {
		s.emit(Effect{Type: EffectScriptError, Rule: rule, Reason: "no scripts loaded for " + ref.String()})
		return nil, false
	}
	budget := time.Duration(s.p.Scripting.Budget.MS) * time.Millisecond
	if f := s.scripts.facts; f != nil {
		if stop, ok := f.stopped(call); ok {
			// The call drew from the session's random source before it
			// was stopped; draw as much so later calls see what they saw.
			for range stop.Draws {
				s.rng.Float64()
			}
			// Reported as when it was first stopped, at the bound it
			// ran under then.
			s.budgetSpent(ref, rule, call, scriptBound(budget, !s.opts.LiveBudgets), stop)
			return nil, false
		}
	}
	replay := s.scripts.facts != nil || !s.opts.LiveBudgets
	if f, ok := arg.(*facade); ok {
		defer f.done()
	}
	s.scripts.draws = drawCounter{rng: s.rng}
	out, err := s.p.Scripts.Run(script.Call{
		Func:   ref.Func,
		Arg:    arg,
		NowMS:  s.now,
		Rand:   &s.scripts.draws,
		Budget: budget,
		Replay: replay,
	})
	if err != nil {
		if re, ok := errors.AsType[*script.RunError](err); ok && re.Kind == "timeout" {
			s.budgetSpent(ref, rule, call, scriptBound(budget, replay), ScriptStop{Call: call, TookUS: re.Took.Microseconds(), At: re.Pos, Draws: s.scripts.draws.n})
			return nil, false
		}
		s.emit(Effect{Type: EffectScriptError, Rule: rule, Reason: ref.String() + ": " + err.Error()})
		return nil, false
	}
	return out, true
}

// scriptBound is how long a call may run: the pack's budget on the wall
// clock, or script.ReplayBudget for a call replayed or offline.
func scriptBound(budget time.Duration, replay bool) time.Duration {
	if replay {
		return script.ReplayBudget
	}
	return budget
}

// budgetSpent reports a call stopped at its budget, with the measured
// facts a replay needs to stop it again.
func (s *Session) budgetSpent(ref *rules.ScriptRef, rule string, call int, budget time.Duration, stop ScriptStop) {
	stop.Call = call
	data, _ := json.Marshal(stop)
	where := ""
	if stop.At != "" {
		where = stop.At + ": "
	}
	s.emit(Effect{Type: EffectScriptError, Rule: rule, Kind: ScriptBudget, Data: data,
		Reason: fmt.Sprintf("%s: %stimeout: %s: stopped after its %s budget (ran %s)", ref, where, ref.Func, budget, time.Duration(stop.TookUS)*time.Microsecond)})
}

// scriptFailed applies a hook's on_error policy; it reports whether the
// caller should stop (the session ended).
func (s *Session) scriptFailed(policy rules.OnError, rule string) bool {
	if policy == rules.ErrorEnd {
		s.end("script_error", rule)
		return true
	}
	return false
}

func (s *Session) badResult(ref *rules.ScriptRef, rule, format string, args ...any) {
	s.emit(Effect{Type: EffectScriptError, Rule: rule, Reason: ref.String() + ": result: " + fmt.Sprintf(format, args...)})
}

// scriptArg is the facade a script sees: plain data, never engine types.
func (s *Session) scriptArg(role string) *facade {
	envHost{s}.Refresh(s.env)
	return &facade{s: s, role: role}
}

// facade is the session as a script's argument. Its fields are built
// when the script reads them (most read two or three of a dozen), from
// the state at the call: nothing changes while a script runs. After the
// call it is emptied, so a script that keeps its argument (in a Map a
// pooled runtime carries to another session's call) holds nothing live.
type facade struct {
	s     *Session
	role  string
	extra map[string]any // what a hook adds: the line being rewritten, the request being shaped
	// views hold the state views a script reads (msg, candidate,
	// session, floor), handed out by pointer: a view boxed by value was
	// an allocation per read.
	views [4]viewObject
}

// view is the i'th of f's views, of shape.
func (f *facade) view(i int, shape *viewShape) (any, bool) {
	v := &f.views[i]
	v.f, v.shape = f, shape
	return v, true
}

func (f *facade) set(k string, v any) {
	if f.extra == nil {
		f.extra = map[string]any{}
	}
	f.extra[k] = v
}

// done ends the facade's call.
func (f *facade) done() { f.s, f.extra = nil, nil }

func (f *facade) Keys() []string {
	if f.s == nil {
		return nil
	}
	keys := make([]string, 0, len(facadeKeys)+len(f.extra))
	for _, k := range facadeKeys {
		if _, ok := f.Field(k); ok {
			keys = append(keys, k)
		}
	}
	for k := range f.extra {
		if _, builtIn := facadeFields[k]; !builtIn {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func (f *facade) Field(k string) (any, bool) {
	if f.s == nil {
		return nil, false
	}
	if v, ok := f.extra[k]; ok {
		return v, true
	}
	if build, ok := facadeFields[k]; ok {
		// Built once per call: nothing changes while a script runs, and
		// a script that reads arg.files in a loop should not rebuild it.
		v, ok := build(f)
		if _, view := v.(script.Object); ok && !view {
			f.set(k, v)
		}
		return v, ok
	}
	return nil, false
}

// facadeFields builds each field of the facade; facadeKeys lists them in
// order.
var facadeFields = map[string]func(f *facade) (any, bool){
	"now_ms":       func(f *facade) (any, bool) { return f.s.now, true },
	"role":         func(f *facade) (any, bool) { return f.role, true },
	"roles":        func(f *facade) (any, bool) { return f.s.p.RoleIDs(), true },
	"last_message": func(f *facade) (any, bool) { return f.s.cand.lastMsg, true },
	"msg":          func(f *facade) (any, bool) { return f.view(0, msgView) },
	"candidate":    func(f *facade) (any, bool) { return f.view(1, candidateView) },
	"session":      func(f *facade) (any, bool) { return f.view(2, sessionView) },
	"floor":        func(f *facade) (any, bool) { return f.view(3, floorView) },
	"transcript": func(f *facade) (any, bool) {
		tail := f.s.transcript.tail(f.s.p.LLM.TranscriptTail)
		lines := make([]any, len(tail))
		for i, l := range tail {
			lines[i] = map[string]any{"t_ms": l.T, "speaker": l.Speaker, "text": l.Text, "unclear": l.Unclear}
		}
		return lines, true
	},
	"vars": func(f *facade) (any, bool) {
		vars := make(map[string]any, len(f.s.p.Vars))
		for _, pv := range f.s.p.Vars {
			vars[pv.ID] = f.s.env.Var(pv.ID)
		}
		return vars, true
	},
	// The session's inputs, supplied or default: copies, like args.
	"inputs": func(f *facade) (any, bool) {
		ins := make(map[string]any, len(f.s.p.Inputs))
		for _, d := range f.s.p.Inputs {
			v, _ := f.s.in.Value(d.ID)
			ins[d.ID] = cloneData(v)
		}
		return ins, true
	},
	"constants": func(f *facade) (any, bool) {
		consts := make(map[string]any, len(f.s.p.Constants))
		for _, c := range f.s.p.Constants {
			consts[c.ID] = c.Norm
		}
		return consts, true
	},
	// A job's arguments and result, in its handlers: copies, so a
	// script that changes them changes nothing the session holds.
	"args": func(f *facade) (any, bool) {
		a := f.s.env.Args()
		return cloneData(a), len(a) > 0
	},
	"result": func(f *facade) (any, bool) {
		r := f.s.env.Result()
		return cloneData(r), r != nil
	},
	// The context files by path (shared/ID, ROLE/ID), each built when
	// read: a script reads two or three of thirty.
	"files": func(f *facade) (any, bool) { return filesFacade{f}, true },
	"role_info": func(f *facade) (any, bool) {
		if r, ok := f.s.p.Role(f.role); ok {
			return roleObject{r}, true
		}
		return nil, false
	},
	// The answer being checked by the guardrails (a tripwire's condition).
	"reply": func(f *facade) (any, bool) {
		rv := f.s.env.Reply()
		if rv == nil {
			return nil, false
		}
		v := make([]any, len(rv.Violations))
		for i, x := range rv.Violations {
			v[i] = x
		}
		return map[string]any{"text": rv.Text, "role": rv.Role, "violations": v, "attempt": rv.Attempt, "limits": rv.Limits}, true
	},
}

var facadeKeys = slices.Sorted(maps.Keys(facadeFields))

// cloneData copies plain data (JSON-like maps and lists) deeply.
func cloneData(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = cloneData(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneData(e)
		}
		return out
	case []string: // what memory() and available() return
		return slices.Clone(x)
	}
	return v
}

// roleObject is ctx.role_info: the role's id, name, focus and line sets,
// each built when a script reads it (a rewrite script reads one set of
// one list). Every read builds fresh values: a script may change what it
// is given, and the pack is shared.
type roleObject struct{ r *rules.Role }

var roleObjectKeys = []string{"fallback", "focus", "id", "name", "rewrite"}

func (o roleObject) Keys() []string { return roleObjectKeys }

func (o roleObject) Field(k string) (any, bool) {
	switch k {
	case "id":
		return o.r.ID, true
	case "name":
		return o.r.Name, true
	case "focus":
		focus := make([]any, len(o.r.Focus))
		for i, f := range o.r.Focus {
			focus[i] = f
		}
		return focus, true
	case "rewrite":
		return lineSets(o.r.Rewrite), true
	case "fallback":
		return lineSets(o.r.Fallback), true
	}
	return nil, false
}

func lineSets(sets []rules.LineSet) map[string]any {
	out := make(map[string]any, len(sets))
	for _, e := range sets {
		list := make([]any, len(e.Text))
		for i, l := range e.Text {
			list[i] = l
		}
		out[e.ID] = list
	}
	return out
}

// scriptCondition runs a condition script; it must return a boolean.
func (s *Session) scriptCondition(x *rules.Expr, role string) bool {
	out, ok := s.callScript(&x.Script, s.scriptArg(role), s.conditionLabel(x))
	if !ok {
		return false
	}
	b, isBool := out.(bool)
	if !isBool {
		s.badResult(&x.Script, s.conditionLabel(x), "want true or false, got %s", rules.Describe(out))
	}
	return b
}

// scriptRewrite asks the pack's rewrite script for a new line. ok=false
// means carry on without it: the script answered null (use the role's
// rewrite lines) or failed.
func (s *Session) scriptRewrite(t *turn, line string, violations []string) (string, bool) {
	h := s.p.Guardrails.Rewrite
	arg := s.scriptArg(t.role)
	v := make([]any, len(violations))
	for i, x := range violations {
		v[i] = x
	}
	arg.set("text", line)
	arg.set("violations", v)
	arg.set("turn", map[string]any{"kind": t.kind, "goal": t.goal, "rule": t.rule, "role": t.role})
	out, ok := s.callScript(&h.Script, arg, "guardrails.rewrite")
	if ok && out == nil {
		return "", false // the script leaves it to the built-in rewrite
	}
	if ok {
		str, isStr := out.(string)
		switch {
		case !isStr:
			s.badResult(&h.Script, "guardrails.rewrite", "want the rewritten line as text, got %s", rules.Describe(out))
		case str == "" || len(str) > maxScriptLine:
			s.badResult(&h.Script, "guardrails.rewrite", "want 1 to %d characters, got %d", maxScriptLine, len(str))
		default:
			return str, true
		}
	}
	switch h.OnError {
	case rules.ErrorFallback:
		return s.fallback(t), true
	case rules.ErrorEnd:
		s.end("script_error", "guardrails.rewrite")
	}
	return "", false
}

// scriptRoute runs a script route: null means no match, a string is a role
// id, an object may add intent_tag and goal.
func (s *Session) scriptRoute(r *rules.Route) (role, tag, goal string, matched bool) {
	out, ok := s.callScript(&r.Script, s.scriptArg(""), r.ID)
	if !ok {
		s.scriptFailed(r.OnError, r.ID)
		return "", "", "", false
	}
	goal = r.Goal
	switch x := out.(type) {
	case nil:
		return "", "", "", false
	case string:
		role = x
	case map[string]any:
		role, _ = x["role"].(string)
		tag, _ = x["intent_tag"].(string)
		if g, _ := x["goal"].(string); g != "" {
			goal = g
		}
	default:
		s.badResult(&r.Script, r.ID, "want a role id, null or {role, intent_tag, goal}, got %s", rules.Describe(out))
		s.scriptFailed(r.OnError, r.ID)
		return "", "", "", false
	}
	if _, known := s.p.Role(role); !known {
		s.badResult(&r.Script, r.ID, "unknown role %q", role)
		s.scriptFailed(r.OnError, r.ID)
		return "", "", "", false
	}
	return role, tag, goal, true
}

// runScript runs a rule's script and does the actions it returns, each
// decoded and checked as the same action in YAML would be.
func (s *Session) runScript(rule string, h *rules.Hook) {
	out, ok := s.callScript(&h.Script, s.scriptArg(""), rule)
	if !ok {
		s.scriptFailed(h.OnError, rule)
		return
	}
	if out == nil {
		return
	}
	acts, err := s.p.ScriptActions(out)
	if err != nil {
		s.badResult(&h.Script, rule, "%v", err)
		s.scriptFailed(h.OnError, rule)
		return
	}
	// In order: the actions before a bad one are done, the bad one is
	// reported, and on_error decides whether the rest are.
	for _, a := range acts {
		if s.ended {
			return
		}
		if a.Err != nil {
			s.badResult(&h.Script, rule, "%v", a.Err)
			if s.scriptFailed(h.OnError, rule) {
				return
			}
			continue
		}
		s.do(a.Action, rule)
	}
}

// shapeRequest lets the pack's llm.shape script rewrite a turn's request.
func (s *Session) shapeRequest(h *rules.Hook, t *turn, req *LLMRequest) {
	arg := s.scriptArg(t.role)
	arg.set("turn", map[string]any{"kind": t.kind, "goal": t.goal, "rule": t.rule, "role": t.role})
	arg.set("system", req.System)
	arg.set("turn_goal", req.TurnGoal)
	out, ok := s.callScript(&h.Script, arg, "llm.shape")
	if !ok {
		s.scriptFailed(h.OnError, "llm.shape")
		return
	}
	switch x := out.(type) {
	case nil:
	case string:
		req.System = x
	case map[string]any:
		if v, ok := x["system"].(string); ok {
			req.System = v
		}
		if v, ok := x["turn_goal"].(string); ok && v != "" {
			req.TurnGoal = v
		}
		if ctx, ok := x["context"].(map[string]any); ok && len(ctx) > 0 {
			keys := make([]string, 0, len(ctx))
			for k := range ctx {
				keys = append(keys, k)
			}
			slices.Sort(keys) // the script's object has no order we can keep
			req.ScenarioContext = append([]KV(nil), req.ScenarioContext...)
			for _, k := range keys {
				req.ScenarioContext = append(req.ScenarioContext, KV{Key: k, Value: rules.Stringify(ctx[k])})
			}
		}
	default:
		s.badResult(&h.Script, "llm.shape", "want the system text or {system, turn_goal, context}, got %s", rules.Describe(out))
		s.scriptFailed(h.OnError, "llm.shape")
	}
	if len(req.System) > 64<<10 {
		s.badResult(&h.Script, "llm.shape", "system instruction of %d bytes; the limit is 64 KiB", len(req.System))
		req.System = req.System[:64<<10]
	}
}
