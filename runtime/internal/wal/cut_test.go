package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/internal/wal/waltest"
)

// cutCheck opens the directory and holds every session to what was
// acknowledged of it: either each acknowledged input is there, or the
// session fails with a *DamageError. Anything else is a silent loss.
func cutCheck(fsys FS, acked map[string]int) error {
	d, err := OpenDir("/data", Options{FS: fsys})
	if err != nil {
		return fmt.Errorf("OpenDir: %w", err)
	}
	defer d.Close()
	for id, n := range acked {
		l, rec, err := d.Open(id)
		var dmg *DamageError
		if errors.As(err, &dmg) {
			continue
		}
		if err != nil {
			return fmt.Errorf("session %s: %v, want its inputs or its damage", id, err)
		}
		l.Close()
		if len(rec.Inputs) < n {
			return fmt.Errorf("session %s: %d inputs of %d acknowledged, and no damage reported", id, len(rec.Inputs), n)
		}
	}
	return nil
}

// cutWorkload writes two sessions through a journal of small segments,
// so that some of their bytes have been checkpointed (and the journal
// deleted) and some are in the journal only, then crashes the process.
func cutWorkload(t *testing.T, clean bool) (*waltest.StrictMem, map[string]int) {
	t.Helper()
	m := waltest.NewStrictMem()
	d, err := OpenDir("/data", Options{FS: m, SegmentSize: 600})
	if err != nil {
		t.Fatal(err)
	}
	acked := map[string]int{}
	for _, id := range []string{"a", "b"} {
		l, err := d.Create(testHeader(id))
		if err != nil {
			t.Fatal(err)
		}
		for i, in := range sampleInputs() {
			if _, err := l.Append(in, true); err != nil {
				t.Fatal(err)
			}
			acked[id] = i + 1
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if clean {
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		return m.Restart(), acked
	}
	return m.Restart(), acked // the process dies; its goroutines are gone with it
}

// TestCutLiveLogNeverSilent cuts a live log at every byte, after a clean
// close (the file is the only copy) and after a process crash (part of
// it is still in the journal): never may an acknowledged input vanish
// without the session failing.
func TestCutLiveLogNeverSilent(t *testing.T) {
	for _, clean := range []bool{true, false} {
		t.Run(fmt.Sprint("clean close ", clean), func(t *testing.T) {
			base, acked := cutWorkload(t, clean)
			whole := memRead(t, base, "/data/a.wal")
			damaged := 0
			for cut := range len(whole) {
				m := base.Restart()
				memRewrite(t, m, "/data/a.wal", whole[:cut])
				if err := cutCheck(m, acked); err != nil {
					t.Fatalf("a.wal cut at %d of %d: %v", cut, len(whole), err)
				}
				if d, err := OpenDir("/data", Options{FS: m}); err == nil {
					if _, err := d.Read("a"); err != nil {
						damaged++
					}
					d.Close()
				}
			}
			if clean && damaged != len(whole) {
				t.Fatalf("%d of %d cuts reported, want every one: the journal is gone after a clean close", damaged, len(whole))
			}
		})
	}
}

// TestCutJournalNeverSilent cuts the journal's last segment at every
// byte after a process crash: whatever it took, either every
// acknowledged input is still there or its session fails.
func TestCutJournalNeverSilent(t *testing.T) {
	base, acked := cutWorkload(t, false)
	segs, err := (&Dir{path: "/data", fs: base}).listSegments()
	if err != nil || len(segs) == 0 {
		t.Fatalf("no journal left: %v", err)
	}
	last := segs[len(segs)-1].path
	whole := memRead(t, base, last)
	for cut := range len(whole) {
		m := base.Restart()
		memRewrite(t, m, last, whole[:cut])
		if err := cutCheck(m, acked); err != nil {
			t.Fatalf("%s cut at %d of %d: %v", last, cut, len(whole), err)
		}
	}
}

// TestReplayOfACutLog reads a live log cut short in a real data
// directory as `baton replay` does (ReadFile): the ledger beside it
// makes the cut damage, not a torn tail.
func TestReplayOfACutLog(t *testing.T) {
	dir := t.TempDir()
	d, err := OpenDir(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := d.Create(testHeader("r"))
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := l.Append(engine.Input{T: 1, Type: engine.InputAdvance}, true); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "r.wal")
	if _, err := ReadFile(path); err != nil {
		t.Fatalf("whole log: %v", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{len(data) - 1, len(data) / 2, int(recordStarts(t, data)[2])} {
		if err := os.WriteFile(path, data[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		var dmg *DamageError
		if _, err := ReadFile(path); !errors.As(err, &dmg) {
			t.Fatalf("cut at %d of %d: %v, want damage", cut, len(data), err)
		}
	}
}

// TestUnacknowledgedTailIsCut leaves whole records past what the ledger
// says was acknowledged in a log the journal no longer covers (bytes
// written from memory before their batch was synced, whose batch the
// crash lost): the next start cuts them, and refuses a new log under an
// id whose acknowledged bytes are lost.
func TestUnacknowledgedTailIsCut(t *testing.T) {
	base, acked := cutWorkload(t, true)
	m := base.Restart()
	whole := memRead(t, m, "/data/a.wal")
	extra, err := appendRecord(nil, &Record{Kind: KindInput, Seq: uint64(acked["a"] + 1), Input: &engine.Input{T: 99, Type: engine.InputAdvance}})
	if err != nil {
		t.Fatal(err)
	}
	memRewrite(t, m, "/data/a.wal", append(append([]byte{}, whole...), extra...))
	d, err := OpenDir("/data", Options{FS: m})
	if err != nil {
		t.Fatal(err)
	}
	if rep := d.Redo(); !slices.Contains(rep.Repaired, "a") || len(rep.Damaged) != 0 {
		t.Fatalf("redo %+v, want a repaired", rep)
	}
	rec, err := d.Read("a")
	if err != nil || len(rec.Inputs) != acked["a"] {
		t.Fatalf("a after the start: %v inputs, err %v; want the %d acknowledged", len(rec.Inputs), err, acked["a"])
	}
	d.Close()

	// b's log cut: b is damaged, and a new b is refused.
	m = base.Restart()
	memRewrite(t, m, "/data/b.wal", memRead(t, m, "/data/b.wal")[:100])
	d, err = OpenDir("/data", Options{FS: m})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var dmg *DamageError
	if _, err := d.Create(testHeader("b")); !errors.As(err, &dmg) {
		t.Fatalf("Create over a damaged id: %v, want its damage", err)
	}
}
