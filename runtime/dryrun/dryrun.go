// Package dryrun plays a whole session on a simulated clock: candidate
// events from a script, a scripted LLM and a simulated voice, each answering
// at its own simulated time. Nothing sleeps, so ten minutes take
// milliseconds, and the result is exactly what the engine would do live.
package dryrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/internal/sim"
	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/record"
)

// Reply is one scripted model answer, matched to requests by call number,
// role, kind, goal or job: the format of `baton dryrun -llm FILE` and of
// a pack test's llm: list.
type Reply = sim.Reply

// ReplyTool is a tool call a Reply makes.
type ReplyTool = sim.ReplyTool

// Misbehave makes the simulated model misbehave (runtime/internal/sim:
// long, label, markdown, bad_tools, refused_end, truncated, rate_limit,
// empty, safety, off_role, slow), seeded.
type Misbehave = sim.Misbehave

// MisbehaviourNames lists the misbehaviours of the simulated model.
var MisbehaviourNames = sim.MisbehaviourNames

// IsChaos says whether an --llm spelling names a misbehaving model.
func IsChaos(spec string) bool { return sim.IsChaos(spec) }

// ParseChaos reads "chaos", "chaos:NAME,NAME" or either with "@RATE".
func ParseChaos(spec string) (Misbehave, error) { return sim.ParseChaos(spec) }

// ContentWords are the words of s that carry its content (lower case,
// four letters or more, no common words), as the misbehaving model
// echoes them.
func ContentWords(s string) []string { return sim.ContentWords(s) }

// SpeakerNames are what a line of a role may be labelled with: its id,
// its display name and that name's first word.
func SpeakerNames(r *rules.Role) []string { return sim.SpeakerNames(r) }

// ReadReplies reads a reply script as a YAML or JSON list, or JSON lines.
func ReadReplies(r io.Reader) ([]Reply, error) { return sim.ReadReplies(r) }

// ReadRepliesFile reads a replies file's content, naming every problem at
// name:line:col.
func ReadRepliesFile(name string, data []byte) ([]Reply, error) {
	return sim.ReadRepliesFile(name, data)
}

// Options configure a dry run.
type Options struct {
	Events []events.Timed
	// Replies script the LLM; unmatched calls use the pack's lines.
	Replies []Reply
	// Model, when set, answers instead of the scripted LLM (a real model
	// through llm.Turns, say): its Answer.After becomes the simulated
	// delay. Its results are in Result.Inputs, so the run can be replayed
	// offline.
	Model llm.Answerer
	// Misbehave, when set, makes the simulated model (not Model)
	// misbehave as it says, seeded by its own Seed.
	Misbehave *Misbehave
	// Seed seeds the pack scripts' Math.random.
	Seed uint64
	// Inputs are what the session supplies for the pack's declared inputs
	// (the rest take their defaults). The run plays the pack they bind
	// (rules.Inputs.Pack); inputs the pack refuses are the run's error, a
	// rules.InputErrors.
	Inputs rules.Supplied
	// StepMS, if positive, advances the clock in fixed steps instead of
	// jumping to the next deadline, as a live host ticking would; output
	// must not change (tested). It may not exceed the pack's tick: a coarser
	// step would deliver adapter results later than they arrived.
	StepMS int64
	// OnRecord, if set, is given each record as the run produces it, so a
	// run against a real model can be shown as it happens. An error from
	// it stops the run.
	OnRecord func(*record.Record) error
	// Candidate, if set, plays the pack's candidate model seeded with Seed
	// instead of Events (which must then be empty): the simulated
	// candidate answers what the session says, so the same pack and seed
	// always play the same session.
	Candidate *CandidateModel
	// Lean keeps no Records, Inputs or Steps in the Result, for callers
	// that stream what they need through OnRecord (a sweep of thousands
	// of runs): the record OnRecord is given is then only valid during
	// the call.
	Lean bool
	// SessionID, if set, is the id model requests carry (session_id).
	SessionID string
	// End, if set, ends the session from outside at End.T, after the
	// events due then, as a host's end request does: a what-if of a
	// recording that was ended there, or that stops there.
	End *EndAt
}

