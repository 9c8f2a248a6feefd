package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/batonhq/baton/rules"
)

// ToolLoopLimit is how many refused rounds of tool calls in a row from one
// role count as a loop: the turn that reaches it ends (with the role's
// fallback line if it said nothing), an adapter_error is reported and rules
// trigger: tool_loop run. A live model keeps calling by itself, so each of
// its refused calls counts as a round.
const ToolLoopLimit = 3

// MaxToolRounds is the most rounds of tool calls one turn may take, each
// answered or not. A model still calling tools after that is looping
// however well its calls go (reading the same file again and again, say):
// its calls are not run, and it is reported and handled as a tool loop.
const MaxToolRounds = 10

// tools are functions agents call. A call is checked (offered now, valid
// arguments) and handed to the pack's rules trigger: tool:NAME, whose
// tool_result and tool_error actions answer it; a refused call goes back
// to the model so it can correct itself.
type tools struct {
	refused []int // refused calls in a row, by pack role index
	call    *toolCall
}

// toolCall is the call whose handler rules are running.
type toolCall struct {
	result  json.RawMessage
	errText string
}

func (tl *tools) init(s *Session) { tl.refused = make([]int, len(s.p.Roles)) }

// offeredTools lists the tools offered to role now, as the model sees
// them: descriptions rendered for the role, choices as enums.
func (s *Session) offeredTools(role string) []ToolDecl {
	var out []ToolDecl
	for i := range s.p.Tools {
		t := &s.p.Tools[i]
		if choices, _, ok := s.offer(t, role); ok {
			out = append(out, ToolDecl{Name: t.Name, Description: s.render(&t.Description, role), Parameters: t.ParamsWith(choices)})
		}
	}
	return out
}

// offer reports whether t is offered to role now, and with which choices;
// when it is not, why says so, for a refusal the model can act on.
func (s *Session) offer(t *rules.Tool, role string) (choices [][]string, why string, ok bool) {
	if !s.evalBool(&t.Offered, role) {
		return nil, "its offered condition is false", false
	}
	return s.toolChoices(t, role)
}

// toolChoices evaluates a tool's choices for role, in declared order; ok
// is false when a list is empty or not a list, as no call could be valid,
// and why names the parameter.
func (s *Session) toolChoices(t *rules.Tool, role string) (_ [][]string, why string, ok bool) {
	if len(t.Choices) == 0 {
		return nil, "", true
	}
	out := make([][]string, len(t.Choices))
	for i := range t.Choices {
		ch := &t.Choices[i]
		s.env.SetRole(role)
		v, err := s.env.Eval(&ch.Values.Expr)
		if err != nil {
			s.note("", "tool "+t.Name+" choices for "+ch.Param+": "+err.Error())
			return nil, "its choices for " + ch.Param + " failed", false
		}
		list, isList := v.([]any)
		if strs, ok := v.([]string); ok {
			isList = true
			for _, x := range strs {
				list = append(list, x)
			}
		}
		if !isList {
			s.note("", "tool "+t.Name+" choices for "+ch.Param+": not a list")
			return nil, "its choices for " + ch.Param + " failed", false
		}
		for _, x := range list {
			out[i] = append(out[i], rules.Stringify(x))
		}
		if len(out[i]) == 0 {
			return nil, "no value of " + ch.Param + " is left to choose", false
		}
	}
	return out, "", true
}

// badChoices lists the arguments outside their current choices.
func badChoices(t *rules.Tool, choices [][]string, args map[string]any) []string {
	var out []string
	for i, ch := range t.Choices {
		v, ok := args[ch.Param]
		if !ok {
			continue // required-ness is the schema's business
		}
		if str, isStr := v.(string); !isStr || !slices.Contains(choices[i], str) {
			out = append(out, fmt.Sprintf("%s: %v is not one of [%s]", ch.Param, v, strings.Join(choices[i], " ")))
		}
	}
	return out
}

