package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/sweep"
)

// frame is the part of a server frame the generator reads.
type frame struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Code string `json:"code"`
	// Outcome, on an unavailable error, says whether the input was not
	// applied or may have been.
	Outcome string `json:"outcome"`
	// URL, on a moved error, is the node that runs the session now.
	URL string `json:"url"`
	// SessionSecret comes with the ack of a start: every resume of
	// the session carries it, on whichever node.
	SessionSecret string      `json:"session_secret"`
	T             *int64      `json:"t_ms"`
	Seq           uint64      `json:"seq"`
	Effect        *wireEffect `json:"effect"`
	// State and Missed come with the ack of a resume (State with a
	// start's too): Missed holds the effects after the last_seq sent.
	State  *wireState `json:"state"`
	Missed []frame    `json:"missed"`
}

// wireState is the part of a session's state the generator reads.
type wireState struct {
	T     int64 `json:"t_ms"`
	Ended bool  `json:"ended"`
	// AckDeadlineMS is the longest the node takes to answer an event.
	AckDeadlineMS int64 `json:"ack_deadline_ms"`
}

// wireEffect is an effect frame's effect: the engine's, plus how long the
// server plays an agent message (which the candidate waits out).
type wireEffect struct {
	engine.Effect
	SpeechMS int64 `json:"speech_ms"`
}

// eventFrame is an event as the client sends it, without a timestamp:
// the server stamps it with its own clock, as it does a browser's.
type eventFrame struct {
	ID    string      `json:"id"`
	Type  string      `json:"type"`
	Event events.Wire `json:"event"`
}

// codeMoved is the error code of a cluster node that does not run the
// session (runtime/service.CodeMoved): the frame's url names the node
// that does, and an input answered with it was not applied.
const codeMoved = "moved"

// codeUnavailable is an event the node did not acknowledge within its
// ack deadline (runtime/service.CodeUnavailable): not applied, or with
// the outcome unknown. Either way the node is in trouble, and the
// generator resumes the session on the next node.
const codeUnavailable = "unavailable"

// deadlineMargin is added to a node's advertised ack deadline for the
// network: an event unanswered past both means the node is paused or cut
// off, and the session resumes on the next node.
const deadlineMargin = 2 * time.Second

var yes, no = true, false

func confidence(c float64) *float64 { return &c }

// fixedScript is the canned cycle of -events fixed, unchanged from the
// generator's first version so its figures can be reproduced.
var fixedScript = []engine.CandidateEvent{
	{Type: engine.EventMicState, MicActive: &yes},
	{Type: engine.EventMicState, MicActive: &no},
	{Type: engine.EventSpeechEnd},
	{Type: engine.EventMessage, Source: "voice", Text: "I would replay the failed payment and check the gateway logs.", STTConfidence: confidence(0.93)},
	{Type: engine.EventTypingState, Typing: &yes},
	{Type: engine.EventMessage, Source: "text", Text: "Hotfix first; the launch waits an hour. The rollback risk is low."},
}

// wire is ev in the protocol's event shape.
func wire(ev engine.CandidateEvent) events.Wire {
	d := events.Data{Source: ev.Source, Text: ev.Text, STTConfidence: ev.STTConfidence, AddressedTo: ev.AddressedTo,
		MicActive: ev.MicActive, Typing: ev.Typing, Code: ev.Code, RunID: ev.RunID, Line: ev.Line}
	w := events.Wire{EventType: ev.Type}
	if d != (events.Data{}) {
		w.Data = &d
	}
	return w
}

// sent is an event waiting for its ack.
type sent struct {
	at  time.Time
	typ string
	// n orders the events as they were sent, and data is the frame, so
	// the ones a moved session left unanswered go again in their order.
	n    int
	data []byte
}

// awaiting is an acked event whose first effect has not come yet.
type awaiting struct {
	sent
	active bool
	// t is the engine time its effects carry: the ack's, quantized down
	// to the pack's tick as every effect time is.
	t int64
}

