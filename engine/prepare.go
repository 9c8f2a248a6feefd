package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/batonhq/baton/rules"
)

// prepare asks for scheduled turns' lines before they are due. Every
// timer that makes a turn at a known time (an anchor, a window opening, a
// silence step, a timed rule that asks) is shadowed by a tPrepare timer
// its turn's lead earlier; when that fires, the turn is built as it would
// be now and its request sent. The answer is held. When the turn is due
// and starts, the request is built again: if it is the one sent, the held
// answer goes through the guardrails at once, as if the model had
// answered in no time; if not, the line is stale and the turn's on_stale
// decides. A change seen before the due time (the candidate spoke, another
// role did) asks again at once, so the new answer is usually in by then.
//
// Preparations are ordinary llm_request effects and their answers
// ordinary llm_result inputs, so replay reproduces them; a turn made at
// second 0 is prepared by a prepare input before the session's clock
// starts (Step).
type prepare struct {
	entries []*prepEntry
	standIn turn        // provisional's
	scratch *LLMRequest // compareRequest's
	// acted is set when a pack action ran since the last refresh: it may
	// have changed what a request carries (a memory, a slot, a variable)
	// without an effect to show it.
	acted bool
	// setUp is set once the prepare input ran.
	setUp bool
}

type prepState uint8

const (
	prepAsked prepState = iota
	prepReady
	prepFailed
)

// A preparation is asked again as soon as its request changes, so the new
// line is usually in by its due time. A pack whose prompts change on every
// step (one that puts the clock in a persona) would then ask on every
// step: maxUnanswered bounds the requests sent one after another with no
// answer between them, and maxPrepareAsks the requests of one
// preparation. Past either, staleness is decided when the line is due.
const (
	maxUnanswered  = 3
	maxPrepareAsks = 32
)

// prepEntry is one prepared line.
type prepEntry struct {
	// what turn it is for: the turn a source makes with this spec
	spec *rules.TurnSpec
	plan rules.Prep
	rule string
	step int    // silence step, or -1
	same string // the role "last" means for a silence step
	hard bool
	due  int64
	// reasked: an unusable answer was already asked for again.
	reasked bool
	// backup is a hard turn's last good line, kept while a newer one is
	// asked for; backupWhy says what made it stale.
	backup    LLMResult
	backupWhy string

	role string // as resolved when last asked

	// claimed is the turn made for it, once made; it starts later.
	claimed *turn

	reqID   string
	askedAt int64
	sent    *LLMRequest
	asks    int
	// unanswered counts requests sent since the last answer.
	unanswered int
	state      prepState
	result     LLMResult
	// guard is the guardrails' state for the line so far: an answer that
	// breaks the built-in limits is asked for again before it is due, as
	// the guardrails would at release, and the turn inherits the count.
	guard guard
}

func (e *prepEntry) matches(rule string, step int, kind, goal string) bool {
	return e.rule == rule && e.step == step && e.spec.Kind == kind && e.spec.Goal == goal
}

// leadFor is the earliest lead among the prepared turns timer t makes,
// if any.
func (s *Session) leadFor(t *timer) (int64, bool) {
	var lead int64
	s.preparedBy(t, func(src prepSource) { lead = max(lead, src.plan.LeadMS) })
	return lead, lead > 0
}

// prepSource is a turn a timer will make.
type prepSource struct {
	spec *rules.TurnSpec
	plan rules.Prep
	rule string
	step int
	hard bool
}

// preparedBy calls yield with each prepared turn timer t makes when it
// fires: the one place that knows which timers make turns. (A callback,
// not a slice: every timer added asks.)
func (s *Session) preparedBy(t *timer, yield func(prepSource)) {
	add := func(spec *rules.TurnSpec, rule string, step int, hard bool) {
		if plan, ok := spec.Preparation(); ok {
			yield(prepSource{spec, plan, rule, step, hard || spec.Hard})
		}
	}
	p := s.p
	switch t.kind {
	case tAnchor:
		if a := &p.Timeline.Anchors[t.ref]; a.Action == rules.AnchorSay {
			add(&a.Turn, a.ID, -1, true)
		}
	case tWindowOpen:
		w := &p.Timeline.Windows[t.ref]
		add(&w.Turn, w.ID, -1, false)
	case tSilence:
		if st := &p.Silence.Steps[t.ref]; st.Action == rules.SilenceSay {
			add(&st.Turn, "silence", t.ref, false)
		}
	case tRule:
		r := &p.Rules[t.ref]
		for _, a := range r.Do {
			if say, ok := a.(*rules.SayAction); ok {
				add(&say.Turn, r.ID, -1, false)
			}
		}
	}
}

