package wal

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/engine"
)

var (
	// ErrBadID is returned for session ids outside ^[A-Za-z0-9_-]{1,64}$.
	ErrBadID = errors.New("invalid session id")
	// ErrExists is returned when creating a session whose log exists.
	ErrExists = errors.New("session log already exists")
	// ErrFinished is returned when opening a finished session for writing.
	ErrFinished = errors.New("session is finished")
	// ErrNotFound is returned when no log exists for a session.
	ErrNotFound = errors.New("no log for session")
	// ErrClosed is returned by writes after Close or Finish.
	ErrClosed = errors.New("log is closed")
)

var idRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidID checks a session id. Ids become file names, so the alphabet is
// small enough that no id can name a path outside the data directory.
func ValidID(id string) error {
	if !idRE.MatchString(id) {
		return fmt.Errorf("%w %q: want 1-64 of A-Z a-z 0-9 _ -", ErrBadID, truncate(id, 80))
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// A session's log is ID.wal while it runs and ID.done once it has ended.
const (
	extLive = ".wal"
	extDone = ".done"
)

// Options tune a data directory.
type Options struct {
	// OnSync, if set, is told how long each sync took, and which (Sync
	// kinds).
	OnSync func(SyncKind, time.Duration)
	// OnCheckpoint, if set, is told of each journal segment checkpointed:
	// how many session files had entries in it and how long it took.
	OnCheckpoint func(files int, took time.Duration)
	// NoSync skips fsync. Only for benchmarks that measure everything else.
	// The journal is still written, so a process crash loses nothing.
	NoSync bool
	// SegmentSize is the journal segment size past which the segment is
	// retired and checkpointed (default DefaultSegmentSize).
	SegmentSize int64
	// FS is the file system (default OS). Tests pass a
	// waltest.StrictMem to cut the power at chosen points.
	FS FS
	// Logger gets what goes wrong in the background without failing
	// anything (default: discarded).
	Logger *slog.Logger
}

func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

// Dir is a data directory of session logs.
type Dir struct {
	path string
	opt  Options
	fs   FS
	lock io.Closer

	// busy holds the ids this process is creating or has open: a log
	// that looks unborn may be one whose Create is half way through, and
	// only a log nobody here holds may be removed as unborn.
	mu   sync.Mutex
	busy map[string]bool
	// pending holds the logs (open or closed) with bytes that are in the
	// journal but not yet in their file.
	pending map[string]*Log
	// led is the ledger: how much of each live file was acknowledged,
	// and the sessions found damaged.
	led *ledger

	j    *journal
	redo RedoReport
	// syncer syncs the whole file system at checkpoints; nil where there
	// is no syncfs, and each file is fsynced instead.
	syncer FSSyncer
}

// claim marks id busy; false if it already was.
func (d *Dir) claim(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.busy[id] {
		return false
	}
	if d.busy == nil {
		d.busy = map[string]bool{}
	}
	d.busy[id] = true
	return true
}

func (d *Dir) release(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.busy, id)
}

// OpenDir opens (creating it 0700 if needed) a data directory and locks it
// so that two servers never write the same logs.
func OpenDir(path string, opt Options) (*Dir, error) {
	fsys := opt.FS
	if fsys == nil {
		fsys = OS
	}
	if err := mkdirAllSynced(fsys, path); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	lock, err := fsys.Lock(path)
	if err != nil {
		return nil, err
	}
	d := &Dir{path: path, opt: opt, fs: fsys, lock: lock}
	// Opened before anything is written that its syncs must cover.
	if d.syncer, err = fsys.SyncFS(path); err != nil {
		d.syncer = nil
		opt.logger().Info("checkpoints fsync session files one by one", "data", path, "reason", err)
	}
	var bad string
	if d.led, bad, err = readLedger(fsys, path); err != nil {
		if d.syncer != nil {
			d.syncer.Close()
		}
		lock.Close()
		return nil, fmt.Errorf("data dir %s: reading the ledger: %w", path, err)
	}
	// Before anything reads a session file: acknowledged bytes may be in
	// the journal only.
	fresh := d.led.found == ""
	d.redo, err = d.redoJournal()
	d.redo.LedgerLost = bad
	if err == nil && fresh {
		// From now on the journal's segments are all of the sized kind,
		// and the ledger says so.
		err = d.writeLedger()
	}
	if err != nil {
		if d.syncer != nil {
			d.syncer.Close()
		}
		lock.Close()
		return nil, fmt.Errorf("data dir %s: redoing the journal: %w", path, err)
	}
	d.j = newJournal(d)
	return d, nil
}

// Redo reports what OpenDir's redo of the journal did.
func (d *Dir) Redo() RedoReport { return d.redo }

// Path is the directory's path.
func (d *Dir) Path() string { return d.path }

// Close writes out the journal, checkpoints it into the session files,
// removes it and releases the directory lock. Logs must be closed first;
// writes after Close fail with ErrClosed. An error leaves the journal for
// the next OpenDir to redo.
func (d *Dir) Close() error {
	if d.lock == nil {
		return nil
	}
	err := d.j.close()
	if d.syncer != nil {
		err = errors.Join(err, d.syncer.Close())
	}
	err = errors.Join(err, d.lock.Close())
	d.lock = nil
	return err
}

// LivePath and DonePath name a session's log files.
func (d *Dir) LivePath(id string) string { return filepath.Join(d.path, id+extLive) }

// DonePath is where a finished session's log lives.
func (d *Dir) DonePath(id string) string { return filepath.Join(d.path, id+extDone) }

// State of a session's log.
type State int

// States a session id can be in.
const (
	StateNone State = iota
	StateLive
	StateDone
)

// State reports whether id has a live log, a finished one, or none.
func (d *Dir) State(id string) (State, error) {
	if err := ValidID(id); err != nil {
		return StateNone, err
	}
	if _, err := d.fs.Stat(d.DonePath(id)); err == nil {
		return StateDone, nil
	}
	if _, err := d.fs.Stat(d.LivePath(id)); err == nil {
		return StateLive, nil
	}
	return StateNone, nil
}

// Live lists the ids of unfinished sessions, sorted.
func (d *Dir) Live() ([]string, error) {
	ents, err := d.fs.ReadDir(d.path)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", d.path, err)
	}
	var ids []string
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasSuffix(name, extLive) {
			continue
		}
		id := strings.TrimSuffix(name, extLive)
		if ValidID(id) == nil {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// Finished lists the ids of finished sessions, sorted.
func (d *Dir) Finished() ([]string, error) {
	ents, err := d.fs.ReadDir(d.path)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", d.path, err)
	}
	var ids []string
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), extDone)
		if ok && e.Type().IsRegular() && ValidID(id) == nil {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// Log is one session's open log. It is written by one goroutine; the
// mutex guards it against the checkpointer, which writes its pending
// bytes meanwhile.
//
// A log holds no file descriptor between calls. What it appends goes to
// the journal at once and to its session file later, at the segment's
// checkpoint (or on Finish, Close, Open, Read): a write per input to
// each of thousands of files, and a descriptor per session, cost more
// than the journal's one fsync saves (docs/journal.md).
type Log struct {
	dir  *Dir
	id   string
	path string

	mu     sync.Mutex
	size   int64
	seq    uint64
	closed bool
	ended  bool // an end record is already written
	buf    []byte
	held   []byte // an encoded step record waiting for the next write
	// pending holds bytes journaled but not yet written to the file; size
	// counts them.
	pending []byte
}

// ID is the session id.
func (l *Log) ID() string { return l.id }

// Seq is the number of inputs logged so far.
func (l *Log) Seq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

// Size is the log's length in bytes.
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.size
}

