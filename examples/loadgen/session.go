package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
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
	Type   string      `json:"type"`
	ID     string      `json:"id"`
	Code   string      `json:"code"`
	T      *int64      `json:"t_ms"`
	Effect *wireEffect `json:"effect"`
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
}

// awaiting is an acked event whose first effect has not come yet.
type awaiting struct {
	sent
	active bool
	// t is the engine time its effects carry: the ack's, quantized down
	// to the pack's tick as every effect time is.
	t int64
}

// client is one session's connection.
type client struct {
	r    *runner
	i    int
	seed uint64
	ws   *websocket.Conn

	mu      sync.Mutex
	pending map[string]sent
	await   awaiting
	cand    *dryrun.Candidate // -events model
	t0      time.Time         // wall time of the session's t_ms 0
	n       int               // events sent, to name them

	wake     chan struct{} // the candidate saw something: look again
	answered chan struct{} // an event was acked or refused
	started  chan error
	endSeen  chan struct{} // a session_end effect arrived
	gone     chan struct{} // the reader stopped: the connection is over
	ended    atomic.Bool   // the session ended (endSeen closed)
	closing  atomic.Bool   // we close the connection: read errors are ours
	lost     atomic.Bool   // the connection failed under us
}

// session runs session i from its arrival: it connects, starts, sends
// events until the session ends or the run stops, and ends it then. It
// counts whether the pack ended the session or its connection failed.
func (r *runner) session(ctx context.Context, i int) {
	c := &client{r: r, i: i, seed: sweep.SessionSeed(r.c.seed, i), pending: map[string]sent{},
		wake: make(chan struct{}, 1), answered: make(chan struct{}, 1), started: make(chan error, 1), endSeen: make(chan struct{}), gone: make(chan struct{})}
	hdr := http.Header{}
	if r.c.token != "" {
		hdr.Set("Authorization", "Bearer "+r.c.token)
	}
	d := websocket.Dialer{HandshakeTimeout: 30 * time.Second, ReadBufferSize: 1024, WriteBufferSize: 1024}
	ws, _, err := d.DialContext(ctx, r.c.url, hdr)
	if err != nil {
		r.st.startFailed("dial: " + short(err))
		return
	}
	c.ws = ws
	defer func() {
		c.closing.Store(true)
		ws.Close()
	}()
	if r.model != nil {
		c.cand = r.model.NewCandidate(c.seed)
	}
	go c.read()
	start := map[string]any{"id": "start", "type": "start", "pack": r.c.pack, "session_id": fmt.Sprintf("%s_%d", r.c.prefix, i),
		"candidate_id": "load", "seed": int64(c.seed)}
	if err := c.write(start); err != nil {
		r.st.startFailed("start: " + short(err))
		return
	}
	select {
	case err := <-c.started:
		if err != nil {
			r.st.startFailed("start: " + short(err))
			return
		}
	case <-ctx.Done():
		return
	}
	r.st.started.Add(1)
	r.live.add(1, time.Now())
	defer func() { r.live.add(-1, time.Now()) }()
	if c.cand != nil {
		c.playModel(ctx)
	} else {
		c.playFixed(ctx)
	}
	byPack := c.ended.Load()
	if byPack {
		// Events sent as the session ended are still being answered
		// (acked, or refused as after the end).
		c.waitAnswers(ctx)
	}
	c.mu.Lock()
	r.st.unanswered.Add(int64(len(c.pending)))
	c.mu.Unlock()
	if !byPack && !c.lost.Load() && ctx.Err() == nil && !r.c.leave {
		c.end(ctx)
	}
	c.closing.Store(true)
	ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "done"), time.Now().Add(time.Second))
	if c.lost.Load() {
		r.st.lost.Add(1)
	}
	if byPack {
		r.st.endedByPack.Add(1)
	}
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
		case <-c.gone:
			return
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// end ends the session with an end frame and waits for it to be applied,
// so the server does not keep running what the run started.
func (c *client) end(ctx context.Context) {
	if c.write(map[string]any{"id": "end", "type": "end", "reason": "load_done"}) != nil {
		return
	}
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-c.endSeen:
	case <-c.gone:
	case <-t.C:
	case <-ctx.Done():
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
	c.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return c.ws.WriteMessage(websocket.TextMessage, data)
}

