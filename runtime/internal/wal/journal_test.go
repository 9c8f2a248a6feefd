package wal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/internal/wal/waltest"
)

// hookFS is a StrictMem whose OpenFile and Sync can be made to fail or
// wait, to reach what a disk or a busy process can do.
type hookFS struct {
	*waltest.StrictMem
	open     func(name string, flag int) error // nil: open normally
	sync     func(name string) error           // runs before a file's sync
	noSyncFS bool
}

func (h *hookFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	if h.open != nil {
		if err := h.open(name, flag); err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
	}
	f, err := h.StrictMem.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return hookFile{File: f, h: h, name: name}, nil
}

type hookFile struct {
	File
	h    *hookFS
	name string
}

func (f hookFile) Sync() error {
	if f.h.sync != nil {
		if err := f.h.sync(f.name); err != nil {
			return err
		}
	}
	return f.File.Sync()
}

// SyncFS hands out the StrictMem's syncer, or none at all (as where
// there is no syncfs) when noSyncFS is set; h.sync sees its syncs as
// those of "syncfs".
func (h *hookFS) SyncFS(dir string) (FSSyncer, error) {
	if h.noSyncFS {
		return nil, errors.ErrUnsupported
	}
	s, err := h.StrictMem.SyncFS(dir)
	if err != nil {
		return nil, err
	}
	return hookSyncer{s, h}, nil
}

type hookSyncer struct {
	FSSyncer
	h *hookFS
}

func (s hookSyncer) Sync() error {
	if s.h.sync != nil {
		if err := s.h.sync("syncfs"); err != nil {
			return err
		}
	}
	return s.FSSyncer.Sync()
}

func isSegment(name string) bool { return strings.HasSuffix(name, segExt) }

// queued is how many entries wait in the batch being filled.
func (j *journal) queued() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.cur.ids)
}

