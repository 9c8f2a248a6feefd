package wal

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The journal, its segment format and the rule that tells a torn batch
// from damage are described in the package doc (doc.go); docs/journal.md
// tells why it is built this way.

// JournalDir is the folder, inside the data directory, holding the
// journal's segments (NNNNNNNN.jnl) while any are live.
const JournalDir = "journal"

// DefaultSegmentSize is where a journal segment is retired and checkpointed
// when Options.SegmentSize is zero.
const DefaultSegmentSize = 16 << 20

const segExt = ".jnl"

// spareName is the next segment while it is prepared: zeros as long as a
// segment, written and synced ahead of need. A segment whose blocks are
// already allocated and written is synced by fdatasync without a commit
// of the file system's own journal (its size and extents do not change),
// so the journal's fsync does not queue behind the metadata of every
// session file and checkpoint, as an appended file's does. Writes over
// those blocks reach the disk in no set order, which is why batches are
// framed (JournalMagic).
const spareName = "next.spare"

// maxEntry bounds an entry's payload: the longest id, its offset and the
// longest write a log makes (a held step record and one more record).
const maxEntry = 1 + 64 + 8 + 2*(frame+MaxRecord)

// batchLimit starts a write even when no one waits, so that a flood of
// unsynced entries cannot grow a batch without bound.
const batchLimit = 4 << 20

// quickSegment is the size of a segment made while a batch waits for it.
const quickSegment = 64 << 10

// checkpointRetry is how long a checkpoint that could not finish (no
// descriptor for a session file, say) waits before it tries again.
const checkpointRetry = 100 * time.Millisecond

// openAttempts bounds how often the committer retries creating a segment
// while the process is out of descriptors once the directory is closing;
// before that it retries until it gets one.
const openAttempts = 50

// appendEntry frames one journal entry onto buf.
func appendEntry(buf []byte, id string, off int64, data []byte) []byte {
	start := len(buf)
	n := 1 + len(id) + 8 + len(data)
	buf = append(buf, make([]byte, frame)...)
	buf = append(buf, byte(len(id)))
	buf = append(buf, id...)
	buf = binary.LittleEndian.AppendUint64(buf, uint64(off))
	buf = append(buf, data...)
	binary.LittleEndian.PutUint32(buf[start:], uint32(n))
	binary.LittleEndian.PutUint32(buf[start+4:], crc32.Checksum(buf[start+frame:], castagnoli))
	return buf
}

// jentry is one decoded journal entry.
type jentry struct {
	id   string
	off  int64
	data []byte
	// where it was read, for reports
	seg string
	at  int64
}

func decodeEntry(p []byte) (jentry, error) {
	if len(p) < 1 {
		return jentry{}, errors.New("empty entry")
	}
	k := int(p[0])
	if len(p) < 1+k+8 {
		return jentry{}, fmt.Errorf("entry of %d bytes too short for an id of %d and an offset", len(p), k)
	}
	id := string(p[1 : 1+k])
	if err := ValidID(id); err != nil {
		return jentry{}, err
	}
	off := binary.LittleEndian.Uint64(p[1+k:])
	if off < uint64(len(Magic)) || off > 1<<62 {
		return jentry{}, fmt.Errorf("entry for %s at file offset %d, inside the magic or out of range", id, off)
	}
	return jentry{id: id, off: int64(off), data: p[1+k+8:]}, nil
}

// batch is everything queued while the previous fsync ran. Its waiters
// share one channel, closed once the batch is durable or has failed.
type batch struct {
	buf []byte
	ids []string
	// ends[i] is where entry i ends in ids[i]'s file.
	ends []int64
	sync bool // someone waits for it
	done chan struct{}
	err  error
}

// wait blocks until the batch is durable.
func (b *batch) wait() error {
	<-b.done
	return b.err
}

// segment is a journal file and the sessions with entries in it, each
// with where its last entry there ends in its file: what the ledger
// records once the segment is checkpointed.
type segment struct {
	no   uint64
	path string
	ids  map[string]int64
}

func segName(no uint64) string { return fmt.Sprintf("%08d%s", no, segExt) }

