package wal

import (
	"errors"
	"time"

	"github.com/batonhq/baton/engine"
)

// ErrFenced is returned by a replicated store's writes once another node
// has taken the session over: this node's copy is stale and must stop
// without writing more, or two nodes would interleave one session.
var ErrFenced = errors.New("session log is fenced: another node owns the session")

// Store is where session logs live: a local data directory (Dir.Store) or
// a replicated log. The service depends on this contract only, so every
// implementation gives the same answers for the same history.
type Store interface {
	// Create starts a new log for h.SessionID and makes its header
	// durable before it returns. ErrBadID for an invalid id, ErrExists if
	// the session has a live log (or is being created or open here),
	// ErrFinished if it has ended.
	Create(h Header) (SessionLog, error)
	// Open recovers a live log for appending: every valid record is
	// returned and a torn tail (bytes no acknowledged write covered) is
	// cut and reported in Recovered.Tail. Damage anywhere else is a
	// *DamageError and changes nothing. ErrNotFound if there is no log
	// (an unborn log, see ErrUnborn, is removed and reported so),
	// ErrFinished if the session has ended.
	Open(id string) (SessionLog, *Recovered, error)
	// Read returns a log, live or finished, without changing it. A
	// finished log must be whole: any invalid byte is a *DamageError.
	// ErrNotFound if there is none.
	Read(id string) (*Recovered, error)
	// State says whether id has a live log, a finished one, or none.
	State(id string) (State, error)
	// Live lists the ids of unfinished sessions, sorted.
	Live() ([]string, error)
	// Preserve keeps a copy of a damaged log with a report of cause and
	// returns where; the log itself is left as it is.
	Preserve(id string, cause error, now time.Time) (string, error)
	// Close makes everything acknowledged durable where readers of the
	// store find it and releases the store. Logs must be closed first.
	Close() error
}

// SessionLog is one session's open log, written by one goroutine.
type SessionLog interface {
	// ID is the session id.
	ID() string
	// Seq is the number of inputs logged so far.
	Seq() uint64
	// Path names the log for messages and tools: a file path for a data
	// directory, a stream subject for a replicated store.
	Path() string
	// Append logs one input and returns its sequence number (1-based).
	// With sync the input is durable when Append returns, and only then
	// may the caller apply or acknowledge it. Without, it is ordered
	// before anything logged later and becomes durable with the next
	// synced write (Append with sync, Flush or Finish); a crash may lose
	// it, so callers use that only for inputs they can re-derive. After
	// an error the log must not be written again: ErrClosed after Close
	// or Finish, ErrFenced when another node owns the session, or a
	// wrapped write or sync error.
	Append(in engine.Input, sync bool) (uint64, error)
	// AppendStep records the digests of input seq's effects. It is held
	// and written with the next write; losing it in a crash only leaves
	// that input unverified. ErrClosed after Close or Finish.
	AppendStep(seq uint64, st Step) error
	// Flush makes a held step record durable, as Append with sync does,
	// and brings whatever copy of the log outside tools read (a session
	// file) up to date. ErrClosed after Close or Finish.
	Flush() error
	// Finish writes the end record, makes the log durable and finished
	// (Read then holds it to the finished-log rule) and closes it.
	// ErrClosed if already closed.
	Finish(end End) error
	// Close closes the log without ending the session; it stays live
	// and is recovered by the next Open. Closing twice is not an error.
	Close() error
}

// Store returns d as a Store.
func (d *Dir) Store() Store { return dirStore{d} }

// dirStore exists because Dir's methods return *Log, which Go does not
// accept in place of SessionLog in an interface method's signature.
type dirStore struct{ *Dir }

func (s dirStore) Create(h Header) (SessionLog, error) {
	l, err := s.Dir.Create(h)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (s dirStore) Open(id string) (SessionLog, *Recovered, error) {
	l, rec, err := s.Dir.Open(id)
	if err != nil {
		return nil, rec, err
	}
	return l, rec, nil
}

var (
	_ Store      = dirStore{}
	_ SessionLog = (*Log)(nil)
)
