package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/internal/wal"
)

// Closing a connection. The close frame follows the replies already
// queued, and the socket stays open a little after it, reading and
// discarding what the client still sends: closing a socket with unread
// data in it makes the kernel send a reset, and a reset can make the
// client lose the close frame and the replies before it.
const (
	// closeFlush bounds writing the frames queued before the close frame.
	closeFlush = 2 * time.Second
	// closeWrite bounds writing the close frame itself.
	closeWrite = time.Second
	// closeDrain is how long the socket stays open after the close frame
	// waiting for the client's own close frame (or its end of the stream).
	closeDrain = 2 * time.Second
	// idPeek is how much of a refused frame is read to find its id.
	idPeek = 512
)

// errStopped ends the reader's loop after the decision to close.
var errStopped = errors.New("connection closing")

// conn is one WebSocket client. A reader goroutine parses frames and hands
// inputs to the bound session's actor; a writer goroutine drains a bounded
// queue. The session never blocks on a client: a full queue disconnects
// that client (1013) and the session carries on.
type conn struct {
	srv *Server
	ws  *websocket.Conn
	log *slog.Logger

	sendq   chan []byte
	closing chan struct{}
	// ctx ends at the decision to close, so that a frame still waiting
	// for room in a busy session's inbox is not delivered after it.
	ctx      context.Context
	cancel   context.CancelFunc
	readDone chan struct{} // closed when the reader has stopped reading
	once     sync.Once
	code     int
	reason   string
	// flush asks the writer to send what is queued before closing.
	flush bool

	// reader-goroutine state
	sess    *session
	endedID string // set when bound to a session that has ended
	limiter *bucket
	refused rejectWindow
	// unanswered counts refused frames dropped without a reply since the
	// last rate_limited error.
	unanswered int
	// audio is the microphone audio budget (voice.go).
	audio connAudio
}

func (srv *Server) serveWS(ws *websocket.Conn, remote string) {
	c := srv.newConn(ws, srv.log.With("remote", remote))
	if !srv.addConn(c) {
		c.cancel()
		ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "server shutting down"), time.Now().Add(time.Second))
		ws.Close()
		return
	}
	srv.m.connections.Inc()
	srv.wg.Add(2)
	go c.writeLoop()
	go c.readLoop()
}

func (srv *Server) newConn(ws *websocket.Conn, log *slog.Logger) *conn {
	c := &conn{
		srv:      srv,
		ws:       ws,
		log:      log,
		sendq:    make(chan []byte, srv.cfg.SendQueue),
		closing:  make(chan struct{}),
		readDone: make(chan struct{}),
		limiter:  newBucket(srv.cfg.EventRate, srv.cfg.EventBurst, srv.clock.Now()),
	}
	c.ctx, c.cancel = context.WithCancel(srv.ctx)
	return c
}

// kill decides to close the connection with a close code and reason. The
// first decision wins; kill reports whether it was this one.
func (c *conn) kill(code int, reason string, flush bool) bool {
	won := false
	c.once.Do(func() {
		won = true
		c.code, c.reason, c.flush = code, reason, flush
		close(c.closing)
		c.cancel()
	})
	return won
}

// stopped reports whether the connection has been decided to close.
func (c *conn) stopped() bool {
	select {
	case <-c.closing:
		return true
	default:
		return false
	}
}

// enqueue queues a frame for sending; it never blocks. It reports false
// when the connection is closing or was just closed for being too slow.
func (c *conn) enqueue(b []byte) bool {
	if c.stopped() {
		return false
	}
	select {
	case c.sendq <- b:
		return true
	default:
		c.slowConsumer("queue_full", fmt.Sprintf("slow consumer: %d frames waiting; reconnect and resume", cap(c.sendq)))
		return false
	}
}

// slowConsumer closes a connection whose client does not take what is
// sent to it: its send queue filled up, a write to it timed out, or it
// answered no ping for PongWait (see readLoop for how that is told apart
// from a client that went away).
func (c *conn) slowConsumer(cause, reason string) {
	if c.kill(websocket.CloseTryAgainLater, reason, false) {
		// The line before the count: whoever watches the count finds the
		// line written.
		c.log.Warn("slow consumer disconnected", "cause", cause, "queued", len(c.sendq))
		c.srv.m.slowConsumers.Inc()
	}
}

