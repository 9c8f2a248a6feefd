package service

import (
	"context"
	"errors"

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
		if pe := srv.elsewhere(id); pe != nil {
			return pe
		}
		srv.log.Warn("could not take ownership of a session", "session_id", id, "err", err)
		return perr(CodeStorage, "could not take ownership of session %s: %s", id, srv.clientText(err))
	}
	return nil
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
