package rules

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/batonhq/baton/rules/schema"
	"github.com/batonhq/baton/rules/script"
	"github.com/batonhq/baton/rules/text"
)

// The checker is a method per section of the model, in the manner of
// expr's checker visiting each node kind: check runs them in file order,
// each validates its own section, resolves what it refers to (roles,
// jobs, templates) and builds the indexes the engine reads. Defaults are
// not set here: an enum's zero value is its default, and the few numeric
// defaults are set once, in compiler.defaults.

func (c *compiler) check() {
	p := c.p
	p.checkHeader(c)
	if h := p.Scenario.Human; h != "" && !isIdent(h) {
		c.errorf(p.Pos, "scenario.human %q: a name of letters, digits and _", h)
	}
	p.LLM.check(c)
	p.Voice.check(c)
	c.index()
	c.roles()
	c.checkFiles()
	c.checkInputRefs()
	c.checkAssemblies()
	p.LLM.ContextBudget.check(c)
	for i := range p.Templates {
		p.Templates[i].check(c)
	}
	for i := range p.Roles {
		p.Roles[i].check(c)
	}
	for i := range p.Timeline.Anchors {
		p.Timeline.Anchors[i].check(c)
	}
	for i := range p.Timeline.Windows {
		p.Timeline.Windows[i].check(c)
	}
	for i := range p.Routing {
		p.Routing[i].check(c)
	}
	p.TurnTaking.check(c)
	p.Silence.check(c)
	p.SpeechConfidence.check(c)
	p.Guardrails.check(c)
	if p.Tickets != nil {
		p.Tickets.check(c)
	}
	for i := range p.Tools {
		p.Tools[i].check(c)
	}
	for i := range p.Slots {
		p.Slots[i].check(c)
	}
	for i := range p.Jobs {
		p.Jobs[i].check(c)
	}
	for i := range p.Phases {
		p.Phases[i].check(c, i)
	}
	for i := range p.Sequences {
		p.Sequences[i].check(c)
	}
	for i := range p.Rules {
		p.Rules[i].check(c)
	}
	p.Liveness.check(c) // after the rules: it looks for trigger: stalled
	for i := range p.End {
		p.End[i].check(c)
	}
	c.indexRules()
	p.Workspace.check(c) // after the index: on_change needs a rule
	if m := p.DryRun.CandidateModel; m != nil {
		m.checkWhole(c) // after the index too: its own events need rules
	}
}

func (p *Pack) checkHeader(c *compiler) {
	if p.Name == "" {
		c.missingf(p.Pos, "name", "the pack needs a name")
	}
	if p.Schema != 1 {
		c.errorf(p.Pos, "schema %d is not supported (only 1)", p.Schema)
	}
	if b := p.Scripting.Budget.MS; p.Scripting.Budget.ok() && (b <= 0 || b > script.MaxBudget.Milliseconds()) {
		c.errorf(p.Scripting.Budget.Pos, "scripting.budget must be between 1ms and 1s")
	}
	if p.Tick.ok() && p.Tick.MS <= 0 {
		c.errorf(p.Tick.Pos, "tick must be positive")
	}
	if p.Duration.ok() && p.Duration.MS <= 0 {
		c.missingf(p.Pos, "duration", "the pack needs a positive duration (the longest a session runs)")
	}
}

func (l *LLMConfig) check(c *compiler) {
	if l.Timeout.ok() && l.AttemptTimeout.ok() && (l.Timeout.MS <= 0 || l.AttemptTimeout.MS <= 0 || l.AttemptTimeout.MS > l.Timeout.MS) {
		c.errorf(l.Timeout.Pos, "llm: timeout must be positive and attempt_timeout within it")
	}
	if l.MaxTokens < 0 || l.MaxTokens > MaxTokensCap {
		c.errorf(c.p.Pos, "llm.max_tokens must be between 0 (the vendor's default) and %d", MaxTokensCap)
	}
	if *l.Retries < 0 || *l.Retries > 10 {
		c.errorf(c.p.Pos, "llm.retries must be between 0 and 10")
	}
	c.hook(l.Shape, l.Timeout.Pos, "llm.shape", ErrorSkip, ErrorEnd)
	if l.Shape != nil {
		c.dynamicGoals = true // it may replace a call's turn_goal
	}
	l.checkPrepare(c)
}

