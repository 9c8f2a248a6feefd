// Package service hosts many live sessions in one process: a WebSocket API
// (docs/protocol.md), a write-ahead log per session so a crash loses no
// acknowledged input, and Prometheus metrics. Other client protocols mount
// on it as Contracts: runtime/service/dayone serves the DayOne HTTP
// contract (seed §5) and its webhooks.
//
// Each session is an actor: one goroutine owns its engine.Session, sleeps
// until the engine's next deadline (or a host-made input such as the end
// of simulated speech) on the server's clock, and otherwise waits for
// messages. Every input is appended to the session's log and synced before
// the engine sees it, so recovery is replaying the log.
package service

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	goruntime "runtime" // the Go runtime, not baton's runtime/ packages
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/clock"
	"github.com/batonhq/baton/runtime/internal/wal"
)

// Server hosts sessions. Create it with New, call Recover once, then serve
// Handler; Shutdown stops it.
type Server struct {
	cfg   Config
	clock clock.Clock
	log   *slog.Logger
	dir   *wal.Dir
	cl    *clusterHost
	m     *metrics
	packs *packCache

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// bg counts background work (the scrub), apart from wg, which
	// counts sessions and their calls, so that waiting for sessions to
	// stop never waits for a loop that runs until shutdown.
	bg sync.WaitGroup

	mu       sync.Mutex
	sessions map[string]*session
	failed   map[string]string
	conns    map[*conn]struct{}
	closed   bool

	ready    atomic.Bool
	upgrader websocket.Upgrader
	mux      *http.ServeMux
	limits   *connLimiter
	// admission refuses new sessions while running ones are answered late.
	admission *admission
	// uploads are files clients sent ahead of a start (uploads.go).
	uploads *uploads
	// private are directories whose paths errors sent to clients must
	// not show (clientText).
	private []string
	// unauthLog spaces out the log lines about refused tokens.
	unauthLog logThrottle
}

// New opens the data directory (locking it) and prepares a server. It
// refuses to run without a token unless cfg.Dev is set.
func New(cfg Config) (*Server, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	srv := &Server{
		cfg:       cfg,
		clock:     cfg.Clock,
		log:       cfg.Logger,
		m:         newMetrics(),
		sessions:  map[string]*session{},
		failed:    map[string]string{},
		conns:     map[*conn]struct{}{},
		unauthLog: logThrottle{every: unauthorizedLogEvery},
	}
	var err error
	srv.packs, err = newPackCache(cfg.Packs, cfg.PackRoots, cfg.Dev)
	if err != nil {
		return nil, err
	}
	srv.dir, err = wal.OpenDir(cfg.DataDir, wal.Options{OnSync: srv.m.observeSync, Logger: cfg.Logger, NoSync: cfg.NoSync, FS: cfg.fs})
	if err != nil {
		return nil, err
	}
	srv.cl = newClusterHost(srv.m.reg)
	logRedo(srv.log, srv.m, srv.dir.Redo())
	srv.limits = newConnLimiter(&srv.cfg, srv.m.reg)
	srv.admission = newAdmission(&srv.cfg, srv.m.reg)
	srv.private = privateDirs(cfg.DataDir)
	srv.uploads = newUploads(cfg.Clock, cfg.UploadTTL, cfg.UploadStoreBytes)
	srv.ctx, srv.cancel = context.WithCancel(context.Background())
	srv.upgrader = websocket.Upgrader{
		// Every connection holds its read buffer for as long as it is
		// open. 512 bytes take most client frames (events, speech ends)
		// in one read; a larger frame takes a read or two more.
		ReadBufferSize:  512,
		WriteBufferSize: 1024,
		// Pooled write buffers: an idle connection holds none.
		WriteBufferPool:  &sync.Pool{},
		HandshakeTimeout: 10 * time.Second,
		CheckOrigin:      srv.originAllowed,
		Error: func(w http.ResponseWriter, r *http.Request, status int, reason error) {
			code := CodeBadFrame
			if status == http.StatusForbidden {
				code = CodeForbiddenOrigin // the upgrader's only 403
				closeUnread(w, r)
			}
			httpError(w, status, code, reason.Error())
		},
	}
	srv.mux = srv.routes()
	for _, c := range cfg.Contracts {
		if err := c.Mount(srv, srv.mux); err != nil {
			srv.dir.Close()
			return nil, fmt.Errorf("mounting %T: %w", c, err)
		}
	}
	return srv, nil
}