// shadow adds the preparation of what t will make, if it is prepared.
func (pr *prepare) shadow(s *Session, t *timer) {
	lead, ok := s.leadFor(t)
	if !ok {
		return
	}
	at := max(s.now, s.quantUp(t.at-lead))
	s.timers.add(timer{at: at, kind: tPrepare, of: t.kind, ref: t.ref, rule: t.rule, key: t.key})
}

// fire asks for the lines of the turns the timer tm prepares for.
func (pr *prepare) fire(s *Session, tm timer) {
	due, ok := s.timers.find(tm.of, tm.ref)
	if !ok {
		return // its timer was cancelled
	}
	same := ""
	if tm.of == tSilence {
		if s.silence.await == nil {
			return
		}
		same = s.silence.await.role
	}
	s.preparedBy(&due, func(src prepSource) {
		if pr.find(src.rule, src.step, src.spec.Kind, src.spec.Goal) != nil {
			return // asked already; refresh keeps it current
		}
		e := &prepEntry{spec: src.spec, plan: src.plan, rule: src.rule, step: src.step, hard: src.hard, same: same, due: due.at}
		pr.entries = append(pr.entries, e)
		pr.ask(s, e, s.provisional(e))
	})
}

func (pr *prepare) find(rule string, step int, kind, goal string) *prepEntry {
	for _, e := range pr.entries {
		if e.matches(rule, step, kind, goal) {
			return e
		}
	}
	return nil
}

// provisional is the turn e's source would make now: built to ask for its
// line and check it, never put on the floor.
func (s *Session) provisional(e *prepEntry) *turn {
	if e.claimed != nil {
		return e.claimed
	}
	// One stand-in, reused: it never outlives the call that builds it.
	t := &s.prep.standIn
	*t = s.makeTurn(e.spec, e.rule, e.hard, e.same)
	t.silence = e.step
	if e.step >= 0 && e.spec.Who.Kind == rules.RoleRefLast {
		t.role = e.same
	}
	return t
}

// ask sends e's request, built for t, replacing any earlier one.
func (pr *prepare) ask(s *Session, e *prepEntry, t *turn) {
	req := s.peekRequest(t)
	if s.ended {
		return // a script building it ended the session
	}
	pr.send(s, e, t, req, nil)
}

// send sends req for e; with a correction it asks again for a line the
// guardrails refused, else for a new line.
func (pr *prepare) send(s *Session, e *prepEntry, t *turn, req *LLMRequest, c *Correction) {
	s.dropRequest(e.reqID)
	e.unanswered++
	if c == nil {
		if e.hard && e.state == prepReady && e.result.Err == nil && len(e.result.ToolCalls) == 0 && unusable(&e.result) == "" && e.guard.original == "" {
			// A hard turn asked again because its line went stale keeps
			// that line: said marked stale if the new one is not in on
			// time, it beats a fallback.
			e.backup, e.backupWhy = e.result, changed(e.sent, req)
		}
		e.asks++
		e.guard = guard{}
		e.sent = req
		e.reasked = false
	}
	e.state = prepAsked
	e.result = LLMResult{}
	e.role = t.role
	e.reqID = s.nextID('r')
	e.askedAt = s.now
	// The request sent is the one kept (sameRequest does not look at
	// Prepare); a correction goes on a copy, as the line is still the
	// one for the request without it.
	sent := req
	if c != nil {
		cp := *req
		cp.Correction = c
		sent = &cp
	}
	sent.Prepare = &Preparation{DueMS: e.due, LeadMS: e.plan.LeadMS}
	s.emit(Effect{Type: EffectLLMRequest, ID: e.reqID, Agent: t.role, Kind: t.kind, Rule: t.rule, Request: sent})
	s.openRequest(e.reqID, &s.prep, s.now+s.p.LLM.Timeout.MS)
}