func (c *conn) sendError(id string, pe *ProtoError) {
	c.srv.m.clientErrors.WithLabelValues(pe.Code).Inc()
	c.enqueue(mustJSON(ErrorFrame{Type: FrameError, ID: id, Code: pe.Code, Message: pe.Message}))
}

func (c *conn) writeLoop() {
	defer c.srv.wg.Done()
	defer func() {
		if r := recover(); r != nil {
			c.srv.m.panics.WithLabelValues("connection").Inc()
			c.log.Error("connection writer panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			c.kill(websocket.CloseInternalServerErr, "internal error", false)
			c.ws.Close()
		}
	}()
	ping := time.NewTicker(c.srv.cfg.PingInterval)
	defer ping.Stop()
	for {
		select {
		case b := <-c.sendq:
			if err := c.write(b, time.Now().Add(c.srv.cfg.WriteTimeout)); err != nil {
				c.writeFailed("write", err)
				return
			}
		case <-ping.C:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.srv.cfg.WriteTimeout)); err != nil {
				c.writeFailed("ping", err)
				return
			}
		case <-c.closing:
			c.closeHandshake()
			return
		}
	}
}

func (c *conn) write(b []byte, deadline time.Time) error {
	c.ws.SetWriteDeadline(deadline)
	return c.ws.WriteMessage(websocket.TextMessage, b)
}

// writeFailed closes a connection the writer cannot write to. A write
// that timed out means the client stopped taking data: a slow consumer.
// Any other failure means it is gone. Either way the socket can carry no
// close frame any more.
func (c *conn) writeFailed(what string, err error) {
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		c.slowConsumer("write_timeout", fmt.Sprintf("slow consumer: a %s waited %s to be written; reconnect and resume", what, c.srv.cfg.WriteTimeout))
	} else {
		c.kill(websocket.CloseAbnormalClosure, what+" failed", false)
	}
	c.ws.Close()
}

// closeHandshake runs on the writer once the connection is to close: the
// queued frames (when asked to flush), the close frame, then a wait for
// the reader to take the client's answer, and the socket is closed.
func (c *conn) closeHandshake() {
	defer c.ws.Close()
	if c.code == websocket.CloseAbnormalClosure {
		return
	}
	if c.flush {
		deadline := time.Now().Add(closeFlush)
		for done := false; !done; {
			select {
			case b := <-c.sendq:
				if c.write(b, deadline) != nil {
					return
				}
			default:
				done = true
			}
		}
	}
	err := c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(c.code, c.reason), time.Now().Add(closeWrite))
	if err != nil && !errors.Is(err, websocket.ErrCloseSent) {
		return // nobody will read an answer to a close frame that was not sent
	}
	// The reader, which stopped applying frames at the decision, reads
	// and discards until the client's close frame or this deadline.
	c.ws.SetReadDeadline(time.Now().Add(closeDrain))
	t := time.NewTimer(closeDrain + closeDrain/4)
	defer t.Stop()
	select {
	case <-c.readDone:
	case <-t.C:
	}
	c.log.Debug("connection closed", "code", c.code, "reason", c.reason)
}

