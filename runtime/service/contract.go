package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/clock"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/internal/wal"
)

// A Contract is a client protocol mounted on the server beside the
// WebSocket API: HTTP routes that start sessions and feed them events,
// and a hook on those sessions' effects. runtime/service/dayone, the
// DayOne HTTP contract with its webhooks, is one. A contract serves one
// server.
type Contract interface {
	// Mount is called once, by New: the contract adds its routes to mux
	// (wrapped in RequireToken, and AllowOrigins for browsers) and may
	// register metrics in srv.Registry().
	Mount(srv *Server, mux *http.ServeMux) error
	// Watch is called for every session the server starts or recovers,
	// before it runs. The hook it returns, if not nil, sees each of the
	// session's effect frames as it goes out to clients, on the session's
	// goroutine: it must not block. Effects re-derived from a log for a
	// resume are not shown again; effects a recovered session re-makes
	// are.
	Watch(s *Session) EffectHook
}

// An EffectHook sees one effect frame of a session as it is sent.
type EffectHook func(f *EffectFrame)

// Session is a session as a contract sees it.
type Session struct {
	s *session
	// secret is set only on the Session Start returns: the server keeps
	// no more than its hash.
	secret string
}

// Secret is the session's secret, which a client needs to attach to the
// session later (a WebSocket resume, an HTTP event): set on the Session
// Start returns, empty on any other.
func (h *Session) Secret() string { return h.secret }

// ID is the session id.
func (h *Session) ID() string { return h.s.id }

// CandidateID is the candidate the session was started for.
func (h *Session) CandidateID() string { return h.s.hdr.CandidateID }

// Pack is the name of the session's pack.
func (h *Session) Pack() string { return h.s.pack.Name }

// Options are the session's start options as its log keeps them: one JSON
// object holding the server's own and those a contract passed to Start.
func (h *Session) Options() json.RawMessage { return h.s.hdr.Host }

// WallTime is when engine time t is on the server's clock. Call it from
// an effect hook.
func (h *Session) WallTime(t int64) time.Time {
	return h.s.base.Add(time.Duration(t) * time.Millisecond)
}

// Notify sends a notice to the session's WebSocket watchers. It never
// blocks; it reports false when the session is gone or swamped.
func (h *Session) Notify(n NoticeFrame) bool {
	n.Type, n.SessionID = FrameNotice, h.s.id
	ok, _ := h.s.tryPost(noticeMsg{n})
	return ok
}

// Logger logs with the session's id.
func (h *Session) Logger() *slog.Logger { return h.s.log }

// StartOptions start a session on behalf of a contract.
type StartOptions struct {
	SessionID   string
	CandidateID string
	// Pack is a bundled pack name or a permitted folder.
	Pack string
	Seed int64
	// Inputs are the session's values for the pack's declared inputs;
	// a refusal is an input_* error.
	Inputs rules.Supplied
	// Options are the contract's own settings for this session, a JSON
	// object kept in the session's log, so a recovered session still has
	// them (Session.Options).
	Options json.RawMessage
}

// Start starts a session, as a WebSocket start frame does.
func (srv *Server) Start(o StartOptions) (*Session, *ProtoError) {
	s, secret, pe := srv.start(startParams{sessionID: o.SessionID, candidateID: o.CandidateID, packRef: o.Pack, seed: o.Seed, contract: o.Options, inputs: o.Inputs})
	if pe != nil {
		return nil, pe
	}
	return &Session{s: s, secret: secret}, nil
}

// A Caller is the client behind a request that names a session: the
// session's secret it presented (Session.Secret, SecretHeader over HTTP)
// and its address, for the log.
type Caller struct {
	Secret string
	Remote string
	// Via names the route for the log ("http" if empty).
	Via string
}

// CallerOf is the caller of an HTTP request: its SecretHeader and remote
// address.
func CallerOf(r *http.Request) Caller {
	return Caller{Secret: r.Header.Get(SecretHeader), Remote: r.RemoteAddr, Via: "http " + r.URL.Path}
}

