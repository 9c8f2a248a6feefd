package service

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/archive"
	"github.com/batonhq/baton/runtime/clock"
	"github.com/batonhq/baton/runtime/internal/sim"
	"github.com/batonhq/baton/runtime/internal/wal"
	"github.com/batonhq/baton/runtime/llm"
)

// When the client plays speech itself but never reports the end, the
// server reports it after twice the simulated playback time plus this, so
// a vanished client cannot hold the floor forever.
const playbackGraceMS = 5000

// maxCatchUp bounds the steps taken in one wake-up, so a pack that keeps
// scheduling work at the current instant cannot starve the session's inbox.
const maxCatchUp = 10000

// session is one live interview, owned by one goroutine (run). Everything
// below "actor state" is touched only by that goroutine; other goroutines
// talk to it through inbox.
type session struct {
	srv   *Server
	id    string
	hdr   wal.Header
	host  hostOptions
	pack  *rules.Pack
	voice *sim.Voice
	log   *slog.Logger
	inbox chan any
	done  chan struct{} // closed when the actor exits
	// exitCode says why the actor exited (session_ended, session_failed,
	// shutting_down); set by the actor before it closes its inbox.
	exitCode string
	exitMsg  string
	// watchers are the mounted contracts' effect hooks; set before the
	// actor runs.
	watchers []EffectHook
	// liveVoice runs the session's live speech when the server hosts it
	// (voice.go); nil otherwise. Set before the session is shared.
	liveVoice *voiceHost

	postMu sync.RWMutex
	closed bool // the inbox takes no more messages

	submitMu    sync.Mutex
	submitLimit *bucket // events from clients without a connection

	// actor state
	eng         *engine.Session
	wl          wal.SessionLog
	base        time.Time // clock reading at engine time 0
	model       llm.Answerer
	pending     []engine.Input // host-made inputs due later, by T
	inflight    map[string]context.CancelFunc
	requests    map[string]*engine.LLMRequest
	reqLog      []loggedRequest // requests seen while replaying, in order
	playing     []string
	seq         uint64
	ring        []ringEntry
	ringNext    int
	subs        map[*conn]struct{}
	lastClientT int64
	// lastInputSeq is the log position of the last input a client made
	// (SessionState.LastInputSeq).
	lastInputSeq uint64
	lastInputT   int64 // the last input's time, as logged and acked (see floor)
	ended        bool
	endReason    string
	endRule      string
	buf          []engine.Effect
	replaying    bool
	eventRead    time.Time // when the candidate event being applied was read
	ctx          context.Context
	cancel       context.CancelFunc
	prep         preparing // prepare.go
}

type loggedRequest struct {
	id  string
	req *engine.LLMRequest
}

// ringEntry is one recent effect frame, kept as the bytes sent: a resume
// sends them again, and bytes hold no pointers for the collector to
// trace through ten thousand sessions. A frame remembered while its log
// is replayed is kept decoded until the replay is over (sealRing), so
// only the frames that stay in the ring are encoded.
type ringEntry struct {
	seq      uint64
	raw      []byte
	replayed *EffectFrame
}

// Messages to the actor.
type (
	// evMsg is a candidate event (or a client's speech_done when speech
	// is set). c, if set, gets the ack or error frame; reply, if set, gets
	// the result (HTTP).
	evMsg struct {
		frameID string
		c       *conn
		reply   chan evReply
		ev      engine.CandidateEvent
		speech  *engine.SpeechDone
		input   *engine.Input // tool_call, agent_transcript, end: applied at server time
		clientT *int64
		read    time.Time
		ans     answerOnce
	}
	evReply struct {
		ack AckFrame
		err *ProtoError
	}
	subMsg struct {
		frameID string
		c       *conn
		lastSeq uint64
		reply   chan *ProtoError
	}
	unsubMsg  struct{ c *conn }
	llmMsg    struct{ res engine.LLMResult }
	noticeMsg struct{ n NoticeFrame }
	statusMsg struct{ reply chan sessionStatus }
)

// sessionStatus is a snapshot of the actor: its clocks, what it waits for
// and what it has sent.
type sessionStatus struct {
	Now      int64 // the server clock in engine time
	T        int64 // the engine's clock
	Wake     int64
	HasWake  bool
	Inflight int
	Inbox    int
	Seq      uint64
	Ended    bool
	Subs     int
}

func newSession(srv *Server, hdr wal.Header, host hostOptions, p *rules.Pack) *session {
	// A recovered or replayed session runs on the pack its inputs bind,
	// as its engine does (a start has bound them already: no work again).
	if in, err := p.Bind(hdr.Options.Inputs, rules.BindOptions{}); err == nil {
		p = in.Pack()
	}
	s := &session{
		srv:         srv,
		id:          hdr.SessionID,
		hdr:         hdr,
		host:        host,
		pack:        p,
		voice:       sim.NewVoice(p),
		log:         srv.log.With("session_id", hdr.SessionID),
		inbox:       make(chan any, 16),
		done:        make(chan struct{}),
		inflight:    map[string]context.CancelFunc{},
		requests:    map[string]*engine.LLMRequest{},
		subs:        map[*conn]struct{}{},
		lastClientT: -1,
	}
	s.submitLimit = newBucket(srv.cfg.EventRate, srv.cfg.EventBurst, srv.clock.Now())
	s.ctx, s.cancel = context.WithCancel(srv.ctx)
	s.liveVoice = newVoiceHost(s, hdr, p)
	return s
}

