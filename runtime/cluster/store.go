package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/internal/wal"
)

// Message headers this package writes beside the records.
const (
	// hdrEnd marks the message holding a session's end record, so that
	// State reads one message instead of the log.
	hdrEnd = "Baton-End"
	// hdrWriter names the node and incarnation that wrote a message.
	hdrWriter = "Baton-Writer"
	// hdrFence marks a new owner's first message, which holds no record:
	// it only moves the subject's last sequence past what the old owner
	// knows.
	hdrFence = "Baton-Fence"
)

// store is the Cluster as a wal.Store.
type store struct{ c *Cluster }

var _ wal.Store = store{}

// Create registers the session to this node and writes its header,
// expecting the subject to be empty: of two nodes creating one id, one
// gets ErrExists (or ErrFinished for an id that has ended).
func (s store) Create(h wal.Header) (wal.SessionLog, error) {
	c := s.c
	id := h.SessionID
	if err := wal.ValidID(id); err != nil {
		return nil, err
	}
	h.Format = wal.FormatVersion
	h.StartWall = h.StartWall.UTC()
	data, err := appendRecord(append(make([]byte, 0, 512), wal.Magic...), &wal.Record{Kind: wal.KindHeader, Header: &h})
	if err != nil {
		return nil, fmt.Errorf("creating log %s: %w", id, err)
	}
	if n := len(data) - len(wal.Magic) - frameLen; n > wal.MaxHeader {
		return nil, fmt.Errorf("creating log %s: header of %d bytes exceeds %d", id, n, wal.MaxHeader)
	}
	ctx, cancel := c.opContext()
	defer cancel()
	l, err := c.claim(id)
	if err != nil {
		return nil, err
	}
	fresh, err := c.acquire(ctx, id, true)
	if err != nil {
		c.unclaim(l)
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	seq, err := l.publish(ctx, data, false)
	if err != nil {
		c.unclaim(l)
		if !errors.Is(err, wal.ErrFenced) {
			// The header may be stored with its ack lost: the entry stays
			// this node's, so that a resume of the id opens it if it is.
			return nil, fmt.Errorf("creating log %s: %w", id, err)
		}
		if fresh {
			if rerr := c.release(ctx, id); rerr != nil {
				c.log.Warn("could not release a session id that was taken", "session_id", id, "err", rerr)
			}
		}
		if st, serr := s.State(id); serr == nil && st == wal.StateDone {
			return nil, fmt.Errorf("session %s: %w", id, wal.ErrFinished)
		}
		return nil, fmt.Errorf("session %s: %w", id, wal.ErrExists)
	}
	l.last = seq
	return l, nil
}

// Open takes the session over (acquiring it: an *OwnedError if a live
// node owns it), reads its log and fences any earlier owner out by
// writing a record-less message that expects the last sequence read. A
// write the earlier owner made after the read fails the fence; the log is
// then read again, so every input it had acknowledged is in what Open
// returns. A log can have no torn tail (a message is stored whole or not
// at all), so any invalid byte is a *wal.DamageError.
func (s store) Open(id string) (wal.SessionLog, *wal.Recovered, error) {
	c := s.c
	if err := wal.ValidID(id); err != nil {
		return nil, nil, err
	}
	ctx, cancel := c.opContext()
	defer cancel()
	l, err := c.claim(id)
	if err != nil {
		return nil, nil, err
	}
	keep := false
	defer func() {
		if !keep {
			c.unclaim(l)
		}
	}()
	fresh, err := c.acquire(ctx, id, false)
	if err != nil {
		return nil, nil, err
	}
	// An id that was not registered is not a live session: let go of it
	// again unless it turns out to be one.
	letGo := func() {
		if fresh {
			if err := c.release(ctx, id); err != nil {
				c.log.Warn("could not release a session id", "session_id", id, "err", err)
			}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for attempt := 1; ; attempt++ {
		rec, msgs, err := c.readLog(ctx, id)
		if err == nil && len(msgs) == 0 {
			// Registered but never written (its creator died between
			// the two, like an unborn log file): nothing was ever
			// acknowledged, so the id is let go, whoever registered it.
			fresh = true
			err = fmt.Errorf("session %s: %w", id, wal.ErrNotFound)
		}
		if err != nil {
			letGo()
			return nil, nil, err
		}
		if rec.End != nil && fresh {
			letGo()
			return nil, nil, fmt.Errorf("session %s: %w", id, wal.ErrFinished)
		}
		l.last = msgs[len(msgs)-1].Seq
		l.seq = uint64(len(rec.Inputs))
		l.ended = rec.End != nil
		if l.ended {
			// Its owner wrote the end and stopped before releasing it:
			// Finish only releases it. Nothing is written after an end,
			// so there is nobody to fence.
			keep = true
			return l, rec, nil
		}
		seq, err := l.publish(ctx, nil, false)
		if err == nil {
			l.last = seq
			keep = true
			return l, rec, nil
		}
		if !errors.Is(err, wal.ErrFenced) || attempt == 10 {
			return nil, nil, fmt.Errorf("session %s: fencing the log: %w", id, err)
		}
		c.log.Info("the old owner wrote during takeover; reading the log again", "session_id", id)
	}
}

// Read returns a log, live or finished, without changing it.
func (s store) Read(id string) (*wal.Recovered, error) {
	c := s.c
	if err := wal.ValidID(id); err != nil {
		return nil, err
	}
	ctx, cancel := c.opContext()
	defer cancel()
	rec, msgs, err := c.readLog(ctx, id)
	if err == nil && len(msgs) == 0 {
		err = fmt.Errorf("session %s: %w", id, wal.ErrNotFound)
	}
	return rec, err
}

// State reads only the subject's last message: a log whose last message
// holds the end record is done.
func (s store) State(id string) (wal.State, error) {
	c := s.c
	if err := wal.ValidID(id); err != nil {
		return wal.StateNone, err
	}
	ctx, cancel := c.opContext()
	defer cancel()
	m, err := c.lastMsg(ctx, id)
	switch {
	case err != nil:
		return wal.StateNone, err
	case m == nil:
		return wal.StateNone, nil
	case m.Header.Get(hdrEnd) != "":
		return wal.StateDone, nil
	}
	return wal.StateLive, nil
}

// Live lists every session in the registry, whichever node owns it. In a
// cluster, recovery is not a walk over Live: a node takes over the
// sessions Orphans reports.
func (s store) Live() ([]string, error) { return s.c.live(), nil }

// Preserve copies a session's messages to Config.EvidenceDir.
func (s store) Preserve(id string, cause error, now time.Time) (string, error) {
	return s.c.preserve(id, cause, now)
}

// Close closes the Cluster: a service closing its store at shutdown
// hands its sessions over at once.
func (s store) Close() error { return s.c.Close() }

// claim registers a log of id as open on this node.
func (c *Cluster) claim(id string) (*sessionLog, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("session %s: the cluster store is closed: %w", id, wal.ErrClosed)
	}
	if c.logs[id] != nil {
		return nil, fmt.Errorf("session %s: log is already open on this node: %w", id, wal.ErrExists)
	}
	l := &sessionLog{c: c, id: id, subj: c.subject(id),
		writer: c.cfg.Node + "/" + c.inc, msgID: id + "." + newIncarnation()[:8] + "."}
	c.logs[id] = l
	return l, nil
}

func (c *Cluster) unclaim(l *sessionLog) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.logs[l.id] == l {
		delete(c.logs, l.id)
	}
}

// sessionLog is one session's open log on this node. Every write is one
// JetStream message expecting the subject's last sequence this log knows:
// a write after anyone else's is refused, and the log is dead from then.
type sessionLog struct {
	c      *Cluster
	id     string
	subj   string
	writer string
	msgID  string // prefix of this log's message ids

	mu     sync.Mutex
	last   uint64 // stream sequence of the subject's last message
	seq    uint64 // inputs logged
	held   []byte // an encoded step record waiting for the next write
	buf    []byte
	closed bool
	ended  bool
	writes uint64 // messages this log has sent, for their ids

	// dead is the error every later call returns. It is set outside mu
	// too (a lost lease), so that a write in flight is not waited for.
	dead atomic.Pointer[error]
}

var _ wal.SessionLog = (*sessionLog)(nil)

func (l *sessionLog) ID() string { return l.id }

// Path is the log's subject.
func (l *sessionLog) Path() string { return l.subj }

func (l *sessionLog) Seq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

func (l *sessionLog) kill(err error) { l.dead.CompareAndSwap(nil, &err) }

func (l *sessionLog) deadErr() error {
	if p := l.dead.Load(); p != nil {
		return *p
	}
	return nil
}

// Append publishes the input and returns once JetStream has acknowledged
// it. sync is not honoured: an input applied without being published
// could be applied by a node that has already lost the session, and its
// effects sent to clients, with nothing to fence it. Every input is
// therefore published (with a held step record, in one message).
func (l *sessionLog) Append(in engine.Input, sync bool) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	seq := l.seq + 1
	if err := l.writeLocked(&wal.Record{Kind: wal.KindInput, Seq: seq, Input: &in}); err != nil {
		return 0, err
	}
	l.seq = seq
	return seq, nil
}