// handleTool validates a call and runs its handler rules. The result is
// reported as a tool_result effect and returned.
func (s *Session) handleTool(role string, call ToolCall) ToolStep {
	step := ToolStep{Call: call}
	// A refusal says what is wrong in words for the model and, when the
	// tool has choices, lists them as data, so a caller acts on the values
	// rather than parsing the words.
	var allowed map[string][]string
	var available []string
	fail := func(msg string) ToolStep {
		step.IsError = true
		res := map[string]any{"error": msg}
		if allowed != nil {
			res["choices"] = allowed
		}
		if available != nil {
			res["available"] = available
		}
		step.Result, _ = json.Marshal(res)
		s.emit(Effect{Type: EffectToolResult, ID: call.ID, Agent: role, Kind: call.Name, Data: step.Result, IsError: true, Reason: msg})
		return step
	}
	tool, known := s.p.Tool(call.Name)
	s.coverage.hit(s, rules.CoverTool, call.Name)
	var choices [][]string
	why, offered := "", false
	if known {
		choices, why, offered = s.offer(tool, role)
	}
	if !offered {
		available = []string{}
		for _, d := range s.offeredTools(role) {
			available = append(available, d.Name)
		}
		return fail(s.notAvailable(role, call.Name, why, known))
	}
	// Every refusal of the arguments names the tool's parameters and
	// the required ones (paramsHint) and, when it has choices, carries
	// them, so the model can correct the call whatever was wrong with it.
	if len(tool.Choices) > 0 {
		allowed = map[string][]string{}
		for i, ch := range tool.Choices {
			allowed[ch.Param] = choices[i]
		}
	}
	var args map[string]any
	raw := call.Args
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&args); err != nil {
		return fail("arguments are not a JSON object: " + err.Error() + paramsHint(tool))
	}
	args = normalizeJSON(args).(map[string]any)
	problems := tool.Params().Validate(args)
	problems = append(problems, badChoices(tool, choices, args)...)
	if len(problems) > 0 {
		return fail("invalid arguments: " + strings.Join(problems, "; ") + paramsHint(tool))
	}
	allowed = nil // a handler's refusal is about the call's meaning
	s.tools.call = &toolCall{}
	s.fireToolRules(rules.ToolTrigger(call.Name), rules.ToolView{ID: call.ID, Name: call.Name, Caller: role, Args: args})
	tc := s.tools.call
	s.tools.call = nil
	if tc.errText != "" {
		return fail(tc.errText)
	}
	if tc.result == nil && tool.Executor == rules.ExecClient {
		// The gate rules let it through and gave no answer of their
		// own: the client runs it; its result arrives later.
		s.clientTools.ask(s, role, call, tool)
		step.pending = true
		return step
	}
	if ri := s.roleIdx(role); ri >= 0 {
		s.tools.refused[ri] = 0
	}
	step.Result = tc.result
	if step.Result == nil {
		step.Result = json.RawMessage(`{"ok":true}`)
	}
	s.emit(Effect{Type: EffectToolResult, ID: call.ID, Agent: role, Kind: call.Name, Data: step.Result})
	return step
}

// paramsHint names a tool's parameters and the required ones, for a
// refusal of its arguments: "" for a tool without parameters.
func paramsHint(t *rules.Tool) string {
	sc := t.Params()
	if sc == nil || len(sc.Properties) == 0 {
		return ""
	}
	names := slices.Sorted(maps.Keys(sc.Properties))
	hint := " (parameters: " + strings.Join(names, ", ")
	if len(sc.Required) > 0 {
		hint += "; required: " + strings.Join(sc.Required, ", ")
	}
	return hint + ")"
}

// fireToolRules runs the rules on trg with the call tv as their `tool`.
func (s *Session) fireToolRules(trg rules.Trigger, tv rules.ToolView) {
	defer s.env.Scope(rules.Scope{Tool: &tv})()
	s.fireRules(trg)
}

// notAvailable words the refusal of a call to a tool role cannot call
// now: the tools it can call instead or, when there are none, that in
// words and why, so the model stops calling rather than guessing names.
func (s *Session) notAvailable(role, name, why string, known bool) string {
	var names []string
	for _, d := range s.offeredTools(role) {
		names = append(names, d.Name)
	}
	head := "tool " + name + " is not available now"
	switch {
	case len(names) > 0:
		return fmt.Sprintf("%s (available: %s)", head, strings.Join(names, ", "))
	case len(s.p.Tools) == 0:
		return fmt.Sprintf("%s: the pack has no tools, so none are available to %s", head, role)
	case !known:
		return fmt.Sprintf("%s: the pack has no tool %s, and no tools are available to %s now", head, name, role)
	}
	return fmt.Sprintf("%s (%s), and no tools are available to %s now", head, why, role)
}