// link is one connection of a session. A session that a node sends
// elsewhere (moved) gets a new link on the node named.
type link struct {
	ws     *websocket.Conn
	answer chan error    // the answer to the start or resume: nil, a refusal or a move
	gone   chan struct{} // the reader stopped: the connection is over
	// closing: we close the connection, so read errors are ours.
	closing atomic.Bool
	// moved holds the url of a moved error ("" when it named none): the
	// session runs on another node now.
	moved atomic.Pointer[string]
	// left: the generator gave the node up (client.leave).
	left atomic.Bool
}

// refusal is a start or resume a node refused with code.
type refusal struct{ code string }

func (e *refusal) Error() string { return e.code }

// movedError is a start or resume answered moved: the session runs on
// the node at url ("" when the answer named none).
type movedError struct{ url string }

func (e *movedError) Error() string { return codeMoved }

// Redirects are bounded: a session told moved maxMoves times in a row
// before a node takes it, or maxMoves times within moveWindow, gives up
// with a session error, so nodes that send it round in circles cannot
// hold it for ever.
const (
	maxMoves   = 5
	moveWindow = time.Second
)

// moveGrace is how long, after a moved error mid-session, the generator
// waits for the node to close the connection: the node sends what it had
// queued first, so every ack on its way is counted before the events left
// unanswered go to the next node.
const moveGrace = 2 * time.Second

// client is one session's connection.
type client struct {
	r    *runner
	i    int
	seed uint64
	// link is the connection in use; only the session's goroutine
	// changes it. node is where in -url's list the session dialed last.
	link *link
	node int

	mu      sync.Mutex
	pending map[string]sent
	await   awaiting
	cand    *dryrun.Candidate // -events model
	t0      time.Time         // wall time of the session's t_ms 0
	lastSeq uint64            // the last effect seq seen: where a resume picks up
	n       int               // events sent, to name them
	secret  string            // the session's, from its start's ack
	// ackDeadline is what the node the session is on advertised; 0 for
	// none.
	ackDeadline time.Duration

	// begun: a node took the session (its start or a resume was acked),
	// so every later connection resumes it.
	begun bool
	// hops counts the moves followed; unbound those since a node last
	// took the session, and moves the recent ones' times, for the bound.
	hops, unbound int
	moves         []time.Time
	// fixed is the next event of the fixed cycle and rng its pacing,
	// kept across moves so the cycle goes on where it was.
	fixed int
	rng   *rand.Rand

	wake     chan struct{} // the candidate saw something: look again
	answered chan struct{} // an event was acked or refused
	endSeen  chan struct{} // a session_end effect arrived
	ended    atomic.Bool   // the session ended (endSeen closed)
	lost     atomic.Bool   // the connection failed under us
}

// session runs session i from its arrival: it connects to its node of
// -url (round-robin), starts, sends events until the session ends or the
// run stops, and ends it then, following the session to whichever node
// says it runs it. It counts whether the pack ended the session or its
// connection failed.
func (r *runner) session(ctx context.Context, i int) {
	c := &client{r: r, i: i, seed: sweep.SessionSeed(r.c.seed, i), pending: map[string]sent{}, node: i % len(r.c.urls),
		wake: make(chan struct{}, 1), answered: make(chan struct{}, 1), endSeen: make(chan struct{})}
	if r.model != nil {
		c.cand = r.model.NewCandidate(c.seed)
	}
	defer c.hangUp()
	if err := c.join(ctx, r.c.urls[c.node]); err != nil {
		if ctx.Err() == nil {
			r.st.startFailed(err.Error())
		}
		return
	}
	// Live before started: a run that stops once every session has
	// started finds each of them in the live count.
	r.live.add(1, time.Now())
	r.st.started.Add(1)
	defer func() { r.live.add(-1, time.Now()) }()
	for {
		if c.cand != nil {
			c.playModel(ctx)
		} else {
			c.playFixed(ctx)
		}
		c.hold(ctx)
		if !c.follow(ctx) {
			break
		}
	}
	byPack := c.ended.Load()
	if byPack {
		// Events sent as the session ended are still being answered
		// (acked, or refused as after the end).
		c.waitAnswers(ctx)
	}
	// What is unanswered now is counted as such: the end does not wait
	// for it, and a move while ending does not send it again.
	c.mu.Lock()
	r.st.unanswered.Add(int64(len(c.pending)))
	r.st.outstanding.Add(-int64(len(c.pending)))
	clear(c.pending)
	c.mu.Unlock()
	if !byPack && !c.lost.Load() && ctx.Err() == nil && !r.c.leave {
		c.end(ctx)
	}
	c.settle()
	c.link.closing.Store(true)
	c.link.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "done"), time.Now().Add(time.Second))
	if c.lost.Load() {
		r.st.lost.Add(1)
	}
	if byPack {
		r.st.endedByPack.Add(1)
	}
}