func (v *VoiceConfig) check(c *compiler) {
	if v.WordsPerMinute < 0 {
		c.errorf(c.p.Pos, "voice.words_per_minute must be positive")
	}
	v.Default.check(c, "voice.default")
}

// index builds the lookups by name before anything refers to them.
func (c *compiler) index() {
	p := c.p
	p.tools, p.jobs, p.tpls = map[string]int{}, map[string]int{}, map[string]int{}
	for i := range p.Tools {
		p.tools[p.Tools[i].Name] = i
	}
	for i := range p.Jobs {
		p.jobs[p.Jobs[i].ID] = i
	}
	for i := range p.Templates {
		p.tpls[p.Templates[i].ID] = i
	}
}

// roles indexes the roles before anything refers to them.
func (c *compiler) roles() {
	p := c.p
	p.roles = map[string]int{}
	if len(p.Roles) == 0 {
		c.missingf(p.Pos, "roles", "the pack needs at least one role")
	}
	for i, r := range p.Roles {
		if _, dup := p.roles[r.ID]; dup {
			c.errorf(r.Pos, "role %q is defined twice", r.ID)
			continue
		}
		p.roles[r.ID] = i
	}
	p.speakers = nil
	for i := range p.Roles {
		p.speakers = append(p.speakers, text.SpeakerNames(p.Roles[i].ID, p.Roles[i].Name)...)
	}
	for i := range p.Roles {
		r := &p.Roles[i]
		r.ownNames, r.otherNames = text.SpeakerNames(r.ID, r.Name), nil
		for j := range p.Roles {
			if j != i {
				r.otherNames = append(r.otherNames, text.SpeakerNames(p.Roles[j].ID, p.Roles[j].Name)...)
			}
		}
	}
}

func (r *Role) check(c *compiler) {
	if !isIdent(r.ID) || oneOf(r.ID, RoleLast, RoleSame, RoleAddressed, RoleActive) {
		c.errorf(r.Pos, "role %q: ids are letters, digits and _, and not last/same/addressed/active", r.ID)
	}
	if strings.EqualFold(r.ID, c.p.HumanName()) {
		c.errorf(r.Pos, "role %q has the name of the person in the session (scenario.human); a transcript could not tell them apart: set scenario.human (interviewer, say) or rename the role", r.ID)
	}
	r.focus = c.keywords(r.Pos, "focus", r.Focus)
	r.Voice.check(c, "role "+r.ID)
	if r.WordsPerMinute < 0 {
		c.errorf(r.Pos, "role %q: words_per_minute must be positive", r.ID)
	}
	if r.MaxTokens < 0 || r.MaxTokens > MaxTokensCap {
		c.errorf(r.Pos, "role %s: max_tokens must be between 0 (llm.max_tokens) and %d", r.ID, MaxTokensCap)
	}
	if r.Template != "" {
		if _, ok := c.p.Template(r.Template); !ok {
			c.missingf(r.Pos, "templates", "role %s: unknown template %q%s", r.ID, r.Template, c.suggest(r.Template, c.p.templateNames()))
		}
	}
}

func (t *TemplateDef) check(c *compiler) { c.id(t.Pos, "template", "template:"+t.ID) }

func (a *Anchor) check(c *compiler) {
	c.id(a.Pos, "anchor", a.ID)
	c.within(a.At, "anchor "+a.ID)
	if a.Action == AnchorSay {
		c.scheduledTurns(scheduledByDefault, func() { c.turn(a.Pos, &a.Turn, "anchor "+a.ID) })
	}
}

func (w *Window) check(c *compiler) {
	c.id(w.Pos, "window", w.ID)
	if w.Open.ok() && w.Close.ok() && (!w.Close.IsSet() || w.Close.MS <= w.Open.MS) {
		c.errorf(w.Pos, "window %s: close must be after open", w.ID)
	}
	c.within(w.Close, "window "+w.ID+" close")
	c.scheduledTurns(scheduledByDefault, func() { c.turn(w.Pos, &w.Turn, "window "+w.ID) })
}

