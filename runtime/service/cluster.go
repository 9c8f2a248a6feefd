package service

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/batonhq/baton/runtime/cluster"

	"github.com/batonhq/baton/runtime/internal/wal"
)

// Cluster is a group of nodes sharing one replicated session log
// (runtime/cluster implements it on NATS JetStream): where session logs
// live and which node runs each session. A server without one keeps its
// logs in its data directory and runs every session it has.
//
// A session runs on the node that owns it. Ownership moves only when the
// owner's node lease lapses (it died, or was paused or cut off longer
// than the lease); the log fences the old owner, so a node that lost a
// session cannot append to it even if it does not know yet.
type Cluster interface {
	// Store is the replicated log of every session.
	Store() wal.Store
	// Node names this node.
	Node() string
	// Acquire makes this node the owner of id: a new session, or one
	// whose owner's lease has lapsed. It fails if a live node owns it.
	Acquire(ctx context.Context, id string) error
	// Owner says which node owns id and where its clients connect.
	Owner(id string) (node, advertise string, ok bool)
	// Release gives up a finished session.
	Release(id string) error
	// Orphans delivers sessions this node should take over now.
	Orphans() <-chan string
	// Lost delivers sessions this node no longer owns: its lease lapsed.
	Lost() <-chan string
}

// CodeMoved tells a client that its session runs on another node; the
// error frame's url names it when known. Resuming there (or on any node,
// which redirects again) continues the session.
const CodeMoved = "moved"

// clusterHost is the server's part of a cluster: takeovers run one at a
// time, so a client's resume and the orphan watcher cannot both rebuild
// one session.
type clusterHost struct {
	mu        sync.Mutex
	takeovers *prometheus.CounterVec
	moved     prometheus.Counter
}

func newClusterHost(reg prometheus.Registerer) *clusterHost {
	h := &clusterHost{
		takeovers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_cluster_takeovers_total", Help: "Sessions this node took over from a node whose lease lapsed, by outcome (resumed, finished)."}, []string{"outcome"}),
		moved:     prometheus.NewCounter(prometheus.CounterOpts{Name: "baton_cluster_sessions_moved_total", Help: "Sessions this node stopped because another node took them over."}),
	}
	reg.MustRegister(h.takeovers, h.moved)
	return h
}

// logs is where session logs live: the cluster's replicated log, or the
// data directory.
func (srv *Server) logs() wal.Store {
	if srv.cfg.Cluster != nil {
		return srv.cfg.Cluster.Store()
	}
	return srv.dir.Store()
}

// elsewhere reports the error a client gets for a session another node
// runs, or nil if no other live node owns it.
func (srv *Server) elsewhere(id string) *ProtoError {
	cl := srv.cfg.Cluster
	if cl == nil {
		return nil
	}
	node, url, ok := cl.Owner(id)
	if !ok || node == cl.Node() {
		return nil
	}
	pe := perr(CodeMoved, "session %s runs on node %s; resume it there", id, node)
	pe.URL = url
	return pe
}

// claim makes this node the owner of id before it creates or takes over
// the session's log.
func (srv *Server) claim(ctx context.Context, id string) *ProtoError {
	cl := srv.cfg.Cluster
	if cl == nil {
		return nil
	}
	if err := cl.Acquire(ctx, id); err != nil {
		if pe := srv.ownedError(id, err); pe != nil {
			return pe
		}
		srv.log.Warn("could not take ownership of a session", "session_id", id, "err", err)
		return perr(CodeStorage, "could not take ownership of session %s: %s", id, srv.clientText(err))
	}
	return nil
}

// takeOver runs a session whose owner is gone: ownership first, then the
// session is rebuilt from its replicated log as local recovery does, with
// overdue timers fired by the same rule. It is a no-op for a session
// already running here.
func (srv *Server) takeOver(ctx context.Context, id string) error {
	if srv.lookup(id) != nil {
		return nil
	}
	srv.cl.mu.Lock()
	defer srv.cl.mu.Unlock()
	if srv.lookup(id) != nil {
		return nil
	}
	if pe := srv.claim(ctx, id); pe != nil {
		return pe
	}
	outcome, _, err := srv.recoverOne(id)
	if err != nil {
		return err
	}
	srv.cl.takeovers.WithLabelValues(outcome).Inc()
	srv.log.Info("session taken over", "session_id", id, "outcome", outcome)
	return nil
}

// runCluster follows the cluster: it takes over orphaned sessions and
// stops the ones this node lost.
func (srv *Server) runCluster() {
	cl := srv.cfg.Cluster
	srv.follow(cl.Orphans(), func(id string) {
		if err := srv.takeOver(srv.ctx, id); err != nil && srv.ctx.Err() == nil {
			srv.log.Warn("could not take over an orphaned session", "session_id", id, "err", err)
		}
	})
	srv.follow(cl.Lost(), func(id string) {
		if s := srv.lookup(id); s != nil {
			s.post(srv.ctx, movedMsg{})
		}
	})
}

