package engine

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/batonhq/baton/rules"
)

// jobs are model calls outside the live turn: setup phases, which run one
// after another before the panel goes live, and background work (grading
// an answer, say), which never holds the floor. A job's result runs its
// on_result actions with `result` and `args` in scope.
type jobs struct {
	running []jobEntry
	// reruns are starts of overlap: rerun jobs held until the run in
	// flight for the same role lands.
	reruns []jobEntry
	phases []phaseItem
	// live is set once the setup phases are done.
	live bool
}

type jobEntry struct {
	id    string
	job   *rules.Job
	role  string
	args  map[string]any
	phase bool
}

type phaseItem struct {
	job  *rules.Job
	args map[string]any
}

// start expands the pack's phases and runs the first.
func (j *jobs) start(s *Session) {
	p := s.p
	if len(p.Phases) == 0 {
		j.live = true
		return
	}
	for i := range p.Phases {
		ph := &p.Phases[i]
		job := ph.Target()
		if !ph.ForEach.Set() {
			j.phases = append(j.phases, phaseItem{job: job, args: s.evalArgs(ph.Args, nil)})
			continue
		}
		v, err := s.env.Eval(&ph.ForEach.Expr)
		if err != nil {
			s.note("", "phase for_each: "+err.Error())
			continue
		}
		for _, item := range asList(v) {
			j.phases = append(j.phases, phaseItem{job: job, args: s.evalArgs(ph.Args, map[string]any{"item": item})})
		}
	}
	if len(j.phases) == 0 {
		// Every for_each came out empty: live at once, and live_start
		// fires after session_start, as for a pack without phases.
		j.live = true
		s.emit(Effect{Type: EffectLive})
		return
	}
	j.next(s)
}

func (j *jobs) next(s *Session) {
	if len(j.phases) == 0 {
		j.live = true
		s.emit(Effect{Type: EffectLive})
		s.fireRules(rules.EngineTrigger(rules.TriggerLiveStart))
		return
	}
	item := j.phases[0]
	j.phases = j.phases[1:]
	// A setup phase always runs: skipping or holding it would stop the
	// chain of phases, and the session would never go live.
	j.run(s, item.job, item.args, rules.OverlapAllow, true, "phase")
}

// begin starts a job from a rule or a handler: held first while the
// jobs it waits for are running (waitfor.go).
func (j *jobs) begin(s *Session, job *rules.Job, args map[string]any, overlap rules.JobOverlap, rule string) {
	if s.waits.hold(s, job, args, overlap, rule) {
		return
	}
	j.run(s, job, args, overlap, false, rule)
}

// run asks the model for a job, as its role allows and its overlap
// policy says; rule is who started it.
func (j *jobs) run(s *Session, job *rules.Job, args map[string]any, overlap rules.JobOverlap, phase bool, rule string) {
	role := job.Role
	if name := job.RoleArg(); name != "" {
		r, _ := args[name].(string)
		if s.roleIdx(r) < 0 {
			s.emit(Effect{Type: EffectJobError, Rule: job.ID, Reason: fmt.Sprintf("role: args.%s is %s, not a role (%s)", name, rules.Describe(args[name]), strings.Join(s.p.RoleIDs(), ", "))})
			if phase && !s.ended {
				j.next(s)
			}
			return
		}
		role = r
	}
	if overlap != rules.OverlapAllow && j.inFlight(job, role) {
		why := "not started again"
		if overlap == rules.OverlapRerun {
			why = "it runs again when that one lands"
			j.reruns = slices.DeleteFunc(j.reruns, func(e jobEntry) bool { return e.job == job && e.role == role })
			j.reruns = append(j.reruns, jobEntry{job: job, role: role, args: args})
		}
		s.emit(Effect{Type: EffectNote, Agent: role, Rule: rule, Kind: "overlap", Reason: "job " + job.ID + " for " + role + " is still running; " + why})
		return
	}
	// The prompt sees the job's own args; the scope it was started from
	// (a rule on job:NAME, a handler) gets its own back.
	pop := s.env.Scope(rules.Scope{Args: args})
	prompt := s.render(&job.Prompt, role)
	pop()
	id := s.nextID('j')
	req := &LLMRequest{
		SessionID: s.opts.SessionID, Role: role, Kind: "job", TurnGoal: job.ID, Job: job.ID,
		System: s.persona(role), Prompt: prompt, Background: !phase,
		TranscriptTail:  s.transcript.tail(s.p.LLM.TranscriptTail),
		ScenarioContext: s.transcript.context, TimeoutMS: job.Timeout.MS,
	}
	s.modelFor(req)
	req.Assembly, req.Files = s.files.assemble(s, role, nil)
	if sc := job.OutputSchema(); sc != nil {
		req.Schema = sc.JSON()
	}
	if job.Attachments {
		for _, a := range s.p.AttachmentsOf(s.in) {
			req.Attachments = append(req.Attachments, Attachment{Name: a.Name, MIME: a.MediaType, Data: a.Data})
		}
	}
	j.running = append(j.running, jobEntry{id: id, job: job, role: role, args: args, phase: phase})
	s.coverage.hit(s, rules.CoverJob, job.ID)
	s.emit(Effect{Type: EffectLLMRequest, ID: id, Agent: role, Kind: "job", Rule: job.ID, Request: req})
	s.openRequest(id, &s.jobs, s.now+job.Timeout.MS)
}

