// Package wal is the write-ahead log of live sessions: one file per session
// holding a header and then every engine input in the order it was applied.
// Because the engine is deterministic, folding the log through a new
// engine.Session rebuilds the session exactly; that one operation is crash
// recovery, `baton replay` and nondeterminism detection.
//
// # File format
//
// A log starts with the 8-byte magic "BTNWAL1\n" and continues with
// records, each framed as
//
//	length  uint32 little endian, bytes of payload
//	crc     uint32 little endian, CRC-32C (Castagnoli) of payload
//	payload JSON object (Record)
//
// The first record is the header. Input records are written and synced
// before the input is applied or acknowledged (a host may choose to leave
// inputs it can re-derive unsynced until the next synced one: see
// Log.Append). After applying, a step record holds short digests of the
// effects the input produced; it is written together with the next
// record, and a lost step only means that input goes unverified. A
// finished session gets an end record and its file is renamed from
// ID.wal to ID.done and made read-only.
//
// A torn or corrupt tail (power loss mid-write, a partial page) is detected
// by length and CRC, reported, and truncated; it is never fatal.
package wal

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/batonhq/baton/engine"
)

// Magic starts every log file.
const Magic = "BTNWAL1\n"

// FormatVersion is the header's format number.
const FormatVersion = 1

// MaxRecord bounds one record's payload. A larger length field can only be
// corruption, so the reader stops there instead of allocating it.
const MaxRecord = 4 << 20