// TestGroupCommit holds the journal's fsync while more sessions append:
// every append that arrived meanwhile must ride on the one next fsync,
// and none may return before the fsync that covers it.
func TestGroupCommit(t *testing.T) {
	for _, n := range []int{1, 2, 10} {
		t.Run(fmt.Sprint(n, " waiting"), func(t *testing.T) {
			release := make(chan struct{})
			var armed, held atomic.Bool
			h := &hookFS{StrictMem: waltest.NewStrictMem()}
			entered := make(chan struct{}, 1)
			h.sync = func(name string) error {
				if isSegment(name) && armed.Load() && held.CompareAndSwap(false, true) {
					entered <- struct{}{}
					<-release
				}
				return nil
			}
			var syncs atomic.Int32
			d, err := OpenDir("/data", Options{FS: h, OnSync: func(SyncKind, time.Duration) { syncs.Add(1) }})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			var once sync.Once
			unhold := func() { once.Do(func() { close(release) }) }
			defer unhold() // before Close, which waits for the held fsync
			logs := make([]*Log, n+1)
			for i := range logs {
				if logs[i], err = d.Create(testHeader(fmt.Sprint("s", i))); err != nil {
					t.Fatal(err)
				}
			}
			syncs.Store(0)
			armed.Store(true)
			var returned atomic.Int32
			errs := make(chan error, n+1)
			appendOne := func(l *Log) {
				_, err := l.Append(engine.Input{T: 1, Type: engine.InputAdvance}, true)
				returned.Add(1)
				errs <- err
			}
			go appendOne(logs[0])
			<-entered // the first batch's fsync is running, and held
			for _, l := range logs[1:] {
				go appendOne(l)
			}
			for d.j.queued() < n {
				runtime.Gosched()
			}
			if r := returned.Load(); r != 0 {
				t.Fatalf("%d appends returned before any fsync finished", r)
			}
			unhold()
			for range n + 1 {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			if got := syncs.Load(); got != 2 {
				t.Fatalf("%d appends took %d journal fsyncs, want 2 (the held one and one for all who waited)", n+1, got)
			}
		})
	}
}

// TestJournalSyncFailurePoisons fails one journal fsync: the appends of
// that batch and every later write, on any log, must fail, and nothing
// more may reach a session file.
func TestJournalSyncFailurePoisons(t *testing.T) {
	eio := errors.New("input/output error")
	var fail atomic.Bool
	h := &hookFS{StrictMem: waltest.NewStrictMem()}
	h.sync = func(name string) error {
		if isSegment(name) && fail.Load() {
			return eio
		}
		return nil
	}
	d, err := OpenDir("/data", Options{FS: h})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a, _ := d.Create(testHeader("a"))
	b, _ := d.Create(testHeader("b"))
	if _, err := a.Append(engine.Input{T: 1, Type: engine.InputAdvance}, true); err != nil {
		t.Fatal(err)
	}
	fail.Store(true)
	if _, err := a.Append(engine.Input{T: 2, Type: engine.InputAdvance}, true); !errors.Is(err, eio) {
		t.Fatalf("append whose fsync failed: %v, want the fsync's error", err)
	}
	fail.Store(false) // a later fsync that would succeed must not be trusted
	size := b.Size()
	writes := []struct {
		name string
		do   func() error
	}{
		{"synced append", func() error { _, err := b.Append(engine.Input{T: 3, Type: engine.InputAdvance}, true); return err }},
		{"unsynced append", func() error { _, err := b.Append(engine.Input{T: 3, Type: engine.InputAdvance}, false); return err }},
		{"flush", func() error {
			b.AppendStep(0, Step{})
			return b.Flush()
		}},
		{"finish", func() error { return b.Finish(End{Reason: "x"}) }},
	}
	for _, w := range writes {
		if err := w.do(); !errors.Is(err, eio) {
			t.Errorf("%s after a failed journal fsync: %v, want the fsync's error", w.name, err)
		}
	}
	if b.Size() != size {
		t.Errorf("session file grew from %d to %d after the journal failed", size, b.Size())
	}
	// The input whose fsync failed never reaches a's file, not even when
	// the log is closed (which writes what is pending).
	a.Close()
	rec, err := Parse(memRead(t, h.StrictMem, "/data/a.wal"))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range rec.Inputs {
		if in.T == 2 {
			t.Error("the input whose journal fsync failed reached the session file on Close")
		}
	}
}

// TestDescriptorExhaustion runs many logs on a file system that refuses
// every open for a while, as a process out of descriptors does: no
// append may fail, and after a crash (or a clean close) nothing
// acknowledged may be missing.
func TestDescriptorExhaustion(t *testing.T) {
	for _, end := range []string{"clean close", "directory closed first", "process crash", "power cut"} {
		t.Run(end, func(t *testing.T) {
			var opens, refused atomic.Int64
			var short atomic.Bool // out of descriptors, once enough opens ran
			short.Store(true)
			h := &hookFS{StrictMem: waltest.NewStrictMem()}
			// Session file opens only: the journal holds its segment open
			// and is tested on its own.
			h.open = func(name string, flag int) error {
				if !strings.HasSuffix(name, extLive) {
					return nil
				}
				if opens.Add(1) >= 30 && short.Load() {
					refused.Add(1)
					return syscall.EMFILE
				}
				return nil
			}
			d, err := OpenDir("/data", Options{FS: h, SegmentSize: 4 << 10})
			if err != nil {
				t.Fatal(err)
			}
			const n = 24
			logs := make([]*Log, n)
			for i := range logs {
				if logs[i], err = d.Create(testHeader(fmt.Sprint("s", i))); err != nil {
					t.Fatal(err)
				}
			}
			ss := make([]*plSession, n)
			var wg sync.WaitGroup
			var failed atomic.Value
			for i, l := range logs {
				ss[i] = &plSession{id: l.ID(), created: true}
				wg.Go(func() {
					for k := range 20 {
						in := engine.Input{T: int64(k), Type: engine.InputAdvance}
						ss[i].written = append(ss[i].written, in)
						seq, err := l.Append(in, k%4 != 1)
						if err != nil {
							failed.Store(fmt.Errorf("%s append %d: %w", l.ID(), k, err))
							return
						}
						if k%4 != 1 {
							ss[i].acked = int(seq)
						}
					}
				})
			}
			wg.Wait()
			if err, _ := failed.Load().(error); err != nil {
				t.Fatal(err)
			}
			// Appends open nothing: the shortage meets the checkpointer,
			// which must keep its segments until it can write them out.
			for deadline := time.Now().Add(10 * time.Second); refused.Load() < 3 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			if refused.Load() < 3 {
				t.Fatalf("only %d opens refused; the test does not reach the shortage", refused.Load())
			}
			d.j.mu.Lock()
			waiting := len(d.j.retired)
			d.j.mu.Unlock()
			if waiting == 0 {
				t.Fatal("no segment waits for its checkpoint during the shortage")
			}
			lagged := 0
			for _, l := range logs {
				l.mu.Lock()
				if len(l.pending) > 0 {
					lagged++
				}
				l.mu.Unlock()
			}
			if lagged == 0 {
				t.Fatal("no log holds pending bytes; the test does not reach the shortage")
			}
			short.Store(false)
			var after FS
			switch end {
			case "clean close":
				for _, l := range logs {
					if err := l.Close(); err != nil {
						t.Fatal(err)
					}
				}
				if err := d.Close(); err != nil {
					t.Fatal(err)
				}
				after = h.StrictMem.Recover(nil)
			case "directory closed first":
				// As a server's shutdown does when sessions are slow to
				// stop: the checkpoint must write the pending bytes itself.
				if err := d.Close(); err != nil {
					t.Fatal(err)
				}
				after = h.StrictMem.Recover(nil)
			case "process crash":
				after = h.StrictMem.Restart()
				d.Close()
			case "power cut":
				after = h.StrictMem.Recover(nil)
				d.Close()
			}
			if _, err := checkJournalRecovered(after, ss); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// journalLeft writes two sessions through a journal of small segments and
// crashes the process, leaving the journal for the next OpenDir. It
// returns the file system and the segments' paths, oldest first.
func journalLeft(t *testing.T) (*waltest.StrictMem, []string, []*plSession) {
	t.Helper()
	m := waltest.NewStrictMem()
	d, err := OpenDir("/data", Options{FS: m, SegmentSize: 400})
	if err != nil {
		t.Fatal(err)
	}
	// Keep the checkpointer from deleting segments: the test reads them.
	close(d.j.stopCk)
	<-d.j.ckDone
	d.j.stopCk = make(chan struct{})
	var ss []*plSession
	for _, id := range []string{"a", "b"} {
		l, err := d.Create(testHeader(id))
		if err != nil {
			t.Fatal(err)
		}
		s := &plSession{id: id, created: true}
		for i, in := range sampleInputs() {
			s.written = append(s.written, in)
			if _, err := l.Append(in, true); err != nil {
				t.Fatal(err)
			}
			s.acked = i + 1
		}
		ss = append(ss, s)
	}
	after := m.Restart()
	segs, err := (&Dir{path: "/data", fs: after}).listSegments()
	if err != nil || len(segs) < 3 {
		t.Fatalf("%d segments left, want at least 3: %v", len(segs), err)
	}
	var paths []string
	for _, s := range segs {
		paths = append(paths, s.path)
	}
	return after, paths, ss
}

func memRead(t *testing.T, m *waltest.StrictMem, path string) []byte {
	t.Helper()
	b, err := readAll(m, path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func memRewrite(t *testing.T, m *waltest.StrictMem, path string, data []byte) {
	t.Helper()
	f, err := m.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// usedEnd is where a segment's last whole batch ends.
func usedEnd(data []byte) int64 {
	off := int64(segHeader)
	for {
		_, n, why := batchAt(data, off)
		if why != "" {
			return off
		}
		off += n
	}
}

// resized lays out a segment of size bytes: data's batches up to used,
// then tail, then zeros.
func resized(data []byte, used int64, tail []byte, size int64) []byte {
	out := appendSegHeader(nil, size)
	out = append(out, data[segHeader:used]...)
	out = append(out, tail...)
	return append(out, make([]byte, size-int64(len(out)))...)
}

// TestJournalTornTail leaves the journal's last segment ending the ways
// a power cut can, written over its zeros: redo must clear the tail,
// report it, and lose nothing before it.
func TestJournalTornTail(t *testing.T) {
	entry := appendEntry(nil, "a", 5000, []byte("never acknowledged"))
	batch := appendBatch(nil, entry)
	// A batch written over a prepared segment's zeros whose later sector
	// reached the disk but not its first: the header reads as zeros.
	long := appendBatch(nil, appendEntry(nil, "a", 5000, []byte(strings.Repeat("y", 700))), entry)
	laterSector := append(make([]byte, 512), long[512:]...)
	cases := []struct {
		name string
		tail []byte
		none bool // not a tail at all
	}{
		{"header cut short", batch[:5], false},
		{"body cut short", batch[:len(batch)-3], false},
		{"zeros: a prepared segment's unused end", nil, true},
		{"last batch fails its checksum", append(append([]byte{}, batch[:len(batch)-1]...), batch[len(batch)-1]^1), false},
		{"a later sector of the last batch without its first", laterSector, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, segs, ss := journalLeft(t)
			last := segs[len(segs)-1]
			good := memRead(t, m, last)
			used := usedEnd(good)
			size := used + 2048
			memRewrite(t, m, last, resized(good, used, c.tail, size))
			d, err := OpenDir("/data", Options{FS: m})
			if err != nil {
				t.Fatal(err)
			}
			rep := d.Redo()
			d.Close()
			if len(rep.Journal) > 0 || len(rep.Damaged) > 0 {
				t.Fatalf("redo found damage: %v %v", rep.Journal, rep.Damaged)
			}
			if c.none {
				if rep.Tail != nil {
					t.Fatalf("tail %+v, want none", rep.Tail)
				}
			} else if rep.Tail == nil || rep.Tail.Offset != used || rep.Tail.Bytes != size-used ||
				rep.TailSegment != filepath.Join(JournalDir, filepath.Base(last)) {
				t.Fatalf("tail %+v in %s, want %d bytes at %d in %s", rep.Tail, rep.TailSegment, size-used, used, last)
			}
			if err := checkRecovered(m, ss); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestJournalDamage puts invalid bytes where a power cut cannot. The
// directory must open: the damage is reported naming the segment, the
// journal is kept as evidence, the sessions whose acknowledged bytes it
// took fail (now and at the next start), and the others recover whole.
func TestJournalDamage(t *testing.T) {
	// twoBatches is the first segment holding two batches or more.
	twoBatches := func(t *testing.T, m *waltest.StrictMem, segs []string) (string, []byte) {
		for _, s := range segs[:len(segs)-1] {
			b := memRead(t, m, s)
			r, _ := parseSegment(b, s, false, true)
			// Its first entry carries bytes (not a Create's empty one,
			// whose loss costs nothing once later entries follow).
			if _, n, _ := batchAt(b, int64(segHeader)); usedEnd(b) > int64(segHeader)+n && len(r.ents[0].data) > 0 {
				return s, b
			}
		}
		t.Fatal("no segment holds two batches")
		return "", nil
	}
	cases := []struct {
		name   string
		change func(t *testing.T, m *waltest.StrictMem, segs []string) string
		reason string
		lost   []string // the sessions that must fail
	}{
		{"an entry's byte flipped, a valid batch after it", func(t *testing.T, m *waltest.StrictMem, segs []string) string {
			seg, b := twoBatches(t, m, segs)
			n, _, _ := frameWithin(b, int64(segHeader+batchHeader), maxEntry)
			b[int64(segHeader+batchHeader+frame)+n-1] ^= 0x40 // the entry's last byte
			memRewrite(t, m, seg, b)
			return seg
		}, "batch checksum mismatch", []string{"a"}},
		{"a segment that is not the last cut short", func(t *testing.T, m *waltest.StrictMem, segs []string) string {
			b := memRead(t, m, segs[0])
			memRewrite(t, m, segs[0], b[:usedEnd(b)-4])
			return segs[0]
		}, "segment cut", []string{"a"}},
		{"bad magic in a segment that is not the last", func(t *testing.T, m *waltest.StrictMem, segs []string) string {
			b := memRead(t, m, segs[0])
			b[0] = 'X'
			memRewrite(t, m, segs[0], b)
			return segs[0]
		}, "bad magic", nil},
		{"entry whose checksum holds but whose id is invalid", func(t *testing.T, m *waltest.StrictMem, segs []string) string {
			b := memRead(t, m, segs[0])
			bad := appendBatch(nil, appendEntry(nil, "bad id!", 100, []byte("x")))
			memRewrite(t, m, segs[0], resized(b, int64(segHeader), bad, int64(len(b))))
			return segs[0]
		}, "entry content", []string{"a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, segs, ss := journalLeft(t)
			seg := c.change(t, m, segs)
			d, err := OpenDir("/data", Options{FS: m})
			if err != nil {
				t.Fatalf("OpenDir: %v, want the damage contained", err)
			}
			rep := d.Redo()
			if len(rep.Journal) == 0 || rep.Journal[0].Segment != filepath.Join(JournalDir, filepath.Base(seg)) || !strings.Contains(rep.Journal[0].Error(), c.reason) {
				t.Fatalf("journal damage %v, want it in %s: %s", rep.Journal, seg, c.reason)
			}
			var lost []string
			for _, dm := range rep.Damaged {
				lost = append(lost, dm.ID)
			}
			if !slices.Equal(lost, c.lost) {
				t.Fatalf("damaged sessions %v, want %v: %v", lost, c.lost, rep.Damaged)
			}
			if len(rep.Evidence) != len(segs) {
				t.Fatalf("evidence %v, want every segment kept", rep.Evidence)
			}
			d.Close()
			var kept []*plSession
			for _, s := range ss {
				if !slices.Contains(c.lost, s.id) {
					kept = append(kept, s)
				}
			}
			if err := checkRecovered(m, kept); err != nil {
				t.Fatal(err)
			}
			// Failed at the next start as well, with the journal gone.
			d, err = OpenDir("/data", Options{FS: m})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			for _, id := range c.lost {
				var dmg *DamageError
				if _, _, err := d.Open(id); !errors.As(err, &dmg) {
					t.Fatalf("Open of %s at the next start: %v, want its damage", id, err)
				}
			}
		})
	}
}

// TestRedoGap restores a session file from an old copy behind the
// journal's back, after a checkpoint deleted the segment that covered the
// difference: the bytes between the file's end and the journal's entries
// are lost, so the session is damaged and kept as it is, the journal is
// kept as evidence, and other sessions go on.
func TestRedoGap(t *testing.T) {
	m, segs, ss := journalLeft(t)
	data := memRead(t, m, "/data/a.wal")
	headerEnd := int64(len(Magic))
	if n, _, _ := frameAt(data, headerEnd); n > 0 {
		headerEnd += frame + n
	}
	memRewrite(t, m, "/data/a.wal", data[:headerEnd])
	if err := m.Remove(segs[0]); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir("/data", Options{FS: m})
	if err != nil {
		t.Fatal(err)
	}
	rep := d.Redo()
	if len(rep.Damaged) != 1 || rep.Damaged[0].ID != "a" || len(rep.Evidence) == 0 {
		t.Fatalf("redo report %+v, want session a damaged and the journal kept", rep)
	}
	var dmg *DamageError
	if _, _, err := d.Open("a"); !errors.As(err, &dmg) {
		t.Fatalf("Open of the damaged session: %v, want a *DamageError", err)
	}
	if _, err := d.Read("a"); !errors.As(err, &dmg) {
		t.Fatalf("Read of the damaged session: %v, want a *DamageError", err)
	}
	if got := memRead(t, m, "/data/a.wal"); int64(len(got)) != headerEnd {
		t.Fatalf("damaged session file changed: %d bytes, was %d", len(got), headerEnd)
	}
	d.Close()
	// Redo deleted the journal: the copies are all that is left of it,
	// so they must outlast a power cut.
	m = m.Recover(nil)
	for _, ev := range rep.Evidence {
		if _, err := m.Stat(filepath.Join("/data", ev)); err != nil {
			t.Fatalf("evidence %s after a power cut: %v", ev, err)
		}
	}
	if err := checkRecovered(m, ss[1:]); err != nil {
		t.Fatalf("the undamaged session: %v", err)
	}
}

// TestRedoGapEvidenceSurvivesPowerCut cuts the power at every step of a
// redo that finds a session damaged and deletes the journal after copying
// it: each segment's bytes must outlast the cut, in the journal or in its
// copy.
func TestRedoGapEvidenceSurvivesPowerCut(t *testing.T) {
	for cut := 0; ; cut++ {
		m, segs, _ := journalLeft(t)
		data := memRead(t, m, "/data/a.wal")
		headerEnd := int64(len(Magic))
		if n, _, _ := frameAt(data, headerEnd); n > 0 {
			headerEnd += frame + n
		}
		memRewrite(t, m, "/data/a.wal", data[:headerEnd])
		if err := m.Remove(segs[0]); err != nil {
			t.Fatal(err)
		}
		if err := m.SyncDir("/data/" + JournalDir); err != nil {
			t.Fatal(err)
		}
		var want [][]byte
		for _, s := range segs[1:] {
			want = append(want, memRead(t, m, s))
		}
		m.CrashAfter(cut)
		if d, err := OpenDir("/data", Options{FS: m}); err == nil {
			d.Close()
		}
		if !m.Crashed() {
			if cut == 0 {
				t.Fatal("redo made no change")
			}
			return
		}
		after := m.Recover(nil)
		var kept [][]byte
		for _, dir := range []string{"/data/" + JournalDir, "/data/" + EvidenceDir} {
			ents, _ := after.ReadDir(dir)
			for _, e := range ents {
				kept = append(kept, memRead(t, after, filepath.Join(dir, e.Name())))
			}
		}
		for i, w := range want {
			if !slices.ContainsFunc(kept, func(b []byte) bool { return bytes.Equal(b, w) }) {
				t.Fatalf("power cut after %d operations of redo: segment %s is neither in the journal nor in its copy", cut, segs[i+1])
			}
		}
	}
}

// TestStore checks that Dir.Store answers as the Dir does.
func TestStore(t *testing.T) {
	d := openDir(t, Options{})
	s := d.Store()
	l, err := s.Create(testHeader("st"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(engine.Input{T: 1, Type: engine.InputAdvance}, true); err != nil {
		t.Fatal(err)
	}
	l.Close()
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"create existing", func() error { _, err := s.Create(testHeader("st")); return err }(), ErrExists},
		{"open missing", func() error { _, _, err := s.Open("nope"); return err }(), ErrNotFound},
		{"read missing", func() error { _, err := s.Read("nope"); return err }(), ErrNotFound},
		{"bad id", func() error { _, _, err := s.Open("a/b"); return err }(), ErrBadID},
	}
	for _, c := range cases {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	l2, rec, err := s.Open("st")
	if err != nil || len(rec.Inputs) != 1 || l2.Seq() != 1 {
		t.Fatalf("open: %v, %+v", err, rec)
	}
	if err := l2.Finish(End{Reason: "done"}); err != nil {
		t.Fatal(err)
	}
	if st, err := s.State("st"); err != nil || st != StateDone {
		t.Fatalf("state %v %v", st, err)
	}
	if _, _, err := s.Open("st"); !errors.Is(err, ErrFinished) {
		t.Fatalf("open finished: %v", err)
	}
	var _ io.Closer = s
}

// TestSegmentWaitsForDescriptor refuses the journal's segment a
// descriptor a few times: the committer must wait for one rather than
// poison the journal and fail every session.
func TestSegmentWaitsForDescriptor(t *testing.T) {
	var refused atomic.Int32
	h := &hookFS{StrictMem: waltest.NewStrictMem()}
	h.open = func(name string, flag int) error {
		if isSegment(name) && refused.Add(1) <= 5 {
			return syscall.EMFILE
		}
		return nil
	}
	d, err := OpenDir("/data", Options{FS: h})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	l, err := d.Create(testHeader("a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(engine.Input{T: 1, Type: engine.InputAdvance}, true); err != nil {
		t.Fatalf("append while the journal waited for a descriptor: %v", err)
	}
	if refused.Load() <= 5 {
		t.Fatalf("segment opened after %d refusals; the test does not reach the wait", refused.Load())
	}
}

// TestSegmentPrefixes cuts a segment at every length, as a power cut
// can, with and without zeros after the cut: as the last segment every
// cut is a tail holding exactly the whole entries before it; as an
// earlier segment (synced whole before the next began) every cut that
// is not on an entry boundary is damage.
func TestSegmentPrefixes(t *testing.T) {
	seg := []byte(journalMagicV2)
	bounds := map[int]int{len(seg): 0} // cut -> whole entries before it
	n := 0
	for i := range 4 {
		var ents [][]byte
		for k := range i%2 + 1 { // batches of one and two entries
			ents = append(ents, appendEntry(nil, fmt.Sprintf("s%d_%d", i, k), int64(100*(i+1)), []byte(strings.Repeat("x", 20*(i+1)))))
		}
		seg = appendBatch(seg, ents...)
		n += len(ents)
		bounds[len(seg)] = n
	}
	for cut := 0; cut <= len(seg); cut++ {
		for _, zeros := range []bool{false, true} {
			data := append([]byte{}, seg[:cut]...)
			if zeros {
				data = append(data, make([]byte, len(seg)-cut)...)
			}
			r, err := parseSegment(data, "journal/x.jnl", true, false)
			ents, tail := r.ents, r.tail
			if err != nil || len(r.lost) > 0 {
				t.Fatalf("last segment cut at %d (zeros %v): %v", cut, zeros, err)
			}
			whole, onBound := bounds[cut]
			if !onBound {
				for b, n := range bounds {
					if b < cut && n > whole {
						whole = n
					}
				}
			}
			if len(ents) != whole {
				t.Fatalf("last segment cut at %d (zeros %v): %d entries, want %d", cut, zeros, len(ents), whole)
			}
			// Zeros after a batch boundary are a prepared segment's
			// unused end, not a tail.
			if (tail == nil) != onBound {
				t.Fatalf("last segment cut at %d (zeros %v): tail %v", cut, zeros, tail)
			}
			if r, _ := parseSegment(data, "journal/x.jnl", false, false); (len(r.lost) == 0) != (tail == nil) {
				t.Fatalf("earlier segment cut at %d (zeros %v): damage %v, tail as last %v", cut, zeros, r.lost, tail)
			}
		}
	}
}

// TestCloseAfterDataDirRemoved closes a directory deleted while it was
// open (a test's temporary folder removed before its server stops):
// nothing is left to make durable, so Close must not fail on it.
func TestCloseAfterDataDirRemoved(t *testing.T) {
	dir := t.TempDir()
	d, err := OpenDir(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := d.Create(testHeader("gone"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(engine.Input{T: 1, Type: engine.InputAdvance}, true); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close of a removed data directory: %v", err)
	}
}

// TestFailedCheckpointSyncKeepsTheSegment: a checkpoint whose sync fails
// (syncfs, or a session file's fsync where there is no syncfs) poisons
// the journal, and the segment stays for the next start's redo even once
// syncs succeed again: the failed one may have dropped the pages.
func TestFailedCheckpointSyncKeepsTheSegment(t *testing.T) {
	for _, perFile := range []bool{false, true} {
		t.Run(fmt.Sprintf("per-file %v", perFile), func(t *testing.T) {
			var failed atomic.Int64
			var armed atomic.Bool // after Create, whose own sync is not a checkpoint's
			h := &hookFS{StrictMem: waltest.NewStrictMem(), noSyncFS: perFile}
			h.sync = func(name string) error {
				if armed.Load() && (name == "syncfs" || strings.HasSuffix(name, extLive)) && failed.Load() == 0 {
					failed.Add(1)
					return syscall.EIO
				}
				return nil
			}
			d, err := OpenDir("/data", Options{FS: h, SegmentSize: 1 << 10})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			l, err := d.Create(testHeader("k"))
			if err != nil {
				t.Fatal(err)
			}
			armed.Store(true)
			for k := range 100 { // several segments
				if _, err := l.Append(engine.Input{T: int64(k), Type: engine.InputAdvance}, true); err != nil {
					break // poisoned meanwhile
				}
			}
			for deadline := time.Now().Add(5 * time.Second); d.j.usable() == nil; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("a failed checkpoint sync did not poison the journal")
				}
			}
			time.Sleep(5 * checkpointRetry) // retries would run meanwhile
			first := filepath.Join("/data", JournalDir, segName(1))
			if _, err := h.StrictMem.Stat(first); err != nil {
				t.Fatalf("the segment whose checkpoint failed is gone: %v", err)
			}
		})
	}
}

// appendBatch frames entries as one journal batch onto buf, as the
// committer writes them.
func appendBatch(buf []byte, entries ...[]byte) []byte {
	start := len(buf)
	buf = append(buf, make([]byte, batchHeader)...)
	for _, e := range entries {
		buf = append(buf, e...)
	}
	putBatchHeader(buf[start:])
	return buf
}

// TestPreparedSegmentTornBatch cuts the power while a batch written over
// a prepared segment's zeros is being synced, keeping a random set of its
// sectors as a disk may: the restart must read the remains as a torn
// tail, never as damage, and lose nothing acknowledged.
func TestPreparedSegmentTornBatch(t *testing.T) {
	const size = 8 << 10
	text := strings.Repeat("z", 1500) // an input spans sectors
	for seed := range 40 {
		var armed atomic.Bool
		var after atomic.Pointer[waltest.StrictMem]
		h := &hookFS{StrictMem: waltest.NewStrictMem()}
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		h.sync = func(name string) error {
			if armed.Load() && isSegment(name) {
				armed.Store(false)
				after.Store(h.StrictMem.Recover(rng))
				return waltest.ErrPowerLost
			}
			return nil
		}
		d, err := OpenDir("/data", Options{FS: h, SegmentSize: size})
		if err != nil {
			t.Fatal(err)
		}
		l, err := d.Create(testHeader("p"))
		if err != nil {
			t.Fatal(err)
		}
		s := &plSession{id: "p", created: true}
		appendOne := func(k int) error {
			in := engine.Input{T: int64(k), Type: engine.InputLLMResult, LLM: &engine.LLMResult{ID: "r", Text: text}}
			s.written = append(s.written, in)
			seq, err := l.Append(in, true)
			if err == nil {
				s.acked = int(seq)
			}
			return err
		}
		k := 0
		for ; k < 4; k++ { // past half the first segment: a spare is asked for
			if err := appendOne(k); err != nil {
				t.Fatal(err)
			}
		}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			d.j.mu.Lock()
			ready := d.j.spareReady
			d.j.mu.Unlock()
			if ready {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no segment prepared")
			}
		}
		for ; d.j.nextNo < 3; k++ { // into the prepared second segment
			if err := appendOne(k); err != nil {
				t.Fatal(err)
			}
		}
		if err := appendOne(k); err != nil {
			t.Fatal(err)
		}
		// One batch of several entries: unsynced appends wait in it for
		// the synced one.
		for i := range 3 {
			in := engine.Input{T: int64(k + 1 + i), Type: engine.InputLLMResult, LLM: &engine.LLMResult{ID: "r", Text: text}}
			s.written = append(s.written, in)
			if _, err := l.Append(in, false); err != nil {
				t.Fatal(err)
			}
		}
		armed.Store(true)
		if err := appendOne(k + 4); err == nil {
			t.Fatal("the append whose sync lost the power was acknowledged")
		}
		d.Close()
		if err := checkRecovered(after.Load(), []*plSession{s}); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}