// readLoop reads frames until the connection is to close, then drains
// what the client still sends until the writer closes the socket.
//
// A client that sent nothing, not even a pong, for PongWait while pinged
// every PingInterval is closed as a slow consumer (1013). From here a
// client that stopped reading (its pings sit unread in its buffers) and
// one whose host vanished without closing TCP look the same until the
// kernel gives up on the peer, minutes later; either way the session must
// stop feeding it, and a client that is merely not reading gets the close
// code when it reads again. A client that is provably gone (the stream
// ended, was reset, or a write failed other than by timing out) is closed
// without being counted.
func (c *conn) readLoop() {
	defer c.srv.wg.Done()
	defer func() {
		if r := recover(); r != nil {
			c.srv.m.panics.WithLabelValues("connection").Inc()
			c.log.Error("connection reader panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			c.kill(websocket.CloseInternalServerErr, "internal error; reconnect and resume", false)
		}
		c.kill(websocket.CloseNormalClosure, "", false)
		close(c.readDone)
		if c.sess != nil {
			// If this fails, the actor drops the connection on its next send.
			c.sess.tryPost(unsubMsg{c})
		}
		c.srv.removeConn(c)
		c.srv.m.connections.Dec()
	}()
	c.ws.SetReadLimit(4 * c.srv.cfg.MaxMessageBytes)
	c.ws.SetReadDeadline(time.Now().Add(c.srv.cfg.PongWait))
	c.ws.SetPongHandler(func(string) error {
		if !c.stopped() {
			c.ws.SetReadDeadline(time.Now().Add(c.srv.cfg.PongWait))
		}
		return nil
	})
	c.ws.SetPingHandler(c.onPing)
	echo := c.ws.CloseHandler()
	c.ws.SetCloseHandler(func(code int, text string) error {
		if c.stopped() {
			return nil // the writer sends this side's close frame after the queued replies
		}
		return echo(code, text)
	})
	err := c.readFrames()
	switch {
	case errors.Is(err, errStopped):
		c.drain()
	case errors.Is(err, websocket.ErrReadLimit):
		// The websocket library has sent the close frame (1009) itself.
		c.kill(websocket.CloseMessageTooBig, fmt.Sprintf("frame over %d bytes", 4*c.srv.cfg.MaxMessageBytes), false)
		c.drainRaw()
	case isTimeout(err) && !c.stopped():
		c.slowConsumer("no_pong", fmt.Sprintf("slow consumer: no answer to pings for %s; reconnect and resume", c.srv.cfg.PongWait))
		// If it reads again soon, its answers to the pings must not
		// meet a closed socket (a reset) before it reaches the close.
		c.drainRaw()
	}
	// Otherwise the client closed, went away, or the writer closed the
	// socket: there is nothing to drain.
}

// readFrames reads and applies frames until an error or the decision to
// close; a frame read after that decision is not applied.
func (c *conn) readFrames() error {
	for {
		typ, r, err := c.ws.NextReader()
		if err != nil {
			return err
		}
		if c.stopped() {
			return errStopped
		}
		c.ws.SetReadDeadline(time.Now().Add(c.srv.cfg.PongWait))
		if err := c.frame(typ, r, c.srv.clock.Now()); err != nil {
			return err
		}
		if c.stopped() {
			return errStopped
		}
	}
}

// drain reads and discards what the client sends after the decision to
// close, until its close frame, the end of its stream or the deadline the
// writer sets after the close frame.
func (c *conn) drain() {
	for {
		_, r, err := c.ws.NextReader()
		if err == nil {
			_, err = io.Copy(io.Discard, r)
		}
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		if errors.As(err, &ce) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return
		}
		if _, isNet := errors.AsType[net.Error](err); isNet || errors.Is(err, net.ErrClosed) {
			return
		}
		// The library gave up on the stream (a frame over the hard limit,
		// a protocol error): the rest is drained as bytes.
		c.drainRaw()
		return
	}
}

// drainRaw discards the bytes the client still sends, for closeDrain at
// most; the writer may cut it short by closing the socket.
func (c *conn) drainRaw() {
	c.ws.SetReadDeadline(time.Now().Add(closeDrain))
	io.Copy(io.Discard, c.ws.UnderlyingConn())
}

func isTimeout(err error) bool {
	ne, ok := errors.AsType[net.Error](err)
	return ok && ne.Timeout()
}

// onPing answers a client's ping. Pings are charged to the rate limit like
// data frames, so a flood of them is refused and closed the same way.
func (c *conn) onPing(data string) error {
	if c.stopped() || !c.admit(c.srv.clock.Now()) {
		return nil
	}
	// As the library's own handler: a failed pong is the writer's to find.
	c.ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
	return nil
}

// admit charges one frame to the connection's rate limit. A refused
// frame is counted; more than MaxRejected refused within rejectSpan close
// the connection (1008). It reports whether the frame may be applied.
func (c *conn) admit(now time.Time) bool {
	if c.limiter.allow(now) {
		return true
	}
	c.srv.m.rateLimited.Inc()
	if n := c.refused.add(now); n > c.srv.cfg.MaxRejected {
		if c.kill(websocket.ClosePolicyViolation, fmt.Sprintf("rate limit: %d frames refused within %s", n, rejectSpan), true) {
			c.log.Warn("rate limit exceeded; connection closed", "refused", n, "within", rejectSpan)
		}
	}
	return false
}