// EndAt is an end request at T, with its reason.
type EndAt struct {
	T      int64
	Reason string
}

// CandidateModel is a pack's dryrun.candidate_model ready to play, built
// once and shared, read-only, by any number of runs at once.
type CandidateModel struct{ m *sim.CandidateModel }

// NewCandidateModel resolves p's candidate model. Its answers are its own
// answers: list, else the candidate_message texts of the pack's
// dryrun.candidate file. Problems come back as a rules.ErrorList at
// file:line:col.
func NewCandidateModel(p *rules.Pack) (*CandidateModel, error) {
	var texts []string
	if m := p.DryRun.CandidateModel; m != nil && len(m.Answers) == 0 && p.DryRun.Candidate != "" {
		f, err := p.FS.Open(p.DryRun.Candidate)
		if err != nil {
			return nil, fmt.Errorf("dryrun.candidate: %w", err)
		}
		defer f.Close()
		evs, err := events.ReadFile(p.DryRun.Candidate, f)
		if err != nil {
			return nil, err
		}
		for i := range evs {
			if ev := &evs[i].Event; ev.Type == engine.EventMessage && ev.Text != "" {
				texts = append(texts, ev.Text)
			}
		}
	}
	m, err := sim.NewCandidateModel(p, texts)
	if err != nil {
		return nil, err
	}
	return &CandidateModel{m: m}, nil
}

// Run plays a session of p to its end.
func Run(p *rules.Pack, opt Options) (*record.Result, error) {
	return RunContext(context.Background(), p, opt)
}

// RunContext is Run with a context for the model's calls.
func RunContext(ctx context.Context, p *rules.Pack, opt Options) (*record.Result, error) {
	if opt.StepMS > p.Tick.MS {
		return nil, fmt.Errorf("step %dms is coarser than the pack's tick (%dms)", opt.StepMS, p.Tick.MS)
	}
	if opt.Candidate != nil && len(opt.Events) > 0 {
		return nil, errors.New("a run plays either events or the candidate model, not both")
	}
	s, err := engine.Open(p, engine.Options{Seed: opt.Seed, Inputs: opt.Inputs, SessionID: opt.SessionID})
	if err != nil {
		return nil, err
	}
	// The session runs on the pack bound to its inputs: the same pack, or
	// one compiled with a number or duration the session supplied.
	p = s.Inputs().Pack()
	sm := sim.NewModel(p, opt.Replies, -1).Offline()
	if opt.Misbehave != nil {
		sm.Misbehave(*opt.Misbehave)
	}
	var model llm.Answerer = sm
	if opt.Model != nil {
		model = opt.Model
	}
	h := &host{
		ctx:    ctx,
		s:      s,
		llm:    model,
		voice:  sim.NewVoice(p),
		client: sim.NewClient(p, s.Inputs()),
		res:    &record.Result{Supplied: s.Inputs().Supplied()},
		micOn:  -1,
		on:     opt.OnRecord,
		lean:   opt.Lean,
		tickMS: p.Tick.MS,
	}
	if opt.Candidate != nil {
		h.cand = opt.Candidate.m.NewCandidateFor(opt.Seed, p.Duration.MS)
	}
	if !h.lean {
		h.res.Records = make([]record.Record, 0, 256)
	}
	// Every event is checked against the pack before the run starts, with
	// the one check a live session applies before it logs an input.
	for i := range opt.Events {
		if err := engine.CheckEvent(p, &opt.Events[i].Event); err != nil {
			return nil, fmt.Errorf("%s: %w", opt.Events[i].Where(i), err)
		}
	}
	// One copy of them all, which the result's inputs point into: the
	// caller's slice stays theirs to change.
	evs := slices.Clone(opt.Events)
	h.queue.q = make([]engine.Input, 0, len(evs)+16)
	for i := range evs {
		h.push(engine.Input{T: evs[i].T, Type: engine.InputCandidate, Candidate: &evs[i].Event})
	}
	if e := opt.End; e != nil {
		h.push(engine.Input{T: e.T, Type: engine.InputEnd, End: &engine.EndRequest{Reason: e.Reason}})
	}
	if h.s.NeedsPrepare() {
		if err := h.prepare(); err != nil {
			return nil, err
		}
	}
	// Step 0 starts the session even when the first event is later.
	if err := h.step(engine.Input{T: 0, Type: engine.InputAdvance}); err != nil {
		return nil, err
	}
	var clock int64 // the host's own clock in step mode; the engine's is quantized
	for !h.s.Ended() {
		deadline, hasDeadline := h.s.NextDeadline()
		if opt.StepMS > 0 {
			next := clock + opt.StepMS
			if at, ok := h.nextAt(); ok && at <= next {
				if err := h.step(h.pop()); err != nil {
					return nil, err
				}
				continue
			}
			if _, ok := h.nextAt(); !hasDeadline && !ok {
				break
			}
			if err := h.step(engine.Input{T: next, Type: engine.InputAdvance}); err != nil {
				return nil, err
			}
			clock = next
			continue
		}
		at, ok := h.nextAt()
		switch {
		case ok && (!hasDeadline || at < deadline):
			if err := h.step(h.pop()); err != nil {
				return nil, err
			}
		case hasDeadline:
			if err := h.step(engine.Input{T: deadline, Type: engine.InputAdvance}); err != nil {
				return nil, err
			}
		default:
			return h.finish(), nil
		}
	}
	return h.finish(), nil
}