// floor is the earliest time a new input may take (docs/protocol.md,
// "Time"): the last input's, or later when a deadline has moved the
// engine past it. The engine's clock alone is not a floor: it is
// quantized down to the pack's tick, so an input acked between ticks
// would be followed by one acked before it.
func (s *session) floor() int64 {
	return max(s.eng.Now(), s.lastInputT)
}

// engineNow maps the server clock to engine time.
func (s *session) engineNow() int64 {
	return s.srv.clock.Now().Sub(s.base).Milliseconds()
}

// post hands a message to the actor, waiting at most InboxTimeout for
// room. It reports why the session cannot take it. A message accepted
// here is always answered: after the actor closes its inbox it answers
// what is left in it.
func (s *session) post(ctx context.Context, m any) *ProtoError {
	if ok, pe := s.tryPost(m); ok || pe != nil {
		return pe
	}
	// The inbox is full: the session is swamped. Wait for room, briefly,
	// on the kernel's clock: this guards goroutines, not session time.
	deadline := time.Now().Add(s.srv.cfg.InboxTimeout)
	for wait := 50 * time.Microsecond; time.Now().Before(deadline); wait = min(2*wait, 5*time.Millisecond) {
		select {
		case <-ctx.Done():
			return perr(CodeShuttingDown, "request cancelled")
		case <-s.done:
			return s.exitError()
		case <-time.After(wait):
		}
		if ok, pe := s.tryPost(m); ok || pe != nil {
			return pe
		}
	}
	return perr(CodeBusy, "session %s did not take the frame within %s", s.id, s.srv.cfg.InboxTimeout)
}

// tryPost enqueues m if the inbox is open and has room.
func (s *session) tryPost(m any) (bool, *ProtoError) {
	s.postMu.RLock()
	defer s.postMu.RUnlock()
	if s.closed {
		return false, s.exitError()
	}
	select {
	case s.inbox <- m:
		return true, nil
	default:
		return false, nil
	}
}

// closeInbox refuses further messages and answers those still queued.
func (s *session) closeInbox() {
	s.postMu.Lock()
	s.closed = true
	s.postMu.Unlock()
	for {
		select {
		case m := <-s.inbox:
			s.reject(m)
		default:
			return
		}
	}
}

func (s *session) reject(m any) {
	pe := s.exitError()
	switch m := m.(type) {
	case *evMsg:
		if !m.ans.claim() {
			return
		}
		if m.c != nil {
			m.c.sendError(m.frameID, pe)
		}
		if m.reply != nil {
			m.reply <- evReply{err: pe}
		}
	case *subMsg:
		m.reply <- pe
	}
}

func (s *session) exitError() *ProtoError {
	if s.exitCode == "" {
		return perr(CodeShuttingDown, "session %s stopped", s.id)
	}
	return perr(s.exitCode, "%s", s.exitMsg)
}

// run is the actor loop: it sleeps until the next engine deadline or
// host-made input is due, or until a message arrives.
func (s *session) run() {
	defer s.srv.wg.Done()
	defer close(s.done)
	timer := s.srv.clock.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	if s.liveVoice != nil {
		s.liveVoice.start()
	}
	for {
		if s.exitCode != "" {
			s.exit()
			return
		}
		if s.guard("wake", func() { s.wake(timer) }) {
			continue
		}
		if s.exitCode != "" {
			s.exit()
			return
		}
		select {
		case m := <-s.inbox:
			s.guard("message", func() { s.handle(m) })
		case <-timer.C():
		case <-s.ctx.Done():
			s.setExit(CodeShuttingDown, "server shutting down")
		}
	}
}

// wake runs whatever is due and arms the timer for what is next.
func (s *session) wake(timer clock.Timer) {
	waiting, until, err := s.prepare()
	if err != nil {
		s.fail(err)
		return
	}
	if waiting {
		timer.Reset(until.Sub(s.srv.clock.Now()))
		return
	}
	now := s.engineNow()
	if err := s.catchUp(now); err != nil {
		s.fail(err)
		return
	}
	if s.ended {
		s.setExit(CodeSessionEnded, fmt.Sprintf("session %s ended (%s)", s.id, s.endReason))
		return
	}
	if w, ok := s.nextWake(); ok {
		timer.Reset(s.base.Add(time.Duration(w) * time.Millisecond).Sub(s.srv.clock.Now()))
	} else {
		timer.Stop()
	}
}

// guard runs f, turning a panic into a report and a rebuild of the session
// from its log. It reports whether a panic happened.
func (s *session) guard(where string, f func()) (panicked bool) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		panicked = true
		s.srv.m.panics.WithLabelValues("session").Inc()
		s.log.Error("session panicked; rebuilding from its log", "where", where, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		s.rebuild()
	}()
	f()
	return false
}

func (s *session) nextWake() (int64, bool) {
	if s.eng.Preparing() && !s.prep.until.IsZero() {
		// Waiting for prepared lines: nothing runs before the wait ends
		// or an answer comes.
		return s.prep.until.Sub(s.base).Milliseconds(), true
	}
	d, ok := s.eng.NextDeadline()
	if len(s.pending) > 0 && (!ok || s.pending[0].T < d) {
		return s.pending[0].T, true
	}
	return d, ok
}