// join puts the session on a node: it connects to url and starts the
// session there (or resumes it), following every moved answer within the
// bound. Its error's text is the kind the run counts it under.
func (c *client) join(ctx context.Context, url string) error {
	for {
		err := c.attach(ctx, url)
		var mv *movedError
		if !errors.As(err, &mv) {
			return err
		}
		if url, err = c.hop(mv.url, time.Now()); err != nil {
			return err
		}
	}
}

// attach connects to url and asks for the session there: a start, or a
// resume from the last effect seen once a node has taken it or a start
// was sent elsewhere (the protocol's answer to moved). A resume the node
// cannot find, of a session no node has acked, is a start that was never
// applied, so the session is started there instead.
func (c *client) attach(ctx context.Context, url string) error {
	c.hangUp()
	hdr := http.Header{}
	if c.r.c.token != "" {
		hdr.Set("Authorization", "Bearer "+c.r.c.token)
	}
	d := websocket.Dialer{HandshakeTimeout: 30 * time.Second, ReadBufferSize: 1024, WriteBufferSize: 1024}
	ws, _, err := d.DialContext(ctx, url, hdr)
	if err != nil {
		return errors.New("dial: " + short(err))
	}
	l := &link{ws: ws, answer: make(chan error, 1), gone: make(chan struct{})}
	c.link = l
	go c.read(l)
	start := map[string]any{"id": "start", "type": "start", "pack": c.r.c.pack, "session_id": c.id(),
		"candidate_id": "load", "seed": int64(c.seed)}
	if c.begun || c.hops > 0 {
		c.mu.Lock()
		last, secret := c.lastSeq, c.secret
		c.mu.Unlock()
		resume := map[string]any{"id": "resume", "type": "resume", "session_id": c.id(), "last_seq": last}
		if secret != "" {
			resume["session_secret"] = secret
		}
		err = c.ask(ctx, "resume", resume)
		var rf *refusal
		if errors.As(err, &rf) && rf.code == "session_not_found" && !c.begun {
			err = c.ask(ctx, "start", start)
		}
	} else {
		err = c.ask(ctx, "start", start)
	}
	if err != nil {
		return err
	}
	c.mu.Lock()
	limit := c.ackDeadline
	c.mu.Unlock()
	if limit > 0 {
		go c.watch(l, limit+deadlineMargin)
	}
	c.unbound = 0
	if !c.begun {
		c.begun = true
		c.r.st.startedOn(url)
	}
	return nil
}

func (c *client) id() string { return fmt.Sprintf("%s_%d", c.r.c.prefix, c.i) }

// ask sends a start or resume and waits for its answer. A move comes
// back as it is; anything else is an error of the kind what.
func (c *client) ask(ctx context.Context, what string, v any) error {
	if err := c.write(v); err != nil {
		return fmt.Errorf("%s: %s", what, short(err))
	}
	select {
	case err := <-c.link.answer:
		var mv *movedError
		if err == nil || errors.As(err, &mv) {
			return err
		}
		var rf *refusal
		if errors.As(err, &rf) {
			return fmt.Errorf("%s: %w", what, rf)
		}
		return fmt.Errorf("%s: %s", what, short(err))
	case <-ctx.Done():
		return ctx.Err()
	}
}

