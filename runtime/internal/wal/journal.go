package wal

import (
	"bytes"
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

// JournalMagic starts every journal segment.
const JournalMagic = "BTNJNL2\n"

// journalMagicV1 starts segments written before batches were framed.
const journalMagicV1 = "BTNJNL1\n"

// batchHeader is the length of a batch's header: a frame and its payload.
const batchHeader = frame + 9

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
	if len(p) < 1+k+8+1 {
		return jentry{}, fmt.Errorf("entry of %d bytes too short for an id of %d, an offset and data", len(p), k)
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

// parseSegment reads a segment's entries. Only the last segment may end in
// a torn tail: a segment is retired only after its last batch was synced.
// The rule that tells a tail from damage is the session log's (parse).
func parseSegment(data []byte, name string, last bool) ([]jentry, *TailError, error) {
	if len(data) >= len(journalMagicV1) && string(data[:len(journalMagicV1)]) == journalMagicV1 {
		return parseSegmentV1(data, name, last)
	}
	return parseBatched(data, name, last)
}

// putBatchHeader fills in the header room at the start of buf, a batch.
func putBatchHeader(buf []byte) {
	body := buf[batchHeader:]
	binary.LittleEndian.PutUint32(buf[0:], 9)
	buf[frame] = 'B'
	binary.LittleEndian.PutUint32(buf[frame+1:], uint32(len(body)))
	binary.LittleEndian.PutUint32(buf[frame+5:], crc32.Checksum(body, castagnoli))
	binary.LittleEndian.PutUint32(buf[4:], crc32.Checksum(buf[frame:batchHeader], castagnoli))
}

// batchAt checks the batch at off: its header's frame and checksum, and
// its body's length and checksum. It returns the body and the batch's
// length, or why it is not a batch.
func batchAt(data []byte, off int64) ([]byte, int64, string) {
	n, hdr, why := frameWithin(data, off, 9)
	if why != "" {
		return nil, n, why
	}
	if n != 9 || hdr[0] != 'B' {
		return nil, n, "not a batch header"
	}
	size := int64(binary.LittleEndian.Uint32(hdr[1:]))
	if size == 0 || size > int64(len(data))-off-batchHeader {
		return nil, n, fmt.Sprintf("batch of %d bytes cut short at %d", size, int64(len(data))-off-batchHeader)
	}
	body := data[off+batchHeader : off+batchHeader+size]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(hdr[5:]) {
		return nil, n, "batch checksum mismatch"
	}
	return body, batchHeader + size, ""
}

// parseBatched reads a segment of batches. Only the last batch of the
// last segment may be torn; an invalid batch followed by a valid one is
// damage, and so is an invalid entry inside a valid batch (its checksum
// says the disk returned what was written). An invalid batch with only
// zeros after it may be a batch whose earlier sectors never reached the
// disk while later ones did. A batch boundary followed by nothing but
// zeros is a prepared segment's unused end.
func parseBatched(data []byte, name string, last bool) ([]jentry, *TailError, error) {
	total := int64(len(data))
	dmg := func(off int64, entry int, next int64, reason string) error {
		return &DamageError{Segment: name, Offset: off, Record: entry, NextValid: next, Reason: reason}
	}
	nextBatch := func(from int64) int64 {
		for p := from; p+batchHeader <= total; p++ {
			if binary.LittleEndian.Uint32(data[p:]) != 9 {
				continue
			}
			if _, _, why := batchAt(data, p); why == "" {
				return p
			}
		}
		return -1
	}
	if total < int64(len(JournalMagic)) || string(data[:len(JournalMagic)]) != JournalMagic {
		// The magic is written with the segment's first batch and synced
		// with it, so a segment without it never held an acknowledged
		// entry, unless a batch in it verifies.
		next := nextBatch(0)
		if !last || next != -1 {
			return nil, nil, dmg(0, 0, next, "not a journal segment (bad magic)")
		}
		return nil, &TailError{Offset: 0, Bytes: total, Reason: "segment without its magic", Torn: true}, nil
	}
	zeros := int64(len(bytes.TrimRight(data, "\x00")))
	var out []jentry
	off := int64(len(JournalMagic))
	for off < zeros {
		body, n, why := batchAt(data, off)
		if why == "" {
			for at := int64(0); at < int64(len(body)); {
				m, payload, frameErr := frameWithin(body, at, maxEntry)
				if frameErr != "" {
					return nil, nil, dmg(off+batchHeader+at, len(out), -1, "entry in a whole batch: "+frameErr)
				}
				e, err := decodeEntry(payload)
				if err != nil {
					return nil, nil, dmg(off+batchHeader+at, len(out), -1, "entry content: "+err.Error())
				}
				e.seg, e.at = name, off+batchHeader+at
				out = append(out, e)
				at += frame + m
			}
			off += n
			continue
		}
		if next := nextBatch(off + 1); next >= 0 {
			return nil, nil, dmg(off, len(out), next, why)
		}
		if !last {
			return nil, nil, dmg(off, len(out), -1, why+" in a segment that is not the journal's last (it was synced whole before the next began)")
		}
		return out, &TailError{Offset: off, Bytes: total - off, Reason: why, Torn: true}, nil
	}
	return out, nil, nil
}

// parseSegmentV1 reads a segment of the first format: entries, no batches.
func parseSegmentV1(data []byte, name string, last bool) ([]jentry, *TailError, error) {
	verifies := func(p []byte) bool { _, err := decodeEntry(p); return err == nil }
	total := int64(len(data))
	dmg := func(off int64, entry int, next int64, reason string) error {
		return &DamageError{Segment: name, Offset: off, Record: entry, NextValid: next, Reason: reason}
	}
	if total < int64(len(journalMagicV1)) || string(data[:len(journalMagicV1)]) != journalMagicV1 {
		// The magic is written with the segment's first batch and synced
		// with it, so a segment without it never held an acknowledged
		// entry, unless something in it verifies.
		next := nextVerifying(data, 0, maxEntry, verifies)
		if !last || next != -1 {
			return nil, nil, dmg(0, 0, max(next, -1), "not a journal segment (bad magic)")
		}
		return nil, &TailError{Offset: 0, Bytes: total, Reason: "segment without its magic", Torn: true}, nil
	}
	var out []jentry
	off := int64(len(journalMagicV1))
	for off < total {
		n, payload, frameErr := frameWithin(data, off, maxEntry)
		if frameErr == "" {
			e, err := decodeEntry(payload)
			if err != nil {
				// The checksum holds, so the disk returned what was written.
				return nil, nil, dmg(off, len(out), nextVerifying(data, off+1, maxEntry, verifies), "entry content: "+err.Error())
			}
			e.seg, e.at = name, off
			out = append(out, e)
			off += frame + n
			continue
		}
		next := nextVerifying(data, off+1, maxEntry, verifies)
		switch {
		case next >= 0:
			return nil, nil, dmg(off, len(out), next, frameErr)
		case next == unvouched:
			return nil, nil, dmg(off, len(out), -1, frameErr+", followed by more unverifiable bytes than a torn write leaves")
		case !last:
			return nil, nil, dmg(off, len(out), -1, frameErr+" in a segment that is not the journal's last (it was synced whole before the next began)")
		}
		torn := total-off < frame || frame+n > total-off
		return out, &TailError{Offset: off, Bytes: total - off, Reason: frameErr, Torn: torn}, nil
	}
	return out, nil, nil
}

// batch is everything queued while the previous fsync ran. Its waiters
// share one channel, closed once the batch is durable or has failed.
type batch struct {
	buf  []byte
	ids  []string
	sync bool // someone waits for it
	done chan struct{}
	err  error
}

// wait blocks until the batch is durable.
func (b *batch) wait() error {
	<-b.done
	return b.err
}

// segment is a journal file and the sessions with entries in it.
type segment struct {
	no   uint64
	path string
	ids  map[string]struct{}
}

func segName(no uint64) string { return fmt.Sprintf("%08d%s", no, segExt) }

type journal struct {
	d       *Dir
	dir     string
	maxSize int64

	mu      sync.Mutex
	cur     *batch
	spare   []byte   // the last batch's buffer, reused
	spareID []string // and its id list
	err     error    // set once: every later write fails with it
	closing bool
	retired []*segment // oldest first; deleted only in this order
	// spareWanted asks the checkpointer to prepare the next segment;
	// spareReady says it has.
	spareWanted, spareReady bool

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
	nextNo  uint64
	made    bool // the journal folder exists
}

func newJournal(d *Dir) *journal {
	size := d.opt.SegmentSize
	if size <= 0 {
		size = DefaultSegmentSize
	}
	j := &journal{d: d, dir: filepath.Join(d.path, JournalDir), maxSize: size, nextNo: 1,
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
		j.cur = &batch{buf: append(j.spare[:0], make([]byte, batchHeader)...), ids: j.spareID[:0], done: make(chan struct{})}
		j.spare, j.spareID = nil, nil
		j.mu.Unlock()

		err := j.commit(b)
		buf, ids := b.buf, b.ids
		b.buf, b.ids, b.err = nil, nil, err
		close(b.done)
		clear(ids) // drop the id strings
		j.mu.Lock()
		if cap(buf) <= 2*batchLimit {
			j.spare, j.spareID = buf, ids
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
	fresh := j.seg == nil
	if fresh {
		if err := j.startSegment(); err != nil {
			return j.poison(err)
		}
	}
	n, err := j.seg.Write(b.buf)
	j.segSize += int64(n)
	if err != nil {
		return j.poison(fmt.Errorf("writing journal %s: %w", j.rel(j.segInfo.path), err))
	}
	for _, id := range b.ids {
		j.segInfo.ids[id] = struct{}{}
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
	if j.segSize >= j.maxSize {
		j.retire()
	} else if j.segSize >= j.maxSize/2 {
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

// startSegment creates the next segment and writes its magic; the first
// batch's sync covers both.
func (j *journal) startSegment() error {
	if !j.made {
		if err := j.d.fs.MkdirAll(j.dir); err != nil {
			return fmt.Errorf("creating journal folder: %w", err)
		}
		if err := j.d.fs.SyncDir(j.d.path); err != nil {
			return fmt.Errorf("syncing data dir: %w", err)
		}
		j.made = true
	}
	s := &segment{no: j.nextNo, path: filepath.Join(j.dir, segName(j.nextNo)), ids: map[string]struct{}{}}
	j.mu.Lock()
	spare := j.spareReady
	j.spareReady, j.spareWanted = false, false
	j.mu.Unlock()
	flag := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if spare {
		// Written from offset 0 over the zeros; the first batch's sync
		// and the folder's sync below make the new name durable before
		// anything in it is acknowledged.
		if err := j.d.fs.Rename(filepath.Join(j.dir, spareName), s.path); err == nil {
			flag = os.O_WRONLY
		}
		// else: created afresh, as without a prepared one.
	}
	var f File
	var err error
	for attempt := 1; ; attempt++ {
		f, err = j.d.fs.OpenFile(s.path, flag, 0o600)
		if !tooManyFiles(err) || (attempt >= openAttempts && j.isClosing()) {
			break
		}
		// Out of descriptors: failing here would poison the journal and
		// fail every session, while descriptors come back as transient
		// opens and connections close. Acknowledgements wait instead.
		time.Sleep(time.Duration(min(attempt, 20)) * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("creating journal %s: %w", j.rel(s.path), err)
	}
	if _, err := f.Write([]byte(JournalMagic)); err != nil {
		f.Close()
		return fmt.Errorf("writing journal %s: %w", j.rel(s.path), err)
	}
	j.nextNo++
	j.seg, j.segInfo, j.segSize = f, s, int64(len(JournalMagic))
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
		j.mu.Lock()
		prepare := j.spareWanted && !j.spareReady && j.err == nil
		j.mu.Unlock()
		if prepare {
			if err := j.prepareSpare(); err != nil {
				// Not fatal: the next segment is then created as it comes,
				// and only its fsyncs are slower.
				j.d.opt.logger().Warn("preparing the next journal segment", "err", err)
			} else {
				j.mu.Lock()
				j.spareReady = true
				j.mu.Unlock()
			}
		}
	}
}

// prepareSpare writes the next segment ahead of need: a segment's worth
// of zeros, synced (spareName says why).
func (j *journal) prepareSpare() error {
	path := filepath.Join(j.dir, spareName)
	if err := j.d.fs.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := j.d.fs.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	zeros := make([]byte, min(j.maxSize, 1<<20))
	for left := j.maxSize; left > 0 && err == nil; left -= int64(len(zeros)) {
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