func (r *Route) check(c *compiler) {
	c.id(r.Pos, "route", r.ID)
	switch r.Type {
	case routeUnset:
		c.errorf(r.Pos, "route %s needs a type: %s", r.ID, listWords(routeTypeWords))
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
			// A class is a routing branch, named by its tag (else its
			// role) in coverage and sweep reports and in msg's intent.
			for k := range j {
				if prev := &r.Intents[k]; IntentBranch(r.ID, prev) == IntentBranch(r.ID, in) {
					c.errorf(in.Pos, "route %s: this intent class and the one at %s are both branch %s (a class is named by its tag, else its role); merge their keywords, or give one its own tag", r.ID, prev.Pos, IntentBranch(r.ID, in))
					break
				}
			}
			in.words = c.keywords(in.Pos, "keywords", in.Keywords)
			c.roleRef(in.Pos, "intent "+in.Tag, in.Role)
			if len(in.Keywords) == 0 {
				c.errorf(in.Pos, "intent %s needs keywords", in.Tag)
			}
		}
	case RouteRole:
		c.roleRef(r.Pos, "route "+r.ID, r.Role, RoleLast, RoleActive)
		r.Who = c.ref(r.Role)
	case RouteScript:
		c.dynamicGoals = true // its answer may name a goal
		h := Hook{Script: r.Script, OnError: r.OnError}
		c.hook(&h, r.Pos, "route "+r.ID, ErrorSkip, ErrorEnd)
	}
}

func (t *TurnTaking) check(c *compiler) {
	d := &t.Defer
	if !d.When.Set() {
		return
	}
	if d.Max.ok() && d.Max.MS <= 0 {
		c.errorf(d.When.Pos, "turn_taking.defer needs a positive max")
	}
	if d.OnCap.Kind != "" || d.OnCap.Role != "" {
		c.turn(d.When.Pos, &d.OnCap, "turn_taking.defer.on_cap", RoleSame, RoleLast)
	}
}

func (l *Liveness) check(c *compiler) {
	if !l.StallAfter.IsSet() {
		for i := range c.p.Rules {
			if r := &c.p.Rules[i]; r.On.Trigger == EngineTrigger(TriggerStalled) {
				c.errorf(r.On.Pos, "rule %s runs trigger: stalled, which never fires without liveness.stall_after; set it (say, liveness: {stall_after: 45s})", r.ID)
			}
		}
		return
	}
	if l.StallAfter.ok() && l.StallAfter.MS <= 0 {
		c.errorf(l.StallAfter.Pos, "liveness.stall_after must be positive")
	}
	for i := range c.p.Rules {
		if c.p.Rules[i].On.Trigger == EngineTrigger(TriggerStalled) {
			return
		}
	}
	c.errorf(l.Pos, "liveness.stall_after is set but no rule runs trigger: stalled; add one (say, end the session with its outcome)")
}

func (s *Silence) check(c *compiler) {
	for i := range s.Steps {
		st := &s.Steps[i]
		if st.After.ok() && st.After.MS <= 0 {
			c.errorf(st.Pos, "silence step %d needs a positive after", i+1)
		}
		if st.Action == SilenceSay {
			c.scheduledTurns(scheduledByDefault, func() {
				c.turn(st.Pos, &st.Turn, fmt.Sprintf("silence step %d", i+1), RoleLast, RoleActive)
			})
		}
	}
}

func (sc *SpeechConfidence) check(c *compiler) {
	if len(sc.Steps) > 0 && !sc.Threshold.IsSet() {
		c.errorf(c.p.Pos, "speech_confidence needs a threshold")
	}
	for i := range sc.Steps {
		s := &sc.Steps[i]
		if s.Count.Value < 1 || s.Count.Value != float64(int(s.Count.Value)) || (i > 0 && s.Count.Value <= sc.Steps[i-1].Count.Value) {
			c.errorf(s.Pos, "speech_confidence step counts must start at 1 or more and increase")
		}
		c.turn(s.Pos, &s.Turn, fmt.Sprintf("speech_confidence step %d", i+1), RoleLast, RoleAddressed)
	}
}