// resend asks for e's line again with req, a copy of e.sent, saying
// why: the answer to the request before could not be used.
func (pr *prepare) resend(s *Session, e *prepEntry, t *turn, req *LLMRequest, why string) {
	s.dropRequest(e.reqID)
	e.unanswered++
	e.state = prepAsked
	e.result = LLMResult{}
	e.role = t.role
	e.reqID = s.nextID('r')
	e.askedAt = s.now
	// e.sent stays the request the line is for: a larger cap does not
	// make the line stale.
	req.Prepare = &Preparation{DueMS: e.due, LeadMS: e.plan.LeadMS}
	s.emit(Effect{Type: EffectLLMRequest, ID: e.reqID, Agent: t.role, Kind: t.kind, Rule: t.rule, Request: req, Reason: why})
	s.openRequest(e.reqID, &s.prep, s.now+s.p.LLM.Timeout.MS)
}

// claim hands a new turn the preparation made for it, if there is one.
func (pr *prepare) claim(t *turn) {
	for _, e := range pr.entries {
		if e.claimed == nil && e.matches(t.rule, t.silence, t.kind, t.goal) {
			e.claimed = t
			t.prep = e
			return
		}
	}
}

// drop forgets t's preparation: t was replaced by a turn of another kind.
func (pr *prepare) drop(s *Session, t *turn) {
	if e := t.prep; e != nil {
		t.prep = nil
		s.dropRequest(e.reqID)
		pr.remove(e)
	}
}

// unclaim puts a turn's preparation back for the next turn of its source
// (a window turn that gave way to a reply and waits again).
func (pr *prepare) unclaim(s *Session, t *turn) {
	e := t.prep
	if e == nil {
		return
	}
	e.claimed = nil
	t.prep = nil
	if !slices.Contains(pr.entries, e) {
		// The turn had started on it: the request it adopted is the
		// preparation's again (with the timeout the turn's preemption
		// cancelled), and refresh brings it up to date.
		pr.entries = append(pr.entries, e)
		if e.state == prepAsked {
			s.openRequest(e.reqID, &s.prep, max(s.now, e.askedAt+s.p.LLM.Timeout.MS))
		}
	}
}

// expire drops the unclaimed preparations for rule: its source made no
// turn after all (a window skipped, a silence ladder stopped, a timed
// rule whose condition did not hold).
func (pr *prepare) expire(s *Session, rule string) {
	pr.entries = slices.DeleteFunc(pr.entries, func(e *prepEntry) bool {
		if e.rule != rule || e.claimed != nil {
			return false
		}
		s.dropRequest(e.reqID)
		return true
	})
}

func (pr *prepare) remove(e *prepEntry) {
	pr.entries = slices.DeleteFunc(pr.entries, func(x *prepEntry) bool { return x == e })
}