// Handler serves the WebSocket API at /ws, /metrics, /healthz, /readyz,
// /debug/stats and /debug/pprof/ (profiles, behind the token like
// everything but health), and the routes of every mounted contract. The
// connection caps and HTTP timeouts are Serve's, not the handler's.
func (srv *Server) Handler() http.Handler { return srv.mux }

func (srv *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ws", srv.handleWS)
	mux.Handle("GET /metrics", srv.RequireToken(promhttp.HandlerFor(srv.m.reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(srv.log.Handler(), slog.LevelError)}).ServeHTTP))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", srv.handleReady)
	mux.HandleFunc("GET /v1/packs/{name}/describe", srv.RequireToken(srv.handleDescribe))
	mux.HandleFunc("GET /debug/stats", srv.RequireToken(srv.handleStats))
	mux.HandleFunc("POST /v1/uploads", srv.AllowOrigins(srv.RequireToken(srv.handleUpload)))
	mux.HandleFunc("OPTIONS /v1/uploads", srv.AllowOrigins(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	mux.HandleFunc("GET /debug/pprof/", srv.RequireToken(pprof.Index))
	mux.HandleFunc("GET /debug/pprof/profile", srv.RequireToken(pprof.Profile))
	mux.HandleFunc("GET /debug/pprof/trace", srv.RequireToken(pprof.Trace))
	return mux
}

// RequireToken requires the bearer token (header "Authorization: Bearer
// T"; the WebSocket endpoint also takes ?access_token=T because browsers
// cannot set headers on a WebSocket).
func (srv *Server) RequireToken(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !srv.authorized(r, false) {
			srv.refuseToken(w, r)
			return
		}
		h(w, r)
	}
}

// refuseToken answers a request without the right token: 401, the
// connection closed, counted and logged. A flood of them is logged at
// most once a second (unauthorizedLogEvery), each line counting those
// left out before it, so it cannot fill the disk; the counter counts all.
func (srv *Server) refuseToken(w http.ResponseWriter, r *http.Request) {
	srv.m.unauthorized.Inc()
	if suppressed, ok := srv.unauthLog.allow(srv.clock.Now()); ok {
		srv.log.Info("request refused: missing or wrong bearer token", "remote", r.RemoteAddr,
			"method", r.Method, "path", clip(r.URL.Path, maxEcho*4), "suppressed", suppressed)
	}
	closeUnread(w, r)
	w.Header().Set("WWW-Authenticate", `Bearer realm="baton"`)
	httpError(w, http.StatusUnauthorized, CodeUnauthorized, "missing or wrong bearer token")
}

// unauthorizedLogEvery is the least time between two log lines about
// refused tokens.
const unauthorizedLogEvery = time.Second

// logThrottle lets a log line through at most once per interval and
// counts the ones it holds back.
type logThrottle struct {
	every time.Duration

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// allow reports whether a line may be written now and, if so, how many
// were held back since the last one.
func (t *logThrottle) allow(now time.Time) (suppressed int, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.last.IsZero() && now.Sub(t.last) < t.every {
		t.suppressed++
		return 0, false
	}
	suppressed, t.suppressed, t.last = t.suppressed, 0, now
	return suppressed, true
}

func (srv *Server) authorized(r *http.Request, allowQuery bool) bool {
	if srv.cfg.Token == "" {
		return true
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok && allowQuery {
		tok = r.URL.Query().Get("access_token")
	}
	return tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(srv.cfg.Token)) == 1
}

// originAllowed lets non-browser clients (no Origin header) through and
// holds browsers to the allowlist; dev mode with no list allows any.
func (srv *Server) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	if len(srv.cfg.Origins) == 0 {
		return srv.cfg.Dev
	}
	for _, o := range srv.cfg.Origins {
		if strings.EqualFold(o, origin) {
			return true
		}
	}
	return false
}