// refusedRound counts a round with a refused call; it reports whether
// the role has now looped (ToolLoopLimit rounds in a row), which is
// reported and runs the tool_loop rules, and starts the count again.
func (s *Session) refusedRound(role string, last ToolCall) bool {
	ri := s.roleIdx(role)
	if ri < 0 {
		return false
	}
	s.tools.refused[ri]++
	if s.tools.refused[ri] < ToolLoopLimit {
		return false
	}
	s.tools.refused[ri] = 0
	s.emit(Effect{Type: EffectAdapterError, Agent: role, Kind: last.Name, Reason: fmt.Sprintf("tool loop: %d refused rounds of tool calls in a row", ToolLoopLimit)})
	s.fireToolRules(rules.EngineTrigger(rules.TriggerToolLoop), rules.ToolView{ID: last.ID, Name: last.Name, Caller: role})
	return true
}

// madeProgress notes a role's reply that said a line without a refused
// call: whatever it refused before, it is not looping.
func (s *Session) madeProgress(role string) {
	if ri := s.roleIdx(role); ri >= 0 {
		s.tools.refused[ri] = 0
	}
}

// turnTools handles a reply that calls tools. Each call runs first; the
// text that came with them is said only if none was refused (a client
// tool's call counts as accepted once its gate rules let it through:
// the text does not wait for the client's answer). A round with a
// refusal says nothing: it goes back to the model, its text and the
// refusals with it (the round is marked withheld), so the model can
// correct itself, until the role loops (ToolLoopLimit).
func (s *Session) turnTools(a *turn, r *LLMResult) {
	if r.IntentTag != "" {
		a.intentTag = r.IntentTag
	}
	hasText := strings.TrimSpace(r.Text) != ""
	a.stale = "" // what follows is asked for now
	if len(a.toolRounds) >= MaxToolRounds && !s.ended {
		if hasText {
			s.deliverChecked(a, r.Text, false, true)
		}
		s.toolRoundsSpent(a, r.ToolCalls[0], hasText)
		return
	}
	round := ToolRound{Text: r.Text}
	refused := -1 // the last refused call of the round
	pending := false
	for i, c := range r.ToolCalls {
		if s.ended {
			return
		}
		if c.ID == "" || s.idTaken(c.ID, round.Steps) {
			// Unique in the session, and the same on every replay. A
			// model may leave ids out, or reuse one (some number their
			// calls afresh every reply): two calls under one id could
			// not be told apart when their results come back.
			c.ID = a.reqID + "-call-" + strconv.Itoa(i+1)
		}
		var st ToolStep
		if c.Role != "" && c.Role != a.role {
			// A call is owned by the request that made it: it runs as
			// the request's role or not at all.
			st = s.refuseCall(a.role, c, "refused: the call names "+c.Role+", but it came in "+a.role+"'s turn; a call runs only as the role whose turn asked")
		} else {
			st = s.handleTool(a.role, c)
		}
		round.Steps = append(round.Steps, st)
		if st.IsError {
			refused = len(round.Steps) - 1
		}
		pending = pending || st.pending
	}
	if s.ended {
		return
	}
	f := &s.floor
	spoke := false
	if hasText && refused < 0 && f.active == a {
		s.deliverChecked(a, r.Text, false, true)
		spoke = true
		round.Said = a.text
	} else if hasText {
		round.Withheld = true
	}
	if s.ended {
		return
	}
	if pending {
		// The client runs some of the calls: the turn goes on, with the
		// round and its results, once they are all answered (and counts
		// towards the loop then, if any was refused).
		again := s.continuation(a, round)
		again.clientRound = true
		s.clientTools.wait(again)
		if !spoke && f.active == a {
			f.active = nil
		}
		f.queue = slices.Insert(f.queue, 0, again)
		return
	}
	if refused < 0 {
		if spoke {
			s.madeProgress(a.role)
		} else if f.active == a {
			f.active = nil // the turn was only a tool call
		}
		return
	}
	if s.refusedRound(a.role, round.Steps[refused].Call) {
		switch {
		case s.ended || f.active != a:
		case a.spokeInRounds():
			f.active = nil // it said its line in an earlier round
		default:
			s.deliver(a, s.fallback(a), true)
		}
		return
	}
	again := s.continuation(a, round)
	if f.active == a {
		f.active = nil
	}
	f.queue = slices.Insert(f.queue, 0, again)
}