// answered takes the answer to a preparation, if it is still asked.
func (pr *prepare) answered(s *Session, r *LLMResult) {
	for _, e := range pr.entries {
		if e.reqID != r.ID || e.state != prepAsked {
			continue
		}
		e.result = *r
		e.state = prepReady
		e.unanswered = 0
		if r.Err != nil && r.Err.Kind == notReadyKind {
			// A model slower than the lead at second 0 is the model's
			// pace, not a failure: the line is asked for when due.
			e.state = prepFailed
			s.emit(Effect{Type: EffectNote, Kind: NoteWarning, ID: e.reqID, Agent: e.role, Rule: e.rule,
				Reason: "preparing: " + r.Err.Message + e.whenDue()})
			return
		}
		if why := s.unusableLine(e.role, r); why != "" && !e.reasked && s.now < e.due {
			// Cut, withheld or empty with time left before it is due:
			// asked again now, once, as reask.go does for a turn, so the
			// line is ready on time rather than asked for when due.
			e.reasked = true
			t := s.provisional(e)
			req := *e.sent
			if why == FinishTruncated {
				req.MaxTokens = reaskCap(req.MaxTokens)
			}
			pr.resend(s, e, t, &req, "asked again before its due time: "+reaskReason(why))
			return
		}
		if r.Err != nil && e.hard && !e.reasked && s.now < e.due {
			// A hard turn is said when due, whatever its model did: a
			// failed preparation is asked for again now, once, rather
			// than when due, which would make it late.
			e.reasked = true
			s.emit(Effect{Type: EffectAdapterError, ID: e.reqID, Agent: e.role, Kind: e.spec.Kind, Rule: e.rule,
				Reason: "preparing: " + adapterReason(r.Err) + "; asked again now, as the turn is hard"})
			req := *e.sent
			pr.resend(s, e, s.provisional(e), &req, "asked again before its due time: the preparation failed")
			return
		}
		if why := s.unusableLine(e.role, r); r.Err != nil || why != "" {
			// Failed, or unusable again (or with no time left to ask):
			// a cut or withheld answer is never said as it came.
			e.state = prepFailed
			what := adapterReason(r.Err)
			if r.Err == nil {
				what = why + ": " + reaskReason(why)
			}
			s.emit(Effect{Type: EffectAdapterError, ID: e.reqID, Agent: e.role, Kind: e.spec.Kind, Rule: e.rule,
				Reason: "preparing: " + what + e.whenDue()})
			return
		}
		pr.precheck(s, e)
		return
	}
}

// precheck runs a prepared answer through the guardrails' built-in
// limits: one that breaks them, where the pack regenerates first, is
// asked for again now rather than when due. Tripwires and the rest of the
// chain run at release, on the line that will be said.
func (pr *prepare) precheck(s *Session, e *prepEntry) {
	g := &s.p.Guardrails
	if len(e.result.ToolCalls) > 0 || len(g.OnViolation) == 0 || g.OnViolation[0] != rules.ViolationRegenerate ||
		e.guard.regens >= *g.Regenerate.Attempts {
		return
	}
	t := s.provisional(e)
	line, _ := s.speech(t.role, e.result.Text)
	v := s.violations(t, line)
	if s.lines.atCap(s, line) {
		v = append(v, rules.GuardRepeat)
	}
	if len(v) == 0 {
		return
	}
	s.coverage.broke(s, v)
	gd := &e.guard
	gd.answers++
	gd.regens++
	if gd.violations == nil {
		gd.violations, gd.original = v, line
	}
	t.guard = *gd
	instruction := s.correction(t, line, v)
	s.emit(Effect{Type: EffectGuardrail, ID: e.reqID, Agent: t.role, Kind: "regenerate", Rule: t.rule, Text: line, Guardrail: v,
		Reason: fmt.Sprintf("attempt %d of %d, before its due time", gd.regens, *g.Regenerate.Attempts)})
	pr.send(s, e, t, e.sent, &Correction{Rejected: line, Instruction: instruction, Attempt: gd.regens})
}

// timedOut fails a preparation whose model did not answer in time; a
// hard turn's is asked for again at once, once, while it is not due.
func (pr *prepare) timedOut(s *Session, reqID string) {
	for _, e := range pr.entries {
		if e.reqID == reqID && e.state == prepAsked {
			what := "preparing: timeout: no result within " + formatMS(s.p.LLM.Timeout.MS)
			if e.hard && !e.reasked && s.now < e.due {
				e.reasked = true
				s.emit(Effect{Type: EffectAdapterError, ID: e.reqID, Agent: e.role, Kind: e.spec.Kind, Rule: e.rule,
					Reason: what + "; asked again now, as the turn is hard"})
				req := *e.sent
				pr.resend(s, e, s.provisional(e), &req, "asked again before its due time: the preparation timed out")
				return
			}
			e.state = prepFailed
			s.emit(Effect{Type: EffectAdapterError, ID: e.reqID, Agent: e.role, Kind: e.spec.Kind, Rule: e.rule,
				Reason: what + e.whenDue()})
			return
		}
	}
}