const (
	extLive = ".wal"
	extDone = ".done"
	frame   = 8
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

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

// Record kinds.
const (
	KindHeader = "header"
	KindInput  = "input"
	KindStep   = "step"
	KindEnd    = "end"
)

// Record is one log entry; exactly the field matching Kind is set.
type Record struct {
	Kind   string        `json:"k"`
	Seq    uint64        `json:"seq,omitempty"`
	Header *Header       `json:"header,omitempty"`
	Input  *engine.Input `json:"in,omitempty"`
	Step   *Step         `json:"step,omitempty"`
	End    *End          `json:"end,omitempty"`
}

// Header identifies what a session ran on, so a replay on a different
// engine or pack is reported instead of trusted.
type Header struct {
	Format   int    `json:"format"`
	Engine   string `json:"engine"`
	Pack     string `json:"pack"`
	PackRef  string `json:"pack_ref"`
	PackHash string `json:"pack_hash"`
	// Options are the engine options the session was built with.
	Options     engine.Options `json:"options"`
	SessionID   string         `json:"session_id"`
	CandidateID string         `json:"candidate_id"`
	// StartWall is the wall time of engine time 0.
	StartWall time.Time `json:"start_wall"`
	// Host is the host's own session options (webhooks, playback mode),
	// opaque to the log but needed to carry on after recovery.
	Host json.RawMessage `json:"host,omitempty"`
}

// Step holds digests of the effects one input produced.
type Step struct {
	Effects []EffectDigest `json:"effects"`
	// Err is the engine's error for the input, if it refused it.
	Err string `json:"err,omitempty"`
}

// EffectDigest names one effect and hashes its full JSON form.
type EffectDigest struct {
	T    int64             `json:"t"`
	Type engine.EffectType `json:"type"`
	ID   string            `json:"id,omitempty"`
	Hash string            `json:"h"`
}

// End closes a finished session.
type End struct {
	Reason string    `json:"reason"`
	T      int64     `json:"t_ms"`
	Wall   time.Time `json:"wall"`
}

// Digest summarizes effects for a step record. Effects are plain data with
// a fixed field order and no maps, so their JSON is canonical.
func Digest(effects []engine.Effect, stepErr error) Step {
	st := Step{Effects: make([]EffectDigest, len(effects))}
	for i := range effects {
		st.Effects[i] = DigestEffect(&effects[i])
	}
	if stepErr != nil {
		st.Err = stepErr.Error()
	}
	return st
}

// DigestEffect summarizes one effect.
func DigestEffect(e *engine.Effect) EffectDigest {
	b, err := json.Marshal(e)
	if err != nil {
		// An Effect is plain strings, ints and bools: Marshal cannot fail.
		panic(fmt.Sprintf("wal: encoding effect: %v", err))
	}
	sum := sha256.Sum256(b)
	return EffectDigest{T: e.T, Type: e.Type, ID: e.ID, Hash: hex.EncodeToString(sum[:8])}
}

// Options tune a data directory.
type Options struct {
	// OnSync, if set, is told how long each fsync took.
	OnSync func(time.Duration)
	// MaxOpen bounds how many live logs keep a file descriptor open; the
	// least recently written are closed and reopened on their next write.
	// Zero means no bound.
	MaxOpen int
	// NoSync skips fsync. Only for benchmarks that measure everything else.
	NoSync bool
}

// Dir is a data directory of session logs.
type Dir struct {
	path string
	opt  Options
	pool *fdPool
	lock *os.File
}

// OpenDir opens (creating it 0700 if needed) a data directory and locks it
// so that two servers never write the same logs.
func OpenDir(path string, opt Options) (*Dir, error) {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	lock, err := lockDir(path)
	if err != nil {
		return nil, err
	}
	return &Dir{path: path, opt: opt, pool: newPool(opt.MaxOpen), lock: lock}, nil
}

// Path is the directory's path.
func (d *Dir) Path() string { return d.path }

// Close releases the directory lock. Logs must be closed first.
func (d *Dir) Close() error {
	if d.lock == nil {
		return nil
	}
	err := d.lock.Close()
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
	if _, err := os.Stat(d.DonePath(id)); err == nil {
		return StateDone, nil
	}
	if _, err := os.Stat(d.LivePath(id)); err == nil {
		return StateLive, nil
	}
	return StateNone, nil
}

// Live lists the ids of unfinished sessions, sorted.
func (d *Dir) Live() ([]string, error) {
	ents, err := os.ReadDir(d.path)
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

// Log is one session's open log. It is written by one goroutine; the
// mutex only guards against the descriptor pool closing it meanwhile.
type Log struct {
	dir  *Dir
	id   string
	path string

	mu     sync.Mutex
	f      *os.File
	size   int64
	seq    uint64
	closed bool
	ended  bool // an end record is already written
	buf    []byte
	held   []byte // an encoded step record waiting for the next write

	// pool bookkeeping, guarded by the pool's mutex.
	prev, next *Log
	inPool     bool
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
// entry) before returning.
func (d *Dir) Create(h Header) (*Log, error) {
	if err := ValidID(h.SessionID); err != nil {
		return nil, err
	}
	if _, err := os.Stat(d.DonePath(h.SessionID)); err == nil {
		return nil, fmt.Errorf("session %s: %w", h.SessionID, ErrFinished)
	}
	h.Format = FormatVersion
	h.StartWall = h.StartWall.UTC()
	path := d.LivePath(h.SessionID)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("session %s: %w", h.SessionID, ErrExists)
	}
	if err != nil {
		return nil, fmt.Errorf("creating log: %w", err)
	}
	l := &Log{dir: d, id: h.SessionID, path: path, f: f}
	buf := append(make([]byte, 0, 512), Magic...)
	buf, err = appendRecord(buf, &Record{Kind: KindHeader, Header: &h})
	if err == nil {
		_, err = f.Write(buf)
	}
	if err == nil {
		err = l.syncFile(f)
	}
	if err == nil {
		err = syncDir(d.path)
	}
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("creating log %s: %w", h.SessionID, err)
	}
	l.size = int64(len(buf))
	d.pool.add(l)
	return l, nil
}

// Open recovers a live log for appending: it reads every valid record and
// truncates a torn or corrupt tail (reported in Recovered.Tail).
func (d *Dir) Open(id string) (*Log, *Recovered, error) {
	if err := ValidID(id); err != nil {
		return nil, nil, err
	}
	path := d.LivePath(id)
	// O_APPEND: after a tail is truncated, writes must land at the new end.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if errors.Is(err, os.ErrNotExist) {
		if _, e := os.Stat(d.DonePath(id)); e == nil {
			return nil, nil, fmt.Errorf("session %s: %w", id, ErrFinished)
		}
		return nil, nil, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("opening log: %w", err)
	}
	rec, err := Read(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("log %s: %w", id, err)
	}
	if rec.Header.SessionID != id {
		f.Close()
		return nil, nil, fmt.Errorf("log %s: header names session %q", id, rec.Header.SessionID)
	}
	if rec.Tail != nil {
		if err := f.Truncate(rec.Size); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("log %s: truncating corrupt tail: %w", id, err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("log %s: syncing truncation: %w", id, err)
		}
	}
	l := &Log{dir: d, id: id, path: path, f: f, size: rec.Size, seq: uint64(len(rec.Inputs)), ended: rec.End != nil}
	d.pool.add(l)
	return l, rec, nil
}

// AppendInput logs one input and syncs it; only then may the caller apply
// it. It returns the input's sequence number (1-based).
func (l *Log) AppendInput(in engine.Input) (uint64, error) { return l.Append(in, true) }

// Append logs one input. With sync it is durable when Append returns.
// Without, it is written (so it precedes anything logged later) but only
// becomes durable with the next synced record; callers use that for
// inputs they can re-derive after a crash.
func (l *Log) Append(in engine.Input, sync bool) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	seq := l.seq + 1
	if err := l.writeLocked(&Record{Kind: KindInput, Seq: seq, Input: &in}, sync); err != nil {
		return 0, err
	}
	l.seq = seq
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