type journal struct {
	d       *Dir
	dir     string
	maxSize int64

	mu       sync.Mutex
	cur      *batch
	spare    []byte   // the last batch's buffer, reused
	spareID  []string // and its id list
	spareEnd []int64  // and its ends
	err      error    // set once: every later write fails with it
	closing  bool
	retired  []*segment // oldest first; deleted only in this order
	// spareWanted asks the checkpointer to prepare the next segment;
	// spareReady says it has, spareSize how long it made it.
	spareWanted, spareReady bool
	spareSize               int64
	// prepMu is held while a segment is prepared or taken: by the
	// checkpointer ahead of need, by the committer when none is ready.
	prepMu sync.Mutex

	kick    chan struct{} // a batch wants writing
	ckKick  chan struct{} // a segment was retired
	stopCom chan struct{}
	stopCk  chan struct{}
	comDone chan struct{}
	ckDone  chan struct{}

	// Owned by the committer goroutine (and by Close once it has exited).
	seg     File
	segInfo *segment
	segSize int64
	segCap  int64 // the segment's size, fixed when it was made
	nextNo  uint64
	made    bool // the journal folder exists
}

func newJournal(d *Dir) *journal {
	size := d.opt.SegmentSize
	if size <= 0 {
		size = DefaultSegmentSize
	}
	// Numbered on from the last segment checkpointed, here or by the
	// redo before: a gap in the numbers is a segment lost.
	j := &journal{d: d, dir: filepath.Join(d.path, JournalDir), maxSize: size, nextNo: d.led.checkpointed + 1,
		kick: make(chan struct{}, 1), ckKick: make(chan struct{}, 1),
		stopCom: make(chan struct{}), stopCk: make(chan struct{}),
		comDone: make(chan struct{}), ckDone: make(chan struct{})}
	j.cur = &batch{buf: make([]byte, batchHeader), done: make(chan struct{})}
	go j.commitLoop()
	go j.checkpointLoop()
	return j
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (j *journal) isClosing() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.closing
}

// usable is nil while the journal takes writes.
func (j *journal) usable() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.usableLocked()
}

func (j *journal) usableLocked() error {
	if j.err != nil {
		return j.err
	}
	if j.closing {
		return fmt.Errorf("data directory is closed: %w", ErrClosed)
	}
	return nil
}

// add queues an entry and returns the batch that will carry it. With
// sync the committer is woken; without, the entry waits for the next
// synced one.
func (j *journal) add(id string, off int64, data []byte, sync bool) (*batch, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.usableLocked(); err != nil {
		return nil, err
	}
	b := j.cur
	b.buf = appendEntry(b.buf, id, off, data)
	b.ids = append(b.ids, id)
	b.ends = append(b.ends, off+int64(len(data)))
	if sync && !b.sync {
		b.sync = true
		signal(j.kick)
	} else if len(b.buf) >= batchLimit {
		signal(j.kick)
	}
	return b, nil
}

// poison records the journal's first failure. After a failed write or
// fsync the kernel may have dropped the dirty pages and cleared the error
// (PostgreSQL's fsyncgate), so nothing written later could be trusted to
// follow what the journal holds.
func (j *journal) poison(err error) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err == nil {
		j.err = fmt.Errorf("%w; the journal takes no more writes", err)
	}
	return j.err
}

func (j *journal) commitLoop() {
	defer close(j.comDone)
	for {
		final := false
		select {
		case <-j.kick:
		case <-j.stopCom:
			final = true
		}
		j.mu.Lock()
		b := j.cur
		if !final && !b.sync && len(b.buf) < batchLimit {
			j.mu.Unlock()
			continue
		}
		j.cur = &batch{buf: append(j.spare[:0], make([]byte, batchHeader)...), ids: j.spareID[:0], ends: j.spareEnd[:0], done: make(chan struct{})}
		j.spare, j.spareID, j.spareEnd = nil, nil, nil
		j.mu.Unlock()

		err := j.commit(b)
		buf, ids, ends := b.buf, b.ids, b.ends
		b.buf, b.ids, b.ends, b.err = nil, nil, nil, err
		close(b.done)
		clear(ids) // drop the id strings
		j.mu.Lock()
		if cap(buf) <= 2*batchLimit {
			j.spare, j.spareID, j.spareEnd = buf, ids, ends
		}
		j.mu.Unlock()
		if final {
			if j.seg != nil {
				j.retire()
			}
			return
		}
	}
}