// onTime says a hard turn's line when its prepared one is missing: the
// line it held before that went stale (marked stale, through the
// guardrails), else its fallback, with a warning saying why.
func (pr *prepare) onTime(s *Session, t *turn, e *prepEntry, why string) {
	if b := e.backup; b.Text != "" && e.role == t.role {
		s.emit(Effect{Type: EffectNote, Kind: NoteWarning, ID: e.reqID, Agent: t.role, Rule: t.rule,
			Reason: why + ": a hard turn says the line it had on time"})
		t.stale = e.backupWhy
		t.reqID = b.ID
		t.state = tsGenerating
		t.guard = guard{askedAt: s.now}
		s.turnResult(t, &b)
		return
	}
	s.emit(Effect{Type: EffectNote, Kind: NoteWarning, ID: e.reqID, Agent: t.role, Rule: t.rule,
		Reason: why + ": a hard turn says its fallback on time"})
	s.deliver(t, s.fallback(t), true)
}

// whenDue says what becomes of a failed preparation when its turn is due.
func (e *prepEntry) whenDue() string {
	if e.hard {
		return "; its fallback is said when due"
	}
	return "; asked again when due"
}

// release is the start of a prepared turn: it says the held line, or
// adopts the request still out, or decides what a stale line becomes.
// It reports whether it took care of the turn; if not, the turn asks now.
func (pr *prepare) release(s *Session, t *turn) bool {
	e := t.prep
	if e == nil {
		return false
	}
	// The turn keeps it (unclaim puts it back if the turn gives way and
	// its window waits again); no other turn may take it.
	pr.remove(e)
	if e.state == prepFailed {
		if t.hard {
			// A hard turn is not late for a line its preparation could
			// not get.
			pr.onTime(s, t, e, "due with no prepared line")
			return true
		}
		return false
	}
	// Peeked, not built: instructions queued for the role go with the
	// request that carries them, and a line dropped or said stale did not.
	cur := s.compareRequest(t)
	if s.ended {
		return true
	}
	if !sameRequest(e.sent, cur) {
		stale := changed(e.sent, cur)
		policy := e.plan.OnStale
		if policy == rules.StaleSpeak && e.role != t.role {
			// Another role's line is never said in this role's voice,
			// nor its calls run as this role.
			policy = rules.StaleRegenerate
		}
		s.emit(Effect{Type: EffectStale, ID: e.reqID, Agent: t.role, Kind: policy.String(), Rule: t.rule,
			Reason: stale + " changed since " + rules.FormatClock(e.askedAt)})
		switch policy {
		case rules.StaleRegenerate:
			if !t.hard {
				s.dropRequest(e.reqID)
				return false
			}
			if e.state != prepReady || e.role != t.role {
				// Asking now would make a hard turn late.
				s.dropRequest(e.reqID)
				pr.onTime(s, t, e, "stale when due with no line for it")
				return true
			}
			// A hard turn says the line it has, marked stale, rather
			// than a new one late.
		case rules.StaleDrop:
			s.dropRequest(e.reqID)
			s.floor.active = nil
			return true
		}
		t.stale = stale
	} else {
		s.takeInstructions(t.role) // they were in the line's request
	}
	t.reqID = e.reqID
	t.guard = e.guard
	// The turn's own model budget (for regenerations now) starts when it
	// is due; the request out keeps the timeout it was sent with.
	t.guard.askedAt = s.now
	t.state = tsGenerating
	if e.state == prepReady {
		s.turnResult(t, &e.result)
		return true
	}
	if t.hard && e.guard.original != "" {
		// A hard turn due while its line is being written again after
		// the guardrails refused it: it is not late for a better line.
		// The refused answer goes through the rest of the chain (its
		// rewrite or fallback) now, and the answer still out, when it
		// comes, finds no owner and is ignored.
		s.dropRequest(e.reqID)
		s.deliver(t, e.guard.original, false)
		return true
	}
	if t.hard {
		// A hard turn is said when due: its line is not in yet (a model
		// slower than the lead), so the line it had before it went stale
		// or its fallback is said now, and the answer, when it comes,
		// finds no owner and is ignored.
		s.dropRequest(e.reqID)
		pr.onTime(s, t, e, "due before its prepared line came")
		return true
	}
	// Still being written: the turn waits for it as for its own request.
	s.reqs.own(e.reqID, &s.floor)
	s.cover.arm(s, t)
	return true
}