// AllowOrigins answers browsers from an allowed origin (Config.Origins, or
// any in dev mode without a list) with CORS headers and refuses others;
// requests without an Origin pass.
func (srv *Server) AllowOrigins(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" {
			if !srv.originAllowed(r) {
				closeUnread(w, r)
				httpError(w, http.StatusForbidden, CodeForbiddenOrigin, fmt.Sprintf("origin %q is not allowed", clip(origin, maxEcho)))
				return
			}
			w.Header().Set("Access-Control-Allow-Origin", origin)
			w.Header().Set("Vary", "Origin")
			w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, "+SecretHeader)
			w.Header().Set("Access-Control-Allow-Methods", "POST, OPTIONS")
		}
		h(w, r)
	}
}

// closeUnread makes a refusal sent before the request body is read close
// the connection at once, whether or not the request has a body. With a
// body, net/http would otherwise read the rest of it, before the answer
// to keep the connection alive and after it to finish the request, at
// whatever pace the client sends it: an unauthenticated client could
// hold the answer back, or the connection open, for the whole read
// timeout. Without one, a client refused its token or origin has no
// business keeping the connection for another try. The read deadline
// only ends reading; the answer is still written.
func closeUnread(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Connection", "close")
	// An error means a writer without deadlines (a test recorder); the
	// close above still applies.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

func (srv *Server) handleWS(w http.ResponseWriter, r *http.Request) {
	if !srv.authorized(r, true) {
		srv.refuseToken(w, r)
		return
	}
	if !srv.ready.Load() {
		srv.WriteError(w, perr(CodeShuttingDown, "server is not ready (recovering or shutting down)"))
		return
	}
	ws, err := srv.upgrader.Upgrade(&batchWriter{ResponseWriter: w}, r, nil)
	if err != nil {
		// Upgrade has answered (403 for a refused origin, 400 otherwise).
		srv.log.Info("websocket upgrade refused", "remote", r.RemoteAddr, "origin", r.Header.Get("Origin"), "err", err)
		return
	}
	srv.serveWS(ws, r.RemoteAddr)
}

func (srv *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	if !srv.ready.Load() {
		http.Error(w, "not ready\n", http.StatusServiceUnavailable)
		return
	}
	w.Write([]byte("ready\n"))
}

// Stats is the debug endpoint's answer. A load generator takes it before
// and after opening its sessions and divides the difference by the
// sessions it added: the process's fixed cost (packs, runtime, buffers)
// then drops out of its per-session figures.
type Stats struct {
	Sessions    int `json:"sessions"`
	Connections int `json:"connections"`
	// ConnectedSessions are the live sessions that at least one WebSocket
	// is bound to (started or resumed on it).
	ConnectedSessions int    `json:"connected_sessions"`
	Goroutines        int    `json:"goroutines"`
	HeapAlloc         uint64 `json:"heap_alloc_bytes"`
	HeapInuse         uint64 `json:"heap_inuse_bytes"`
	// StackInuse is held by goroutine stacks, outside the heap: a
	// connected session keeps two goroutines, its actor and its
	// connection's reader.
	StackInuse uint64 `json:"stack_inuse_bytes"`
	Sys        uint64 `json:"sys_bytes"`
	// RSS is the process's resident memory, where the system tells it
	// (Linux); it is what the operator pays for, heap and stacks and
	// whatever the runtime has not yet returned.
	RSS             uint64 `json:"rss_bytes,omitempty"`
	HeapPerSession  uint64 `json:"heap_per_session_bytes,omitempty"`
	FailedSessions  int    `json:"failed_sessions,omitempty"`
	GCBeforeMeasure bool   `json:"gc,omitempty"`
}

// Stats reports sessions and memory. With gc it collects first and
// returns the freed memory to the system, so heap and RSS show live
// memory only: without that, RSS keeps pages the collector freed until
// the runtime gets round to returning them, and says more about the last
// burst of garbage than about what the sessions hold.
func (srv *Server) Stats(gc bool) Stats {
	if gc {
		debug.FreeOSMemory()
	}
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	srv.mu.Lock()
	st := Stats{Sessions: len(srv.sessions), Connections: len(srv.conns), FailedSessions: len(srv.failed)}
	bound := map[*session]struct{}{}
	for c := range srv.conns {
		if s := c.bound.Load(); s != nil && srv.sessions[s.id] == s {
			bound[s] = struct{}{}
		}
	}
	st.ConnectedSessions = len(bound)
	srv.mu.Unlock()
	st.Goroutines = goruntime.NumGoroutine()
	st.HeapAlloc, st.HeapInuse, st.StackInuse, st.Sys, st.GCBeforeMeasure = ms.HeapAlloc, ms.HeapInuse, ms.StackInuse, ms.Sys, gc
	st.RSS = processRSS()
	if st.Sessions > 0 {
		st.HeapPerSession = ms.HeapAlloc / uint64(st.Sessions)
	}
	return st
}

func (srv *Server) handleStats(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, srv.Stats(r.URL.Query().Get("gc") == "1"))
}

