package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/batonhq/baton/rules"
)

// Version identifies the engine's behaviour; logs record it so a replay on
// a different engine is reported rather than silently trusted.
const Version = "baton-engine/5"

var (
	// ErrEnded is returned for inputs after the session ended.
	ErrEnded = errors.New("session has ended")
	// ErrTimeBackwards is returned for an input older than the session clock.
	ErrTimeBackwards = errors.New("time went backwards")
	// ErrBadInput is returned for inputs that are malformed.
	ErrBadInput = errors.New("bad input")
	// ErrUnknownEventType is returned (with ErrBadInput) for a candidate
	// event whose type the session's pack does not take.
	ErrUnknownEventType = errors.New("unknown event type")
)

// Options are everything about a session that is not in its pack or its
// inputs. A host stores them verbatim in the session's log header, so a
// replay builds the same session.
type Options struct {
	// Seed seeds Math.random in the pack's scripts.
	Seed uint64 `json:"seed"`
	// VoiceMode overrides the pack's voice.mode ("tts" or "live") for this
	// session; empty keeps the pack's.
	VoiceMode string `json:"voice_mode,omitempty"`
	// LiveBudgets holds the pack's scripts to their time budget on the
	// wall clock, and records each call stopped at it (FactsOf): set by a
	// host running the session live against real time. Without it a
	// script runs under script.ReplayBudget, which only a runaway
	// reaches, so an offline session (a dry run, a pack test, a sweep)
	// is the same on every machine. In the log header, it keeps a
	// recovered live session measuring after its replay.
	LiveBudgets bool `json:"live_budgets,omitempty"`
	// SessionID, if set, is the id model requests carry (session_id).
	SessionID string `json:"session_id,omitempty"`
	// Inputs are what the session supplied for the pack's declared
	// inputs (rules.Supplied); the rest take their defaults.
	Inputs rules.Supplied `json:"inputs,omitempty"`
}

// maxSettle bounds the passes settle makes after one event. A pack whose
// rules keep making progress for longer is looping; the engine stops and
// says so rather than spin.
const maxSettle = 64

// Session is one interview. It is not safe for concurrent use.
//
// Its state is split by feature, each in its own file with its own type;
// the Session holds one of each and the clock, the timer table and the
// effect buffer they share.
type Session struct {
	p   *rules.Pack
	in  *rules.Inputs
	env *rules.Env
	// ids holds the text of the ids nextID hands out.
	ids strings.Builder
	// lates is the room left in the block agent messages take their
	// lateness from (Session.lateness).
	lates []Lateness
	// refused is the pack's refusal of the session's inputs, if any.
	refused error
	out     []Effect
	opts    Options

	now     int64
	started bool
	ended   bool
	seq     uint64
	timers  timerTable
	rng     *rand.Rand
	scripts scriptRuns
	reqs    requests        // requests.go
	reask   reask           // reask.go
	reply   rules.ReplyView // the reply in scope while a line is checked (guardrail.go)

	cand        candidate   // candidate.go
	conf        confidence  // confidence.go
	timeline    timeline    // timeline.go
	floor       floor       // turns.go
	silence     silence     // silence.go
	tickets     tickets     // tickets.go
	tools       tools       // tools.go
	clientTools clientTools // clienttools.go
	slots       slots       // slots.go
	jobs        jobs        // jobs.go
	waits       waits       // waitfor.go
	memory      memory      // memory.go
	handoff     handoff     // handoff.go
	transcript  transcript  // transcript.go
	liveness    liveness    // liveness.go
	lines       lines       // lines.go
	input       inputGuard  // inputguard.go
	prep        prepare     // prepare.go
	cover       cover       // cover.go
	files       files       // files.go
	seqs        sequences   // sequence.go
	coverage    coverage    // coverage.go
}

// New starts a session of pack p at time 0. The first Step runs the
// session-start rules and whatever is due at its time.
//
// A session whose Options.Inputs the pack refuses takes no input: every
// Step returns the refusal (Open returns it at once).
func New(p *rules.Pack, opts Options) *Session {
	s, _ := Open(p, opts)
	return s
}

// Open is New that returns the pack's refusal of the session's inputs
// (rules.InputErrors) as an error; the session it returns with one takes
// no input. Hosts that admit sessions check the inputs with Pack.Bind
// first, so a refusal is answered before anything is logged.
func Open(p *rules.Pack, opts Options) (*Session, error) {
	in, err := p.Bind(opts.Inputs, rules.BindOptions{})
	if err != nil {
		in = p.DefaultInputs()
	}
	s := newSession(in, opts)
	s.refused = err
	return s, err
}