// commit writes one batch with one write call and syncs it.
func (j *journal) commit(b *batch) error {
	if len(b.buf) <= batchHeader {
		return nil
	}
	putBatchHeader(b.buf)
	if err := j.usable(); err != nil && !errors.Is(err, ErrClosed) {
		return err
	}
	if j.seg != nil && j.segSize+int64(len(b.buf)) > j.segCap {
		// A segment never grows past the size it was made with: that
		// size is how a cut is told from the segment's end.
		j.retire()
	}
	fresh := j.seg == nil
	if fresh {
		if err := j.startSegment(int64(segHeader + len(b.buf))); err != nil {
			return j.poison(err)
		}
	}
	n, err := j.seg.Write(b.buf)
	j.segSize += int64(n)
	if err != nil {
		return j.poison(fmt.Errorf("writing journal %s: %w", j.rel(j.segInfo.path), err))
	}
	for i, id := range b.ids {
		j.segInfo.ids[id] = max(j.segInfo.ids[id], b.ends[i])
	}
	if !j.d.opt.NoSync {
		start := time.Now()
		err := j.seg.Sync()
		j.d.opt.onSync(SyncJournal, start)
		if err != nil {
			return j.poison(fmt.Errorf("syncing journal %s: %w", j.rel(j.segInfo.path), err))
		}
	}
	if fresh {
		// The segment's own directory entry, before anything in it is
		// acknowledged.
		if err := j.d.fs.SyncDir(j.dir); err != nil {
			return j.poison(fmt.Errorf("syncing journal folder: %w", err))
		}
	}
	if j.segCap-j.segSize < batchHeader+frame+64 {
		j.retire()
	} else if j.segSize >= j.segCap/2 {
		j.mu.Lock()
		want := !j.spareWanted
		j.spareWanted = true
		j.mu.Unlock()
		if want {
			signal(j.ckKick)
		}
	}
	return nil
}

func (j *journal) rel(path string) string {
	if r, err := filepath.Rel(j.d.path, path); err == nil {
		return r
	}
	return path
}