type startParams struct {
	sessionID   string
	candidateID string
	packRef     string
	seed        int64
	host        hostOptions
	contract    json.RawMessage // a contract's own options (StartOptions)
	conn        *conn           // subscribed before the first step, acked with frameID
	frameID     string
	// voiceMode overrides the pack's voice.mode (engine.Options); with
	// clientVoice a client hosts the live session even when the server
	// could (voice.go).
	voiceMode   string
	clientVoice bool
	// inputs are the session's values for the pack's inputs, as the
	// client sent them (uploads named by sha256).
	inputs rules.Supplied
}

// start creates, logs and launches a new session. It returns the
// session's secret (secret.go), which only the starting client gets.
func (srv *Server) start(sp startParams) (*session, string, *ProtoError) {
	if err := wal.ValidID(sp.sessionID); err != nil {
		return nil, "", perr(CodeBadSessionID, "%v", err)
	}
	if len(sp.candidateID) > 256 {
		return nil, "", perr(CodeBadFrame, "candidate_id longer than 256 bytes")
	}
	if !srv.ready.Load() {
		return nil, "", perr(CodeShuttingDown, "server is not accepting sessions")
	}
	if pe := srv.elsewhere(sp.sessionID); pe != nil {
		return nil, "", pe
	}
	if srv.lookup(sp.sessionID) != nil {
		return nil, "", perr(CodeSessionExists, "session %s is already running; resume it instead", sp.sessionID)
	}
	if reason, failed := srv.failedReason(sp.sessionID); failed {
		return nil, "", perr(CodeSessionExists, "session %s exists but could not be recovered: %s", sp.sessionID, reason)
	}
	sp.packRef = srv.packs.canonical(sp.packRef)
	p, err := srv.packs.open(sp.packRef)
	if err != nil {
		// The client's message names the folder as packCache.show does,
		// never where it is on disk; the operator gets where here.
		srv.log.Info("pack refused", "session_id", sp.sessionID, "pack", sp.packRef, "err", err)
		return nil, "", perr(CodeBadPack, "%v", err)
	}
	// The inputs are checked before anything is logged: a refused start
	// leaves no trace. Bound, they are self-contained (uploads resolved
	// into their data), so the log header holds all a replay needs.
	in, err := p.Bind(sp.inputs, rules.BindOptions{Upload: srv.uploads.get})
	if err != nil {
		return nil, "", inputRefusal(err)
	}
	// The host's side (the model's budgets, the voice) runs on the pack
	// the engine runs: compiled for the session's values where a duration
	// or number names one. It has the same hash.
	p = in.Pack()
	// Asked after the checks that answer a start wherever it runs (moved,
	// session_exists, a bad pack or inputs): overloaded says only that
	// this node takes no new session now.
	if pe := srv.admission.admit(srv.clock.Now()); pe != nil {
		return nil, "", pe
	}
	secret, hash, err := newSecret()
	if err != nil {
		return nil, "", perr(CodeInternal, "%v", err)
	}
	sp.host.SecretSHA256 = hash
	model := srv.cfg.Model(sp.sessionID, p, srv.clock)
	vo := voiceOptions{ClientVoice: sp.clientVoice}
	vo.ServerVoice = srv.cfg.Voice != nil && !sp.clientVoice && liveMode(p, sp.voiceMode)
	host, err := hostJSON(sp.host, mergeObjects(mustJSON(vo), sp.contract))
	if err != nil {
		return nil, "", perr(CodeInternal, "%v", err)
	}
	now := srv.clock.Now()
	// The session runs against real time: its scripts are held to their
	// budget, and the outcomes are recorded (engine.Options.LiveBudgets).
	opts := engine.Options{Seed: uint64(sp.seed), VoiceMode: sp.voiceMode, LiveBudgets: true,
		SessionID: sp.sessionID, Inputs: in.Supplied()}
	hdr := wal.Header{Engine: engine.Version, Pack: p.Name, PackRef: sp.packRef, PackHash: p.Hash, Options: opts,
		SessionID: sp.sessionID, CandidateID: sp.candidateID, StartWall: now, Host: host}
	wl, err := srv.logs().Create(hdr)
	switch {
	case err != nil && srv.ownedError(sp.sessionID, err) != nil:
		return nil, "", srv.ownedError(sp.sessionID, err)
	case errors.Is(err, wal.ErrExists):
		return nil, "", perr(CodeSessionExists, "session %s is already running; resume it instead", sp.sessionID)
	case errors.Is(err, wal.ErrFinished):
		return nil, "", perr(CodeSessionExists, "session %s has already run to its end; pick a new id", sp.sessionID)
	case err != nil:
		srv.m.walErrors.Inc()
		srv.log.Error("could not create a session log", "session_id", sp.sessionID, "err", err)
		return nil, "", perr(CodeStorage, "could not create the session log: %s", srv.clientText(err))
	}
	s := newSession(srv, hdr, sp.host, p)
	s.wl, s.eng, s.base, s.model = wl, engine.New(p, hdr.Options), now, model
	srv.watch(s)
	// The ack goes out after the session is registered (so the client can
	// resume it at once) and before the actor runs (so it precedes every
	// effect).
	ack := func() {
		if sp.conn != nil {
			st := s.state()
			sp.conn.enqueue(mustJSON(AckFrame{Type: FrameAck, ID: sp.frameID, SessionID: s.id, SessionSecret: secret, T: new(int64), State: &st, Workspace: s.workspace()}))
			s.subs[sp.conn] = struct{}{}
		}
	}
	if !srv.launch(s, ack) {
		wl.Close()
		return nil, "", perr(CodeShuttingDown, "server is shutting down")
	}
	srv.m.sessionsStarted.Inc()
	s.log.Info("session started", "pack", p.Name, "candidate_id", sp.candidateID, "client_playback", sp.host.ClientPlayback, "server_voice", s.liveVoice != nil, "watchers", len(s.watchers))
	return s, secret, nil
}

