package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
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
// inputs to the bound session's actor; a writer goroutine, while there is
// something to write, drains a bounded queue (conn_writer.go). The
// session never blocks on a client: a full queue disconnects that client
// (1013) and the session carries on.
type conn struct {
	srv *Server
	ws  *websocket.Conn
	log *slog.Logger
	// batch is ws's socket when it can gather a burst into one write
	// (conn_batch.go); nil otherwise.
	batch *batchConn

	closing chan struct{}
	// ctx ends at the decision to close, so that a frame still waiting
	// for room in a busy session's inbox is not delivered after it.
	ctx      connCtx
	readDone chan struct{} // closed when the reader has stopped reading
	once     sync.Once
	code     int
	reason   string
	// flush asks the writer to send what is queued before closing.
	flush bool

	// The writer's state, under wmu (conn_writer.go).
	wmu sync.Mutex
	// sendq holds the frames waiting to be written; nil when none wait
	// and no writer runs.
	sendq chan []byte
	// serving is set once the connection has a socket and a reader.
	serving bool
	// writing is set while a writer goroutine runs; writerDone once the
	// last one has closed the socket, after which none starts.
	writing, writerDone bool
	// inWrite is set while the writer writes to the socket.
	inWrite atomic.Bool
	// ping asks the writer to send a ping before its next frame;
	// pinger sets it every PingInterval.
	ping atomic.Bool
	// pong holds the payload of a client's ping for the writer to answer
	// (nil when none waits): a pong written by the reader would wait for
	// the writer's socket write and could then find its own deadline past.
	pong   atomic.Pointer[[]byte]
	pinger *time.Timer
	// readerGone is set when the reader has ended. The reader's place in
	// the server's wait group is given up by whichever of it and the last
	// writer ends second, so the group covers the writer too.
	readerGone bool

	// bound mirrors sess for Stats, which runs on other goroutines.
	bound atomic.Pointer[session]

	// reader-goroutine state
	// readUntil is the read deadline set last (extendRead).
	readUntil time.Time
	sess      *session
	endedID   string // set when bound to a session that has ended
	// readLimit is the hard frame size limit now set (setReadLimit).
	readLimit int64
	limiter   *bucket
	refused   lazyRejectWindow
	// unanswered counts refused frames dropped without a reply since the
	// last rate_limited error.
	unanswered int
	// audio is the microphone audio budget (voice.go).
	audio connAudio
}

func (srv *Server) serveWS(ws *websocket.Conn, remote string) {
	c := srv.newConn(ws, slog.New(remoteHandler{srv.log.Handler(), remote}))
	if !srv.addConn(c) {
		ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "server shutting down"), time.Now().Add(time.Second))
		ws.Close()
		return
	}
	srv.m.connections.Inc()
	c.wmu.Lock()
	c.serving = true
	c.pinger = time.AfterFunc(srv.cfg.PingInterval, c.pingDue)
	c.wmu.Unlock()
	if c.stopped() {
		c.wake() // Shutdown decided to close it before it could have a writer
	}
	srv.wg.Add(1)
	go c.readLoop()
}

func (srv *Server) newConn(ws *websocket.Conn, log *slog.Logger) *conn {
	c := &conn{
		srv:      srv,
		ws:       ws,
		log:      log,
		closing:  make(chan struct{}),
		readDone: make(chan struct{}),
		limiter:  newBucket(srv.cfg.EventRate, srv.cfg.EventBurst, srv.clock.Now()),
	}
	c.ctx = connCtx{c}
	if ws != nil { // the frame fuzzer's connections have no socket
		c.batch, _ = ws.NetConn().(*batchConn)
	}
	return c
}

// remoteHandler names the client on every line of a connection's log, as
// Logger.With would, without the copy of the handler With makes for each
// connection: the attribute is added as a line is written, which is
// seldom.
type remoteHandler struct {
	slog.Handler
	remote string
}

func (h remoteHandler) attr() slog.Attr { return slog.String("remote", h.remote) }