func (h *host) finish() *record.Result {
	h.res.EndMS, h.res.Files, h.res.Workspace = h.s.Now(), h.s.ContextFiles(), h.client.Files()
	h.res.Coverage = h.s.Coverage()
	h.res.TicketsLeft = h.s.TicketsLeft()
	if h.micOn >= 0 {
		h.res.Candidate.TalkMS += h.res.EndMS - h.micOn
		h.micOn = -1
	}
	return h.res
}

type host struct {
	ctx context.Context
	// early collects, while the prepare input runs, the answers to what
	// it asked, to be given before the clock starts.
	early     []earlyAnswer
	preparing bool
	now, wait int64 // while preparing: ms since the prepare input, and how long the host waits
	s         *engine.Session
	llm       llm.Answerer
	voice     *sim.Voice
	client    *sim.Client
	queue     queue
	res       *record.Result
	buf       []engine.Effect
	// kept is the room left in the chunk that holds the effects of the
	// steps the result records.
	kept []engine.Effect
	// answers and speech hold the payloads of the inputs the host
	// schedules.
	answers slab[engine.LLMResult]
	speech  slab[engine.SpeechDone]
	on      func(*record.Record) error
	// lean keeps no records, inputs or steps (Options.Lean); rec is the
	// record OnRecord is given then.
	lean   bool
	rec    record.Record
	ev     engine.CandidateEvent
	tickMS int64
	// micOn is when the candidate's mic went on, -1 while it is off: the
	// talk time it counts goes into res.Candidate as the mic goes off.
	micOn int64
	// cand is the simulated candidate, when the run plays the model, and
	// playing the agent messages whose speech has not finished, which
	// its barge-ins cut short.
	cand    *sim.Candidate
	playing []playing
}

type playing struct {
	id         string
	role       string
	start, end int64
}

type earlyAnswer struct {
	res engine.LLMResult
	at  int64 // when it comes, in ms after the prepare input
}

// prepare runs the prepare input and hands the answers to the session
// before its clock starts, in the order they come, as baton serve does:
// the host waits at most the longest lead asked with, less when every
// answer is in (an answer may ask again: a line the guardrails refused).
// What is still out then is failed (engine.NotReady) and the clock starts.
func (h *host) prepare() error {
	h.preparing = true
	defer func() { h.preparing, h.early = false, nil }()
	if err := h.step(engine.Input{T: 0, Type: engine.InputPrepare}); err != nil {
		return err
	}
	for len(h.early) > 0 {
		next := 0
		for i := range h.early {
			if h.early[i].at < h.early[next].at {
				next = i
			}
		}
		a := h.early[next]
		h.early = slices.Delete(h.early, next, next+1)
		if a.at > h.wait {
			for _, out := range append(h.early, a) {
				res := engine.NotReady(out.res.ID)
				if err := h.step(engine.Input{T: 0, Type: engine.InputLLMResult, LLM: &res}); err != nil {
					return err
				}
			}
			return nil
		}
		h.now = a.at
		if err := h.step(engine.Input{T: 0, Type: engine.InputLLMResult, LLM: &a.res}); err != nil {
			return err
		}
	}
	return nil
}