// inputRefusal is a start's answer when the pack refuses its inputs: the
// first refusal's code, and every refused input with its limit in the
// message.
func inputRefusal(err error) *ProtoError {
	var errs rules.InputErrors
	if !errors.As(err, &errs) || len(errs) == 0 {
		return perr(CodeBadFrame, "inputs: %v", err)
	}
	msg := "inputs refused: " + errs.Error()
	// The names and limits come first in each refusal; echoed values are
	// cut (clipMessage), and a long list is cut at the end.
	return &ProtoError{Code: errs.Code(), Message: clipMessage(msg), Inputs: errs}
}

// watch attaches the mounted contracts' effect hooks to a session that is
// about to run.
func (srv *Server) watch(s *session) {
	for _, c := range srv.cfg.Contracts {
		if w := c.Watch(&Session{s: s}); w != nil {
			s.watchers = append(s.watchers, w)
		}
	}
}

// launch registers a session and starts its actor; before, if set, runs
// in between.
func (srv *Server) launch(s *session, before func()) bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.closed {
		return false
	}
	srv.sessions[s.id] = s
	if before != nil {
		before()
	}
	srv.m.sessionsActive.Inc()
	srv.wg.Add(1)
	go s.run()
	return true
}

// launchBackground counts a background goroutine in, unless the server
// is closing; Shutdown waits for it before closing the data directory.
func (srv *Server) launchBackground() bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.closed {
		return false
	}
	srv.bg.Add(1)
	return true
}