// catchUp applies, in time order, every host-made input and engine
// deadline due by t. A deadline and a host input at the same time: the
// deadline first, as the dry run does.
func (s *session) catchUp(t int64) error {
	for i := 0; i < maxCatchUp && !s.ended; i++ {
		d, ok := s.eng.NextDeadline()
		if len(s.pending) > 0 && s.pending[0].T <= t && (!ok || s.pending[0].T < d) {
			in := s.pending[0]
			s.pending = s.pending[1:]
			if err := s.apply(in, true, nil); err != nil {
				return err
			}
			continue
		}
		if ok && d <= t {
			if err := s.apply(engine.Input{T: d, Type: engine.InputAdvance}, true, nil); err != nil {
				return err
			}
			continue
		}
		return nil
	}
	if !s.ended {
		s.log.Warn("catch-up step limit reached; yielding", "limit", maxCatchUp)
	}
	return nil
}

// apply logs one input durably, then steps the engine with it. ack, if
// set, runs after the step and before any effect is sent, so a client
// sees its ack before the effects its input caused.
//
// derivable marks inputs the host makes itself from the log and the clock
// (timer advances, the end of server-played speech). With Config.LazySync
// they are written ahead but not synced on their own: after a crash,
// recovery's catch-up makes the same inputs at the same times, and every
// input that is not derivable syncs all that precedes it.
func (s *session) apply(in engine.Input, derivable bool, ack func(seq uint64, t int64)) error {
	if in.T < s.eng.Now() {
		in.T = s.eng.Now()
	}
	seq, err := s.wl.Append(in, !(derivable && s.srv.cfg.LazySync))
	if err != nil {
		s.srv.m.walErrors.Inc()
		return fmt.Errorf("logging %s input: %w", in.Type, err)
	}
	start := s.srv.clock.Now()
	var stepErr error
	s.buf, stepErr = s.eng.Step(in, s.buf[:0])
	s.srv.m.stepSeconds.Observe(s.srv.clock.Now().Sub(start).Seconds())
	s.srv.m.inputs.WithLabelValues(string(in.Type)).Inc()
	if in.Type == engine.InputCandidate {
		s.srv.m.events.WithLabelValues(in.Candidate.Type).Inc()
	}
	st := wal.Digest(s.buf, stepErr)
	st.StartWall, s.prep.startWall = s.prep.startWall, nil
	if err := s.appendStep(seq, st); err != nil {
		// The input is safe; only its verification digest is lost.
		s.log.Warn("could not log step digests", "seq", seq, "err", err)
	}
	if stepErr != nil && !errors.Is(stepErr, engine.ErrEnded) {
		s.log.Error("engine refused a logged input", "seq", seq, "type", in.Type, "err", stepErr)
	}
	s.observeInput(seq, &in)
	if ack != nil {
		ack(seq, in.T)
	}
	for i := range s.buf {
		s.recordEffect(&s.buf[i])
	}
	if s.ended {
		s.finish()
	}
	return nil
}

// observeInput updates host bookkeeping for input seq, applied; it runs
// live and while replaying a log.
func (s *session) observeInput(seq uint64, in *engine.Input) {
	s.lastInputT = max(s.lastInputT, in.T)
	switch in.Type {
	case engine.InputCandidate, engine.InputClientToolResult:
		s.lastInputSeq = seq
	}
	if in.Type == engine.InputSpeechDone && s.host.ClientPlayback {
		s.lastInputSeq = seq // the client's; the server's own are not
	}
	switch in.Type {
	case engine.InputLLMResult:
		delete(s.requests, in.LLM.ID)
	case engine.InputSpeechDone:
		id := in.Speech.ID
		s.playing = slices.DeleteFunc(s.playing, func(p string) bool { return p == id })
		s.pending = slices.DeleteFunc(s.pending, func(p engine.Input) bool {
			return p.Type == engine.InputSpeechDone && p.Speech.ID == id
		})
	}
}

// recordEffect does the host's part for one effect: bookkeeping always,
// and when live also adapter calls, fan-out to clients and webhooks.
func (s *session) recordEffect(e *engine.Effect) EffectFrame {
	s.seq++
	var speechMS int64
	switch e.Type {
	case engine.EffectLLMRequest:
		s.requests[e.ID] = e.Request
		if s.replaying {
			s.reqLog = append(s.reqLog, loggedRequest{e.ID, e.Request})
		} else {
			s.callLLM(e.ID, e.Request)
		}
	case engine.EffectAgentMessage:
		speechMS = s.voice.Duration(e.Agent, e.Text)
		s.playing = append(s.playing, e.ID)
		at := e.T + speechMS
		if s.host.ClientPlayback {
			at = e.T + 2*speechMS + playbackGraceMS
		}
		s.schedule(engine.Input{T: at, Type: engine.InputSpeechDone, Speech: &engine.SpeechDone{ID: e.ID}})
	case engine.EffectSessionEnd:
		s.ended = true
		s.endReason, s.endRule = e.Reason, e.Rule
	}
	if s.liveVoice != nil {
		s.liveVoice.effect(e, s.replaying)
	}
	fr := effectFrame(s.id, s.seq, e)
	if e.Type == engine.EffectAgentMessage && !s.host.ClientPlayback {
		fr.Effect.SpeechMS = speechMS
	}
	// The prompt is the panel's business, not the candidate's.
	fr.Effect.Request = nil
	if s.replaying {
		s.remember(ringEntry{seq: fr.Seq, replayed: &fr})
		return fr
	}
	raw := mustJSON(fr)
	s.remember(ringEntry{seq: fr.Seq, raw: raw})
	s.srv.m.effects.WithLabelValues(string(e.Type)).Inc()
	switch {
	case e.Type == engine.EffectNote && e.Kind == engine.NoteWarning:
		s.srv.m.warnings.WithLabelValues(s.pack.Name, e.Rule).Inc()
	case e.Type == engine.EffectAgentMessage:
		s.srv.m.guardrailOutcome(s.pack.Name, e)
		if l := e.Lateness; l != nil {
			s.srv.m.turnLateness.WithLabelValues(e.Kind).Observe(float64(l.LateMS) / 1000)
		}
	case e.Type == engine.EffectFlag:
		s.srv.m.flags.WithLabelValues(s.pack.Name, e.Rule).Inc()
	}
	if !s.eventRead.IsZero() {
		s.srv.m.eventToEffectSec.Observe(s.srv.clock.Now().Sub(s.eventRead).Seconds())
		s.eventRead = time.Time{}
	}
	s.broadcast(raw)
	for _, w := range s.watchers {
		w(&fr)
	}
	return fr
}

