// Package engine is baton's deterministic core: one Session per interview,
// driven only by the inputs it is given and answering with effects. It does
// no I/O, starts no goroutines, reads no clock and never ranges over a map,
// so the same pack and inputs always give byte-identical effects.
package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/batonhq/baton/rules"
)

// Version identifies the engine's behaviour; logs record it so a replay on
// a different engine is reported rather than silently trusted.
const Version = "baton-engine/1"

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

type turnState uint8

const (
	tsQueued turnState = iota
	tsGenerating
	tsReady
	tsSpeaking
)

// turn is one agent utterance on its way out.
type turn struct {
	id         string
	role       string
	kind       string
	goal       string
	line       string
	intentTag  string
	rule       string
	hard       bool
	deferrable bool
	window     int // index of the window that created it, or -1
	silence    int // silence step that created it, or -1
	deferredAt int64
	state      turnState
	reqID      string
	msgID      string
	text       string
	await      bool
	fallback   bool
	violations []string
	original   string
	toolSteps  []ToolStep
	toolRounds int
}

type windowState uint8

const (
	wPending windowState = iota
	wOpen
	wDone
)

// awaiting is the silence ladder: the agents wait for an answer.
type awaiting struct {
	step   int
	role   string
	paused bool
}

// Session is one interview. It is not safe for concurrent use.
type Session struct {
	p   *rules.Pack
	env *rules.Env
	out []Effect

	now     int64
	started bool
	ended   bool
	seq     uint64
	timers  timerTable

	micActive     bool
	lastKeystroke int64
	typing        bool
	lastSpeechEnd int64
	lowSTT        int
	lastMsg       string
	messages      int
	lastMsgAt     int64

	queue    []*turn
	active   *turn
	await    *awaiting
	lastRole string
	turns    int
	windows  []windowState

	transcript []TranscriptLine
	context    []KV // scenario context, built once and shared by requests

	seed uint64
	rng  *rand.Rand

	// Panel state (panel.go).
	roleStates   []roleState
	sessionSlots map[string]string
	records      map[string][]any
	floor        string
	live         bool
	phases       []phaseItem
	jobs         []jobEntry
	tool         *toolCtx
	liveVoice    bool
	pendingLive  bool
}

// Options are everything about a session that is not in its pack or its
// inputs. A host stores them verbatim in the session's log header, so a
// replay builds the same session.
type Options struct {
	// Seed seeds Math.random in the pack's scripts.
	Seed uint64 `json:"seed"`
	// VoiceMode overrides the pack's voice.mode ("tts" or "live") for this
	// session; empty keeps the pack's.
	VoiceMode string `json:"voice_mode,omitempty"`
}

// New starts a session of pack p at time 0. The first Step runs the
// session-start rules and whatever is due at its time.
func New(p *rules.Pack, opts Options) *Session {
	s := &Session{
		p:             p,
		env:           p.NewEnv(),
		lastKeystroke: -1,
		lastSpeechEnd: -1,
		lastMsgAt:     -1,
		windows:       make([]windowState, len(p.Timeline.Windows)),
		roleStates:    make([]roleState, len(p.Roles)),
		sessionSlots:  map[string]string{},
		records:       map[string][]any{},
		liveVoice:     p.Voice.Mode == "live",
	}
	for _, kv := range p.Scenario.Context {
		s.context = append(s.context, KV{Key: kv.Key, Value: kv.Value})
	}
	for i, a := range p.Timeline.Anchors {
		s.addTimer(timer{at: a.At.MS, kind: tAnchor, ref: i, rule: a.ID})
	}
	s.addTimer(timer{at: p.Duration.MS, kind: tDuration})
	for i, w := range p.Timeline.Windows {
		s.addTimer(timer{at: w.Open.MS, kind: tWindowOpen, ref: i, rule: w.ID})
		s.addTimer(timer{at: w.Close.MS, kind: tWindowClose, ref: i, rule: w.ID})
	}
	for i, r := range p.Rules {
		switch {
		case r.At.IsSet():
			s.addTimer(timer{at: r.At.MS, kind: tRule, ref: i, rule: r.ID, prio: r.Priority})
		case r.Every.IsSet():
			s.addTimer(timer{at: r.Every.MS, kind: tRule, ref: i, rule: r.ID, prio: r.Priority})
		}
	}
	s.seed = opts.Seed
	if opts.VoiceMode == "live" || opts.VoiceMode == "tts" {
		s.liveVoice = opts.VoiceMode == "live"
	}
	s.rng = rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))
	return s
}

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
func (s *Session) Transcript() []TranscriptLine { return s.transcript }

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
}

func (s *Session) nextID(prefix byte) string {
	s.seq++
	b := make([]byte, 0, 8)
	b = append(b, prefix)
	return string(strconv.AppendUint(b, s.seq, 10))
}

func (s *Session) emit(e Effect) {
	e.T = s.now
	s.out = append(s.out, e)
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
	if s.ended {
		if in.Type == InputAdvance {
			return out, nil
		}
		return out, ErrEnded
	}
	if err := CheckInput(s.p, &in); err != nil {
		return out, err
	}
	t := s.quantDown(in.T)
	if !s.started {
		s.started = true
		s.startPanel()
		s.fireRules(rules.EngineTrigger(rules.TriggerSessionStart))
		if s.live && !s.ended {
			s.fireRules(rules.EngineTrigger(rules.TriggerLiveStart))
		}
		s.settle()
	}
	s.advanceTo(t)
	if s.ended {
		return s.out, nil
	}
	switch in.Type {
	case InputCandidate:
		s.onCandidate(in.Candidate)
	case InputLLMResult:
		s.onLLMResult(in.LLM)
	case InputSpeechDone:
		s.onSpeechDone(in.Speech)
	case InputToolCall:
		s.onToolCall(in.Tool)
	case InputAgentTranscript:
		s.onAgentLine(in.Agent)
	case InputEnd:
		reason := "ended by host"
		if in.End != nil && in.End.Reason != "" {
			reason = in.End.Reason
		}
		s.end(reason, "host")
		return s.out, nil
	}
	s.settle()
	if s.pendingLive {
		s.emitLiveSession()
	}
	return s.out, nil
}