// AppendStep holds the step record until the next write, as a file does.
func (l *sessionLog) AppendStep(seq uint64, st wal.Step) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return wal.ErrClosed
	}
	if err := l.deadErr(); err != nil {
		return err
	}
	var err error
	l.held, err = appendRecord(l.held[:0], &wal.Record{Kind: wal.KindStep, Seq: seq, Step: &st})
	if err != nil {
		l.held = l.held[:0]
		return fmt.Errorf("log %s: %w", l.id, err)
	}
	return nil
}

// Flush publishes a held step record.
func (l *sessionLog) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return wal.ErrClosed
	}
	if err := l.deadErr(); err != nil {
		return err
	}
	if len(l.held) == 0 || l.ended {
		return nil
	}
	return l.writeLocked(nil)
}

// Finish publishes the end record (with a held step record) and then
// deletes the session's registry entry. A log opened with its end already
// written is only released.
func (l *sessionLog) Finish(end wal.End) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return wal.ErrClosed
	}
	defer l.c.unclaim(l)
	defer func() { l.closed = true }()
	end.Wall = end.Wall.UTC()
	if !l.ended {
		if err := l.writeLocked(&wal.Record{Kind: wal.KindEnd, End: &end}); err != nil {
			return err
		}
		l.ended = true
	}
	ctx, cancel := l.c.opContext()
	defer cancel()
	if err := l.c.release(ctx, l.id); err != nil {
		return fmt.Errorf("finishing log %s: %w", l.id, err)
	}
	return nil
}