func (srv *Server) lookup(id string) *session {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.sessions[id]
}

func (srv *Server) removeSession(s *session) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.sessions[s.id] == s {
		delete(srv.sessions, s.id)
		srv.m.sessionsActive.Dec()
	}
}

// markFailed remembers why id failed; reason is sent to clients as is, so
// it is cleaned of server paths here.
func (srv *Server) markFailed(id, reason string) {
	reason = srv.clientTextString(reason)
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.failed[id] = reason
}

func (srv *Server) failedReason(id string) (string, bool) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	r, ok := srv.failed[id]
	return r, ok
}

func (srv *Server) addConn(c *conn) bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.closed {
		return false
	}
	srv.conns[c] = struct{}{}
	return true
}

func (srv *Server) removeConn(c *conn) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	delete(srv.conns, c)
}

// finishedState re-derives a finished session's effects after seq last,
// with the hash of its secret. Its errors are fit for clients: they name
// no server directory.
func (srv *Server) finishedState(id string, last uint64) ([]EffectFrame, *SessionState, string, error) {
	frames, st, hash, err := srv.rederiveFinished(id, last)
	if err != nil {
		srv.log.Error("could not re-derive a finished session", "session_id", id, "err", err)
		return nil, nil, "", errors.New(srv.clientText(err))
	}
	return frames, st, hash, nil
}

func (srv *Server) rederiveFinished(id string, last uint64) ([]EffectFrame, *SessionState, string, error) {
	rec, err := srv.logs().Read(id)
	if err != nil {
		// A finished log was synced whole: any bad byte in it is damage,
		// never a tail to read around. The session fails from now on.
		err = srv.checkDamage(id, err)
		var dmg *damagedLog
		if errors.As(err, &dmg) {
			srv.markFailed(id, err.Error())
		}
		return nil, nil, "", err
	}
	p, err := srv.packs.open(rec.Header.PackRef)
	if err != nil {
		return nil, nil, "", err
	}
	if err := wal.CheckHeader(&rec.Header, p); err != nil {
		return nil, nil, "", err
	}
	frames, err := rederive(srv, rec, p, last)
	if err != nil {
		return nil, nil, "", err
	}
	host, _ := decodeHost(rec.Header.Host)
	st := &SessionState{SessionID: id, CandidateID: rec.Header.CandidateID, Pack: p.Name, Ended: true, ClientPlayback: host.ClientPlayback}
	if rec.End != nil {
		st.T, st.EndReason = rec.End.T, rec.End.Reason
	}
	st.LastSeq = last + uint64(len(frames))
	return frames, st, host.SecretSHA256, nil
}