// Submit applies a candidate event (the §5.2 shape, naming its session)
// for a client without a connection, under the per-session event rate a
// connection's own limit gives WebSocket clients. It returns once the
// event is logged and applied, with the ack a WebSocket client would get.
// When ctx ends first the event may still be applied. The caller must
// present the session's secret; without it the answer is the one for a
// session that does not exist.
func (srv *Server) Submit(ctx context.Context, w *events.Wire, by Caller) (AckFrame, *ProtoError) {
	read := srv.clock.Now()
	via := by.Via
	if via == "" {
		via = "http"
	}
	s := srv.lookup(w.SessionID)
	if s == nil {
		if pe := srv.checkSecret(w.SessionID, by.Secret, by.Remote, via); pe != nil {
			return AckFrame{}, pe
		}
		return AckFrame{}, srv.absent(w.SessionID)
	}
	if pe := srv.checkSessionSecret(s, by.Secret, by.Remote, via); pe != nil {
		return AckFrame{}, pe
	}
	s.submitMu.Lock()
	ok := s.submitLimit.allow(srv.clock.Now())
	s.submitMu.Unlock()
	if !ok {
		return AckFrame{}, perr(CodeRateLimited, "more than %g events a second for session %s", srv.cfg.EventRate, s.id)
	}
	ev, clientT, pe := candidateEvent(w)
	if pe != nil {
		return AckFrame{}, pe
	}
	reply := make(chan evReply, 1)
	m := &evMsg{reply: reply, ev: ev, clientT: clientT, read: read}
	expired := make(chan *ProtoError, 1)
	m.ans.expireAfter(srv.cfg.AckDeadline, func(pe *ProtoError) {
		srv.m.ackDeadlineMissed.WithLabelValues(pe.Outcome).Inc()
		expired <- pe
	})
	if pe := s.post(ctx, m); pe != nil && m.ans.claim() {
		return AckFrame{}, pe
	}
	select {
	case rep := <-reply:
		return rep.ack, rep.err
	case pe := <-expired:
		return AckFrame{}, pe
	case <-s.done:
		select {
		case rep := <-reply:
			return rep.ack, rep.err
		default:
			return AckFrame{}, s.exitError()
		}
	case <-ctx.Done():
		return AckFrame{}, perr(CodeShuttingDown, "request cancelled")
	}
}

// absent explains why there is no live session with this id.
func (srv *Server) absent(id string) *ProtoError {
	if reason, failed := srv.failedReason(id); failed {
		return perr(CodeSessionFailed, "session %s could not be recovered: %s", id, reason)
	}
	st, err := srv.logs().State(id)
	switch {
	case err != nil:
		return perr(CodeBadSessionID, "%v", err)
	case st == wal.StateDone:
		return perr(CodeSessionEnded, "session %s has ended", id)
	}
	return notFound(id)
}

// Errorf makes a protocol error.
func Errorf(code, format string, args ...any) *ProtoError { return perr(code, format, args...) }

// WriteError answers an HTTP request with pe, as
// {"ok":false,"error":{"code":...,"message":...}} with the status its code
// maps to, and counts it.
func (srv *Server) WriteError(w http.ResponseWriter, pe *ProtoError) {
	srv.m.clientErrors.WithLabelValues(pe.Code).Inc()
	st := status(pe.Code)
	if st == http.StatusServiceUnavailable {
		// busy, overloaded, shutting down: worth asking again shortly.
		w.Header().Set("Retry-After", "1")
	}
	writeHTTPError(w, st, pe)
}

// ReadBody reads a request body of at most Config.MaxMessageBytes.
func (srv *Server) ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, *ProtoError) {
	return srv.readBody(w, r, srv.cfg.MaxMessageBytes)
}