func (h *host) push(in engine.Input) { h.queue.push(in) }

// nextAt is when the next input is due: the queue's first or the
// candidate's next event, whichever is sooner.
func (h *host) nextAt() (int64, bool) {
	at, ok := int64(0), false
	if h.queue.len() > 0 {
		at, ok = h.queue.peek().T, true
	}
	if h.cand != nil {
		if t, has := h.cand.Next(); has && (!ok || t < at) {
			at, ok = t, true
		}
	}
	return at, ok
}

// pop takes the next input; on a tie the queue's comes first, having
// arrived first.
func (h *host) pop() engine.Input {
	if h.cand != nil {
		if t, ok := h.cand.Next(); ok && (h.queue.len() == 0 || t < h.queue.peek().T) {
			t, ev := h.cand.Pop()
			if h.lean {
				// No input is kept, and the engine reads an event only
				// while it applies it: one will do for the whole run.
				h.ev = ev
				return engine.Input{T: t, Type: engine.InputCandidate, Candidate: &h.ev}
			}
			// A copy of its own, so that ev stays on the stack in a
			// lean run.
			kept := new(engine.CandidateEvent)
			*kept = ev
			return engine.Input{T: t, Type: engine.InputCandidate, Candidate: kept}
		}
	}
	return h.queue.pop()
}

// keep copies a step's effects for the result, into chunks of room for
// 64: a copy per step was an allocation per step, and one array grown by
// doubling wasted a third of its room. A step's slice is capped at its
// length, so that nothing appended to one runs into the next.
func (h *host) keep(effs []engine.Effect) []engine.Effect {
	if len(effs) == 0 {
		return nil
	}
	if cap(h.kept)-len(h.kept) < len(effs) {
		h.kept = make([]engine.Effect, 0, max(64, len(effs)))
	}
	start := len(h.kept)
	h.kept = append(h.kept, effs...)
	return h.kept[start:len(h.kept):len(h.kept)]
}

// bargeIn cuts short, at t, the agent speech the candidate talked over:
// a client stops playback when its user starts talking, and says so.
func (h *host) bargeIn(t int64) {
	for _, p := range h.playing {
		if p.end <= t {
			continue
		}
		c := &h.res.Candidate
		if c.CutMS == nil {
			c.CutMS = map[string]int64{}
		}
		c.CutMS[p.role] += p.end - max(t, p.start)
		h.queue.drop(func(in *engine.Input) bool {
			return in.Type == engine.InputSpeechDone && in.Speech.ID == p.id
		})
		h.push(engine.Input{T: t, Type: engine.InputSpeechDone, Speech: &engine.SpeechDone{ID: p.id, Interrupted: true}})
	}
	h.playing = h.playing[:0]
}

// countCandidate keeps the candidate's statistics from its inputs.
func (h *host) countCandidate(in *engine.Input) {
	c, ev := &h.res.Candidate, in.Candidate
	switch ev.Type {
	case engine.EventMessage:
		c.Messages++
	case engine.EventMicState:
		switch on := ev.MicActive != nil && *ev.MicActive; {
		case on && h.micOn < 0:
			h.micOn = in.T
		case !on && h.micOn >= 0:
			c.TalkMS += in.T - h.micOn
			h.micOn = -1
		}
	}
}