// schedule queues a host-made input, keeping pending sorted by time and
// in arrival order among equal times.
func (s *session) schedule(in engine.Input) {
	i, _ := slices.BinarySearchFunc(s.pending, in.T+1, func(p engine.Input, t int64) int { return cmp.Compare(p.T, t) })
	s.pending = slices.Insert(s.pending, i, in)
}

func (s *session) remember(e ringEntry) {
	n := s.srv.cfg.ResumeRing
	if len(s.ring) < n {
		s.ring = append(s.ring, e)
		return
	}
	s.ring[s.ringNext] = e
	s.ringNext = (s.ringNext + 1) % n
}

// sealRing encodes the frames remembered during a replay.
func (s *session) sealRing() {
	for i := range s.ring {
		if e := &s.ring[i]; e.replayed != nil {
			e.raw, e.replayed = mustJSON(e.replayed), nil
		}
	}
}

// broadcast sends a frame to every subscriber; a subscriber that cannot
// take it (closed, or too slow) is dropped, and the session carries on.
func (s *session) broadcast(b []byte) {
	for c := range s.subs {
		if !c.enqueue(b) {
			delete(s.subs, c)
		}
	}
}

// callLLM runs the model off the actor; the result comes back as a
// message and is stamped with its arrival time.
func (s *session) callLLM(id string, req *engine.LLMRequest) {
	clk := s.srv.clock
	timeout := time.Duration(req.TimeoutMS)*time.Millisecond + s.srv.cfg.LLMGrace
	ctx, cancel := clk.WithTimeout(s.ctx, timeout)
	s.inflight[id] = cancel
	s.srv.m.adapterInflight.Inc()
	model := s.model
	s.srv.wg.Add(1)
	go func() {
		defer s.srv.wg.Done()
		defer cancel()
		start := clk.Now()
		res := s.answer(ctx, model, id, req, start)
		s.srv.m.adapterInflight.Dec()
		res.ID = id
		s.srv.m.adapterSeconds.WithLabelValues("llm").Observe(clk.Now().Sub(start).Seconds())
		if res.Err != nil {
			s.srv.m.adapterErrors.WithLabelValues("llm", errKind(res.Err.Kind)).Inc()
		}
		if errors.Is(context.Cause(ctx), context.Canceled) {
			// The session dropped the request, or stopped: it would
			// ignore the answer. Not posting it also keeps a run's order
			// of messages free of when this goroutine happened to wake.
			return
		}
		// A session that stopped meanwhile has nothing to apply it to.
		_ = s.post(context.Background(), llmMsg{res: res})
	}()
}