// ReadStartBody reads a body that starts a session, which may carry its
// inputs: at most Config.MaxStartBytes.
func (srv *Server) ReadStartBody(w http.ResponseWriter, r *http.Request) ([]byte, *ProtoError) {
	return srv.readBody(w, r, srv.cfg.MaxStartBytes)
}

func (srv *Server) readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *ProtoError) {
	if r.ContentLength > limit {
		// Announced too large: refused on the header, before a byte of
		// the body is read, and the connection closed rather than
		// drained.
		closeUnread(w, r)
		return nil, perr(CodeTooLarge, "body is over the %d-byte limit", limit)
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, perr(CodeTooLarge, "body is over the %d-byte limit", limit)
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			// The write deadline ran from the same moment as the read
			// deadline: give the answer its own time, and close after it.
			rc := http.NewResponseController(w)
			rc.SetWriteDeadline(time.Now().Add(2 * time.Second))
			w.Header().Set("Connection", "close")
			return nil, perr(CodeBodyTimeout, "request body not received within the %s read timeout", srv.cfg.HTTPReadTimeout)
		}
		return nil, perr(CodeBadFrame, "reading body: %s", srv.clientText(err))
	}
	return data, nil
}

// Go runs f on a goroutine that Shutdown cancels (through ctx) and waits
// for. It reports false, without running f, once the server is stopping.
func (srv *Server) Go(f func(ctx context.Context)) bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.closed {
		return false
	}
	srv.wg.Add(1)
	go func() {
		defer srv.wg.Done()
		f(srv.ctx)
	}()
	return true
}

// Clock is the server's clock.
func (srv *Server) Clock() clock.Clock { return srv.clock }

// Registry is where the server's metrics live; /metrics serves it.
func (srv *Server) Registry() prometheus.Registerer { return srv.m.reg }

// Bundled lists the bundled packs clients may name.
func (srv *Server) Bundled() []string { return srv.packs.refs.Names() }

// hostOptions are the server's own per-session settings; they are stored
// in the log header, with a contract's, so a recovered session keeps them.
type hostOptions struct {
	ClientPlayback bool `json:"client_playback,omitempty"`
	// SecretSHA256 is the hex SHA-256 of the session's secret (secret.go);
	// empty in logs written before sessions had secrets.
	SecretSHA256 string `json:"secret_sha256,omitempty"`
}

// hostJSON is the log header's options object: the server's own fields
// followed by the contract's.
func hostJSON(host hostOptions, contract json.RawMessage) (json.RawMessage, error) {
	own, err := json.Marshal(host)
	if err != nil {
		return nil, err
	}
	contract = bytes.TrimSpace(contract)
	switch {
	case len(contract) == 0:
		return own, nil
	case contract[0] != '{' || !json.Valid(contract):
		return nil, fmt.Errorf("contract options are not a JSON object: %.40s", contract)
	case string(own) == "{}":
		return contract, nil
	case string(contract) == "{}":
		return own, nil
	}
	return append(append(own[:len(own)-1:len(own)-1], ','), contract[1:]...), nil
}

// status maps protocol codes to HTTP statuses.
func status(code string) int {
	switch code {
	case CodeSessionNotFound:
		return http.StatusNotFound
	case CodeSessionExists, CodeAlreadyBound, CodeTimeBackwards:
		return http.StatusConflict
	case CodeSessionEnded:
		return http.StatusGone
	case CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeRateLimited:
		return http.StatusTooManyRequests
	case CodeBusy, CodeShuttingDown, CodeOverloaded, CodeUnavailable:
		return http.StatusServiceUnavailable
	case CodeStorage, CodeInternal, CodeSessionFailed:
		return http.StatusInternalServerError
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeForbiddenOrigin:
		return http.StatusForbidden
	case CodeTooManyConnections:
		return http.StatusServiceUnavailable
	case CodeBodyTimeout:
		return http.StatusRequestTimeout
	}
	return http.StatusBadRequest
}