// refresh asks again for every preparation whose request has changed,
// after a step that did something a request could depend on.
func (pr *prepare) refresh(s *Session, from int, in InputType) {
	acted := pr.acted
	pr.acted = false
	if len(pr.entries) == 0 || s.ended || !(acted || pr.changedBy(s.out[from:], in)) {
		return
	}
	for _, e := range pr.entries {
		if s.ended {
			return // a peek's script ended the session
		}
		if e.plan.OnStale != rules.StaleRegenerate || e.asks >= maxPrepareAsks || e.unanswered >= maxUnanswered || e.state == prepFailed {
			continue
		}
		if e.claimed != nil && e.claimed.state != tsQueued {
			continue // started: no longer a preparation
		}
		t := s.provisional(e)
		req := s.compareRequest(t)
		if s.ended {
			return
		}
		if sameRequest(e.sent, req) {
			continue
		}
		s.emit(Effect{Type: EffectStale, ID: e.reqID, Agent: t.role, Kind: "asked_again", Rule: t.rule,
			Reason: changed(e.sent, req) + " changed since " + rules.FormatClock(e.askedAt)})
		pr.send(s, e, t, req.kept(), nil)
	}
}

// changedBy reports whether a step could have changed what a request
// carries: an input from outside, or an effect that speaks, routes or
// lands a result. (A pack action, which may change state silently, sets
// acted.)
func (pr *prepare) changedBy(effects []Effect, in InputType) bool {
	switch in {
	case InputCandidate, InputAgentTranscript, InputToolCall:
		return true
	}
	for i := range effects {
		switch effects[i].Type {
		case EffectAgentMessage, EffectRouted, EffectToolResult, EffectJobResult, EffectHandoff, EffectNote, EffectReport:
			return true
		}
	}
	return false
}

// sameRequest reports whether a line written for request a is the line
// for b. A turn's request is compared field by field, without encoding
// anything (this runs on every check); one that carries tool rounds, a
// job, attachments or a correction is rare here and is compared as JSON.
// keyFields lists the fields each way; a test holds it to LLMRequest's.
func sameRequest(a, b *LLMRequest) bool {
	if rare(a) || rare(b) {
		x, y := *a, *b
		x.Prepare, y.Prepare = nil, nil
		return bytes.Equal(jsonOf(&x), jsonOf(&y))
	}
	return a.Role == b.Role && a.Kind == b.Kind && a.TurnGoal == b.TurnGoal && a.Provider == b.Provider && a.Model == b.Model && a.MaxTokens == b.MaxTokens &&
		a.System == b.System && a.CandidateLastMessage == b.CandidateLastMessage &&
		slices.Equal(a.TranscriptTail, b.TranscriptTail) && slices.Equal(a.ScenarioContext, b.ScenarioContext) &&
		a.Constraints == b.Constraints && a.TimeoutMS == b.TimeoutMS && slices.Equal(a.Assembly, b.Assembly) && slices.Equal(a.Files, b.Files) &&
		slices.EqualFunc(a.Tools, b.Tools, func(x, y ToolDecl) bool {
			return x.Name == y.Name && x.Description == y.Description && bytes.Equal(x.Parameters, y.Parameters)
		})
}

func rare(r *LLMRequest) bool {
	return len(r.ToolRounds) > 0 || r.Job != "" || r.Prompt != "" || r.Sequence != nil || len(r.Schema) > 0 || r.Background ||
		len(r.Attachments) > 0 || r.Correction != nil
}