func (g *Guardrails) check(c *compiler) {
	if v := g.MaxSentences.Value; v < 0 || v != math.Trunc(v) {
		c.errorf(g.MaxSentences.Pos, "guardrails: max_sentences is a count of sentences, not %v", v)
	}
	if g.MaxSentences.Int() > 0 && g.MinSentences > g.MaxSentences.Int() {
		c.errorf(c.p.Pos, "guardrails: min_sentences is above max_sentences")
	}
	if g.MaxWords < 0 {
		c.errorf(g.Pos, "guardrails: max_words is a count of words above 0 (default %d), not %d", DefaultMaxWords, g.MaxWords)
	}
	if g.MaxSpeech.ok() && g.MaxSpeech.MS <= 0 {
		c.errorf(g.MaxSpeech.Pos, "guardrails: max_speech is how long a line may take to say, above 0 (default %ds)", DefaultMaxSpeechMS/1000)
	}
	for i := range c.p.Roles {
		r := &c.p.Roles[i]
		if r.MaxWords < 0 {
			c.errorf(r.Pos, "roles.%s: max_words is a count of words above 0 (0 or unset: guardrails.max_words), not %d", r.ID, r.MaxWords)
		}
		if r.MaxSpeech.IsSet() && r.MaxSpeech.ok() && r.MaxSpeech.MS <= 0 {
			c.errorf(r.MaxSpeech.Pos, "roles.%s: max_speech is how long a line may take to say, above 0 (unset: guardrails.max_speech)", r.ID)
		}
	}
	if g.MaxRepeats < 0 {
		c.errorf(c.p.Pos, "guardrails: max_repeats must be 0 (no cap) or more")
	}
	c.hook(g.Rewrite, c.p.Pos, "guardrails.rewrite", ErrorSkip, ErrorFallback, ErrorEnd)
	seen := map[OnViolation]bool{}
	for _, o := range g.OnViolation {
		if seen[o] {
			c.errorf(c.p.Pos, "guardrails.on_violation: %s is listed twice", o)
		}
		seen[o] = true
	}
	r := &g.Regenerate
	if *r.Attempts < 1 || *r.Attempts > MaxRegenerateAttempts {
		c.errorf(r.Pos, "guardrails.regenerate.attempts must be 1 to %d", MaxRegenerateAttempts)
	}
	if seen[ViolationRegenerate] && !r.Instruction.Set() {
		c.errorf(r.Pos, "guardrails.on_violation has regenerate but regenerate.instruction is not written: say what the model did wrong, e.g. \"Your reply broke: ${join(reply.violations, ', ')}. Stay within: ${reply.limits}.\"")
	}
	// Rewrite and fallback lines are said in place of violating ones, so
	// a line that breaks the limits itself is an authoring mistake.
	for i := range c.p.Roles {
		r := &c.p.Roles[i]
		r.limits = g.Limits(r)
		for _, set := range []struct {
			name string
			sets []LineSet
		}{{"rewrite", r.Rewrite}, {"fallback", r.Fallback}} {
			for _, ls := range set.sets {
				for k, line := range ls.Text {
					if v := g.Violations(r, line); len(v) > 0 {
						c.errorf(ls.Pos, "roles.%s.%s.%s line %d %q breaks guardrails %s: it is said instead of a line that breaks them, so keep it within %s",
							r.ID, set.name, ls.ID, k+1, line, strings.Join(v, ", "), r.limits)
					}
				}
			}
		}
	}
	for i := range g.Tripwires {
		g.Tripwires[i].check(c, "guardrails.tripwires")
	}
	c.inputCheck = true
	for i := range g.Input {
		g.Input[i].check(c, "guardrails.input")
	}
	c.inputCheck = false
}

func (k *Check) check(c *compiler, where string) {
	c.id(k.Pos, where, k.ID) // effects name it as their rule
	if slices.Contains(builtinGuards, k.ID) {
		// Violation lists (reply.violations, coverage) name checks and
		// built-in guardrails alike.
		c.errorf(k.Pos, "%s %s: %s is a built-in guardrail's name; give the check its own", where, k.ID, k.ID)
	}
	if !k.When.Set() {
		c.errorf(k.Pos, "%s %s needs a when: the condition that trips it", where, k.ID)
	}
	if len(k.Do) == 0 {
		c.errorf(k.Pos, "%s %s does nothing (add do:)", where, k.ID)
	}
	c.actions(k.Do, where+" "+k.ID)
}