func newSession(in *rules.Inputs, opts Options) *Session {
	p := in.Pack()
	s := &Session{p: p, in: in, env: p.NewEnv(), opts: opts}
	s.env.SetInputs(in)
	s.rng = rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))
	s.env.SetHost(envHost{s})
	for _, f := range [...]feature{
		// The features with state to set up for a new session, in the
		// order they set it up (memory before the slots whose starting
		// values it holds).
		&s.cand, &s.timeline, &s.tickets, &s.tools, &s.memory, &s.slots,
		&s.handoff, &s.transcript, &s.liveness, &s.lines, &s.files, &s.seqs,
	} {
		f.init(s)
	}
	return s
}

// Inputs are the session's inputs, supplied or default.
func (s *Session) Inputs() *rules.Inputs { return s.in }

// feature is a part of a session with state of its own to set up. A new
// feature is its own file, its field in Session, its place in New's
// list if it has state to set up, and its timers in the timer table
// (timers.go); one that asks a model is a requestOwner (requests.go).
type feature interface{ init(s *Session) }

// Pack returns the session's pack.
func (s *Session) Pack() *rules.Pack { return s.p }

// Now is the session clock in ms.
func (s *Session) Now() int64 { return s.now }

// Ended reports whether the session has ended.
func (s *Session) Ended() bool { return s.ended }

// NextDeadline is when the session next needs to run if no input arrives.
// A host sleeps until then (or until an input) instead of polling.
func (s *Session) NextDeadline() (int64, bool) {
	if s.ended {
		return 0, false
	}
	if !s.started {
		return 0, true
	}
	return s.timers.next()
}

// Transcript returns the session's transcript so far (shared; do not modify).
func (s *Session) Transcript() []TranscriptLine { return s.transcript.lines }

func (s *Session) quantUp(t int64) int64 {
	tick := s.p.Tick.MS
	return (t + tick - 1) / tick * tick
}

func (s *Session) quantDown(t int64) int64 {
	tick := s.p.Tick.MS
	return t / tick * tick
}

func (s *Session) addTimer(t timer) {
	t.at = s.quantUp(t.at)
	s.timers.add(t)
	s.prep.shadow(s, &t)
}

func (s *Session) nextID(prefix byte) string {
	s.seq++
	// Ids are cut from one builder's text: a builder only ever appends,
	// so the bytes of an id handed out never change, and a session's
	// thirty-odd ids cost one allocation where each cost its own.
	b := &s.ids
	if b.Cap()-b.Len() < 21 {
		*b = strings.Builder{}
		b.Grow(256)
	}
	start := b.Len()
	b.WriteByte(prefix)
	var num [20]byte
	b.Write(strconv.AppendUint(num[:0], s.seq, 10))
	return b.String()[start:]
}

func (s *Session) emit(e Effect) {
	e.T = s.now
	s.out = append(s.out, e)
	s.reask.emitted(&e)
}

// note reports a problem a pack caused at runtime (an expression that
// failed, a template that did not render) without stopping the session.
func (s *Session) note(rule, reason string) {
	s.emit(Effect{Type: EffectNote, Rule: rule, Reason: reason})
}

// Step applies one input and appends the resulting effects to out. Timers
// due at or before the input's time fire first, in timer order. The input
// time is quantized down to the pack's tick.
func (s *Session) Step(in Input, out []Effect) ([]Effect, error) {
	s.out = out
	defer func() { s.out = nil }()
	if in.T < s.now {
		return out, fmt.Errorf("%w: input at %dms, session at %dms", ErrTimeBackwards, in.T, s.now)
	}
	if s.refused != nil {
		return out, fmt.Errorf("%w: %w", ErrBadInput, s.refused)
	}
	if s.ended {
		if in.Type == InputAdvance {
			return out, nil
		}
		return out, ErrEnded
	}
	if err := CheckInput(s.p, &in); err != nil {
		return out, err
	}
	if in.Type == InputPrepare && s.started {
		return out, fmt.Errorf("%w: prepare comes before the session's clock starts", ErrBadInput)
	}
	s.scripts.begin(in.Scripts)
	if !s.started && s.prep.beforeStart(s, &in) {
		return s.out, nil
	}
	t := s.quantDown(in.T)
	if !s.started {
		s.started = true
		mark := len(s.out)
		s.tickets.distribute(s)
		s.jobs.start(s)
		s.fireRules(rules.EngineTrigger(rules.TriggerSessionStart))
		if s.jobs.live && !s.ended {
			s.fireRules(rules.EngineTrigger(rules.TriggerLiveStart))
		}
		s.settle()
		s.prep.refresh(s, mark, InputAdvance)
	}
	s.advanceTo(t)
	if s.ended {
		return s.out, nil
	}
	mark := len(s.out)
	if k, _ := kindOf(in.Type); k.field != "" {
		pl := in.payload(k.typ)
		if pl == nil { // an optional payload left out
			pl = k.absent
		}
		pl.apply(s)
	}
	if in.Type != InputAdvance {
		s.liveness.activity(s)
	}
	s.settle()
	s.prep.refresh(s, mark, in.Type)
	s.handoff.flush(s)
	return s.out, nil
}