// Close publishes a held step record, best effort and fenced like any
// write, and closes the log; the session stays live and owned by this
// node until the node's lease ends.
func (l *sessionLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	var err error
	if len(l.held) > 0 && !l.ended && l.deadErr() == nil {
		err = l.writeLocked(nil)
	}
	l.closed = true
	l.c.unclaim(l)
	return err
}

// writeLocked publishes the held step record and then r (nil: only the
// held record), in one message when the server's payload limit allows.
// Any failure kills the log: an unacknowledged write may still be stored,
// so this log no longer knows the subject's last sequence.
func (l *sessionLog) writeLocked(r *wal.Record) error {
	if l.closed {
		return wal.ErrClosed
	}
	if err := l.deadErr(); err != nil {
		return err
	}
	if r != nil && l.ended {
		return fmt.Errorf("log %s: %s record after the end: %w", l.id, r.Kind, wal.ErrClosed)
	}
	end := r != nil && r.Kind == wal.KindEnd
	l.buf = append(l.buf[:0], l.held...)
	if r != nil {
		var err error
		if l.buf, err = appendRecord(l.buf, r); err != nil {
			// Nothing was sent: the log is as it was.
			return fmt.Errorf("log %s: %w", l.id, err)
		}
	}
	parts := [][]byte{l.buf}
	limit := int(l.c.nc.MaxPayload()) - 512 // headers
	if len(l.buf) > limit && len(l.held) > 0 {
		parts = [][]byte{l.buf[:len(l.held)], l.buf[len(l.held):]}
	}
	ctx, cancel := l.c.opContext()
	defer cancel()
	for i, p := range parts {
		if len(p) > limit {
			err := fmt.Errorf("log %s: a message of %d bytes exceeds the NATS server's max_payload (%d bytes with headers); raise max_payload",
				l.id, len(p), l.c.nc.MaxPayload())
			l.kill(err)
			return err
		}
		seq, err := l.publish(ctx, p, end && i == len(parts)-1)
		if err != nil {
			l.kill(err)
			return err
		}
		l.last = seq
	}
	l.held = l.held[:0]
	if cap(l.buf) > 64<<10 {
		l.buf = nil // do not pin a huge buffer in an idle session
	}
	return nil
}