// advanceTo fires every timer due by t, each at its own deadline, so that
// stepping tick by tick and jumping straight to t give the same effects.
func (s *Session) advanceTo(t int64) {
	for !s.ended {
		tm, ok := s.timers.popDue(t)
		if !ok {
			break
		}
		s.now = tm.at
		s.fire(tm)
		s.settle()
	}
	if !s.ended {
		s.now = t
	}
}

func (s *Session) fire(tm timer) {
	p := s.p
	switch tm.kind {
	case tAnchor:
		a := &p.Timeline.Anchors[tm.ref]
		if a.Action == "end" {
			s.emit(Effect{Type: EffectAnchor, Rule: a.ID, Reason: "end"})
			s.end(a.Reason, a.ID)
			return
		}
		s.emit(Effect{Type: EffectAnchor, Rule: a.ID, Agent: a.Turn.Role})
		s.enqueue(s.newTurn(&a.Turn, a.ID, true))
	case tDuration:
		s.end("duration", "")
	case tWindowOpen:
		if s.windows[tm.ref] == wPending {
			s.windows[tm.ref] = wOpen
		}
	case tWindowClose:
		if s.windows[tm.ref] != wOpen {
			return
		}
		w := &p.Timeline.Windows[tm.ref]
		s.windows[tm.ref] = wDone
		if w.OnClose == "skip" {
			s.emit(Effect{Type: EffectWindowSkipped, Rule: w.ID, Agent: w.Turn.Role})
			return
		}
		t := s.newTurn(&w.Turn, w.ID, false)
		t.window = tm.ref
		s.enqueue(t)
	case tDeferCap:
		s.deferCap(tm.key)
	case tLLMTimeout:
		if a := s.active; a != nil && a.reqID == tm.key && a.state == tsGenerating {
			s.emit(Effect{Type: EffectAdapterError, ID: a.reqID, Agent: a.role, Kind: a.kind, Rule: a.rule, Reason: "timeout: no result within " + strconv.FormatInt(p.LLM.Timeout.MS, 10) + "ms"})
			s.deliver(a, s.fallback(a), true)
			return
		}
		s.onJobResult(&LLMResult{ID: tm.key}, true)
	case tTyping:
		if s.typing && s.now >= s.lastKeystroke+p.TurnTaking.TypingDebounce.MS {
			s.typing = false
			s.candidateIdle()
		}
	case tSpeechResume:
		s.candidateIdle()
	case tSilence:
		s.silenceStep()
	case tRule:
		r := &p.Rules[tm.ref]
		if r.Every.IsSet() {
			s.addTimer(timer{at: s.now + r.Every.MS, kind: tRule, ref: tm.ref, rule: r.ID, prio: r.Priority})
		}
		s.runRule(r)
	}
}

func (s *Session) end(reason, rule string) {
	if s.ended {
		return
	}
	if reason == "" {
		reason = "ended"
	}
	s.emit(Effect{Type: EffectSessionEnd, Reason: reason, Rule: rule})
	s.ended = true
	s.timers.ts = s.timers.ts[:0]
	s.queue = nil
	s.active = nil
	s.await = nil
}

// syncEnv copies session state into the expression environment.
func (s *Session) syncEnv() {
	e := s.env
	e.Now = s.now
	c := &e.Candidate
	c.MicActive = s.micActive
	c.Typing = s.typing
	c.Speaking = s.speaking()
	c.LastKeystrokeMS = s.lastKeystroke
	c.LastSpeechEndMS = s.lastSpeechEnd
	c.LowSTTCount = s.lowSTT
	c.Messages = s.messages
	c.LastMessageMS = s.lastMsgAt
	v := &e.Session
	v.LastRole = s.lastRole
	v.Turns = s.turns
	v.AgentSpeaking = s.active != nil && s.active.state == tsSpeaking
	v.AwaitingReply = s.await != nil
	v.HardTurnPending = s.hardPending()
	v.TurnPending = s.active != nil || len(s.queue) > 0
	v.LiveVoice = s.liveVoice
}

func (s *Session) speaking() bool {
	return s.micActive || (s.lastSpeechEnd >= 0 && s.now < s.lastSpeechEnd+s.p.TurnTaking.SpeechResume.MS)
}

func (s *Session) hardPending() bool {
	if s.active != nil && s.active.hard && s.active.state != tsSpeaking {
		return true
	}
	for _, t := range s.queue {
		if t.hard {
			return true
		}
	}
	return false
}

// evalBool evaluates a pack condition; an evaluation error is reported and
// counts as false so one bad expression cannot stall a session.
func (s *Session) evalBool(x *rules.Expr, role string) bool {
	if !x.Set() {
		return true
	}
	if x.Script.Set() {
		return s.scriptCondition(x, role)
	}
	s.syncEnv()
	s.env.SetRole(role)
	ok, err := s.env.EvalBool(x)
	if err != nil {
		s.emit(Effect{Type: EffectNote, Reason: "expression error: " + err.Error()})
		return false
	}
	return ok
}