func (h *host) step(in engine.Input) error {
	// A cancelled run stops between steps; the cause (an interrupt, or a
	// caller giving up on a model that cannot be reached) is the error.
	if h.ctx.Err() != nil {
		return context.Cause(h.ctx)
	}
	if in.T < h.s.Now() {
		in.T = h.s.Now() // a reply scheduled inside the current tick lands on it
	}
	if !h.lean {
		h.res.Inputs = append(h.res.Inputs, in)
	}
	if in.Type == engine.InputCandidate {
		h.countCandidate(&in)
		if h.cand != nil && in.Candidate.Type == engine.EventMicState && in.Candidate.MicActive != nil && *in.Candidate.MicActive && len(h.playing) > 0 {
			h.bargeIn(in.T)
		}
	}
	var err error
	h.buf, err = h.s.Step(in, h.buf[:0])
	if !h.lean {
		h.res.Steps = append(h.res.Steps, record.Step{Effects: h.keep(h.buf), Err: err})
	}
	if err != nil && err != engine.ErrEnded {
		return fmt.Errorf("at %s: %w", rules.FormatClock(in.T), err)
	}
	for i := range h.buf {
		e := &h.buf[i]
		rec := &h.rec
		if !h.lean {
			h.res.Records = append(h.res.Records, record.Record{})
			rec = &h.res.Records[len(h.res.Records)-1]
		}
		*rec = record.Record{Effect: *e, TickMS: h.tickMS}
		switch e.Type {
		case engine.EffectLLMRequest:
			a := h.llm.Answer(h.ctx, e.ID, e.Request)
			if h.preparing {
				if p := e.Request.Prepare; p != nil {
					h.wait = max(h.wait, p.LeadMS)
				}
				ea := earlyAnswer{res: a.Result, at: h.now + a.After.Milliseconds()}
				if a.Never {
					ea.at = math.MaxInt64 // after every answer that comes
				}
				ea.res.ID = e.ID
				h.early = append(h.early, ea)
				break
			}
			if !a.Never {
				a.Result.ID = e.ID
				h.push(engine.Input{T: e.T + a.After.Milliseconds(), Type: engine.InputLLMResult, LLM: h.answers.new(a.Result)})
			}
		case engine.EffectClientToolCall:
			// The simulated client answers after its latency and then, for
			// a write, reports the editor's change.
			res, change := h.client.Answer(e)
			at := e.T + h.client.LatencyMS()
			h.push(engine.Input{T: at, Type: engine.InputClientToolResult, ClientTool: &res})
			if change != nil {
				h.push(engine.Input{T: at, Type: engine.InputCandidate, Candidate: change})
			}
		case engine.EffectAgentMessage:
			rec.SpeechMS = h.voice.Duration(e.Agent, e.Text)
			h.push(engine.Input{T: e.T + rec.SpeechMS, Type: engine.InputSpeechDone, Speech: h.speech.new(engine.SpeechDone{ID: e.ID})})
			if h.cand != nil {
				h.playing = slices.DeleteFunc(h.playing, func(p playing) bool { return p.end <= e.T })
				h.playing = append(h.playing, playing{id: e.ID, role: e.Agent, start: e.T, end: e.T + rec.SpeechMS})
			}
		case engine.EffectSessionEnd:
			h.res.Ended = e.Reason
		}
		if h.cand != nil {
			h.cand.Observe(e, rec.SpeechMS)
		}
		if h.on != nil {
			if err := h.on(rec); err != nil {
				return err
			}
		}
	}
	return nil
}

// SimulatedModel is the pack's simulated model, as a dry run plays it,
// for a host that renders its answers itself: a test serving them on a
// vendor's wire.
type SimulatedModel struct{ m *sim.Model }

// NewSimulatedModel is p's simulated model, misbehaving as mis says (nil:
// not at all).
func NewSimulatedModel(p *rules.Pack, mis *Misbehave) *SimulatedModel {
	m := sim.NewModel(p, nil, -1).Offline()
	if mis != nil {
		m.Misbehave(*mis)
	}
	return &SimulatedModel{m: m}
}

// Answer is the model's answer to req, as a dry run would get it, and the
// misbehaviours (MisbehaviourNames) that struck the call: under a
// rate_limit the answer's After already holds the wait its hint asked
// for (sim.RetryAfterMS) and a second latency.
func (m *SimulatedModel) Answer(ctx context.Context, id string, req *engine.LLMRequest) (llm.Answer, []string) {
	return m.m.AnswerStruck(ctx, id, req)
}

// RetryAfterMS is the wait the simulated model's rate limit asks for.
const RetryAfterMS = sim.RetryAfterMS