func (j *jobs) inFlight(job *rules.Job, role string) bool {
	return slices.ContainsFunc(j.running, func(e jobEntry) bool { return e.job == job && e.role == role })
}

// rerun starts the run held for job and role, if any.
func (j *jobs) rerun(s *Session, job *rules.Job, role string) {
	i := slices.IndexFunc(j.reruns, func(e jobEntry) bool { return e.job == job && e.role == role })
	if i < 0 || s.ended || j.inFlight(job, role) {
		// A handler of the run that landed may have started the next one
		// itself: the held start waits for that one.
		return
	}
	e := j.reruns[i]
	j.reruns = slices.Delete(j.reruns, i, i+1)
	j.begin(s, e.job, e.args, rules.OverlapAllow, e.job.ID) // a queued start waits as any start does
}

func (j *jobs) take(id string) (jobEntry, bool) {
	for i, e := range j.running {
		if e.id == id {
			j.running = append(j.running[:i], j.running[i+1:]...)
			return e, true
		}
	}
	return jobEntry{}, false
}

func (j *jobs) answered(s *Session, r *LLMResult) { j.result(s, r, false) }

func (j *jobs) timedOut(s *Session, id string) { j.result(s, &LLMResult{ID: id}, true) }

// result handles a job's answer; it reports whether id was a job.
func (j *jobs) result(s *Session, r *LLMResult, timedOut bool) bool {
	run, ok := j.take(r.ID)
	if !ok {
		return false
	}
	job := run.job
	failed := func(reason string) {
		s.emit(Effect{Type: EffectJobError, ID: r.ID, Agent: run.role, Rule: job.ID, Reason: reason})
		s.runHandler(job.OnError, job.ID, run.args, nil)
	}
	switch {
	case timedOut:
		failed("timeout: no result within " + formatMS(job.Timeout.MS))
	case r.Err != nil:
		failed(r.Err.Kind + ": " + r.Err.Message)
	default:
		result, problem := parseJobResult(job, r.Text)
		if problem != "" {
			failed(problem)
			break
		}
		raw, _ := json.Marshal(result)
		s.emit(Effect{Type: EffectJobResult, ID: r.ID, Agent: run.role, Rule: job.ID, Data: raw})
		s.runHandler(job.OnResult, job.ID, run.args, result)
		if !s.ended {
			pop := s.env.Scope(rules.Scope{Args: run.args, Result: result})
			s.fireRules(rules.JobTrigger(job.ID))
			pop()
		}
	}
	if run.phase && !s.ended {
		j.next(s)
	}
	j.rerun(s, job, run.role)
	s.waits.landed(s)
	return true
}

func parseJobResult(job *rules.Job, text string) (any, string) {
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

// evalArgs works out the arguments of a job being started. Its
// expressions see the scope the job is started in (a tool rule's tool, a
// handler's result), with as args the scope's own (a handler's, which it
// may pass on) overlaid with base and the arguments worked out before
// them.
func (s *Session) evalArgs(defs []rules.Arg, base map[string]any) map[string]any {
	sc := s.env.Current()
	outer := sc.Args
	args := map[string]any{}
	for k, v := range base {
		args[k] = v
	}
	scope := maps.Clone(outer)
	if scope == nil {
		scope = map[string]any{}
	}
	maps.Copy(scope, args)
	sc.Args = scope
	defer s.env.Scope(sc)()
	for i := range defs {
		v, err := s.env.Eval(&defs[i].Value.Expr)
		if err != nil {
			s.note("", "args "+defs[i].ID+": "+err.Error())
			continue
		}
		args[defs[i].ID], scope[defs[i].ID] = v, v
	}
	return args
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