func (t *Tickets) check(c *compiler) {
	if len(t.Roles) == 0 {
		c.errorf(c.p.Pos, "tickets: list the roles that hold tickets")
	}
	for _, r := range t.Roles {
		c.roleRef(t.Total.Pos, "tickets", r)
	}
	if !t.Total.IsSet() || t.Total.Value < 0 || t.Total.Value != float64(int(t.Total.Value)) {
		c.errorf(t.Total.Pos, "tickets: total must be a whole number")
	}
	for _, w := range t.Weights {
		c.roleRef(w.Pos, "tickets.weights", w.ID)
		if w.Weight.Value < 0 {
			c.errorf(w.Pos, "tickets.weights: %s is negative", w.ID)
		}
	}
	c.hook(t.Distribute, t.Total.Pos, "tickets.distribute", ErrorSkip, ErrorEnd)
}

func (t *Tool) check(c *compiler) {
	c.id(t.Pos, "tool", "tool:"+t.Name)
	if !isIdent(t.Name) {
		c.errorf(t.Pos, "tool %q: names are letters, digits and _", t.Name)
	}
	sc, err := schema.Compile(t.Parameters)
	if err != nil {
		c.errorf(t.Pos, "tool %s: %v", t.Name, err)
	}
	t.params = sc
	for _, ch := range t.Choices {
		var prop *schema.Schema
		if sc != nil {
			prop = sc.Properties[ch.Param]
		}
		switch {
		case sc == nil:
		case prop == nil:
			c.errorf(ch.Pos, "tool %s: choices for %q, which is not one of its parameters%s", t.Name, ch.Param, c.suggest(ch.Param, sc.PropertyNames()))
		case len(prop.Types) != 1 || prop.Types[0] != "string":
			c.errorf(ch.Pos, "tool %s: choices for %q need it to be {type: string}", t.Name, ch.Param)
		case len(prop.Enum) > 0:
			c.errorf(ch.Pos, "tool %s: %q has both a fixed enum and choices; keep one", t.Name, ch.Param)
		}
	}
	if t.Timeout.IsSet() && t.Timeout.ok() {
		switch {
		case t.Executor != ExecClient:
			c.errorf(t.Timeout.Pos, "tool %s: timeout bounds a client's round trip; it needs executor: client (the pack's own rules answer at once)", t.Name)
		case t.Timeout.MS <= 0:
			c.errorf(t.Timeout.Pos, "tool %s: timeout must be positive", t.Name)
		}
	}
	t.cutParams()
}

func (j *Job) check(c *compiler) {
	c.id(j.Pos, "job", "job:"+j.ID)
	if arg, ok := strings.CutPrefix(j.Role, "args."); ok {
		if !isIdent(arg) {
			c.errorf(j.Pos, "job %s: role %q: write args.NAME for the role an argument names", j.ID, j.Role)
		}
	} else {
		c.roleRef(j.Pos, "job "+j.ID, j.Role)
	}
	if !j.Prompt.Set() {
		c.errorf(j.Pos, "job %s needs a prompt", j.ID)
	}
	if j.Schema != nil {
		sc, err := schema.Compile(j.Schema)
		if err != nil {
			c.errorf(j.Pos, "job %s: %v", j.ID, err)
		}
		j.schema = sc
	}
	c.actions(j.OnResult, "job "+j.ID+" on_result")
	c.actions(j.OnError, "job "+j.ID+" on_error")
	if w := j.WaitFor; w != nil {
		if len(w.Jobs) == 0 {
			c.errorf(w.Pos, "job %s: wait_for needs jobs: the jobs whose runs a start waits for, e.g. wait_for: {jobs: [supervise], max: 20s}", j.ID)
		}
		for _, name := range w.Jobs {
			if _, ok := c.p.Job(name); !ok {
				c.errorf(w.Pos, "job %s: wait_for: unknown job %q%s", j.ID, name, c.suggest(name, c.p.jobNames()))
			} else if name == j.ID {
				c.errorf(w.Pos, "job %s: wait_for names the job itself; a start cannot wait for its own runs (use overlap)", j.ID)
			}
		}
		if !w.Max.IsSet() || w.Max.MS <= 0 {
			c.errorf(w.Pos, "job %s: wait_for needs max, how long a start waits at most (e.g. max: 20s)", j.ID)
		}
	}
}

