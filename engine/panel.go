package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/batonhq/baton/rules"
)

// Panel state: what multi-agent panels track beyond the timeline. Roles
// live in a slice indexed like the pack's roles, and every lookup by name
// goes through the pack's index, so nothing depends on map order.

// maxToolRounds bounds the tool loop inside one turn.
const maxToolRounds = 3

// ToolLoopLimit is how many refused tool calls in a row from one role
// count as a loop: an adapter_error is reported and rules on: tool_loop
// run (a live model keeps calling by itself, so the engine must notice).
const ToolLoopLimit = 5

type roleState struct {
	tickets int
	// refused counts tool calls refused in a row, to catch a looping agent.
	refused int
	slots   map[string]string
	memory  []string
	inject  []string
}

type jobRun struct {
	job   *rules.Job
	args  map[string]any
	phase bool
}

type phaseItem struct {
	job  *rules.Job
	args map[string]any
}

// toolCtx is the tool call whose handler rules are running.
type toolCtx struct {
	result  json.RawMessage
	errText string
}

func (s *Session) roleIdx(id string) int {
	for i := range s.p.Roles {
		if s.p.Roles[i].ID == id {
			return i
		}
	}
	return -1
}

func (s *Session) rs(id string) *roleState {
	if i := s.roleIdx(id); i >= 0 {
		return &s.roleStates[i]
	}
	return nil
}

// envHost exposes panel state to expressions.
type envHost struct{ s *Session }

func (h envHost) Tickets(role string) int {
	if r := h.s.rs(role); r != nil {
		return r.tickets
	}
	return 0
}

func (h envHost) TicketsTotal() int {
	n := 0
	for i := range h.s.roleStates {
		n += h.s.roleStates[i].tickets
	}
	return n
}

// Finished is true for a ticket-holding role whose tickets ran out.
func (h envHost) Finished(role string) bool {
	t := h.s.p.Tickets
	return t != nil && slices.Contains(t.Roles, role) && h.Tickets(role) <= 0
}

func (h envHost) Available() []string {
	t := h.s.p.Tickets
	if t == nil {
		return h.s.p.RoleIDs()
	}
	var out []string
	for _, r := range t.Roles {
		if h.Tickets(r) > 0 {
			out = append(out, r)
		}
	}
	return out
}

// FinishedRoles lists the ticket-holding roles with no tickets left.
func (h envHost) FinishedRoles() []string {
	t := h.s.p.Tickets
	if t == nil {
		return nil
	}
	var out []string
	for _, r := range t.Roles {
		if h.Tickets(r) <= 0 {
			out = append(out, r)
		}
	}
	return out
}

func (h envHost) Active() string { return h.s.floor }

func (h envHost) Memory(role string) []string {
	if r := h.s.rs(role); r != nil {
		return r.memory
	}
	return nil
}

func (h envHost) Slot(role, name string) string { return h.s.slot(role, name) }

func (h envHost) Records(name string) []any { return h.s.records[name] }