// keyFields are LLMRequest's fields as sameRequest treats them: compared,
// compared as JSON when set, or left out (Prepare marks the request, it is
// not what the line is written from).
var keyFields = map[string]string{
	"Role": "compared", "Kind": "compared", "TurnGoal": "compared", "Provider": "compared", "Model": "compared", "MaxTokens": "compared", "System": "compared",
	"CandidateLastMessage": "compared", "TranscriptTail": "compared", "ScenarioContext": "compared",
	"Constraints": "compared", "TimeoutMS": "compared", "Assembly": "compared", "Files": "compared", "Tools": "compared",
	"ToolRounds": "json", "Job": "json", "Prompt": "json", "Schema": "json", "Background": "json",
	"Attachments": "json", "Correction": "json", "Sequence": "json", "Prepare": "left out",
	// The pack fixes Human and the host SessionID: two requests of one
	// session always agree on them.
	"Human": "left out", "SessionID": "left out",
}

// changed names the parts of a request that differ, for reports.
func changed(a, b *LLMRequest) string {
	var out []string
	add := func(name string, same bool) {
		if !same {
			out = append(out, name)
		}
	}
	add("role", a.Role == b.Role)
	add("candidate_last_message", a.CandidateLastMessage == b.CandidateLastMessage)
	add("transcript_tail", slices.Equal(a.TranscriptTail, b.TranscriptTail))
	add("system", a.System == b.System)
	add("turn_goal", a.TurnGoal == b.TurnGoal)
	add("scenario_context", slices.Equal(a.ScenarioContext, b.ScenarioContext))
	add("tools", bytes.Equal(jsonOf(a.Tools), jsonOf(b.Tools)))
	if len(out) == 0 {
		return "request"
	}
	return strings.Join(out, ", ")
}

func jsonOf(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// setup asks, before the session's clock starts, for every line due
// within its lead of second 0.
func (pr *prepare) setup(s *Session) {
	// Preparations sort first among timers due at once, so the ones due
	// at 0 are due first; what follows them runs when the clock starts.
	for f := s.timers.first(); f != nil && f.kind == tPrepare && f.at <= 0; f = s.timers.first() {
		tm, _ := s.timers.popDue(0)
		pr.fire(s, tm)
	}
}

// beforeStart applies an input that comes before the session's clock
// starts: the prepare input, and answers to what it asked. It reports
// whether in was one.
func (pr *prepare) beforeStart(s *Session, in *Input) bool {
	switch {
	case in.Type == InputPrepare:
		if !pr.setUp {
			pr.setUp = true
			pr.setup(s)
		}
		return true
	case in.Type == InputLLMResult && in.T == 0 && pr.setUp:
		// Before the clock starts only preparations are out: the one
		// owner lookup finds nobody else.
		in.LLM.apply(s)
		return true
	}
	return false
}

// staleReason is an agent message's note that its prepared line was said
// although what it was written from had changed.
func staleReason(changed string) string {
	if changed == "" {
		return ""
	}
	return "stale: " + changed + " changed"
}

// NeedsPrepare reports whether the session has lines due within their
// lead of second 0: a host that can wait gives it a prepare input, feeds
// the answers at T 0 and only then starts the clock, so those lines are
// on time too.
func (s *Session) NeedsPrepare() bool {
	if s.started || s.prep.setUp {
		return false
	}
	f := s.timers.first()
	return f != nil && f.kind == tPrepare && f.at <= 0
}

// Preparing reports whether the prepare input ran and the clock has not
// started: the host is waiting for the answers.
func (s *Session) Preparing() bool { return s.prep.setUp && !s.started }

// Waiting lists the preparations asked before the clock started that
// have no answer yet, by request id.
func (s *Session) Waiting() []string {
	var out []string
	for _, e := range s.prep.entries {
		if e.state == prepAsked {
			out = append(out, e.reqID)
		}
	}
	return out
}

// NotReady is the answer a host gives, when it starts the clock, for a
// preparation asked by the prepare input that has no answer yet: the
// preparation fails and its turn asks again when due.
func NotReady(reqID string) LLMResult {
	return LLMResult{ID: reqID, Err: &AdapterError{Kind: notReadyKind, Message: "not ready when the session's clock started"}}
}

// notReadyKind is NotReady's error kind: the preparation's answer is
// reported as a warning, not an adapter error.
const notReadyKind = "not_ready"