// follow runs f on each session id from ids, one at a time, until the
// server stops.
func (srv *Server) follow(ids <-chan string, f func(id string)) {
	srv.wg.Add(1)
	go func() {
		defer srv.wg.Done()
		for {
			select {
			case <-srv.ctx.Done():
				return
			case id := <-ids:
				f(id)
			}
		}
	}()
}

// movedMsg tells a session's actor that another node owns it now.
type movedMsg struct{}

// moveAway stops a session another node has taken over: its clients are
// told where it runs now and its log is closed, not finished. Nothing is
// marked failed: the session lives on elsewhere.
func (s *session) moveAway(cause error) {
	pe := s.srv.elsewhere(s.id)
	if pe == nil {
		pe = perr(CodeMoved, "session %s moved to another node; resume it there", s.id)
	}
	s.log.Warn("session moved to another node", "cause", cause, "url", pe.URL)
	s.srv.cl.moved.Inc()
	s.broadcast(mustJSON(ErrorFrame{Type: FrameError, Code: pe.Code, Message: pe.Message, URL: pe.URL}))
	s.setExit(CodeMoved, pe.Message)
}

// fenced reports whether err says another node owns the session.
func fenced(err error) bool { return errors.Is(err, wal.ErrFenced) }

// errLost is why a session stops when this node's lease lapsed.
var errLost = errors.New("this node's lease lapsed and another node may own the session")

// release gives up a finished session's ownership.
func (srv *Server) release(id string) {
	if cl := srv.cfg.Cluster; cl != nil {
		if err := cl.Release(id); err != nil {
			srv.log.Warn("could not release a finished session", "session_id", id, "err", err)
		}
	}
}

// resumeHere readies a resume of id on this node: a session another live
// node runs is a redirect, and a live one nobody runs is taken over.
func (srv *Server) resumeHere(ctx context.Context, id string) *ProtoError {
	if srv.cfg.Cluster == nil || srv.lookup(id) != nil {
		return nil
	}
	if pe := srv.elsewhere(id); pe != nil {
		return pe
	}
	st, err := srv.logs().State(id)
	if err != nil || st != wal.StateLive {
		return nil // resumeFinished answers
	}
	if err := srv.takeOver(ctx, id); err != nil {
		var pe *ProtoError
		if errors.As(err, &pe) {
			return pe
		}
		return perr(CodeSessionFailed, "session %s could not be taken over: %s", id, srv.clientText(err))
	}
	return nil
}

// logRedo reports what replaying the journal into the session logs did
// at start, and what it found damaged.
func logRedo(log *slog.Logger, m *metrics, r wal.RedoReport) {
	if r.LedgerLost != "" {
		log.Error("neither copy of the ledger reads back; logs cut before this start cannot be told from torn ones", "why", r.LedgerLost)
	}
	for _, d := range r.Journal {
		m.journalDamage.Inc()
		log.Error("journal is damaged; the sessions whose acknowledged inputs it may hold are failed, the rest recover", "err", d)
	}
	for _, d := range r.Damaged {
		log.Error("session log lost acknowledged inputs; the session is failed", "session_id", d.ID, "err", d.Err)
	}
	if len(r.Evidence) > 0 {
		log.Error("journal kept as evidence", "copies", strings.Join(r.Evidence, ", "))
	}
	if r.Segments == 0 {
		return
	}
	log.Info("journal redone", "segments", r.Segments, "entries", r.Entries, "sessions", r.Sessions, "repaired", len(r.Repaired), "damaged", len(r.Damaged))
	if r.Tail != nil {
		// A batch is acknowledged only once it is whole on disk, and a
		// segment is whole before anything is written in it: only the
		// write a crash interrupted can be torn.
		log.Warn("journal's last batch was torn by a crash and cleared; it was never acknowledged", "segment", r.TailSegment, "tail", r.Tail.Error())
	}
}

// ownedError is the moved error for an Acquire or Create refused because
// a live node owns id. The refusal's own answer comes first: it was read
// from the lease bucket's leader, while this node's view may lag behind.
func (srv *Server) ownedError(id string, err error) *ProtoError {
	var oe *cluster.OwnedError
	if errors.As(err, &oe) && oe.Advertise != "" {
		pe := perr(CodeMoved, "session %s runs on node %s; resume it there", id, oe.Node)
		pe.URL = oe.Advertise
		return pe
	}
	return srv.elsewhere(id)
}