// frame handles one client data frame as the reader gets it, and is all
// of what the reader does with one: it is charged to the rate limit
// before anything else (malformed, oversized and binary frames too), then
// read up to the size limit, parsed and applied. An error means the
// stream cannot be read on (a frame over the hard size limit, a broken
// connection).
func (c *conn) frame(typ int, r io.Reader, read time.Time) error {
	if vh := c.serverVoice(); vh != nil {
		// Microphone audio has its own budget (voice.go): at 50 frames a
		// second it would exhaust the frame rate.
		audio, rest, err := c.voiceFrame(vh, typ, r, read)
		if audio || err != nil {
			return err
		}
		r = rest
	}
	if !c.admit(read) {
		return c.refuse(r)
	}
	soft := c.srv.cfg.MaxMessageBytes
	data, err := io.ReadAll(io.LimitReader(r, soft+1))
	if err != nil {
		return err
	}
	if int64(len(data)) > soft {
		// Skip the rest; beyond the hard limit the library closes with 1009.
		if _, err := io.Copy(io.Discard, r); err != nil {
			return err
		}
		c.sendError(salvageID(data), perr(CodeTooLarge, "frame is over the %d-byte limit; it was dropped", soft))
		return nil
	}
	if typ != websocket.TextMessage {
		c.sendError("", perr(CodeBadFrame, "binary frames are not part of the protocol here; send JSON text frames (microphone audio is taken only by sessions whose live speech the server hosts)"))
		return nil
	}
	c.handle(data, read)
	return nil
}

// refuse drops a frame over the rate limit. It is answered with
// rate_limited while the send queue is at most half full; beyond that
// refused frames are dropped without an answer (and counted in the next
// one), so a client flooding faster than it reads is closed for the
// flood (1008), not as a slow consumer, and answers to its accepted
// frames still find room.
func (c *conn) refuse(r io.Reader) error {
	answer := !c.stopped() && len(c.sendq) <= cap(c.sendq)/2
	id := ""
	if answer {
		head, err := io.ReadAll(io.LimitReader(r, idPeek))
		if err != nil {
			return err
		}
		id = salvageID(head)
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return err
	}
	if !answer {
		c.unanswered++
		return nil
	}
	msg := fmt.Sprintf("more than %g frames a second (burst %d); frame dropped", c.srv.cfg.EventRate, c.srv.cfg.EventBurst)
	if c.unanswered > 0 {
		msg += fmt.Sprintf(" (and %d more without an answer since the last rate_limited error)", c.unanswered)
		c.unanswered = 0
	}
	c.sendError(id, perr(CodeRateLimited, "%s", msg))
	return nil
}

// handle processes one text frame.
func (c *conn) handle(data []byte, read time.Time) {
	f, pe := parseFrame(data)
	if pe != nil {
		c.sendError(f.ID, pe)
		return
	}
	switch f.Type {
	case FramePing:
		c.enqueue(mustJSON(PongFrame{Type: FramePong, ID: f.ID}))
	case FrameStart:
		if c.sess != nil {
			c.sendError(f.ID, perr(CodeAlreadyBound, "this connection already runs session %s; open another connection", c.sess.id))
			return
		}
		seed := int64(0)
		if f.Seed != nil {
			seed = *f.Seed
		}
		s, pe := c.srv.start(startParams{
			sessionID: f.SessionID, candidateID: f.CandidateID, packRef: f.Pack, seed: seed,
			host: hostOptions{ClientPlayback: f.ClientPlayback}, conn: c, frameID: f.ID,
			voiceMode: f.VoiceMode, clientVoice: f.ClientVoice,
		})
		if pe != nil {
			c.sendError(f.ID, pe)
			return
		}
		c.bind(s)
	case FrameResume:
		if c.sess != nil {
			c.sendError(f.ID, perr(CodeAlreadyBound, "this connection already runs session %s", c.sess.id))
			return
		}
		var last uint64
		if f.LastSeq != nil {
			last = *f.LastSeq
		}
		c.resume(f.ID, f.SessionID, last)
	case FrameEvent:
		s := c.boundSession(f.ID)
		if s == nil {
			return
		}
		if f.Event.SessionID != "" && f.Event.SessionID != s.id {
			c.sendError(f.ID, perr(CodeBadEvent, "event names session %q but this connection runs %s", f.Event.SessionID, s.id))
			return
		}
		ev, clientT, pe := candidateEvent(f.Event)
		if pe != nil {
			c.sendError(f.ID, pe)
			return
		}
		c.post(s, f.ID, &evMsg{frameID: f.ID, c: c, ev: ev, clientT: clientT, read: read})
	case FrameSpeechDone:
		s := c.boundSession(f.ID)
		if s == nil {
			return
		}
		c.post(s, f.ID, &evMsg{frameID: f.ID, c: c, speech: &engine.SpeechDone{ID: f.MessageID, Interrupted: f.Interrupted}, read: read})
	case FrameToolCall, FrameAgentTranscript, FrameEnd, FrameClientToolResult:
		s := c.boundSession(f.ID)
		if s == nil {
			return
		}
		in := engine.Input{Type: engine.InputToolCall, Tool: f.Tool}
		switch f.Type {
		case FrameAgentTranscript:
			in = engine.Input{Type: engine.InputAgentTranscript, Agent: f.Agent}
		case FrameEnd:
			in = engine.Input{Type: engine.InputEnd, End: &engine.EndRequest{Reason: f.Reason}}
		case FrameClientToolResult:
			in = engine.Input{Type: engine.InputClientToolResult, ClientTool: &engine.ClientToolResult{ID: f.ToolCallID, Result: f.Result, IsError: f.IsError}}
		}
		c.post(s, f.ID, &evMsg{frameID: f.ID, c: c, input: &in, read: read})
	}
}