// Serve serves on ln until ctx ends, then shuts down gracefully: it stops
// accepting, closes every WebSocket with 1001 and a reason, stops the
// sessions (their logs stay live for the next start) and releases the
// data directory. It holds connections to the caps and HTTP requests to
// the timeouts of the Config.
func (srv *Server) Serve(ctx context.Context, ln net.Listener) error {
	headerTimeout := 10 * time.Second
	if rt := srv.cfg.HTTPReadTimeout; rt > 0 {
		headerTimeout = min(headerTimeout, rt)
	}
	// The read and write deadlines these set stop at a WebSocket upgrade:
	// net/http clears a connection's deadlines when it is hijacked, and
	// conn.go sets its own from then on.
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: headerTimeout,
		ReadTimeout:       srv.cfg.HTTPReadTimeout,
		WriteTimeout:      srv.cfg.HTTPWriteTimeout,
		IdleTimeout:       srv.cfg.HTTPIdleTimeout,
		ErrorLog:          slog.NewLogLogger(srv.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return srv.ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(srv.limits.wrap(ln)) }()
	select {
	case err := <-errc:
		srv.Shutdown(context.Background())
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	srv.log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.ready.Store(false)
	err := hs.Shutdown(sctx)
	if err2 := srv.Shutdown(sctx); err == nil {
		err = err2
	}
	return err
}

// Shutdown closes connections and stops every session without ending it.
func (srv *Server) Shutdown(ctx context.Context) error {
	srv.ready.Store(false)
	srv.mu.Lock()
	if srv.closed {
		srv.mu.Unlock()
		return nil
	}
	srv.closed = true
	conns := make([]*conn, 0, len(srv.conns))
	for c := range srv.conns {
		conns = append(conns, c)
	}
	srv.mu.Unlock()
	for _, c := range conns {
		c.kill(websocket.CloseGoingAway, "server shutting down; reconnect and resume", true)
	}
	srv.cancel()
	done := make(chan struct{})
	go func() { srv.wg.Wait(); srv.bg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("shutdown: sessions still stopping: %w", ctx.Err())
	}
	if cerr := srv.dir.Close(); err == nil {
		err = cerr
	}
	srv.log.Info("stopped")
	return err
}

// Pack opens a pack the way clients name it (bundled name or permitted
// folder); tools use it to replay a session's log.
func (srv *Server) Pack(ref string) (*rules.Pack, error) { return srv.packs.open(ref) }

// privateDirs are the absolute paths of the data directory and the
// working directory, longest first so that one inside the other is cut
// whole. The root is left out: cutting "/" would mangle every message.
func privateDirs(dataDir string) []string {
	var dirs []string
	if abs, err := filepath.Abs(dataDir); err == nil {
		dirs = append(dirs, abs)
	}
	if wd, err := os.Getwd(); err == nil {
		dirs = append(dirs, wd)
	}
	dirs = slices.DeleteFunc(dirs, func(d string) bool { return len(d) <= 1 || d == filepath.VolumeName(d)+string(filepath.Separator) })
	slices.SortFunc(dirs, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(dirs)
}

// clientText is err's message as a client may see it: files under the
// data or working directory are named relative to it, and the directory
// itself is not named, so an error does not tell where the server runs.
// The server's log keeps the whole error.
func (srv *Server) clientText(err error) string { return srv.clientTextString(err.Error()) }

func (srv *Server) clientTextString(msg string) string {
	for _, d := range srv.private {
		msg = strings.ReplaceAll(msg, d+string(filepath.Separator), "")
		msg = strings.ReplaceAll(msg, d, ".")
	}
	return msg
}

type httpErrorBody struct {
	OK    bool `json:"ok"`
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		// Inputs, with an input_* code: every refused input of a start.
		Inputs rules.InputErrors `json:"inputs,omitempty"`
	} `json:"error"`
}

func httpError(w http.ResponseWriter, status int, code, msg string) {
	writeHTTPError(w, status, &ProtoError{Code: code, Message: msg})
}

func writeHTTPError(w http.ResponseWriter, status int, pe *ProtoError) {
	var b httpErrorBody
	b.Error.Code, b.Error.Message, b.Error.Inputs = pe.Code, pe.Message, pe.Inputs
	writeJSON(w, status, b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