// advanceTo fires every timer due by t, each at its own deadline and each
// followed by all the progress it allows, so that stepping tick by tick
// and jumping straight to t give the same effects.
func (s *Session) advanceTo(t int64) {
	for !s.ended {
		tm, ok := s.timers.popDue(t)
		if !ok {
			break
		}
		s.now = tm.at
		mark := len(s.out)
		s.fire(tm)
		s.settle()
		// After each deadline, not once per step: a host that sleeps
		// through several must see the same preparations.
		s.prep.refresh(s, mark, InputAdvance)
	}
	if !s.ended {
		s.now = t
	}
}

// settle makes all the progress the current state allows: end the session
// if an end rule holds, start or release the next turn, or let an open
// window take the free floor.
func (s *Session) settle() {
	if !converge(maxSettle, func() bool { return !s.ended && s.settleOnce() }) {
		s.seqs.abandon()
		s.emit(Effect{Type: EffectEngineError, Reason: fmt.Sprintf("settle: still making progress after %d passes; a pack rule is looping", maxSettle)})
	}
	s.liveness.watch(s)
}

// converge runs step until it reports no more progress, at most max
// times; it reports whether it got there.
func converge(max int, step func() bool) bool {
	for range max {
		if !step() {
			return true
		}
	}
	return false
}

// settleOnce makes one step of progress and reports whether another may
// be possible.
func (s *Session) settleOnce() bool {
	// An ended exchange's rules run before the end rules look: they may
	// be what an end rule waits for.
	if s.seqs.fireEnded(s) {
		return true
	}
	s.checkEnd()
	if s.ended {
		return false
	}
	if s.floor.active != nil {
		return s.settleActive()
	}
	if len(s.floor.queue) > 0 {
		t := s.floor.queue[0]
		if t.waiting > 0 || s.holdTurn(t) {
			// A turn waiting for its client's tool results keeps its
			// place: nothing else takes the floor meanwhile.
			return false
		}
		// Shifted, not resliced: the queue is short, and keeps its room
		// for the next turn.
		q := s.floor.queue
		q[copy(q, q[1:])] = nil
		s.floor.queue = q[:len(q)-1]
		s.start(t)
		return true
	}
	return s.timeline.takeFreeFloor(s)
}

func (s *Session) end(reason, rule string) {
	if s.ended {
		return
	}
	if reason == "" {
		reason = "ended"
	}
	// Exchanges that ended in this step have their rules run, and those
	// under way end, so nothing follows session_end.
	s.seqs.drain(s)
	if s.ended {
		return // a rule there ended the session
	}
	s.seqs.endAll(s)
	s.emit(Effect{Type: EffectSessionEnd, Reason: reason, Rule: rule})
	s.ended = true
	s.timers.ts = s.timers.ts[:0]
	s.floor = floor{lastRole: s.floor.lastRole, turns: s.floor.turns}
	s.silence.await = nil
}

// checkEnd runs the pack's end rules.
func (s *Session) checkEnd() {
	for i := range s.p.End {
		e := &s.p.End[i]
		if s.evalBool(&e.When, "") {
			s.coverage.hit(s, rules.CoverEnd, e.ID)
			s.end(e.Reason, e.ID)
			return
		}
	}
}

func (e *EndRequest) apply(s *Session) {
	reason := e.Reason
	if reason == "" {
		reason = "ended by host"
	}
	s.end(reason, "host")
}