// startSegment opens the next segment, of at least need bytes: the one
// prepared ahead of need if there is one long enough, else one prepared
// now. Either way it is whole (its header and zeros, synced) before
// anything is written in it, and only then named. The first batch is
// written over it from offset 0, header included, and its sync and the
// folder's sync below make the new name durable before anything in it is
// acknowledged.
func (j *journal) startSegment(need int64) error {
	if !j.made {
		if err := j.d.fs.MkdirAll(j.dir); err != nil {
			return fmt.Errorf("creating journal folder: %w", err)
		}
		if err := j.d.fs.SyncDir(j.d.path); err != nil {
			return fmt.Errorf("syncing data dir: %w", err)
		}
		j.made = true
	}
	s := &segment{no: j.nextNo, path: filepath.Join(j.dir, segName(j.nextNo)), ids: map[string]int64{}}
	j.prepMu.Lock()
	defer j.prepMu.Unlock()
	j.mu.Lock()
	size := j.spareSize
	if !j.spareReady {
		size = 0
	}
	j.spareReady, j.spareWanted = false, false
	j.mu.Unlock()
	if size < need {
		// Made here, in the path of an acknowledgement (the first
		// segment after a start, or one the checkpointer had not made
		// ready in time): small, so that no batch waits for megabytes of
		// zeros. It is retired soon, by then the next is ready.
		size = max(min(j.maxSize, quickSegment), need)
		for attempt := 1; ; attempt++ {
			err := j.prepareSpare(size)
			if err == nil {
				break
			}
			if !tooManyFiles(err) || (attempt >= openAttempts && j.isClosing()) {
				return fmt.Errorf("preparing journal %s: %w", j.rel(s.path), err)
			}
			// Out of descriptors: failing here would poison the journal
			// and fail every session, while descriptors come back as
			// transient opens and connections close. Acknowledgements
			// wait instead.
			time.Sleep(time.Duration(min(attempt, 20)) * time.Millisecond)
		}
	}
	if err := j.d.fs.Rename(filepath.Join(j.dir, spareName), s.path); err != nil {
		return fmt.Errorf("naming journal %s: %w", j.rel(s.path), err)
	}
	var f File
	var err error
	for attempt := 1; ; attempt++ {
		f, err = j.d.fs.OpenFile(s.path, os.O_WRONLY, 0o600)
		if !tooManyFiles(err) || (attempt >= openAttempts && j.isClosing()) {
			break
		}
		time.Sleep(time.Duration(min(attempt, 20)) * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("opening journal %s: %w", j.rel(s.path), err)
	}
	// The header again, the same bytes: the file offset moves past it
	// without a seek.
	if _, err := f.Write(appendSegHeader(nil, size)); err != nil {
		f.Close()
		return fmt.Errorf("writing journal %s: %w", j.rel(s.path), err)
	}
	j.nextNo++
	j.seg, j.segInfo, j.segSize, j.segCap = f, s, int64(segHeader), size
	return nil
}

// retire closes the current segment and hands it to the checkpointer.
func (j *journal) retire() {
	j.seg.Close()
	j.mu.Lock()
	j.retired = append(j.retired, j.segInfo)
	j.mu.Unlock()
	j.seg, j.segInfo, j.segSize = nil, nil, 0
	signal(j.ckKick)
}

func (j *journal) checkpointLoop() {
	defer close(j.ckDone)
	var retry <-chan time.Time
	for {
		select {
		case <-j.ckKick:
		case <-retry:
		case <-j.stopCk:
			return
		}
		retry = nil
		if err := j.checkpointRetired(); err != nil {
			retry = time.After(checkpointRetry)
		}
		j.prepMu.Lock()
		j.mu.Lock()
		prepare := j.spareWanted && !j.spareReady && j.err == nil
		j.mu.Unlock()
		if prepare {
			if err := j.prepareSpare(j.maxSize); err != nil {
				// Not fatal: the next segment is then created as it comes,
				// and only its fsyncs are slower.
				j.d.opt.logger().Warn("preparing the next journal segment", "err", err)
			} else {
				j.mu.Lock()
				j.spareReady, j.spareSize = true, j.maxSize
				j.mu.Unlock()
			}
		}
		j.prepMu.Unlock()
	}
}

// prepareSpare writes the next segment ahead of need: its header and
// zeros up to size, synced (spareName says why).
func (j *journal) prepareSpare(size int64) error {
	path := filepath.Join(j.dir, spareName)
	if err := j.d.fs.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := j.d.fs.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	hdr := appendSegHeader(nil, size)
	_, err = f.Write(hdr)
	zeros := make([]byte, min(size, 1<<20))
	for left := size - int64(len(hdr)); left > 0 && err == nil; left -= int64(len(zeros)) {
		_, err = f.Write(zeros[:min(left, int64(len(zeros)))])
	}
	if err == nil && !j.d.opt.NoSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// checkpointRetired checkpoints retired segments, oldest first, until
// none is left or one cannot be.
func (j *journal) checkpointRetired() error {
	for {
		j.mu.Lock()
		if len(j.retired) == 0 {
			j.mu.Unlock()
			return nil
		}
		s := j.retired[0]
		j.mu.Unlock()
		if err := j.checkpoint(s); err != nil {
			return err
		}
		j.mu.Lock()
		j.retired = j.retired[1:]
		j.mu.Unlock()
	}
}

// checkpoint makes every session file with entries in s durable by
// itself, and only then deletes s. Segments go oldest first: a newer one
// deleted before an older could leave the older's entries to cut a
// session short at the next redo.
//
// The files are written first and then made durable with one syncfs:
// fsyncing thousands of session files one by one costs a commit of the
// file system's journal each, and those commits queue ahead of the
// journal's own fsyncs. Without syncfs (Dir.syncer), each file is fsynced.
//
// A failed sync poisons the journal, as a failed journal fsync does: it
// may have dropped pages and cleared the error, so no later success could
// be trusted to cover this segment. A poisoned journal deletes nothing;
// the next start's redo uses what it kept.
func (j *journal) checkpoint(s *segment) error {
	j.mu.Lock()
	poisoned := j.err
	j.mu.Unlock()
	if poisoned != nil {
		return poisoned
	}
	start := time.Now()
	perFile := j.d.syncer == nil && !j.d.opt.NoSync
	for id := range s.ids {
		if err := j.d.checkpointFile(id, perFile); err != nil {
			if se := (*syncError)(nil); errors.As(err, &se) {
				return j.poison(fmt.Errorf("checkpoint of journal %s: %w", j.rel(s.path), err))
			}
			return err // no descriptor, say: kept, and tried again
		}
	}
	if j.d.syncer != nil && !j.d.opt.NoSync {
		syncStart := time.Now()
		if err := j.d.syncer.Sync(); err != nil {
			return j.poison(fmt.Errorf("checkpoint of journal %s: %w", j.rel(s.path), err))
		}
		j.d.opt.onSync(SyncCheckpoint, syncStart)
	}
	// The segment is about to go, and with it the only other copy of
	// these bytes: the ledger records how much of each file they made,
	// so that a file cut shorter later is found out.
	lg := j.d.led
	lg.mu.Lock()
	for id, end := range s.ids {
		j.d.ackedLocked(id, end)
	}
	lg.checkpointed = max(lg.checkpointed, s.no)
	err := j.d.writeLedgerLocked()
	lg.mu.Unlock()
	// A data directory removed underneath has nothing left to account for.
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("checkpoint of journal %s: %w", j.rel(s.path), err)
	}
	if err := j.d.fs.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing journal %s: %w", j.rel(s.path), err)
	}
	// A folder removed underneath (the whole data directory deleted)
	// leaves no segment to come back: nothing to make durable.
	if err := j.d.fs.SyncDir(j.dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("syncing journal folder: %w", err)
	}
	if j.d.opt.OnCheckpoint != nil {
		j.d.opt.OnCheckpoint(len(s.ids), time.Since(start))
	}
	return nil
}