func (h envHost) TranscriptText(n int) string {
	tail := h.s.transcript
	if n >= 0 && len(tail) > n {
		tail = tail[len(tail)-n:]
	}
	var b strings.Builder
	for _, l := range tail {
		b.WriteString(l.Speaker)
		b.WriteString(": ")
		b.WriteString(l.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

// slot resolves {{NAME}} for a role: the role's slots as set during the
// session, then as written in the pack, then the session's, then NAME,
// VOICE and MEMORY from the role itself.
func (s *Session) slot(role, name string) string {
	if r := s.rs(role); r != nil {
		if v, ok := r.slots[name]; ok {
			return v
		}
	}
	if pr, ok := s.p.Role(role); ok {
		if v, ok := pr.Slots.Get(name); ok {
			return v
		}
		if v, ok := s.sessionSlots[name]; ok {
			return v
		}
		switch name {
		case "NAME":
			return pr.Name
		case "VOICE":
			return pr.Voice
		case "MEMORY":
			return strings.Join(s.rs(role).memory, "\n")
		}
		return ""
	}
	return s.sessionSlots[name]
}

func (s *Session) render(t *rules.Template, role string) string {
	out, err := t.Render(func(name string) string { return s.slot(role, name) }, func(x *rules.Expr) (any, error) {
		s.syncEnv()
		s.env.SetRole(role)
		return s.env.Eval(x)
	})
	if err != nil {
		s.emit(Effect{Type: EffectNote, Agent: role, Reason: "template: " + err.Error()})
	}
	return out
}

// persona is a role's system instruction: its template rendered with its
// slots, or its persona text.
func (s *Session) persona(role string) string {
	pr, ok := s.p.Role(role)
	if !ok {
		return ""
	}
	if pr.Template != "" {
		if t, ok := s.p.Template(pr.Template); ok {
			return s.render(t, role)
		}
	}
	return pr.Persona
}

// startPanel runs at the first step: tickets are split and setup phases
// begin.
func (s *Session) startPanel() {
	s.env.SetHost(envHost{s})
	if t := s.p.Tickets; t != nil {
		s.distributeTickets(t)
	}
	if len(s.p.Phases) == 0 {
		s.live = true
		return
	}
	for i := range s.p.Phases {
		ph := &s.p.Phases[i]
		job, _ := s.p.Job(ph.Job)
		if !ph.ForEach.Set() {
			s.phases = append(s.phases, phaseItem{job: job, args: s.evalArgs(ph.Args, nil)})
			continue
		}
		s.syncEnv()
		v, err := s.env.Eval(&ph.ForEach)
		if err != nil {
			s.emit(Effect{Type: EffectNote, Reason: "phase for_each: " + err.Error()})
			continue
		}
		for _, item := range asList(v) {
			s.phases = append(s.phases, phaseItem{job: job, args: s.evalArgs(ph.Args, map[string]any{"item": item})})
		}
	}
	s.nextPhase()
}

func asList(v any) []any {
	switch x := v.(type) {
	case []any:
		return x
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out
	case nil:
		return nil
	}
	return []any{v}
}

func (s *Session) evalArgs(defs []rules.Arg, base map[string]any) map[string]any {
	args := map[string]any{}
	for k, v := range base {
		args[k] = v
	}
	for i := range defs {
		s.syncEnv()
		s.env.SetArgs(args, nil)
		v, err := s.env.Eval(&defs[i].Value)
		if err != nil {
			s.emit(Effect{Type: EffectNote, Reason: "args " + defs[i].ID + ": " + err.Error()})
			continue
		}
		args[defs[i].ID] = v
	}
	return args
}

func (s *Session) nextPhase() {
	if len(s.phases) == 0 {
		s.live = true
		s.emit(Effect{Type: EffectLive})
		s.fireRules(rules.EngineTrigger(rules.TriggerLiveStart))
		return
	}
	item := s.phases[0]
	s.phases = s.phases[1:]
	s.startJob(item.job, item.args, true)
}

// distributeTickets splits the budget: every role at least one, the total
// raised to the number of roles, the surplus by weight (largest remainder,
// ties to the earlier role), or as the pack's script decides.
func (s *Session) distributeTickets(t *rules.Tickets) {
	total := max(int(t.Total.Value), len(t.Roles))
	counts := splitTickets(total, t)
	if t.Distribute != nil {
		if c, ok := s.scriptTickets(t, total); ok {
			counts = c
		}
	}
	data := map[string]int{}
	for i, r := range t.Roles {
		s.rs(r).tickets = counts[i]
		data[r] = counts[i]
	}
	raw, _ := json.Marshal(data) // json sorts map keys
	s.emit(Effect{Type: EffectTickets, Data: raw, Reason: fmt.Sprintf("%d tickets", total)})
}

func splitTickets(total int, t *rules.Tickets) []int {
	n := len(t.Roles)
	counts := make([]int, n)
	weights := make([]float64, n)
	sum := 0.0
	for i, r := range t.Roles {
		counts[i] = 1
		weights[i] = 1
		for _, w := range t.Weights {
			if w.ID == r {
				weights[i] = w.Weight.Value
			}
		}
		sum += weights[i]
	}
	surplus := total - n
	if surplus <= 0 || sum == 0 {
		return counts
	}
	rem := make([]float64, n)
	given := 0
	for i := range counts {
		q := float64(surplus) * weights[i] / sum
		f := math.Floor(q)
		counts[i] += int(f)
		given += int(f)
		rem[i] = q - f
	}
	for ; given < surplus; given++ {
		best := 0
		for i := range rem {
			if rem[i] > rem[best] {
				best = i
			}
		}
		counts[best]++
		rem[best] = -1
	}
	return counts
}

func (s *Session) scriptTickets(t *rules.Tickets, total int) ([]int, bool) {
	arg := s.scriptArg("")
	roles := make([]any, len(t.Roles))
	weights := map[string]any{}
	for i, r := range t.Roles {
		roles[i] = r
		weights[r] = 1.0
	}
	for _, w := range t.Weights {
		weights[w.ID] = w.Weight.Value
	}
	arg["total"], arg["ticket_roles"], arg["weights"] = total, roles, weights
	out, ok := s.callScript(&t.Distribute.Script, arg, "tickets.distribute")
	if !ok {
		s.scriptFailed(t.Distribute.OnError, "tickets.distribute")
		return nil, false
	}
	m, isMap := out.(map[string]any)
	if !isMap {
		s.badResult(&t.Distribute.Script, "tickets.distribute", "want {role: count}, got %s", describe(out))
		return nil, false
	}
	counts := make([]int, len(t.Roles))
	sum := 0
	for i, r := range t.Roles {
		f, _ := m[r].(int64)
		if ff, isF := m[r].(float64); isF {
			f = int64(ff)
		}
		if f < 1 {
			s.badResult(&t.Distribute.Script, "tickets.distribute", "%s gets %v; every role needs at least 1", r, m[r])
			return nil, false
		}
		counts[i] = int(f)
		sum += int(f)
	}
	if sum != total {
		s.badResult(&t.Distribute.Script, "tickets.distribute", "the counts add up to %d, not %d", sum, total)
		return nil, false
	}
	return counts, true
}

// offeredTools lists the tools offered to role now.
func (s *Session) offeredTools(role string) []ToolDecl {
	var out []ToolDecl
	for i := range s.p.Tools {
		t := &s.p.Tools[i]
		if s.evalBool(&t.Offered, role) {
			out = append(out, ToolDecl{Name: t.Name, Description: t.Description, Parameters: t.Params().JSON()})
		}
	}
	return out
}

// handleTool validates a call and runs its handler rules (on: tool:NAME).
// The result is reported as a tool_result effect and returned.
func (s *Session) handleTool(role string, call ToolCall) ToolStep {
	step := ToolStep{Call: call}
	fail := func(msg string) ToolStep {
		step.IsError = true
		step.Result, _ = json.Marshal(map[string]string{"error": msg})
		s.emit(Effect{Type: EffectToolResult, ID: call.ID, Agent: role, Kind: call.Name, Data: step.Result, IsError: true, Reason: msg})
		if rs := s.rs(role); rs != nil {
			rs.refused++
			if rs.refused == ToolLoopLimit {
				s.emit(Effect{Type: EffectAdapterError, Agent: role, Kind: call.Name, Reason: fmt.Sprintf("tool loop: %d refused calls in a row", ToolLoopLimit)})
				s.env.Tool = rules.ToolView{ID: call.ID, Name: call.Name, Caller: role}
				s.fireRules(rules.EngineTrigger(rules.TriggerToolLoop))
			}
		}
		return step
	}
	tool, ok := s.p.Tool(call.Name)
	offered := false
	var names []string
	for _, d := range s.offeredTools(role) {
		names = append(names, d.Name)
		offered = offered || d.Name == call.Name
	}
	if !ok || !offered {
		return fail(fmt.Sprintf("tool %s is not available now (available: %s)", call.Name, strings.Join(names, ", ")))
	}
	var args map[string]any
	raw := call.Args
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&args); err != nil {
		return fail("arguments are not a JSON object: " + err.Error())
	}
	args = normalizeJSON(args).(map[string]any)
	if problems := tool.Params().Validate(args); len(problems) > 0 {
		return fail("invalid arguments: " + strings.Join(problems, "; "))
	}
	s.env.Tool = rules.ToolView{ID: call.ID, Name: call.Name, Caller: role, Args: args}
	s.tool = &toolCtx{}
	s.fireRules(rules.ToolTrigger(call.Name))
	tc := s.tool
	s.tool = nil
	if tc.errText != "" {
		return fail(tc.errText)
	}
	if rs := s.rs(role); rs != nil {
		rs.refused = 0
	}
	step.Result = tc.result
	if step.Result == nil {
		step.Result = json.RawMessage(`{"ok":true}`)
	}
	s.emit(Effect{Type: EffectToolResult, ID: call.ID, Agent: role, Kind: call.Name, Data: step.Result})
	return step
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

// emitLiveSession asks the host to connect the floor holder's live speech
// session. It runs after the actions that moved the floor, so the
// instructions injected for the new holder are part of its system prompt.
func (s *Session) emitLiveSession() {
	s.pendingLive = false
	role := s.floor
	if role == "" || s.ended {
		return
	}
	system := s.persona(role)
	if rs := s.rs(role); rs != nil && len(rs.inject) > 0 {
		system = strings.Join(rs.inject, "\n\n") + "\n\n" + system
		rs.inject = nil
	}
	tools, _ := json.Marshal(s.offeredTools(role))
	voice := s.slot(role, "VOICE")
	s.emit(Effect{Type: EffectLiveSession, Agent: role, Voice: voice, Text: system, Data: tools})
}

// onAgentLine records what a live session said as a role.
func (s *Session) onAgentLine(a *AgentLine) {
	if _, ok := s.p.Role(a.Role); !ok || strings.TrimSpace(a.Text) == "" {
		return
	}
	s.lastRole = a.Role
	s.turns++
	s.transcript = append(s.transcript, TranscriptLine{T: s.now, Speaker: a.Role, Text: a.Text})
	s.fireRules(rules.EngineTrigger(rules.TriggerAgentTranscript))
}

// onToolCall handles a tool_call input from a live session speaking as a
// role: the floor holder by default.
func (s *Session) onToolCall(c *ToolCall) {
	role := c.Role
	if role == "" {
		role = s.resolveRole(rules.RoleActive, "")
	}
	s.handleTool(role, *c)
}

// startJob asks the model for a job. Phase jobs run one after another
// before the session goes live; other jobs run in the background.
func (s *Session) startJob(job *rules.Job, args map[string]any, phase bool) {
	s.syncEnv()
	s.env.SetArgs(args, nil)
	prompt := s.render(&job.Prompt, job.Role)
	s.env.SetArgs(nil, nil)
	id := s.nextID('j')
	req := &LLMRequest{
		Role: job.Role, Kind: "job", TurnGoal: job.ID, Job: job.ID, Model: s.p.LLM.Model,
		System: s.persona(job.Role), Prompt: prompt, Background: !phase,
		TranscriptTail: s.tail(), ScenarioContext: s.context, TimeoutMS: job.Timeout.MS,
	}
	if pr, _ := s.p.Role(job.Role); pr.Model != "" {
		req.Model = pr.Model
	}
	if sc := job.OutputSchema(); sc != nil {
		req.Schema = sc.JSON()
	}
	if job.Attachments {
		for _, a := range s.p.Scenario.Attachments {
			req.Attachments = append(req.Attachments, Attachment{Name: a.ID, MIME: a.MIME, Data: a.Data})
		}
	}
	s.jobs = append(s.jobs, jobEntry{id: id, run: &jobRun{job: job, args: args, phase: phase}})
	s.emit(Effect{Type: EffectLLMRequest, ID: id, Agent: job.Role, Kind: "job", Rule: job.ID, Request: req})
	s.addTimer(timer{at: s.now + job.Timeout.MS, kind: tLLMTimeout, key: id})
}

type jobEntry struct {
	id  string
	run *jobRun
}

func (s *Session) takeJob(id string) *jobRun {
	for i, j := range s.jobs {
		if j.id == id {
			s.jobs = append(s.jobs[:i], s.jobs[i+1:]...)
			return j.run
		}
	}
	return nil
}

// onJobResult handles a job's answer; ok=false when id is not a job.
func (s *Session) onJobResult(r *LLMResult, timedOut bool) bool {
	run := s.takeJob(r.ID)
	if run == nil {
		return false
	}
	s.timers.cancel(tLLMTimeout, 0, r.ID)
	job := run.job
	failed := func(reason string) {
		s.emit(Effect{Type: EffectJobError, ID: r.ID, Agent: job.Role, Rule: job.ID, Reason: reason})
		s.runActions2(job.OnError, job.ID, run.args, nil)
	}
	switch {
	case timedOut:
		failed("timeout: no result within " + strconv.FormatInt(job.Timeout.MS, 10) + "ms")
	case r.Err != nil:
		failed(r.Err.Kind + ": " + r.Err.Message)
	default:
		result, problem := s.parseJobResult(job, r.Text)
		if problem != "" {
			failed(problem)
			break
		}
		raw, _ := json.Marshal(result)
		s.emit(Effect{Type: EffectJobResult, ID: r.ID, Agent: job.Role, Rule: job.ID, Data: raw})
		s.runActions2(job.OnResult, job.ID, run.args, result)
	}
	if run.phase && !s.ended {
		s.nextPhase()
	}
	return true
}

func (s *Session) parseJobResult(job *rules.Job, text string) (any, string) {
	sc := job.OutputSchema()
	if sc == nil {
		return strings.TrimSpace(text), ""
	}
	body := strings.TrimSpace(text)
	if strings.HasPrefix(body, "```") {
		body = strings.TrimPrefix(body, "```json")
		body = strings.TrimPrefix(body, "```")
		body = strings.TrimSuffix(strings.TrimSpace(body), "```")
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, "invalid JSON: " + err.Error()
	}
	v = normalizeJSON(v)
	if problems := sc.Validate(v); len(problems) > 0 {
		return nil, "result does not match the schema: " + strings.Join(problems, "; ")
	}
	return v, ""
}

// runActions2 runs job handler actions with args and result in scope.
func (s *Session) runActions2(list []rules.Action, rule string, args map[string]any, result any) {
	for i := range list {
		if s.ended {
			return
		}
		s.syncEnv()
		s.env.SetArgs(args, result)
		s.doAction(&list[i], rule)
	}
	s.env.SetArgs(nil, nil)
}

func (s *Session) evalString(x *rules.Expr, rule string) (string, bool) {
	s.syncEnv()
	v, err := s.env.Eval(x)
	if err != nil {
		s.emit(Effect{Type: EffectNote, Rule: rule, Reason: err.Error()})
		return "", false
	}
	return rules.Stringify(v), true
}

// panelAction performs the panel actions; it reports whether a was one.
func (s *Session) panelAction(a *rules.Action, rule string) bool {
	switch {
	case a.ToolResult != nil:
		s.syncEnv()
		v, err := s.env.Eval(a.ToolResult)
		if err != nil {
			s.emit(Effect{Type: EffectNote, Rule: rule, Reason: err.Error()})
			return true
		}
		if s.tool != nil {
			s.tool.result, _ = json.Marshal(v)
		}
	case a.ToolError != nil:
		if s.tool != nil {
			s.tool.errText = s.render(a.ToolError, s.env.Tool.Caller)
		}
	case a.Ticket != nil:
		role, ok := s.evalString(&a.Ticket.Role, rule)
		if r := s.rs(role); ok && r != nil {
			r.tickets = max(0, r.tickets+a.Ticket.Add)
		}
	case a.Floor != nil:
		role, ok := s.evalString(a.Floor, rule)
		if _, known := s.p.Role(role); ok && known && role != s.floor {
			reason := ""
			if s.floor != "" {
				reason = "from " + s.floor
			}
			s.floor = role
			s.emit(Effect{Type: EffectHandoff, Agent: role, Rule: rule, Reason: reason})
			if s.liveVoice {
				s.pendingLive = true
			}
		}
	case a.Inject != nil:
		role, ok := s.evalString(&a.Inject.Role, rule)
		if r := s.rs(role); ok && r != nil {
			r.inject = append(r.inject, s.render(&a.Inject.Text, role))
		}
	case a.Job != nil:
		job, _ := s.p.Job(a.Job.ID)
		s.startJob(job, s.evalArgs(a.Job.Args, nil), false)
	case a.Memory != nil:
		role, ok := s.evalString(&a.Memory.Role, rule)
		if r := s.rs(role); ok && r != nil {
			if text := s.render(&a.Memory.Text, role); text != "" {
				r.memory = append(r.memory, text)
			}
		}
	case a.Slot != nil:
		value := ""
		role := ""
		if a.Slot.Role.Set() {
			role, _ = s.evalString(&a.Slot.Role, rule)
		}
		value = s.render(&a.Slot.Value, role)
		if r := s.rs(role); r != nil {
			if r.slots == nil {
				r.slots = map[string]string{}
			}
			r.slots[a.Slot.Name] = value
		} else {
			s.sessionSlots[a.Slot.Name] = value
		}
	case a.Record != nil:
		s.syncEnv()
		if v, err := s.env.Eval(&a.Record.Value); err == nil {
			s.records[a.Record.Name] = append(s.records[a.Record.Name], v)
		}
	case a.Report != nil:
		s.syncEnv()
		v, err := s.env.Eval(&a.Report.Value)
		if err != nil {
			s.emit(Effect{Type: EffectNote, Rule: rule, Reason: err.Error()})
			return true
		}
		raw, _ := json.Marshal(v)
		s.emit(Effect{Type: EffectReport, Kind: a.Report.Kind, Rule: rule, Data: raw})
	default:
		return false
	}
	return true
}