// hop counts one move to url ("" for none named: the next node of
// -url's list) and returns where to go, or the error that the session
// has been sent round too often.
func (c *client) hop(url string, now time.Time) (string, error) {
	c.unbound++
	c.moves = slices.DeleteFunc(append(c.moves, now), func(t time.Time) bool { return now.Sub(t) >= moveWindow })
	switch {
	case c.unbound >= maxMoves:
		return "", fmt.Errorf("moved: %d redirects in a row, no node took the session", maxMoves)
	case len(c.moves) >= maxMoves:
		return "", fmt.Errorf("moved: %d redirects within %s", maxMoves, moveWindow)
	}
	if c.hops == 0 {
		c.r.st.movedSessions.Add(1)
	}
	c.hops++
	c.r.st.hops.Add(1)
	if url == "" {
		c.node = (c.node + 1) % len(c.r.c.urls)
		url = c.r.c.urls[c.node]
	}
	return url, nil
}

// follow takes a session whose node moved it to the node named, once the
// old connection is over, and sends again the events that connection
// left unanswered. It reports whether the session goes on there.
func (c *client) follow(ctx context.Context) bool {
	l := c.link
	to := l.moved.Load()
	if to == nil || c.ended.Load() || ctx.Err() != nil {
		return false
	}
	select {
	case <-l.gone:
	case <-ctx.Done():
		return false
	}
	url, err := c.hop(*to, time.Now())
	if err == nil {
		err = c.join(ctx, url)
	}
	if err != nil {
		if ctx.Err() == nil {
			c.lost.Store(true)
			c.r.st.err(err.Error())
		}
		return false
	}
	c.resend()
	return true
}

// resend sends the unanswered events again on the new connection, in
// the order they were first sent. The server does not deduplicate event
// ids, so only events no node applied may go again: a node letting a
// session go answers what it applied before it closes the connection
// (follow waits for that, up to moveGrace), and an input it answers
// moved it did not apply. Their ack latency counts from the resend: the
// figures are a node's answer to a frame, and the move's own cost is in
// the moved counts.
func (c *client) resend() {
	c.mu.Lock()
	again := slices.SortedFunc(maps.Values(c.pending), func(a, b sent) int { return a.n - b.n })
	now := time.Now()
	for id, p := range c.pending {
		p.at = now
		c.pending[id] = p
	}
	c.mu.Unlock()
	for _, p := range again {
		if c.writeData(p.data) != nil {
			// The new connection failed too: its reader says whether
			// it was moved again, and the session's loop follows.
			return
		}
	}
}

// watch takes the node of l for dead once an event has waited longer
// than limit for its answer: a node that is paused, or cannot reach its
// log, answers nothing, and its session may be taken over elsewhere.
func (c *client) watch(l *link, limit time.Duration) {
	tick := time.NewTicker(max(limit/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-l.gone:
			return
		case now := <-tick.C:
			c.mu.Lock()
			silent := false
			for _, p := range c.pending {
				silent = silent || now.Sub(p.at) > limit
			}
			c.mu.Unlock()
			if silent {
				c.leave(l, "no answer within the ack deadline")
				return
			}
		}
	}
}

// leave gives a node up: every event it left unanswered may have been
// applied, so none goes again (the server does not deduplicate them);
// they count as unanswered, and the session resumes on the next node.
func (c *client) leave(l *link, why string) {
	if l.left.Swap(true) {
		return
	}
	c.mu.Lock()
	n := int64(len(c.pending))
	clear(c.pending)
	c.mu.Unlock()
	c.r.st.unanswered.Add(n)
	c.r.st.outstanding.Add(-n)
	c.r.st.err(why)
	next := ""
	l.moved.CompareAndSwap(nil, &next)
	l.ws.SetReadDeadline(time.Now())
	c.poke(c.answered)
}

// hangUp closes the connection in use, if any, and waits for its reader
// to stop, so nothing it read is still being counted.
func (c *client) hangUp() {
	l := c.link
	if l == nil {
		return
	}
	l.closing.Store(true)
	l.ws.Close()
	<-l.gone
}