// Path is the log file's current path.
func (l *Log) Path() string { return l.path }

// Create starts a new log for h.SessionID and syncs it (and the directory
// entry) before returning. A live log left without a complete header (a
// crash during an earlier Create, which never returned) held nothing
// acknowledged and is replaced.
func (d *Dir) Create(h Header) (*Log, error) {
	if err := ValidID(h.SessionID); err != nil {
		return nil, err
	}
	h.Format = FormatVersion
	h.StartWall = h.StartWall.UTC()
	if !d.claim(h.SessionID) {
		return nil, fmt.Errorf("session %s: %w", h.SessionID, ErrExists)
	}
	// The ledger knows the id: acknowledged bytes of a log by that name
	// are lost (or it is damaged). A new log under it would inherit that
	// verdict at the next start.
	if e, ok := d.led.get(h.SessionID); ok {
		d.release(h.SessionID)
		if err := checkAcked(h.SessionID, ledgerEntry{size: e.size, damage: cmp.Or(e.damage, "acknowledged bytes of a log of this id are lost")}, nil); err != nil {
			return nil, err
		}
	}
	// After the claim: a Finish of this id renames before it lets go.
	if _, err := d.fs.Stat(d.DonePath(h.SessionID)); err == nil {
		d.release(h.SessionID)
		return nil, fmt.Errorf("session %s: %w", h.SessionID, ErrFinished)
	}
	path := d.LivePath(h.SessionID)
	f, err := d.openRetrying(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		if rerr := d.removeUnborn(h.SessionID); rerr != nil {
			d.release(h.SessionID)
			return nil, fmt.Errorf("session %s: %w", h.SessionID, ErrExists)
		}
		f, err = d.openRetrying(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	}
	if errors.Is(err, fs.ErrExist) {
		d.release(h.SessionID)
		return nil, fmt.Errorf("session %s: %w", h.SessionID, ErrExists)
	}
	if err != nil {
		d.release(h.SessionID)
		return nil, fmt.Errorf("creating log: %w", err)
	}
	l := &Log{dir: d, id: h.SessionID, path: path}
	buf := append(make([]byte, 0, 512), Magic...)
	buf, err = appendRecord(buf, &Record{Kind: KindHeader, Header: &h})
	if err == nil && len(buf) > maxUnborn {
		err = fmt.Errorf("header of %d bytes exceeds %d", len(buf)-len(Magic)-frame, MaxHeader)
	}
	if err == nil {
		_, err = f.Write(buf)
	}
	if err == nil {
		err = l.syncFile(f, SyncCreate)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.fs.SyncDir(d.path)
	}
	if err == nil {
		// An empty entry at the header's end: the journal, and then the
		// ledger, know the header was acknowledged, so a header cut
		// later is found out instead of read as an unfinished Create.
		var b *batch
		if b, err = d.j.add(h.SessionID, int64(len(buf)), nil, true); err == nil {
			err = b.wait()
		}
	}
	if err != nil {
		d.fs.Remove(path)
		d.release(h.SessionID)
		return nil, fmt.Errorf("creating log %s: %w", h.SessionID, err)
	}
	l.size = int64(len(buf))
	return l, nil
}

// removeUnborn deletes id's live log if it is unborn (see ErrUnborn);
// otherwise it returns an error and leaves the file alone.
func (d *Dir) removeUnborn(id string) error {
	data, err := readAll(d.fs, d.LivePath(id))
	if err != nil {
		return err
	}
	if _, err := parse(data, false); !errors.Is(err, ErrUnborn) {
		return errors.New("not unborn")
	}
	if len(data) > 0 {
		// Nothing in it was acknowledged, but bytes are never dropped
		// without a copy.
		if _, err := d.Preserve(id, err, time.Now()); err != nil {
			return err
		}
	}
	if err := d.fs.Remove(d.LivePath(id)); err != nil {
		return err
	}
	return d.fs.SyncDir(d.path)
}

// Open recovers a live log for appending: it reads every valid record and
// truncates a torn tail (reported in Recovered.Tail). Damage anywhere else
// is a *DamageError and leaves the file as it was; an unborn log (see
// ErrUnborn) is removed and reported as ErrNotFound.
func (d *Dir) Open(id string) (*Log, *Recovered, error) {
	if err := ValidID(id); err != nil {
		return nil, nil, err
	}
	if !d.claim(id) {
		return nil, nil, fmt.Errorf("session %s: log is already open", id)
	}
	if err := d.gapError(id); err != nil {
		d.release(id)
		return nil, nil, err
	}
	if err := d.drainPending(id); err != nil {
		d.release(id)
		return nil, nil, err
	}
	l, rec, err := d.open(id)
	if err != nil {
		d.release(id)
	}
	return l, rec, err
}

func (d *Dir) open(id string) (*Log, *Recovered, error) {
	path := d.LivePath(id)
	f, err := d.openRetrying(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if _, e := d.fs.Stat(d.DonePath(id)); e == nil {
			return nil, nil, fmt.Errorf("session %s: %w", id, ErrFinished)
		}
		return nil, nil, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("opening log: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, nil, fmt.Errorf("log %s: reading: %w", id, err)
	}
	rec, err := parse(data, false)
	if errors.Is(err, ErrUnborn) {
		if e, ok := d.led.get(id); ok {
			// Not a Create that never returned: the ledger says bytes of
			// it were acknowledged, so this is a header cut or zeroed.
			lerr := checkAcked(id, ledgerEntry{size: max(e.size, 1), damage: e.damage}, &Recovered{Size: 0})
			d.markDamaged(id, lerr)
			return nil, nil, lerr
		}
		if rerr := d.removeUnborn(id); rerr != nil {
			return nil, nil, fmt.Errorf("log %s: removing unborn log: %w", id, rerr)
		}
		return nil, nil, fmt.Errorf("session %s: %w (%w)", id, ErrNotFound, err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("log %s: %w", id, err)
	}
	if rec.Header.SessionID != id {
		return nil, nil, fmt.Errorf("log %s: %w", id, &DamageError{Offset: int64(len(Magic)), Record: 0, NextValid: -1,
			Reason: fmt.Sprintf("header names session %q", rec.Header.SessionID)})
	}
	if err := d.ledgerDamage(id, rec); err != nil {
		// Recorded at once: the cut below must never happen to it, and
		// the next start must find it failed without the evidence.
		d.markDamaged(id, err)
		return nil, nil, err
	}
	if rec.Tail != nil {
		if err := f.Truncate(rec.Size); err != nil {
			return nil, nil, fmt.Errorf("log %s: truncating torn tail: %w", id, err)
		}
		if err := f.Sync(); err != nil {
			return nil, nil, fmt.Errorf("log %s: syncing truncation: %w", id, err)
		}
	}
	l := &Log{dir: d, id: id, path: path, size: rec.Size, seq: uint64(len(rec.Inputs)), ended: rec.End != nil}
	return l, rec, nil
}

// Read reads id's log, live or finished, without changing it. A finished
// log must be whole: any invalid byte in it is damage.
func (d *Dir) Read(id string) (*Recovered, error) {
	if err := ValidID(id); err != nil {
		return nil, err
	}
	if err := d.gapError(id); err != nil {
		return nil, err
	}
	if err := d.drainPending(id); err != nil {
		return nil, err
	}
	path, finished := d.DonePath(id), true
	data, err := readAll(d.fs, path)
	if errors.Is(err, fs.ErrNotExist) {
		path, finished = d.LivePath(id), false
		data, err = readAll(d.fs, path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("log %s: %w", id, err)
	}
	rec, err := parse(data, finished)
	if errors.Is(err, ErrUnborn) {
		if e, ok := d.led.get(id); ok {
			return nil, checkAcked(id, ledgerEntry{size: max(e.size, 1), damage: e.damage}, &Recovered{Size: 0})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("log %s: %w", filepath.Base(path), err)
	}
	if !finished {
		if err := d.ledgerDamage(id, rec); err != nil {
			d.markDamaged(id, err)
			return nil, err
		}
	}
	return rec, nil
}

// AppendInput logs one input and syncs it; only then may the caller apply
// it. It returns the input's sequence number (1-based).
func (l *Log) AppendInput(in engine.Input) (uint64, error) { return l.Append(in, true) }

// Append logs one input. With sync it is durable when Append returns.
// Without, it is written (so it precedes anything logged later) but only
// becomes durable with the next synced record; callers use that for
// inputs they can re-derive after a crash.
//
// The bytes go to the journal, and to the session file later (they are
// pending until then); a synced Append waits, without holding the log's
// lock, for the journal batch that carries them.
func (l *Log) Append(in engine.Input, sync bool) (uint64, error) {
	l.mu.Lock()
	seq := l.seq + 1
	b, err := l.writeLocked(&Record{Kind: KindInput, Seq: seq, Input: &in}, sync)
	if err != nil {
		l.mu.Unlock()
		return 0, err
	}
	l.seq = seq
	l.mu.Unlock()
	if sync {
		if err := b.wait(); err != nil {
			return 0, fmt.Errorf("log %s: sync: %w", l.id, err)
		}
	}
	return seq, nil
}

// AppendStep records the digests of the effects input seq produced. It is
// held in memory and written with the next record (one write call for
// both), or on Close; losing it in a crash only leaves that input
// unverified.
func (l *Log) AppendStep(seq uint64, st Step) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	var err error
	l.held, err = appendRecord(l.held[:0], &Record{Kind: KindStep, Seq: seq, Step: &st})
	if err != nil {
		l.held = l.held[:0]
		return fmt.Errorf("log %s: %w", l.id, err)
	}
	return nil
}

// Flush writes the held step record, if any, and syncs it: for the one
// step record recovery cannot do without (the one that places a
// session's clock on the wall after it waited for prepared lines). It
// then writes the pending bytes to the session file (without an fsync:
// the journal holds them), so that a tool reading the file, such as
// baton replay, sees every input so far.
func (l *Log) Flush() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	if len(l.held) > 0 && !l.ended {
		b, err := l.writeLocked(nil, true)
		l.mu.Unlock()
		if err != nil {
			return err
		}
		if err := b.wait(); err != nil {
			return fmt.Errorf("log %s: sync: %w", l.id, err)
		}
		l.mu.Lock()
	}
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	return l.drainPendingLocked()
}

// Finish writes the end record, syncs, closes the log and renames it to
// ID.done, read-only. The log cannot be written afterwards. A log
// recovered with its end record already written (a crash before the
// rename) is only synced, closed and renamed.
//
// A finished log is read without the journal (redo skips it), so Finish
// syncs the file itself before the rename.
func (l *Log) Finish(end End) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	// The id stays claimed until the log is renamed, so no Open or Create
	// of it can slip in between; it is let go on every path.
	defer l.dir.release(l.id)
	end.Wall = end.Wall.UTC()
	if !l.ended {
		b, err := l.writeLocked(&Record{Kind: KindEnd, End: &end}, true)
		if err == nil {
			err = b.wait()
		}
		if err != nil {
			l.closeLocked()
			return fmt.Errorf("finishing log %s: %w", l.id, err)
		}
		l.ended = true
	}
	f, err := l.dir.openRetrying(l.path, os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		err = l.writePendingLocked(f)
		if err == nil {
			err = l.syncFile(f, SyncFinish)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		// Everything is in the journal; the session stays live (the
		// checkpointer still writes what is pending) and the next start
		// finishes it from its end record.
		l.closeLocked()
		return fmt.Errorf("finishing log %s: %w", l.id, err)
	}
	l.closeLocked()
	done := l.dir.DonePath(l.id)
	// Rename first: a live log made read-only by a chmod that reached the
	// disk without its rename could not be reopened for writing.
	if err := l.dir.fs.Rename(l.path, done); err != nil {
		return fmt.Errorf("finishing log %s: %w", l.id, err)
	}
	l.path = done
	if err := l.dir.fs.Chmod(done, 0o400); err != nil {
		return fmt.Errorf("finishing log %s: %w", l.id, err)
	}
	if err := l.dir.fs.SyncDir(l.dir.path); err != nil {
		return fmt.Errorf("finishing log %s: %w", l.id, err)
	}
	l.dir.forget(l.id)
	return nil
}

// Close closes the log without ending the session; it stays live and is
// recovered on the next start. A held step record is written but not
// waited for.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	var err error
	if len(l.held) > 0 && !l.ended {
		_, err = l.writeLocked(nil, false)
	}
	// Bytes that cannot be written now stay with the directory: the
	// journal holds them, and the checkpointer or the next Open writes
	// them.
	_ = l.drainPendingLocked()
	l.closed = true
	l.dir.release(l.id)
	return err
}

// closeLocked marks the log closed; the caller lets go of the id.
func (l *Log) closeLocked() { l.closed = true }

// writeLocked adds any held step record and then r (nil: only the held
// record) to the journal as one entry, and to the bytes pending for the
// file. It returns the batch to wait on when sync is asked.
func (l *Log) writeLocked(r *Record, sync bool) (*batch, error) {
	if l.closed {
		return nil, ErrClosed
	}
	if r != nil {
		if l.ended {
			return nil, fmt.Errorf("log %s: %s record after the end: %w", l.id, r.Kind, ErrClosed)
		}
	}
	if err := l.dir.j.usable(); err != nil {
		// Nothing more may reach the file that the journal will not hold.
		return nil, fmt.Errorf("log %s: %w", l.id, err)
	}
	l.buf = append(l.buf[:0], l.held...)
	if r != nil {
		var err error
		l.buf, err = appendRecord(l.buf, r)
		if err != nil {
			return nil, fmt.Errorf("log %s: %w", l.id, err)
		}
	}
	// Listed as pending before the journal can carry the bytes: a
	// checkpoint of the segment that holds them finds the log here, and
	// waits for its lock, before it deletes the segment. The bytes join
	// pending only once the journal holds them: nothing may reach the
	// file that it does not.
	listed := len(l.pending) == 0
	if listed {
		l.dir.setPending(l, true)
	}
	b, err := l.dir.j.add(l.id, l.size, l.buf, sync)
	if err != nil {
		if listed {
			l.dir.setPending(l, false)
		}
		return nil, fmt.Errorf("log %s: %w", l.id, err)
	}
	l.pending = append(l.pending, l.buf...)
	l.size += int64(len(l.buf))
	l.held = l.held[:0]
	if cap(l.buf) > 64<<10 {
		l.buf = nil // do not pin a huge buffer in an idle session
	}
	return b, nil
}

// writeAt writes p to f, whose length is size. A partial write leaves a
// torn record; it is cut so the next record does not land after garbage.
func writeAt(f File, p []byte, size int64) error {
	n, err := f.Write(p)
	if err != nil && n > 0 {
		if terr := f.Truncate(size); terr != nil {
			err = errors.Join(err, terr)
		}
	}
	return err
}

// writePendingLocked writes the pending bytes to f, the session file
// opened for appending.
func (l *Log) writePendingLocked(f File) error {
	if len(l.pending) == 0 {
		return nil
	}
	if err := writeAt(f, l.pending, l.size-int64(len(l.pending))); err != nil {
		return fmt.Errorf("log %s: writing %d journaled bytes to its file: %w", l.id, len(l.pending), err)
	}
	// A small buffer is kept for the next checkpoint's bytes: most
	// sessions add a few hundred between two.
	l.pending = l.pending[:0]
	if cap(l.pending) > 1<<10 {
		l.pending = nil
	}
	l.dir.setPending(l, false)
	return nil
}

// drainPendingLocked writes the pending bytes to the file. A poisoned
// journal writes nothing: the batch that failed may be among the bytes,
// and nothing may reach a file that the journal does not durably hold.
func (l *Log) drainPendingLocked() error {
	if len(l.pending) == 0 {
		return nil
	}
	if err := l.dir.j.usable(); err != nil && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("log %s: %w", l.id, err)
	}
	f, err := l.dir.openRetrying(l.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("log %s: writing %d journaled bytes to its file: %w", l.id, len(l.pending), err)
	}
	err = l.writePendingLocked(f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("log %s: %w", l.id, cerr)
	}
	return err
}

// openRetrying opens name. Out of descriptors (sockets share the limit
// with the transient opens of session files), it waits a little and
// tries again rather than fail: descriptors come back as other opens
// close.
func (d *Dir) openRetrying(name string, flag int, perm fs.FileMode) (File, error) {
	for attempt := 1; ; attempt++ {
		f, err := d.fs.OpenFile(name, flag, perm)
		if !tooManyFiles(err) || attempt >= openAttempts {
			return f, err
		}
		time.Sleep(time.Duration(min(attempt, 20)) * time.Millisecond)
	}
}

func (d *Dir) setPending(l *Log, on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !on {
		if d.pending[l.id] == l {
			delete(d.pending, l.id)
		}
		return
	}
	if d.pending == nil {
		d.pending = map[string]*Log{}
	}
	d.pending[l.id] = l
}

// pendingLog is id's log if it has bytes not yet in its file.
func (d *Dir) pendingLog(id string) *Log {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pending[id]
}

// drainPending writes id's pending bytes, if any, to its file.
func (d *Dir) drainPending(id string) error {
	l := d.pendingLog(id)
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drainPendingLocked()
}

// checkpointFile makes id's live file hold everything the journal holds
// for it, and with sync makes it durable by itself. The pending bytes are
// written under the log's lock (a write to the page cache); the fsync
// runs outside it, so the session's appends never wait for it. A log
// already renamed to .done was synced by Finish first.
func (d *Dir) checkpointFile(id string, sync bool) error {
	var f File
	var err error
	l := d.pendingLog(id)
	if l != nil {
		l.mu.Lock()
		if len(l.pending) == 0 {
			// Written meanwhile (a Finish, say, which also renamed the
			// file and made it read-only).
			l.mu.Unlock()
			l = nil
		}
	}
	if l != nil {
		f, err = d.openRetrying(l.path, os.O_WRONLY|os.O_APPEND, 0)
		if err == nil {
			if err = l.writePendingLocked(f); err != nil {
				f.Close()
			}
		}
		l.mu.Unlock()
	} else if sync {
		f, err = d.openRetrying(d.LivePath(id), os.O_RDONLY, 0)
	} else {
		return nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checkpoint of %s: %w", id, err)
	}
	if sync {
		start := time.Now()
		if err = f.Sync(); err != nil {
			err = &syncError{err}
		}
		d.opt.onSync(SyncCheckpoint, start)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("checkpoint of %s: %w", id, err)
	}
	return nil
}

// syncError is a failed sync, as opposed to a file that could not be
// opened or written: after it nothing written before may be trusted.
type syncError struct{ error }

func (e *syncError) Unwrap() error { return e.error }

func (l *Log) syncFile(f File, kind SyncKind) error {
	if l.dir.opt.NoSync {
		return nil
	}
	start := time.Now()
	err := f.Sync()
	l.dir.opt.onSync(kind, start)
	return err
}

// SyncKind says which sync Options.OnSync is told of.
type SyncKind string

const (
	// SyncJournal is a journal batch's fsync: inputs wait for it.
	SyncJournal SyncKind = "journal"
	// SyncCreate is the fsync of a new log's header (Create waits).
	SyncCreate SyncKind = "create"
	// SyncFinish is the fsync of an ending log before its rename.
	SyncFinish SyncKind = "finish"
	// SyncCheckpoint is a checkpoint's sync of session files (nobody
	// waits for it).
	SyncCheckpoint SyncKind = "checkpoint"
)

func (o Options) onSync(kind SyncKind, start time.Time) {
	if o.OnSync != nil {
		o.OnSync(kind, time.Since(start))
	}
}