func (c *conn) bind(s *session) { c.sess = s }

func (c *conn) boundSession(frameID string) *session {
	switch {
	case c.sess != nil:
		return c.sess
	case c.endedID != "":
		c.sendError(frameID, perr(CodeSessionEnded, "session %s has ended", c.endedID))
	default:
		c.sendError(frameID, perr(CodeNoSession, "send start or resume first"))
	}
	return nil
}

func (c *conn) post(s *session, frameID string, m *evMsg) {
	if pe := s.post(c.ctx, m); pe != nil {
		if pe.Code == CodeSessionEnded {
			c.endedID, c.sess = s.id, nil
		}
		c.sendError(frameID, pe)
	}
}

// resume binds to a live session, or answers for a finished one with the
// effects the client missed.
func (c *conn) resume(frameID, id string, last uint64) {
	if err := wal.ValidID(id); err != nil {
		c.sendError(frameID, perr(CodeBadSessionID, "%v", err))
		return
	}
	for attempt := 0; attempt < 2; attempt++ {
		s := c.srv.lookup(id)
		if s == nil {
			break
		}
		reply := make(chan *ProtoError, 1)
		if pe := s.post(c.ctx, &subMsg{frameID: frameID, c: c, lastSeq: last, reply: reply}); pe != nil {
			if pe.Code == CodeSessionEnded {
				continue // it ended just now: answer from its finished log
			}
			c.sendError(frameID, pe)
			return
		}
		select {
		case pe := <-reply:
			if pe != nil {
				c.sendError(frameID, pe)
				return
			}
			c.bind(s)
			return
		case <-s.done:
			select {
			case pe := <-reply:
				if pe == nil {
					c.bind(s)
				} else {
					c.sendError(frameID, pe)
				}
				return
			default:
			}
			if s.exitCode != CodeSessionEnded {
				c.sendError(frameID, s.exitError())
				return
			}
		}
	}
	c.resumeFinished(frameID, id, last)
}

func (c *conn) resumeFinished(frameID, id string, last uint64) {
	st, err := c.srv.dir.State(id)
	if err != nil {
		c.sendError(frameID, perr(CodeBadSessionID, "%s", c.srv.clientText(err)))
		return
	}
	if reason, failed := c.srv.failedReason(id); failed {
		c.sendError(frameID, perr(CodeSessionFailed, "session %s could not be recovered: %s", id, reason))
		return
	}
	if st != wal.StateDone {
		c.sendError(frameID, perr(CodeSessionNotFound, "no session %s on this server", id))
		return
	}
	missed, state, err := c.srv.finishedState(id, last)
	if reason, failed := c.srv.failedReason(id); err != nil && failed {
		// Reading it just found its log damaged.
		c.sendError(frameID, perr(CodeSessionFailed, "session %s failed: %s", id, reason))
		return
	}
	if err != nil {
		c.sendError(frameID, perr(CodeInternal, "reading finished session %s: %s", id, c.srv.clientText(err)))
		return
	}
	c.srv.m.resumes.WithLabelValues("finished").Inc()
	c.endedID = id
	c.enqueue(mustJSON(AckFrame{Type: FrameAck, ID: frameID, SessionID: id, State: state, Missed: missed}))
}