// refuseCall refuses a call that is not run at all (it is not its
// caller's to make now), reporting why; it does not count towards the
// caller's tool loop.
func (s *Session) refuseCall(role string, c ToolCall, msg string) ToolStep {
	res, _ := json.Marshal(map[string]string{"error": msg})
	s.emit(Effect{Type: EffectToolResult, ID: c.ID, Agent: role, Kind: c.Name, Data: res, IsError: true, Reason: msg})
	return ToolStep{Call: c, Result: res, IsError: true}
}

// toolRoundsSpent ends a turn whose model calls tools past
// MaxToolRounds: reported as a loop, the tool_loop rules run, and the
// role's fallback is said if the turn has said nothing.
func (s *Session) toolRoundsSpent(a *turn, first ToolCall, spoke bool) {
	s.emit(Effect{Type: EffectAdapterError, ID: a.reqID, Agent: a.role, Kind: first.Name,
		Reason: fmt.Sprintf("tool loop: still calling tools after %d rounds in one turn", MaxToolRounds)})
	s.fireToolRules(rules.EngineTrigger(rules.TriggerToolLoop), rules.ToolView{ID: first.ID, Name: first.Name, Caller: a.role})
	f := &s.floor
	switch {
	case s.ended || f.active != a || spoke:
	case a.spokeInRounds():
		f.active = nil
	default:
		s.deliver(a, s.fallback(a), true)
	}
}

// idTaken reports whether a call id is already used in the session: by
// an earlier call of this round, or by a client call made before.
func (s *Session) idTaken(id string, steps []ToolStep) bool {
	for _, st := range steps {
		if st.Call.ID == id {
			return true
		}
	}
	return s.ClientToolState(id) != ClientToolUnknown
}

// continuation is the turn that asks the model again after round: the
// same turn, with the round added to what the request carries.
func (s *Session) continuation(a *turn, round ToolRound) *turn {
	again := *a
	again.id = s.nextID('t')
	again.toolRounds = append(append([]ToolRound(nil), a.toolRounds...), round)
	again.state = tsQueued
	again.reqID, again.msgID, again.text = "", "", ""
	again.outcome, again.violations, again.original = "", nil, ""
	again.guard = guard{} // a new request: its own answers and budget
	again.deferrable = false
	again.waiting, again.clientRound = 0, false
	return &again
}

// onToolCall handles a tool_call input from a live session speaking as a
// role: the floor holder by default.
func (c *ToolCall) apply(s *Session) { s.onToolCall(c) }

func (s *Session) onToolCall(c *ToolCall) {
	role := c.Role
	if role == "" {
		role = s.resolveRole(rules.RoleRef{Kind: rules.RoleRefActive}, "")
	}
	if s.ClientToolState(c.ID) != ClientToolUnknown {
		// A live session's vendor matches the answer by this id, so it
		// cannot be renamed; a second call under it is refused.
		msg := "a call with id " + c.ID + " was already made; give each call its own id"
		res, _ := json.Marshal(map[string]string{"error": msg})
		s.emit(Effect{Type: EffectToolResult, ID: c.ID, Agent: role, Kind: c.Name, Data: res, IsError: true, Reason: msg})
		return
	}
	if h := s.handoff.holder; c.Role != "" && h != "" && c.Role != h {
		// A live session that is no longer (or never was) the floor
		// holder's: its call is not run, so it spends no ticket and
		// moves no floor.
		s.refuseCall(c.Role, *c, "refused: "+c.Role+" does not hold the floor ("+h+" does); only the floor holder's calls run")
		return
	}
	// A client tool's answer counts when it arrives (clienttools.go).
	if st := s.handleTool(role, *c); st.IsError {
		s.refusedRound(role, *c)
	}
}

// normalizeJSON turns json.Number into int64 or float64, as expressions
// and schema checks expect.
func normalizeJSON(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeJSON(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = normalizeJSON(e)
		}
		return x
	}
	return v
}
