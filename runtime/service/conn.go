package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/internal/wal"
)

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
	once    sync.Once
	code    int
	reason  string
	// flush asks the writer to send what is queued before closing.
	flush bool

	// reader-goroutine state
	sess     *session
	endedID  string // set when bound to a session that has ended
	limiter  *bucket
	rejected int
}

func (srv *Server) serveWS(ws *websocket.Conn, remote string) {
	c := &conn{
		srv:     srv,
		ws:      ws,
		log:     srv.log.With("remote", remote),
		sendq:   make(chan []byte, srv.cfg.SendQueue),
		closing: make(chan struct{}),
		limiter: newBucket(srv.cfg.EventRate, srv.cfg.EventBurst, srv.clock.Now()),
	}
	if !srv.addConn(c) {
		ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "server shutting down"), time.Now().Add(time.Second))
		ws.Close()
		return
	}
	srv.m.connections.Inc()
	srv.wg.Add(2)
	go c.writeLoop()
	go c.readLoop()
}

// kill closes the connection with a close code and reason, once.
func (c *conn) kill(code int, reason string, flush bool) {
	c.once.Do(func() {
		c.code, c.reason, c.flush = code, reason, flush
		close(c.closing)
	})
}

// enqueue queues a frame for sending; it never blocks. It reports false
// when the connection is closing or was just closed for being too slow.
func (c *conn) enqueue(b []byte) bool {
	select {
	case <-c.closing:
		return false
	default:
	}
	select {
	case c.sendq <- b:
		return true
	default:
		c.srv.m.slowConsumers.Inc()
		c.log.Warn("slow consumer disconnected", "queued", cap(c.sendq))
		c.kill(websocket.CloseTryAgainLater, fmt.Sprintf("slow consumer: %d frames waiting; reconnect and resume", cap(c.sendq)), false)
		return false
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
	write := func(b []byte) error {
		c.ws.SetWriteDeadline(time.Now().Add(c.srv.cfg.WriteTimeout))
		return c.ws.WriteMessage(websocket.TextMessage, b)
	}
	for {
		select {
		case b := <-c.sendq:
			if err := write(b); err != nil {
				c.kill(websocket.CloseAbnormalClosure, "write failed", false)
				c.ws.Close()
				return
			}
		case <-ping.C:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.srv.cfg.WriteTimeout)); err != nil {
				c.kill(websocket.CloseAbnormalClosure, "ping failed", false)
				c.ws.Close()
				return
			}
		case <-c.closing:
			if c.flush {
				for done := false; !done; {
					select {
					case b := <-c.sendq:
						if write(b) != nil {
							done = true
						}
					default:
						done = true
					}
				}
			}
			if c.code != websocket.CloseAbnormalClosure {
				c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(c.code, c.reason), time.Now().Add(time.Second))
			}
			// The reader is blocked in a read; closing the socket ends it.
			c.ws.Close()
			return
		}
	}
}

func (c *conn) readLoop() {
	defer c.srv.wg.Done()
	defer func() {
		if r := recover(); r != nil {
			c.srv.m.panics.WithLabelValues("connection").Inc()
			c.log.Error("connection reader panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			c.kill(websocket.CloseInternalServerErr, "internal error; reconnect and resume", false)
		}
		c.kill(websocket.CloseNormalClosure, "", false)
		if c.sess != nil {
			// If this fails, the actor drops the connection on its next send.
			c.sess.tryPost(unsubMsg{c})
		}
		c.srv.removeConn(c)
		c.srv.m.connections.Dec()
	}()
	soft := c.srv.cfg.MaxMessageBytes
	c.ws.SetReadLimit(4 * soft)
	c.ws.SetReadDeadline(time.Now().Add(c.srv.cfg.PongWait))
	c.ws.SetPongHandler(func(string) error {
		c.ws.SetReadDeadline(time.Now().Add(c.srv.cfg.PongWait))
		return nil
	})
	for {
		typ, r, err := c.ws.NextReader()
		if err != nil {
			if errors.Is(err, websocket.ErrReadLimit) {
				c.kill(websocket.CloseMessageTooBig, fmt.Sprintf("frame over %d bytes", 4*soft), false)
			}
			return
		}
		c.ws.SetReadDeadline(time.Now().Add(c.srv.cfg.PongWait))
		read := c.srv.clock.Now()
		data, err := io.ReadAll(io.LimitReader(r, soft+1))
		if err != nil {
			if errors.Is(err, websocket.ErrReadLimit) {
				c.kill(websocket.CloseMessageTooBig, fmt.Sprintf("frame over %d bytes", 4*soft), false)
			}
			return
		}
		if int64(len(data)) > soft {
			// Skip the rest; beyond the hard limit gorilla closes with 1009.
			if _, err := io.Copy(io.Discard, r); err != nil {
				c.kill(websocket.CloseMessageTooBig, fmt.Sprintf("frame over %d bytes", 4*soft), false)
				return
			}
			c.sendError(salvageID(data), perr(CodeTooLarge, "frame is over the %d-byte limit; it was dropped", soft))
			continue
		}
		if typ != websocket.TextMessage {
			c.sendError("", perr(CodeBadFrame, "binary frames are not part of the protocol; send JSON text frames"))
			continue
		}
		c.handle(data, read)
	}
}

// handle processes one text frame.
func (c *conn) handle(data []byte, read time.Time) {
	f, pe := parseFrame(data)
	if pe != nil {
		c.sendError(f.ID, pe)
		return
	}
	if !c.limiter.allow(c.srv.clock.Now()) {
		c.rejected++
		c.sendError(f.ID, perr(CodeRateLimited, "more than %g frames a second (burst %d); frame dropped", c.srv.cfg.EventRate, c.srv.cfg.EventBurst))
		if c.rejected >= c.srv.cfg.MaxRejected {
			c.kill(websocket.ClosePolicyViolation, fmt.Sprintf("rate limit exceeded %d times in a row", c.rejected), true)
		}
		return
	}
	c.rejected = 0
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
			c.sendError(f.ID, perr(CodeBadEvent, "event names session %q but this connection runs %s", truncate(f.Event.SessionID, 64), s.id))
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
	case FrameToolCall, FrameAgentTranscript, FrameEnd:
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
	ctx, cancel := context.WithCancel(c.srv.ctx)
	defer cancel()
	if pe := s.post(ctx, m); pe != nil {
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
		if pe := s.post(c.srv.ctx, &subMsg{frameID: frameID, c: c, lastSeq: last, reply: reply}); pe != nil {
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
		c.sendError(frameID, perr(CodeBadSessionID, "%v", err))
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
	if err != nil {
		c.sendError(frameID, perr(CodeInternal, "reading finished session %s: %v", id, err))
		return
	}
	c.srv.m.resumes.WithLabelValues("finished").Inc()
	c.endedID = id
	c.enqueue(mustJSON(AckFrame{Type: FrameAck, ID: frameID, SessionID: id, State: state, Missed: missed}))
}