func (ph *Phase) check(c *compiler, i int) {
	var ok bool
	if ph.job, ok = c.p.Job(ph.Job); !ok {
		c.missingf(ph.Pos, "jobs", "phase %d: unknown job %q%s", i+1, ph.Job, c.suggest(ph.Job, c.p.jobNames()))
		return
	}
	if ph.job.WaitFor != nil {
		c.errorf(ph.Pos, "phase %d: job %s has wait_for, but a setup phase never waits (the next phase and the session's start follow it); start it from a rule, or drop wait_for", i+1, ph.Job)
	}
	name := ph.job.RoleArg()
	given := slices.ContainsFunc(ph.Args, func(x Arg) bool { return x.ID == name }) || name == "item" && ph.ForEach.Set()
	if name != "" && !given {
		c.errorf(ph.Pos, "phase %d: job %s runs as the role in args.%s; pass it: args: {%s: ...}", i+1, ph.Job, name, name)
	}
}

func (r *Rule) check(c *compiler) {
	c.id(r.Pos, "rule", r.ID)
	// A trigger written wrong counts as written: its own error says what
	// is wrong with it. A rule with none but a key spelt like one (on:)
	// has had that key reported.
	triggers := 0
	for _, set := range []bool{r.On.Set(), r.At.IsSet() || !r.At.ok(), r.Every.IsSet() || !r.Every.ok()} {
		if set {
			triggers++
		}
	}
	if triggers > 1 || triggers == 0 && !r.strayTrigger {
		c.errorf(r.Pos, "rule %s needs exactly one of trigger, at, every", r.ID)
	}
	if r.Every.IsSet() && r.Every.ok() && c.p.Tick.ok() && r.Every.MS < c.p.Tick.MS {
		c.errorf(r.Every.Pos, "rule %s: every must be at least one tick", r.ID)
	}
	c.within(r.At, "rule "+r.ID)
	if r.On.Set() && r.On.Kind == TriggerTool {
		if _, ok := c.p.Tool(r.On.Name); !ok {
			c.missingf(r.On.Pos, "tools", "rule %s: trigger: %s names no tool of this pack%s", r.ID, r.On.Trigger, c.suggest(r.On.Name, c.p.toolNames()))
		}
	}
	if r.On.Set() && r.On.Kind == TriggerJob {
		if _, ok := c.p.Job(r.On.Name); !ok {
			c.missingf(r.On.Pos, "jobs", "rule %s: trigger: %s names no job of this pack%s", r.ID, r.On.Trigger, c.suggest(r.On.Name, c.p.jobNames()))
		}
	}
	if r.On.Set() && r.On.Kind == TriggerSequence {
		if _, ok := c.p.Sequence(r.On.Name); !ok {
			c.missingf(r.On.Pos, "sequences", "rule %s: trigger: %s names no sequence of this pack%s", r.ID, r.On.Trigger, c.suggest(r.On.Name, c.p.sequenceNames()))
		}
	}
	if len(r.Do) == 0 {
		c.errorf(r.Pos, "rule %s does nothing (add do:)", r.ID)
	}
	timing := unscheduled
	if r.At.IsSet() || r.Every.IsSet() {
		timing = scheduled
	}
	c.scheduledTurns(timing, func() { c.actions(r.Do, "rule "+r.ID) })
}

func (e *EndRule) check(c *compiler) {
	c.id(e.Pos, "end rule", e.ID)
	if !e.When.Set() {
		c.errorf(e.Pos, "end rule %s needs when", e.ID)
	}
}

func (c *compiler) actions(list Actions, where string) {
	for _, a := range list {
		a.check(c, where)
	}
}