// close writes what is queued, checkpoints every segment and removes the
// journal folder, so that a cleanly closed data directory is whole in its
// session files.
func (j *journal) close() error {
	j.mu.Lock()
	if j.closing {
		j.mu.Unlock()
		return nil
	}
	j.closing = true
	j.mu.Unlock()
	close(j.stopCk)
	<-j.ckDone
	close(j.stopCom)
	<-j.comDone
	j.mu.Lock()
	err := j.err
	j.mu.Unlock()
	if err != nil {
		// Redo at the next open makes the most of what reached the disk.
		return err
	}
	if err := j.checkpointRetired(); err != nil {
		return fmt.Errorf("checkpointing the journal (redone at the next open): %w", err)
	}
	if !j.made {
		return nil
	}
	if err := j.d.fs.Remove(filepath.Join(j.dir, spareName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the prepared journal segment: %w", err)
	}
	if err := j.d.fs.Remove(j.dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil // not empty: something else lives there; leave it
	}
	if err := j.d.fs.SyncDir(j.d.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("syncing data dir: %w", err)
	}
	return nil
}

// listSegments returns the journal's segments in order.
func (d *Dir) listSegments() ([]*segment, error) {
	dir := filepath.Join(d.path, JournalDir)
	ents, err := d.fs.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	var out []*segment
	for _, e := range ents {
		num, ok := strings.CutSuffix(e.Name(), segExt)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		no, err := strconv.ParseUint(num, 10, 64)
		if err != nil {
			continue
		}
		out = append(out, &segment{no: no, path: filepath.Join(dir, e.Name())})
	}
	// Numbers, not names: past 99999999 the names grow a digit.
	slices.SortFunc(out, func(a, b *segment) int { return cmp.Compare(a.no, b.no) })
	return out, nil
}