func (h remoteHandler) Handle(ctx context.Context, r slog.Record) error {
	// First, where With would have put it.
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	out.AddAttrs(h.attr())
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(a)
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h remoteHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return h.Handler.WithAttrs([]slog.Attr{h.attr()}).WithAttrs(as)
}

func (h remoteHandler) WithGroup(name string) slog.Handler {
	return h.Handler.WithAttrs([]slog.Attr{h.attr()}).WithGroup(name)
}

// connCtx is a connection's context: it ends when the connection is
// decided to close, which Shutdown decides for every connection. It is
// the connection itself rather than a child of the server's context,
// which would cost each connection a cancel context and a place in the
// server context's table of children.
type connCtx struct{ c *conn }

func (connCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (x connCtx) Done() <-chan struct{}     { return x.c.closing }
func (connCtx) Value(any) any               { return nil }

func (x connCtx) Err() error {
	if x.c.stopped() {
		return context.Canceled
	}
	return nil
}

// kill decides to close the connection with a close code and reason. The
// first decision wins; kill reports whether it was this one.
func (c *conn) kill(code int, reason string, flush bool) bool {
	won := false
	c.once.Do(func() {
		won = true
		c.code, c.reason, c.flush = code, reason, flush
		close(c.closing)
	})
	if won {
		c.wake()
	}
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

// slowConsumer closes a connection whose client does not take what is
// sent to it: its send queue filled up, a write to it timed out, or it
// answered no ping for PongWait (see readLoop for how that is told apart
// from a client that went away).
func (c *conn) slowConsumer(cause, reason string) {
	if c.kill(websocket.CloseTryAgainLater, reason, false) {
		// The line before the count: whoever watches the count finds the
		// line written.
		c.log.Warn("slow consumer disconnected", "cause", cause, "queued", c.queued())
		c.srv.m.slowConsumers.Inc()
	}
}

func (c *conn) sendError(id string, pe *ProtoError) {
	c.srv.m.clientErrors.WithLabelValues(pe.Code).Inc()
	c.enqueue(mustJSON(ErrorFrame{Type: FrameError, ID: id, Code: pe.Code, Message: pe.Message, URL: pe.URL, Inputs: pe.Inputs,
		Outcome: pe.Outcome, InputSeq: pe.InputSeq}))
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
//
// The reader spends its life waiting in readFrames for the client's next
// frame, so the frames below that wait are kept small: a goroutine's
// stack only shrinks to four times what it uses while waiting, and with
// these it uses just under a quarter of 4 KiB (gorilla's and the
// network's frames included) instead of just over.
func (c *conn) readLoop() {
	defer c.readerExit()
	c.readerStart()
	c.readerEnd(c.readFrames())
}

// readerStart sets the read limit, the pong deadline and the control
// frame handlers.
func (c *conn) readerStart() {
	c.setReadLimit(max(4*c.srv.cfg.MaxMessageBytes, 2*c.srv.cfg.MaxStartBytes))
	c.extendRead()
	c.ws.SetPongHandler(func(string) error {
		if !c.stopped() {
			c.extendRead()
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
}

// setReadLimit sets the hard frame size limit: a frame over it closes
// the connection (1009). Until a session is bound it leaves room for a
// start frame that carries inputs (Config.MaxStartBytes), then it is
// four ordinary frames. Called on the reader.
func (c *conn) setReadLimit(n int64) {
	c.readLimit = n
	if c.ws != nil { // nil only in tests that feed frames directly
		c.ws.SetReadLimit(n)
	}
}

// readerEnd closes the connection as the error that ended readFrames
// calls for, and drains what the client still sends.
func (c *conn) readerEnd(err error) {
	switch {
	case errors.Is(err, errStopped):
		c.drain()
	case errors.Is(err, websocket.ErrReadLimit):
		// The websocket library has sent the close frame (1009) itself.
		c.kill(websocket.CloseMessageTooBig, fmt.Sprintf("frame over %d bytes", c.readLimit), false)
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

// readerExit runs as the reader ends, however it ends.
func (c *conn) readerExit() {
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
	c.wmu.Lock()
	c.readerGone = true
	last := c.writerDone
	c.wmu.Unlock()
	if last {
		c.srv.wg.Done()
	}
}

// readFrames reads and applies frames until an error or the decision to
// close; a frame read after that decision is not applied.
func (c *conn) readFrames() error {
	for {
		typ, r, err := c.ws.NextReader()
		if err != nil {
			return err
		}
		if err := c.readFrame(typ, r); err != nil {
			return err
		}
	}
}

// readFrame applies a frame readFrames got, unless the connection is to
// close.
func (c *conn) readFrame(typ int, r io.Reader) error {
	if c.stopped() {
		return errStopped
	}
	c.extendRead()
	if err := c.frame(typ, r, c.srv.clock.Now()); err != nil {
		return err
	}
	if c.stopped() {
		return errStopped
	}
	return nil
}

// extendRead gives the client PongWait from now to send its next frame.
// The deadline is moved only when it would fall short, and then a
// sixteenth of PongWait past what is needed: resetting a socket's
// deadline reschedules a runtime timer, and at thousands of frames a
// second that was a cost of its own. A silent client is so closed
// between PongWait and 17/16 of it after its last frame.
func (c *conn) extendRead() {
	now := time.Now()
	if need := now.Add(c.srv.cfg.PongWait); need.After(c.readUntil) {
		c.readUntil = need.Add(c.srv.cfg.PongWait / 16)
		c.ws.SetReadDeadline(c.readUntil)
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
	// The writer answers, with its own write timeout, after what it is
	// writing; only the latest ping needs an answer (RFC 6455, 5.5.3).
	p := []byte(data)
	c.pong.Store(&p)
	c.wake()
	return nil
}

// lazyRejectWindow is a rejectWindow made at the first refusal: most
// connections never have a frame refused, and the window is most of what
// a connection would otherwise hold.
type lazyRejectWindow struct{ w *rejectWindow }

func (l *lazyRejectWindow) add(now time.Time) int {
	if l.w == nil {
		l.w = new(rejectWindow)
	}
	return l.w.add(now)
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
	// A connection without a session may send a start frame with its
	// inputs, up to MaxStartBytes; any other frame is held to
	// MaxMessageBytes.
	soft := c.srv.cfg.MaxMessageBytes
	if c.sess == nil {
		soft = c.srv.cfg.MaxStartBytes
	}
	buf := framePool.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 64<<10 { // the pool keeps no frame-sized buffer
			buf.Reset()
			framePool.Put(buf)
		}
	}()
	if _, err := buf.ReadFrom(io.LimitReader(r, soft+1)); err != nil {
		return err
	}
	data := buf.Bytes()
	if int64(len(data)) > soft {
		// Skip the rest; beyond the hard limit the library closes with 1009.
		if _, err := io.Copy(io.Discard, r); err != nil {
			return err
		}
		c.sendError(salvageID(data), tooLarge(soft, c.sess == nil))
		return nil
	}
	if n := int64(len(data)); n > c.srv.cfg.MaxMessageBytes && frameType(data) != FrameStart {
		c.sendError(salvageID(data), tooLarge(c.srv.cfg.MaxMessageBytes, false))
		return nil
	}
	if typ != websocket.TextMessage {
		c.sendError("", perr(CodeBadFrame, "binary frames are not part of the protocol here; send JSON text frames (microphone audio is taken only by sessions whose live speech the server hosts)"))
		return nil
	}
	c.handle(data, read)
	return nil
}

// tooLarge refuses a frame over limit. Before a session is bound the
// limit is a start frame's, and the answer says how to send large files.
func tooLarge(limit int64, start bool) *ProtoError {
	if start {
		return perr(CodeTooLarge, "frame is over the %d-byte limit of a start frame; it was dropped (upload large input files first with POST /v1/uploads and name them by sha256)", limit)
	}
	return perr(CodeTooLarge, "frame is over the %d-byte limit; it was dropped", limit)
}

// frameType is the type a frame names among its top-level fields ("" when
// it cannot tell), read as salvageID reads the id.
func frameType(data []byte) string {
	t, _ := topString(data, "type")
	return t
}

// framePool holds the buffers frames are read into: a frame is decoded
// (its strings copied) before its buffer goes back, and a pool, unlike a
// buffer per connection, costs an idle connection nothing.
var framePool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// refuse drops a frame over the rate limit. It is answered with
// rate_limited while the send queue is at most half full; beyond that
// refused frames are dropped without an answer (and counted in the next
// one), so a client flooding faster than it reads is closed for the
// flood (1008), not as a slow consumer, and answers to its accepted
// frames still find room.
func (c *conn) refuse(r io.Reader) error {
	answer := !c.stopped() && c.queued() <= c.srv.cfg.SendQueue/2
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
		s, _, pe := c.srv.start(startParams{
			sessionID: f.SessionID, candidateID: f.CandidateID, packRef: f.Pack, seed: seed,
			host: hostOptions{ClientPlayback: f.ClientPlayback}, conn: c, frameID: f.ID,
			voiceMode: f.VoiceMode, clientVoice: f.ClientVoice, inputs: f.Inputs,
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
		c.resume(f.ID, f.SessionID, f.SessionSecret, last)
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

func (c *conn) bind(s *session) {
	c.sess = s
	c.bound.Store(s)
	c.setReadLimit(4 * c.srv.cfg.MaxMessageBytes)
}

// remote is the client's address, for the log.
func (c *conn) remote() string {
	if c.ws == nil {
		return ""
	}
	return c.ws.RemoteAddr().String()
}

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
	// Armed before the post, which may wait for room: the deadline runs
	// from when the frame was read.
	m.ans.expireAfter(c.srv.cfg.AckDeadline, func(pe *ProtoError) {
		c.srv.m.ackDeadlineMissed.WithLabelValues(pe.Outcome).Inc()
		c.sendError(frameID, pe)
	})
	if pe := s.post(c.ctx, m); pe != nil && m.ans.claim() {
		if pe.Code == CodeSessionEnded {
			c.endedID, c.sess = s.id, nil
			c.bound.Store(nil)
		}
		c.sendError(frameID, pe)
	}
}

// resume binds to a live session, or answers for a finished one with the
// effects the client missed. The session's secret is checked first,
// wherever the session is, so that a refused client learns nothing, not
// even which node runs it; and again at each session found, for one
// started since.
func (c *conn) resume(frameID, id, secret string, last uint64) {
	if err := wal.ValidID(id); err != nil {
		c.sendError(frameID, perr(CodeBadSessionID, "%v", err))
		return
	}
	if pe := c.srv.checkSecret(id, secret, c.remote(), "resume"); pe != nil {
		c.sendError(frameID, pe)
		return
	}
	if pe := c.srv.resumeHere(c.ctx, id); pe != nil {
		c.sendError(frameID, pe)
		return
	}
	for attempt := 0; attempt < 2; attempt++ {
		s := c.srv.lookup(id)
		if s == nil {
			break
		}
		if pe := c.srv.checkSessionSecret(s, secret, c.remote(), "resume"); pe != nil {
			c.sendError(frameID, pe)
			return
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
	c.resumeFinished(frameID, id, secret, last)
}

func (c *conn) resumeFinished(frameID, id, secret string, last uint64) {
	st, err := c.srv.logs().State(id)
	if err != nil {
		c.sendError(frameID, perr(CodeBadSessionID, "%s", c.srv.clientText(err)))
		return
	}
	if reason, failed := c.srv.failedReason(id); failed {
		c.sendError(frameID, perr(CodeSessionFailed, "session %s could not be recovered: %s", id, reason))
		return
	}
	if st != wal.StateDone {
		c.sendError(frameID, notFound(id))
		return
	}
	missed, state, hash, err := c.srv.finishedState(id, last)
	if err == nil && secretRefusal(hash, secret) != "" {
		// Finished after the first check: a session started and ended
		// since, under someone else's secret.
		c.sendError(frameID, c.srv.refuseSecret(id, c.remote(), "resume", secretRefusal(hash, secret)))
		return
	}
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
	c.enqueue(mustJSON(AckFrame{Type: FrameAck, ID: frameID, SessionID: id, State: state, Missed: encodeFrames(missed)}))
}