// movedAway reports, after a write failed, whether the node had moved
// the session: the write failed because the node closed the connection
// after saying so. The reader reads the moved frame before it sees the
// connection end, so its end is waited for, within moveGrace.
func (c *client) movedAway() bool {
	t := time.NewTimer(moveGrace)
	defer t.Stop()
	select {
	case <-c.link.gone:
	case <-t.C:
	}
	return c.link.moved.Load() != nil
}

// waitAnswers waits, for up to -drain, until every event sent has been
// acked or refused.
func (c *client) waitAnswers(ctx context.Context) {
	t := time.NewTimer(c.r.c.drain)
	defer t.Stop()
	for {
		c.mu.Lock()
		n := len(c.pending)
		c.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-c.answered:
		case <-c.link.gone:
			return
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// end ends the session with an end frame and waits for it to be applied,
// so the server does not keep running what the run started. A session
// moved meanwhile is followed and ended on its new node.
func (c *client) end(ctx context.Context) {
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	for {
		if c.write(map[string]any{"id": "end", "type": "end", "reason": "load_done"}) != nil && !c.movedAway() {
			return
		}
		select {
		case <-c.endSeen:
			return
		case <-c.link.gone:
			if !c.follow(ctx) {
				return
			}
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// write sends one frame. Only the session's own goroutine writes, so
// writes never interleave; the deadline keeps a stalled server from
// holding the run past its end.
func (c *client) write(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.writeData(data)
}

func (c *client) writeData(data []byte) error {
	c.link.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return c.link.ws.WriteMessage(websocket.TextMessage, data)
}

// errStopped is a send after the run stopped sending.
var errStopped = errors.New("the run has stopped sending")

// send sends one candidate event and keeps its send time for its ack,
// and the frame itself in case a move leaves it unanswered.
func (c *client) send(ev engine.CandidateEvent) error {
	if !c.r.st.open() {
		return errStopped
	}
	c.n++
	id := "e" + strconv.Itoa(c.n)
	data, err := json.Marshal(eventFrame{ID: id, Type: "event", Event: wire(ev)})
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.pending[id] = sent{at: time.Now(), typ: ev.Type, n: c.n, data: data}
	c.mu.Unlock()
	if err := c.writeData(data); err != nil {
		if c.movedAway() {
			// It goes to the next node with the others unanswered.
			c.r.st.sentEvent(ev.Type)
			return nil
		}
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		c.r.st.outstanding.Add(-1)
		if !c.ended.Load() {
			c.lost.Store(true)
			c.r.st.err("write: " + short(err))
		}
		return err
	}
	c.r.st.sentEvent(ev.Type)
	return nil
}

// over reports, without waiting, whether sending is over on this
// connection: for good, or until the session is followed to its node.
func (c *client) over(ctx context.Context) bool {
	select {
	case <-ctx.Done():
	case <-c.r.stopped:
	case <-c.endSeen:
	case <-c.link.gone:
	default:
		return false
	}
	return true
}

// hold waits, once sending is over, until the run ends the session: the
// answers to the last events are still being counted meanwhile.
func (c *client) hold(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-c.r.finish:
	case <-c.endSeen:
	case <-c.link.gone:
	}
}

// playFixed sends the canned cycle at -rate, starting at a random point
// of the first interval so sessions do not send in waves.
func (c *client) playFixed(ctx context.Context) {
	if c.r.ready != nil {
		select {
		case <-c.r.ready:
		case <-ctx.Done():
			return
		case <-c.link.gone:
			return
		}
	}
	if c.rng == nil {
		c.rng = rand.New(rand.NewPCG(c.seed, 0x6669786564)) // "fixed"
	}
	interval := time.Duration(float64(time.Second) / c.r.c.rate)
	timer := time.NewTimer(time.Duration(c.rng.Int64N(int64(interval))))
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
		case <-ctx.Done():
			return
		case <-c.r.stopped:
			return
		case <-c.endSeen:
			return
		case <-c.link.gone:
			return
		}
		// The timer and a stop can be ready at once.
		if c.over(ctx) {
			return
		}
		if c.send(fixedScript[c.fixed%len(fixedScript)]) != nil {
			return
		}
		c.fixed++
		timer.Reset(interval)
	}
}

// playModel sends the candidate's events when they fall due in session
// time, looking again whenever the candidate has seen a new effect (an
// answer planned, or dropped for a newer question).
func (c *client) playModel(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for !c.over(ctx) {
		c.mu.Lock()
		at, ok := c.cand.Next()
		var ev engine.CandidateEvent
		due := false
		if ok {
			if wait := time.Until(c.t0.Add(time.Duration(at) * time.Millisecond)); wait <= 0 {
				_, ev = c.cand.Pop()
				due = true
			} else {
				timer.Reset(wait)
			}
		}
		c.mu.Unlock()
		if due {
			if c.send(ev) != nil {
				return
			}
			continue
		}
		var fire <-chan time.Time
		if ok {
			fire = timer.C
		}
		select {
		case <-fire:
		case <-c.wake:
		case <-ctx.Done():
		case <-c.r.stopped:
		case <-c.endSeen:
		case <-c.link.gone:
		}
	}
}

// read takes every frame the server sends on l: the answer to the start
// or resume, acks and refusals of the events, effects (timed against the
// event that caused them, and shown to the candidate), the session's end,
// and a move to another node.
func (c *client) read(l *link) {
	defer close(l.gone)
	st := c.r.st
	answer := func(err error) {
		select {
		case l.answer <- err:
		default:
		}
	}
	for {
		_, data, err := l.ws.ReadMessage()
		if err != nil {
			if !l.closing.Load() && !c.ended.Load() && l.moved.Load() == nil {
				c.lost.Store(true)
				st.err("read: " + short(err))
			}
			answer(err)
			return
		}
		var f frame
		if json.Unmarshal(data, &f) != nil {
			st.err("bad frame")
			continue
		}
		now := time.Now()
		switch f.Type {
		case "ack":
			switch f.ID {
			case "start", "resume":
				c.bound(&f, now)
				answer(nil)
				continue
			case "end":
				continue
			}
			c.acked(f, now)
		case "effect", "client_tool_call":
			c.effectFrame(&f, now)
		case "error":
			switch {
			case f.Code == codeMoved:
				l.moved.Store(&f.URL)
				if f.ID == "start" || f.ID == "resume" {
					answer(&movedError{url: f.URL})
					continue
				}
				// Mid-session (an input answered moved stays
				// pending: it was not applied): the node closes
				// the connection once it has sent what it had
				// queued; one that does not is not waited for.
				l.ws.SetReadDeadline(now.Add(moveGrace))
				continue
			case f.Code == codeUnavailable && f.Outcome == "not_applied":
				// Not applied: it goes again on the next node, as
				// one answered moved does, once the answers already
				// on their way are in.
				next := ""
				l.moved.CompareAndSwap(nil, &next)
				l.ws.SetReadDeadline(now.Add(moveGrace))
				continue
			case f.Code == codeUnavailable:
				c.leave(l, "error frame: "+f.Code+" (outcome unknown)")
				continue
			case f.ID == "start" || f.ID == "resume":
				// A resume the node cannot find is answered by
				// starting there, not an error (attach).
				if f.ID == "start" || f.Code != "session_not_found" {
					st.err("error frame: " + f.Code)
				}
				answer(&refusal{code: f.Code})
				continue
			}
			c.refused(f)
		}
	}
}

// bound takes the ack of a start or resume: the session's clock, the
// effects missed while it moved, and whether it ended meanwhile.
func (c *client) bound(f *frame, now time.Time) {
	t := int64(0)
	switch {
	case f.T != nil:
		t = *f.T
	case f.State != nil:
		t = f.State.T
	}
	c.mu.Lock()
	if c.t0.IsZero() {
		c.t0 = now.Add(-time.Duration(t) * time.Millisecond)
	}
	if f.SessionSecret != "" {
		c.secret = f.SessionSecret
	}
	if f.State != nil {
		c.ackDeadline = time.Duration(f.State.AckDeadlineMS) * time.Millisecond
	}
	c.mu.Unlock()
	for i := range f.Missed {
		c.effectFrame(&f.Missed[i], now)
	}
	if f.State != nil && f.State.Ended && !c.ended.Swap(true) {
		close(c.endSeen)
	}
}

// effectFrame takes an effect frame once: a resume's missed effects
// and the live ones after them never overlap, but seq says so for sure.
func (c *client) effectFrame(f *frame, now time.Time) {
	c.mu.Lock()
	dup := f.Seq != 0 && f.Seq <= c.lastSeq
	if f.Seq > c.lastSeq {
		c.lastSeq = f.Seq
	}
	c.mu.Unlock()
	switch {
	case dup || f.Type != "effect":
	case f.Effect == nil:
		c.r.st.err("effect frame without an effect")
	default:
		c.effect(f.Effect, now)
	}
}

// refused counts an error frame. An event the session refuses because
// it has just ended is the race every client that talks until the end
// runs into (it was sent before the end reached it), not an error.
func (c *client) refused(f frame) {
	c.mu.Lock()
	p, ok := c.pending[f.ID]
	delete(c.pending, f.ID)
	c.mu.Unlock()
	if ok {
		c.r.st.outstanding.Add(-1)
	}
	switch {
	case !ok && f.ID == "end" && f.Code == "session_ended":
		// The run's end crossed the pack's: the session is over
		// either way.
	case !ok:
		c.r.st.err("error frame: " + f.Code)
	case f.Code == "session_ended":
		c.r.st.refused(p.at, p.typ, true)
	default:
		c.r.st.err("error frame: " + f.Code)
		c.r.st.refused(p.at, p.typ, false)
	}
	c.poke(c.answered)
}

// poke signals ch without waiting: one signal pending is enough.
func (c *client) poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// acked times an event's ack. The server sends an input's ack and then,
// at once and before anything else of the session, the effects the input
// caused, all at the ack's time quantized to the tick; an input that
// caused none is followed by the next step's effects, at a later tick,
// or by the next ack. So the event now acked is the one whose first
// effect comes next, and an earlier one still waiting caused none.
func (c *client) acked(f frame, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pending[f.ID]
	if !ok {
		return
	}
	delete(c.pending, f.ID)
	c.r.st.outstanding.Add(-1)
	c.settleLocked()
	var t int64
	if f.T != nil {
		t = *f.T
	}
	c.await = awaiting{sent: p, active: true, t: t / c.r.tickMS * c.r.tickMS}
	c.r.st.ack(p.at, now, p.typ)
	c.poke(c.answered)
}

// effect attributes an effect to the event awaiting one, if it is that
// event's, and shows it to the candidate.
func (c *client) effect(e *wireEffect, now time.Time) {
	c.mu.Lock()
	if a := c.await; a.active {
		if e.T == a.t {
			c.r.st.firstEffect(a.at, now, a.typ)
		} else {
			c.r.st.noEffect(a.at, a.typ)
		}
		c.await.active = false
	}
	if c.cand != nil {
		c.cand.Observe(&e.Effect, e.SpeechMS)
	}
	c.mu.Unlock()
	if c.cand != nil {
		c.poke(c.wake)
	}
	if e.Type == engine.EffectSessionEnd && !c.ended.Swap(true) {
		close(c.endSeen)
	}
}

// settle counts the event awaiting an effect as having caused none: the
// connection is over.
func (c *client) settle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settleLocked()
}

func (c *client) settleLocked() {
	if c.await.active {
		c.r.st.noEffect(c.await.at, c.await.typ)
		c.await.active = false
	}
}

// short is the end of an error's text: the part that says what went
// wrong, without the addresses that make every instance unique.
func short(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && len(s) > 60 {
		s = s[i+2:]
	}
	return s
}