// publish sends one message expecting the subject's last sequence to be
// l.last, retrying what may not have arrived (a server failing over, a
// reconnect) under the same message id, so that a retry of a message
// that was stored is answered as a duplicate instead of stored twice.
// It returns the message's stream sequence. A refusal for the wrong last
// sequence is ErrFenced, unless the last message is this very one (an
// attempt whose acknowledgment was lost).
func (l *sessionLog) publish(ctx context.Context, data []byte, end bool) (uint64, error) {
	// Unique to this message, and the same for each of its retries.
	l.writes++
	id := l.msgID + strconv.FormatUint(l.writes, 10) + "." + strconv.FormatUint(l.last, 10)
	msg := &nats.Msg{Subject: l.subj, Data: data, Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, id)
	msg.Header.Set(hdrWriter, l.writer)
	if end {
		msg.Header.Set(hdrEnd, "1")
	}
	if len(data) == 0 {
		msg.Header.Set(hdrFence, l.writer)
	}
	wait := 20 * time.Millisecond
	for {
		// A request lost in a reconnect is only noticed by this timeout;
		// a retry is harmless (same message id), so it is short.
		actx, cancel := context.WithTimeout(ctx, time.Second)
		ack, err := l.c.js.PublishMsg(actx, msg, jetstream.WithExpectLastSequencePerSubject(l.last))
		cancel()
		if err == nil {
			return ack.Sequence, nil
		}
		if wrongLastSeq(err) {
			m, lerr := l.c.lastMsg(ctx, l.id)
			if lerr != nil {
				return 0, fmt.Errorf("log %s: refused for the wrong last sequence, and the last message could not be read: %w", l.id, lerr)
			}
			if m != nil && m.Header.Get(jetstream.MsgIDHeader) == id {
				return m.Seq, nil
			}
			last := uint64(0)
			if m != nil {
				last = m.Seq
			}
			return 0, fmt.Errorf("log %s: %w (%s ends at message %d, not %d)", l.id, wal.ErrFenced, l.subj, last, l.last)
		}
		if permanent(err) {
			return 0, fmt.Errorf("log %s: writing: %w", l.id, err)
		}
		if err := l.deadErr(); err != nil {
			return 0, err
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("log %s: writing: not acknowledged within %s (last error: %w)", l.id, l.c.cfg.OpTimeout, err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

func apiCode(err error) jetstream.ErrorCode {
	var api *jetstream.APIError
	if errors.As(err, &api) {
		return api.ErrorCode
	}
	return 0
}

// wrongLastSeq: replicated streams answer a failed expectation with
// 10164 and others with 10071 (nats.go jetstream/errors.go).
func wrongLastSeq(err error) bool {
	code := apiCode(err)
	return code == jetstream.JSErrCodeStreamWrongLastSequence || code == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// permanent errors are not worth a retry.
func permanent(err error) bool {
	return errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, nats.ErrConnectionClosed) ||
		apiCode(err) == jetstream.JSErrCodeStreamMessageExceedsMaximum
}