// send sends one candidate event and keeps its send time for its ack.
func (c *client) send(ev engine.CandidateEvent) error {
	c.n++
	id := "e" + strconv.Itoa(c.n)
	c.mu.Lock()
	c.pending[id] = sent{at: time.Now(), typ: ev.Type}
	c.mu.Unlock()
	if err := c.write(eventFrame{ID: id, Type: "event", Event: wire(ev)}); err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		if !c.ended.Load() {
			c.lost.Store(true)
			c.r.st.err("write: " + short(err))
		}
		return err
	}
	c.r.st.sentEvent(ev.Type)
	return nil
}

// over reports, without waiting, whether sending is over for good.
func (c *client) over(ctx context.Context) bool {
	select {
	case <-ctx.Done():
	case <-c.r.stopped:
	case <-c.endSeen:
	case <-c.gone:
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
	case <-c.gone:
	}
}

// playFixed sends the canned cycle at -rate, starting at a random point
// of the first interval so sessions do not send in waves.
func (c *client) playFixed(ctx context.Context) {
	defer c.hold(ctx)
	if c.r.ready != nil {
		select {
		case <-c.r.ready:
		case <-ctx.Done():
			return
		case <-c.gone:
			return
		}
	}
	rng := rand.New(rand.NewPCG(c.seed, 0x6669786564)) // "fixed"
	interval := time.Duration(float64(time.Second) / c.r.c.rate)
	timer := time.NewTimer(time.Duration(rng.Int64N(int64(interval))))
	defer timer.Stop()
	for n := 0; ; n++ {
		select {
		case <-timer.C:
		case <-ctx.Done():
			return
		case <-c.r.stopped:
			return
		case <-c.endSeen:
			return
		case <-c.gone:
			return
		}
		if c.send(fixedScript[n%len(fixedScript)]) != nil {
			return
		}
		timer.Reset(interval)
	}
}

// playModel sends the candidate's events when they fall due in session
// time, looking again whenever the candidate has seen a new effect (an
// answer planned, or dropped for a newer question).
func (c *client) playModel(ctx context.Context) {
	defer c.hold(ctx)
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
		case <-c.gone:
		}
	}
}

// read takes every frame the server sends: acks and refusals of the
// events, effects (timed against the event that caused them, and shown
// to the candidate), the session's end.
func (c *client) read() {
	defer close(c.gone)
	defer c.settle()
	st := c.r.st
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			if !c.closing.Load() && !c.ended.Load() {
				c.lost.Store(true)
				st.err("read: " + short(err))
			}
			select {
			case c.started <- err:
			default:
			}
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
			case "start":
				var t int64
				if f.T != nil {
					t = *f.T
				}
				c.mu.Lock()
				c.t0 = now.Add(-time.Duration(t) * time.Millisecond)
				c.mu.Unlock()
				c.started <- nil
				continue
			case "end":
				continue
			}
			c.acked(f, now)
		case "effect":
			if f.Effect == nil {
				st.err("effect frame without an effect")
				continue
			}
			c.effect(f.Effect, now)
		case "error":
			if f.ID == "start" {
				st.err("error frame: " + f.Code)
				c.started <- fmt.Errorf("%s", f.Code)
				continue
			}
			c.refused(f)
		}
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
	switch {
	case !ok:
		c.r.st.err("error frame: " + f.Code)
	case f.Code == "session_ended":
		c.r.st.refused(p.typ, true)
	default:
		c.r.st.err("error frame: " + f.Code)
		c.r.st.refused(p.typ, false)
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
	c.settleLocked()
	var t int64
	if f.T != nil {
		t = *f.T
	}
	c.await = awaiting{sent: p, active: true, t: t / c.r.tickMS * c.r.tickMS}
	c.r.st.ack(now.Sub(p.at), p.typ)
	c.poke(c.answered)
}

// effect attributes an effect to the event awaiting one, if it is that
// event's, and shows it to the candidate.
func (c *client) effect(e *wireEffect, now time.Time) {
	c.mu.Lock()
	if a := c.await; a.active {
		if e.T == a.t {
			c.r.st.firstEffect(now.Sub(a.at), a.typ)
		} else {
			c.r.st.noEffect(a.typ)
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
		c.r.st.noEffect(c.await.typ)
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