// Finish writes the end record, syncs, closes the log and renames it to
// ID.done, read-only. The log cannot be written afterwards. A log
// recovered with its end record already written (a crash before the
// rename) is only closed and renamed.
func (l *Log) Finish(end End) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	end.Wall = end.Wall.UTC()
	if !l.ended {
		if err := l.writeLocked(&Record{Kind: KindEnd, End: &end}, true); err != nil {
			return err
		}
		l.ended = true
	}
	l.closeLocked()
	done := l.dir.DonePath(l.id)
	if err := os.Chmod(l.path, 0o400); err != nil {
		return fmt.Errorf("finishing log %s: %w", l.id, err)
	}
	if err := os.Rename(l.path, done); err != nil {
		return fmt.Errorf("finishing log %s: %w", l.id, err)
	}
	l.path = done
	if err := syncDir(l.dir.path); err != nil {
		return fmt.Errorf("finishing log %s: %w", l.id, err)
	}
	return nil
}

// Close closes the log without ending the session; it stays live and is
// recovered on the next start.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	var err error
	if len(l.held) > 0 && !l.ended {
		err = l.writeLocked(nil, false)
	}
	if l.f != nil {
		err = errors.Join(err, l.f.Close())
		l.f = nil
	}
	l.closed = true
	l.dir.pool.remove(l)
	return err
}

func (l *Log) closeLocked() {
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
	l.closed = true
	l.dir.pool.remove(l)
}

// writeLocked writes any held step record and then r (nil: only the held
// record) in one write call, and syncs if asked.
func (l *Log) writeLocked(r *Record, sync bool) error {
	if l.closed {
		return ErrClosed
	}
	kind := "step"
	if r != nil {
		kind = r.Kind
		if l.ended {
			return fmt.Errorf("log %s: %s record after the end: %w", l.id, r.Kind, ErrClosed)
		}
	}
	l.buf = append(l.buf[:0], l.held...)
	if r != nil {
		var err error
		l.buf, err = appendRecord(l.buf, r)
		if err != nil {
			return fmt.Errorf("log %s: %w", l.id, err)
		}
	}
	f, err := l.fileLocked()
	if err != nil {
		return err
	}
	n, err := f.Write(l.buf)
	if err != nil {
		// A partial write leaves a torn record; cut it so the next record
		// does not land after garbage.
		if n > 0 {
			if terr := f.Truncate(l.size); terr != nil {
				err = errors.Join(err, terr)
			}
		}
		return fmt.Errorf("log %s: writing %s record: %w", l.id, kind, err)
	}
	l.size += int64(n)
	l.held = l.held[:0]
	if cap(l.buf) > 64<<10 {
		l.buf = nil // do not pin a huge buffer in an idle session
	}
	if sync {
		if err := l.syncFile(f); err != nil {
			return fmt.Errorf("log %s: sync: %w", l.id, err)
		}
	}
	return nil
}

func (l *Log) fileLocked() (*os.File, error) {
	if l.f != nil {
		l.dir.pool.touch(l)
		return l.f, nil
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0)
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		// Out of descriptors (sockets share the limit): close some idle
		// logs and try once more rather than fail the session.
		l.dir.pool.shed(l, 64)
		f, err = os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("log %s: reopening: %w", l.id, err)
	}
	l.f = f
	l.dir.pool.add(l)
	return f, nil
}

func (l *Log) syncFile(f *os.File) error {
	if l.dir.opt.NoSync {
		return nil
	}
	start := time.Now()
	err := datasync(f)
	if l.dir.opt.OnSync != nil {
		l.dir.opt.OnSync(time.Since(start))
	}
	return err
}