// indexRules builds the trigger index the engine looks rules up in.
func (c *compiler) indexRules() {
	p := c.p
	p.ruleOn = map[Trigger][]*Rule{}
	for i := range p.Rules {
		if r := &p.Rules[i]; r.On.Set() {
			p.ruleOn[r.On.Trigger] = append(p.ruleOn[r.On.Trigger], r)
		}
	}
	for _, rs := range p.ruleOn {
		slices.SortStableFunc(rs, func(a, b *Rule) int {
			return cmp.Or(cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.ID, b.ID))
		})
	}
}

// hook checks a script hook and its on_error policy against those the
// hook allows.
func (c *compiler) hook(h *Hook, owner Pos, what string, allowed ...OnError) {
	if h == nil {
		return
	}
	pos := h.Script.Pos
	if pos.File == "" {
		pos = owner
	}
	if !h.Script.Set() {
		c.errorf(pos, "%s needs a script", what)
	}
	if h.OnError != badEnum && !slices.Contains(allowed, h.OnError) {
		words := make([]string, len(allowed))
		for i, a := range allowed {
			words[i] = a.String()
		}
		c.errorf(pos, "%s: on_error must be one of %s, not %s", what, strings.Join(words, ", "), h.OnError)
	}
}

// ref resolves a turn's role as written into a RoleRef.
func (c *compiler) ref(role string) RoleRef {
	switch role {
	case RoleLast:
		return RoleRef{Kind: RoleRefLast}
	case RoleSame:
		return RoleRef{Kind: RoleRefSame}
	case RoleAddressed:
		return RoleRef{Kind: RoleRefAddressed}
	case RoleActive:
		return RoleRef{Kind: RoleRefActive}
	}
	return RoleRef{Kind: RoleFixed, Role: role}
}

func (c *compiler) turn(parent Pos, t *TurnSpec, what string, specifiers ...string) {
	if t.Pos.Line == 0 {
		t.Pos = parent // the turn was left out: point at its owner
	}
	c.turns = append(c.turns, checkedTurn{t, what})
	c.roleRef(t.Pos, what, t.Role, specifiers...)
	t.Who = c.ref(t.Role)
	if t.Kind == "" {
		c.errorf(t.Pos, "%s needs a kind", what)
	}
	c.prepare(t, what, c.sched != unscheduled, c.sched == scheduledByDefault)
}

// turnTiming is whether a turn's due time is known before it is due.
type turnTiming uint8

const (
	unscheduled turnTiming = iota
	// scheduled turns are prepared when they ask (a say in a timed rule,
	// whose condition may not hold when it fires).
	scheduled
	// scheduledByDefault turns are prepared when llm.prepare is set.
	scheduledByDefault
)

// scheduledTurns runs check with turns counted as timing.
func (c *compiler) scheduledTurns(timing turnTiming, check func()) {
	c.sched = timing
	check()
	c.sched = unscheduled
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
		c.missingf(pos, "roles", "%s: unknown role %q%s (roles: %s)", what, role, c.suggest(role, c.p.RoleIDs()), strings.Join(c.p.RoleIDs(), ", "))
	}
}

func (c *compiler) within(d Duration, what string) {
	// Against a duration that is itself wrong, every time would be late.
	if c.p.Duration.ok() && c.p.Duration.MS > 0 && d.MS > c.p.Duration.MS {
		c.errorf(d.Pos, "%s %s is after the end of the session (%s)", what, FormatClock(d.MS), FormatClock(c.p.Duration.MS))
	}
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

func oneOf(v string, allowed ...string) bool { return slices.Contains(allowed, v) }

// names lists what name picks out of each element, for "did you mean".
func names[T any](list []T, name func(*T) string) []string {
	out := make([]string, len(list))
	for i := range list {
		out[i] = name(&list[i])
	}
	return out
}

func (p *Pack) jobNames() []string { return names(p.Jobs, func(j *Job) string { return j.ID }) }
func (p *Pack) templateNames() []string {
	return names(p.Templates, func(t *TemplateDef) string { return t.ID })
}
func (p *Pack) constantNames() []string {
	return names(p.Constants, func(k *Constant) string { return k.ID })
}
func (p *Pack) varNames() []string  { return names(p.Vars, func(v *Var) string { return v.ID }) }
func (p *Pack) toolNames() []string { return names(p.Tools, func(t *Tool) string { return t.Name }) }