// answer asks the model and returns its result once it is due on the
// server's clock: a simulated model answers at once and says when, a real
// one has already taken its time. A panic becomes an adapter error.
func (s *session) answer(ctx context.Context, model llm.Answerer, id string, req *engine.LLMRequest, start time.Time) (res engine.LLMResult) {
	defer func() {
		if r := recover(); r != nil {
			s.srv.m.panics.WithLabelValues("adapter").Inc()
			s.log.Error("LLM adapter panicked", "request", id, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			res = engine.LLMResult{ID: id, Err: &engine.AdapterError{Kind: "unknown", Message: "adapter panicked"}}
		}
	}()
	a := model.Answer(ctx, id, req)
	if a.Never {
		<-ctx.Done()
		return engine.LLMResult{ID: id, Err: &engine.AdapterError{Kind: "timeout", Message: "no reply (scripted)"}}
	}
	clk := s.srv.clock
	if wait := start.Add(a.After).Sub(clk.Now()); wait > 0 {
		if err := clock.Sleep(ctx, clk, wait); err != nil {
			return engine.LLMResult{ID: id, Err: &engine.AdapterError{Kind: "timeout", Message: err.Error()}}
		}
	}
	return a.Result
}

// errKind keeps the metric's label set to the engine's documented kinds.
func errKind(k string) string {
	switch k {
	case "timeout", "rate_limit", "server", "bad_request", "network":
		return k
	}
	return "unknown"
}

func (s *session) handle(m any) {
	switch m := m.(type) {
	case *evMsg:
		if s.eng.Preparing() {
			// The client has begun: the clock starts now, with
			// whatever is prepared.
			s.prep.until = s.srv.clock.Now()
			if _, _, err := s.prepare(); err != nil {
				s.fail(err)
				return
			}
		}
		s.onClientInput(m)
	case llmMsg:
		cancel, ok := s.inflight[m.res.ID]
		if !ok {
			return // answered already (a rebuild re-issued it) or session over
		}
		cancel()
		delete(s.inflight, m.res.ID)
		if s.ended {
			return
		}
		res := m.res
		if s.eng.Preparing() {
			// An answer to a preparation, before the clock starts.
			if err := s.apply(engine.Input{T: 0, Type: engine.InputLLMResult, LLM: &res}, false, nil); err != nil {
				s.fail(err)
			}
			return
		}
		in := engine.Input{T: max(s.engineNow(), s.floor()), Type: engine.InputLLMResult, LLM: &res}
		if err := s.catchUp(in.T); err != nil {
			s.fail(err)
			return
		}
		if !s.ended {
			if err := s.apply(in, false, nil); err != nil {
				s.fail(err)
			}
		}
	case *subMsg:
		m.reply <- s.subscribe(m)
	case unsubMsg:
		delete(s.subs, m.c)
		if !s.ended {
			// Nothing is finished: the session runs on its clock until it
			// ends or is resumed, and until then its log is the live file,
			// which is the one to replay: bring it up to date first.
			if err := s.wl.Flush(); err != nil {
				s.log.Warn("writing out the log of a session its client left", "err", err)
			}
			s.log.Info(msgClientLeft, "log", s.wl.Path(), "t_ms", s.eng.Now(), "clients", len(s.subs))
		}
	case noticeMsg:
		s.broadcast(mustJSON(m.n))
	case voiceMsg:
		s.broadcast(m.frame)
	case movedMsg:
		s.moveAway(errLost)
	case statusMsg:
		w, ok := s.nextWake()
		m.reply <- sessionStatus{Now: s.engineNow(), T: s.eng.Now(), Wake: w, HasWake: ok, Inflight: len(s.inflight), Inbox: len(s.inbox), Seq: s.seq, Ended: s.ended, Subs: len(s.subs)}
	}
}

// msgClientLeft is the log line for a client that disconnects from a
// session that has not ended.
const msgClientLeft = "client left; the session runs on and can be resumed"

// onClientInput applies a candidate event or a client's speech_done.
func (s *session) onClientInput(m *evMsg) {
	respond := func(pe *ProtoError) {
		if m.c != nil {
			m.c.sendError(m.frameID, pe)
		}
		if m.reply != nil {
			m.reply <- evReply{err: pe}
		}
		if m.c == nil && m.reply == nil && m.input != nil {
			// The session's own live speech made it: nobody else hears.
			s.log.Warn("live speech input refused", "type", m.input.Type, "code", pe.Code, "err", pe.Message)
		}
	}
	respondErr := func(pe *ProtoError) {
		if m.ans.claim() {
			respond(pe)
		}
	}
	if s.ended {
		respondErr(perr(CodeSessionEnded, "session %s has ended (%s)", s.id, s.endReason))
		return
	}
	now := s.engineNow()
	var in engine.Input
	clamped := ""
	if m.speech != nil {
		if !s.host.ClientPlayback {
			respondErr(perr(CodeNotClientPlayed, "session %s plays speech on the server; speech_done is only for sessions started with client_playback", s.id))
			return
		}
		if !slices.Contains(s.playing, m.speech.ID) {
			respondErr(perr(CodeUnknownMessage, "message %q is not playing (playing: %v)", m.speech.ID, s.playing))
			return
		}
		in = engine.Input{T: max(now, s.floor()), Type: engine.InputSpeechDone, Speech: m.speech}
	} else if m.input != nil {
		in = *m.input
		in.T = max(now, s.floor())
	} else {
		t, c, pe := s.stamp(m.clientT, now)
		if pe != nil {
			respondErr(pe)
			return
		}
		ev := m.ev
		in, clamped = engine.Input{T: t, Type: engine.InputCandidate, Candidate: &ev}, c
	}
	// The input is checked before anything is logged, so an ack always
	// means the engine applied it.
	if pe := unknownRole(s.pack, &in); pe != nil {
		respondErr(pe)
		return
	}
	if err := engine.CheckInput(s.pack, &in); err != nil {
		code := CodeBadEvent
		if errors.Is(err, engine.ErrUnknownEventType) {
			code = CodeUnknownEventType
		}
		respondErr(perr(code, "%v", err))
		return
	}
	// Whatever was due before the input happens first.
	if err := s.catchUp(in.T); err != nil {
		s.fail(err)
		respondErr(s.notApplied(err))
		return
	}
	if s.ended {
		respondErr(perr(CodeSessionEnded, "session %s ended (%s) before the input's time", s.id, s.endReason))
		return
	}
	// Asked at the input's own time, after what was due before it: a
	// result that arrives past its call's timeout finds the call timed
	// out, and is refused rather than logged and then ignored.
	if r := in.ClientTool; r != nil {
		if st := s.eng.ClientToolState(r.ID); st != engine.ClientToolPending {
			respondErr(unknownToolCall(r.ID, st))
			return
		}
	}
	// An input whose deadline passed while it waited (for room, behind a
	// stalled write, or in a paused process) is dropped unwritten: its
	// client is told it was not applied, and nothing may contradict that.
	if m.ans.overdue() {
		if pe := m.ans.expire(s.srv.cfg.AckDeadline); pe != nil {
			s.srv.m.ackDeadlineMissed.WithLabelValues(pe.Outcome).Inc()
			respond(pe)
		}
		return
	}
	if !m.ans.begin(s.wl.Seq() + 1) {
		return // answered not applied by its deadline meanwhile
	}
	if m.clientT != nil {
		// The backwards check remembers the time the event was applied at
		// when that is earlier than the client's own (clamped as future):
		// a client clock far ahead must not hold every later event back.
		s.lastClientT = min(*m.clientT, in.T)
	}
	s.eventRead = m.read
	err := s.apply(in, false, func(seq uint64, t int64) {
		if !m.ans.claim() {
			// Its deadline passed during the write: the client was told
			// the outcome is unknown, and a resume shows it applied.
			return
		}
		if !m.read.IsZero() {
			now := s.srv.clock.Now()
			s.srv.admission.answered(now, now.Sub(m.read))
		}
		ack := AckFrame{Type: FrameAck, ID: m.frameID, SessionID: s.id, T: &t, InputSeq: seq, Clamped: clamped}
		if m.c != nil {
			m.c.enqueue(ack.encode())
		}
		if m.reply != nil {
			m.reply <- evReply{ack: ack}
		}
	})
	s.eventRead = time.Time{}
	if err != nil {
		respondErr(s.notApplied(err))
		s.fail(err)
	}
}

// notApplied is the client's error for an input the log refused.
func (s *session) notApplied(err error) *ProtoError {
	if fenced(err) {
		if pe := s.srv.elsewhere(s.id); pe != nil {
			return pe
		}
		return perr(CodeMoved, "session %s moved to another node; input not applied; resume it there", s.id)
	}
	return perr(CodeStorage, "input not applied: %s", s.srv.clientText(err))
}

// unknownRole refuses a live-voice input (what a panelist said or called)
// that names a role the pack does not have. The engine refuses it too, but
// a client hosting the speech session needs the pack's roles to see which
// of its own names is wrong.
func unknownRole(p *rules.Pack, in *engine.Input) *ProtoError {
	var what, role string
	switch {
	case in.Agent != nil && in.Agent.Role != "":
		what, role = FrameAgentTranscript, in.Agent.Role
	case in.Tool != nil && in.Tool.Role != "":
		what, role = FrameToolCall, in.Tool.Role
	default:
		return nil
	}
	if _, ok := p.Role(role); ok {
		return nil
	}
	ids := p.RoleIDs()
	return perr(CodeBadEvent, "%s from role %q, which pack %s does not have%s; its roles are %s",
		what, role, p.Name, rules.DidYouMean(role, ids), strings.Join(ids, ", "))
}

// unknownToolCall refuses a client_tool_result whose call is not
// waiting, saying which of the reasons it is.
func unknownToolCall(id, state string) *ProtoError {
	why := "no call with that id was made in this session"
	switch state {
	case engine.ClientToolAnswered:
		why = "it was already answered"
	case engine.ClientToolTimedOut:
		why = "it timed out and was answered with a timeout error; the agent has moved on"
	}
	return perr(CodeUnknownToolCall, "client_tool_result for %q: %s", id, why)
}

// stamp decides an event's engine time (docs/protocol.md, "Time"): the
// client's own time when it has one and it is not ahead of the server by
// more than the tolerance, never before the session clock, and an error
// when it is before the client's previous timestamp.
func (s *session) stamp(clientT *int64, now int64) (t int64, clamped string, pe *ProtoError) {
	floor := s.floor()
	if clientT == nil {
		return max(now, floor), "", nil
	}
	c := *clientT
	if c < s.lastClientT {
		return 0, "", perr(CodeTimeBackwards, "event time %s is before this session's previous event at %s",
			rules.FormatClock(c), rules.FormatClock(s.lastClientT))
	}
	tol := s.srv.cfg.ClientTimeTolerance.Milliseconds()
	switch {
	case c > now+tol:
		return max(now, floor), "future", nil
	case c < floor:
		return floor, "behind", nil
	}
	return c, "", nil
}

// subscribe attaches a connection, answering with the effects it missed.
func (s *session) subscribe(m *subMsg) *ProtoError {
	if m.lastSeq > s.seq {
		return perr(CodeBadFrame, "last_seq %d is beyond this session's last effect %d", m.lastSeq, s.seq)
	}
	missed, src, err := s.missedSince(m.lastSeq)
	var dmg *wal.DamageError
	if errors.As(err, &dmg) {
		// Its own log went bad under it: the rule is the same as at start.
		err = s.srv.checkDamage(s.id, err)
		s.fail(err)
		return perr(CodeSessionFailed, "session %s failed: %s", s.id, s.srv.clientText(err))
	}
	if err != nil {
		return perr(CodeInternal, "could not rebuild missed effects: %s", s.srv.clientText(err))
	}
	s.srv.m.resumes.WithLabelValues(src).Inc()
	st := s.state()
	ack := AckFrame{Type: FrameAck, ID: m.frameID, SessionID: s.id, State: &st, Missed: missed, Workspace: s.workspace()}
	if !m.c.enqueue(mustJSON(ack)) {
		return nil
	}
	s.subs[m.c] = struct{}{}
	if vh := s.liveVoice; vh != nil {
		// The live session may have opened before this client came: it
		// needs the formats, and the word to start its microphone.
		if meta := vh.metadata(); meta != nil {
			m.c.enqueue(meta)
		}
	}
	return nil
}

func (s *session) state() SessionState {
	return SessionState{SessionID: s.id, CandidateID: s.hdr.CandidateID, Pack: s.pack.Name, T: s.eng.Now(),
		LastSeq: s.seq, Ended: s.ended, EndReason: s.endReason, ClientPlayback: s.host.ClientPlayback,
		ServerVoice: s.liveVoice != nil, Playing: slices.Clone(s.playing), ToolCalls: s.eng.PendingClientTools(),
		Inputs: inputNames(s.hdr.Options.Inputs), AckDeadlineMS: max(s.srv.cfg.AckDeadline, 0).Milliseconds(), LastInputSeq: s.lastInputSeq}
}

// inputNames are the names of the inputs a session was started with, in
// order.
func inputNames(sup rules.Supplied) []string {
	if len(sup) == 0 {
		return nil
	}
	names := make([]string, 0, len(sup))
	for k := range sup {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// workspace is the session's starting workspace, for the start and
// resume acks; nil when its pack has none.
func (s *session) workspace() *WorkspaceState {
	in := s.eng.Inputs()
	if in == nil {
		return nil
	}
	p := in.Pack()
	files := p.WorkspaceOf(in)
	if len(files) == 0 {
		return nil
	}
	ws := &WorkspaceState{Root: p.Workspace.RootDir(), Files: make([]WorkspaceFile, len(files))}
	for i, f := range files {
		ws.Files[i] = WorkspaceFile{Path: f.Path, Content: f.Content}
	}
	return ws
}

// missedSince returns the effect frames after seq, from the ring when it
// reaches back far enough and otherwise re-derived by replaying the log.
func (s *session) missedSince(last uint64) ([]json.RawMessage, string, error) {
	if last >= s.seq {
		return nil, "none", nil
	}
	oldest := s.seq + 1
	for _, r := range s.ring {
		oldest = min(oldest, r.seq)
	}
	if oldest <= last+1 {
		var out []ringEntry
		for _, r := range s.ring {
			if r.seq > last {
				out = append(out, r)
			}
		}
		slices.SortFunc(out, func(a, b ringEntry) int { return cmp.Compare(a.seq, b.seq) })
		raw := make([]json.RawMessage, len(out))
		for i := range out {
			raw[i] = out[i].raw
		}
		return raw, "ring", nil
	}
	rec, err := s.srv.logs().Read(s.id)
	if err != nil {
		return nil, "log", err
	}
	out, err := rederive(s.srv, rec, s.pack, last)
	return encodeFrames(out), "log", err
}

// encodeFrames encodes effect frames as they are sent.
func encodeFrames(frs []EffectFrame) []json.RawMessage {
	if len(frs) == 0 {
		return nil
	}
	raw := make([]json.RawMessage, len(frs))
	for i := range frs {
		raw[i] = mustJSON(&frs[i])
	}
	return raw
}

// rederive replays a log and returns the effect frames after seq last.
func rederive(srv *Server, rec *wal.Recovered, p *rules.Pack, last uint64) ([]EffectFrame, error) {
	host, err := decodeHost(rec.Header.Host)
	if err != nil {
		return nil, err
	}
	// A scratch session does the same bookkeeping as the live one, so the
	// frames (sequence numbers, speech times) come out identical.
	tmp := newSession(srv, rec.Header, host, p)
	defer tmp.cancel()
	tmp.replaying = true
	var out []EffectFrame
	_, err = wal.Replay(p, rec, func(seq uint64, in *engine.Input, effects []engine.Effect, _ error) {
		tmp.observeInput(seq, in)
		for i := range effects {
			if fr := tmp.recordEffect(&effects[i]); fr.Seq > last {
				out = append(out, fr)
			}
		}
	})
	return out, err
}

func decodeHost(raw json.RawMessage) (hostOptions, error) {
	var h hostOptions
	if len(raw) == 0 {
		return h, nil
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return h, fmt.Errorf("log header host options: %w", err)
	}
	return h, nil
}

// finish closes the log of an ended session and lets it go.
func (s *session) finish() {
	for id, cancel := range s.inflight {
		cancel()
		delete(s.inflight, id)
	}
	s.pending = nil
	// Archived before the log is finished: a crash in between leaves a
	// live log, whose recovery ends the session again and archives it.
	s.archive()
	if err := s.wl.Finish(wal.End{Reason: s.endReason, T: s.eng.Now(), Wall: s.srv.clock.Now()}); err != nil {
		s.srv.m.walErrors.Inc()
		s.log.Error("could not finish the session log", "err", err)
	} else {
		s.srv.release(s.id)
	}
	s.srv.m.sessionsEnded.Inc()
	s.log.Info("session ended", "reason", s.endReason, "t_ms", s.eng.Now(), "effects", s.seq, "log", s.wl.Path())
	s.setExit(CodeSessionEnded, fmt.Sprintf("session %s has ended (%s)", s.id, s.endReason))
}

// archive exports the ended session's context files under
// DATA/archive/ID, with a record of its inputs, if its pack declares
// either.
func (s *session) archive() {
	files := s.eng.ContextFiles()
	inputs := archive.InputsOf(s.eng.Inputs())
	if len(files) == 0 && len(inputs) == 0 {
		return
	}
	m := archive.Manifest{Session: s.id, Pack: s.pack.Name, PackHash: s.pack.Hash, Engine: engine.Version, EndedMS: s.eng.Now(), Reason: s.endReason, Inputs: inputs}
	dir, err := archive.Write(filepath.Join(s.srv.cfg.DataDir, ArchiveDir), m, files)
	if err != nil {
		// The log keeps everything the archive would hold:
		// `baton replay -archive` writes it from the finished log.
		s.srv.m.archiveErrors.Inc()
		s.log.Error("could not archive the session's context files; write it from the log with baton replay -archive", "err", err)
		return
	}
	s.log.Info("session context archived", "dir", dir, "files", len(files))
}

// ArchiveDir is the folder under the data directory that holds the
// archives of ended sessions' context files.
const ArchiveDir = "archive"

func (s *session) setExit(code, msg string) {
	if s.exitCode == "" {
		s.exitCode, s.exitMsg = code, msg
	}
}

// fail stops a session that cannot go on (its log cannot be written or
// it cannot be rebuilt). Its log stays live, so a restart retries it.
func (s *session) fail(err error) {
	if fenced(err) {
		s.moveAway(err)
		return
	}
	s.log.Error("session failed", "err", err)
	why := s.srv.clientText(err)
	pe := perr(CodeSessionFailed, "session %s failed: %s", s.id, why)
	s.broadcast(mustJSON(ErrorFrame{Type: FrameError, Code: pe.Code, Message: pe.Message}))
	s.setExit(CodeSessionFailed, pe.Message)
	s.srv.markFailed(s.id, clip(why, maxErrorMessage))
}

// exit runs on the actor as it stops.
func (s *session) exit() {
	s.closeInbox()
	s.cancel()
	if s.liveVoice != nil {
		s.liveVoice.stop()
	}
	for id, cancel := range s.inflight {
		cancel()
		delete(s.inflight, id)
	}
	if s.exitCode != CodeSessionEnded && s.wl != nil {
		if err := s.wl.Close(); err != nil {
			s.log.Warn("closing log", "err", err)
		}
	}
	s.srv.removeSession(s)
}

// rebuild replaces the actor's state with a fresh replay of its log, after
// a panic left it in an unknown state. Subscribers stay attached.
func (s *session) rebuild() {
	for id, cancel := range s.inflight {
		cancel()
		delete(s.inflight, id)
	}
	if s.wl != nil {
		s.wl.Close()
	}
	wl, rec, err := s.srv.logs().Open(s.id)
	if err != nil {
		s.fail(fmt.Errorf("rebuild after panic: %w", s.srv.checkDamage(s.id, err)))
		return
	}
	if err := s.load(wl, rec, false); err != nil {
		wl.Close()
		s.fail(fmt.Errorf("rebuild after panic: %w", err))
		return
	}
	s.srv.m.recoveries.WithLabelValues("ok").Inc()
	s.log.Warn("session rebuilt from its log", "inputs", len(rec.Inputs), "t_ms", s.eng.Now())
}

// load rebuilds actor state by replaying rec, verifying every recorded
// step, and re-issues adapter calls the log shows unanswered. setBase
// places engine time on the wall clock (recovery after a restart);
// otherwise the current mapping is kept (rebuild in the same process).
func (s *session) load(wl wal.SessionLog, rec *wal.Recovered, setBase bool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.srv.m.panics.WithLabelValues("recovery").Inc()
			err = fmt.Errorf("panic while replaying: %v", r)
		}
	}()
	if err := wal.CheckHeader(&rec.Header, s.pack); err != nil {
		return err
	}
	s.wl = wl
	s.pending, s.playing, s.ring, s.ringNext, s.seq, s.lastInputSeq = nil, nil, nil, 0, 0, 0
	s.lastInputT = 0
	s.requests = map[string]*engine.LLMRequest{}
	s.reqLog = nil
	s.prep.until = time.Time{}
	s.ended = false
	s.model = s.srv.cfg.Model(s.id, s.pack, s.srv.clock)
	s.replaying = true
	res, err := func() (*wal.ReplayResult, error) {
		// However the replay ends, the ring holds frames ready to send.
		defer func() { s.replaying = false; s.sealRing() }()
		return wal.Replay(s.pack, rec, func(seq uint64, in *engine.Input, effects []engine.Effect, _ error) {
			s.observeInput(seq, in)
			for i := range effects {
				s.recordEffect(&effects[i])
			}
		})
	}()
	if err != nil {
		return err
	}
	if len(res.Mismatches) > 0 {
		for i := range res.Mismatches {
			s.log.Error("nondeterminism: replay differs from the log", "mismatch", res.Mismatches[i].String())
		}
		return &nondeterminismError{n: len(res.Mismatches), first: res.Mismatches[0].String()}
	}
	s.eng = res.Session
	if setBase {
		var last int64
		if n := len(rec.Inputs); n > 0 {
			last = rec.Inputs[n-1].T
		}
		// Downtime counts: the session clock is wall time since the
		// recorded start, but never earlier than the last logged input.
		elapsed := s.srv.clock.Now().Sub(rec.StartWall()).Milliseconds()
		s.base = s.srv.clock.Now().Add(-time.Duration(max(elapsed, last)) * time.Millisecond)
	}
	// The client's own clock is not in the log (inputs carry the engine
	// time used), so the backwards check restarts with the next event.
	s.lastClientT = -1
	// Requests answered in the log warm the adapter, in order; those
	// still open are asked again (a late duplicate answer is dropped).
	w, _ := s.model.(llm.Warmer)
	for _, r := range s.reqLog {
		_, open := s.requests[r.id]
		switch {
		case open && !s.ended:
			s.callLLM(r.id, r.req)
		case !open && w != nil:
			w.Warm(r.id, r.req)
		}
	}
	s.reqLog = nil
	return nil
}

type nondeterminismError struct {
	n     int
	first string
}

func (e *nondeterminismError) Error() string {
	return fmt.Sprintf("replay differs from the log in %d step(s); first: %s", e.n, e.first)
}