// appendRecord frames r onto buf.
func appendRecord(buf []byte, r *Record) ([]byte, error) {
	payload, err := json.Marshal(r)
	if err != nil {
		return buf, fmt.Errorf("encoding %s record: %w", r.Kind, err)
	}
	if len(payload) > MaxRecord {
		return buf, fmt.Errorf("%s record of %d bytes exceeds %d", r.Kind, len(payload), MaxRecord)
	}
	var hdr [frame]byte
	binary.LittleEndian.PutUint32(hdr[0:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(hdr[4:8], crc32.Checksum(payload, castagnoli))
	buf = append(buf, hdr[:]...)
	return append(buf, payload...), nil
}

// Recovered is everything valid read from a log.
type Recovered struct {
	Header Header
	// Inputs in order; Inputs[i] has sequence number i+1.
	Inputs []engine.Input
	// Steps[i] is input i+1's step record, or nil where it was lost.
	Steps []*Step
	// End is set for a finished session.
	End *End
	// Size is the offset just past the last valid record.
	Size int64
	// Tail describes a torn or corrupt tail that was dropped, if any.
	Tail *TailError
}

// TailError describes the invalid bytes at the end of a log.
type TailError struct {
	Offset int64 // where the first invalid record starts
	Bytes  int64 // how many bytes were dropped
	Reason string
	// Torn is true when the file simply ends mid-record (an interrupted
	// write); false means a complete record failed its checks.
	Torn bool
}

func (e *TailError) Error() string {
	kind := "corrupt"
	if e.Torn {
		kind = "torn"
	}
	return fmt.Sprintf("%s tail at offset %d (%d bytes dropped): %s", kind, e.Offset, e.Bytes, e.Reason)
}

// ReadFile reads a log file (live or finished) without changing it.
func ReadFile(path string) (*Recovered, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rec, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rec, nil
}

// Read parses a log. Invalid records at the end are reported in Tail, not
// as an error; an error means there is no usable header.
func Read(r io.Reader) (*Recovered, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading log: %w", err)
	}
	return Parse(data)
}

// Parse parses a whole log held in memory.
func Parse(data []byte) (*Recovered, error) {
	if len(data) < len(Magic) || string(data[:len(Magic)]) != Magic {
		return nil, errors.New("not a baton log (bad magic)")
	}
	rec := &Recovered{}
	off := int64(len(Magic))
	total := int64(len(data))
	sawHeader := false
	fail := func(torn bool, format string, args ...any) {
		rec.Tail = &TailError{Offset: off, Bytes: total - off, Reason: fmt.Sprintf(format, args...), Torn: torn}
	}
	for off < total {
		if total-off < frame {
			fail(true, "%d bytes where a record frame needs %d", total-off, frame)
			break
		}
		n := int64(binary.LittleEndian.Uint32(data[off : off+4]))
		sum := binary.LittleEndian.Uint32(data[off+4 : off+8])
		if n == 0 || n > MaxRecord {
			fail(false, "record length %d out of range", n)
			break
		}
		if total-off-frame < n {
			fail(true, "record of %d bytes cut short at %d", n, total-off-frame)
			break
		}
		payload := data[off+frame : off+frame+n]
		if crc32.Checksum(payload, castagnoli) != sum {
			fail(false, "checksum mismatch")
			break
		}
		var r Record
		dec := json.NewDecoder(bytes.NewReader(payload))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			fail(false, "record payload: %v", err)
			break
		}
		if err := rec.add(&r, sawHeader); err != nil {
			fail(false, "%v", err)
			break
		}
		sawHeader = true
		off += frame + n
		rec.Size = off
	}
	if !sawHeader {
		if rec.Tail != nil {
			return nil, fmt.Errorf("no valid header: %w", rec.Tail)
		}
		return nil, errors.New("no header record")
	}
	return rec, nil
}

// add checks one record against what came before and keeps it.
func (rec *Recovered) add(r *Record, sawHeader bool) error {
	if !sawHeader {
		if r.Kind != KindHeader || r.Header == nil {
			return fmt.Errorf("first record is %q, not a header", r.Kind)
		}
		if r.Header.Format != FormatVersion {
			return fmt.Errorf("log format %d, this build reads %d", r.Header.Format, FormatVersion)
		}
		if err := ValidID(r.Header.SessionID); err != nil {
			return err
		}
		rec.Header = *r.Header
		return nil
	}
	if rec.End != nil {
		return fmt.Errorf("%s record after the end record", r.Kind)
	}
	switch r.Kind {
	case KindInput:
		if r.Input == nil {
			return errors.New("input record without an input")
		}
		if want := uint64(len(rec.Inputs)) + 1; r.Seq != want {
			return fmt.Errorf("input seq %d, want %d", r.Seq, want)
		}
		rec.Inputs = append(rec.Inputs, *r.Input)
		rec.Steps = append(rec.Steps, nil)
	case KindStep:
		if r.Step == nil {
			return errors.New("step record without a step")
		}
		if r.Seq == 0 || r.Seq != uint64(len(rec.Inputs)) || rec.Steps[r.Seq-1] != nil {
			return fmt.Errorf("step record for input %d after input %d", r.Seq, len(rec.Inputs))
		}
		rec.Steps[r.Seq-1] = r.Step
	case KindEnd:
		if r.End == nil {
			return errors.New("end record without an end")
		}
		rec.End = r.End
	case KindHeader:
		return errors.New("second header record")
	default:
		return fmt.Errorf("unknown record kind %q", r.Kind)
	}
	return nil
}
