package wal

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/internal/wal/waltest"
)

// journalWorkload runs five sessions at once, each in its own goroutine,
// so that their inputs share journal batches. Segments are tiny, so the
// committer rotates and the checkpointer syncs and deletes segments while
// the sessions write. One session is closed and reopened, one finishes.
// It returns when every session has stopped (at the end, or at the first
// error: the power cut).
func journalWorkload(fsys FS) []*plSession {
	d, err := OpenDir("/data", Options{FS: fsys, SegmentSize: 700})
	if err != nil {
		return nil
	}
	defer d.Close()
	ss := []*plSession{{id: "a"}, {id: "b"}, {id: "c"}, {id: "d"}, {id: "e"}}
	logs := make([]*Log, len(ss))
	for i, s := range ss {
		if logs[i], err = d.Create(testHeader(s.id)); err != nil {
			return ss
		}
		s.created = true
	}
	ins := sampleInputs()
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Go(func() {
			l := logs[i]
			for round := range 12 {
				in := ins[(round+i)%len(ins)]
				in.T = int64(round*1000 + i)
				sync := (round+i)%3 != 1
				s.written = append(s.written, in)
				seq, err := l.Append(in, sync)
				if err != nil {
					return
				}
				if sync {
					s.acked = int(seq)
				}
				if l.AppendStep(seq, Step{Effects: []EffectDigest{{T: in.T, Type: engine.EffectNote, Hash: fmt.Sprint(seq)}}}) != nil {
					return
				}
				switch {
				case i == 1 && round == 4:
					if l.Close() != nil {
						return
					}
					nl, rec, err := d.Open(s.id)
					if err != nil {
						return
					}
					l = nl
					s.written = s.written[:len(rec.Inputs)]
				case i == 2 && round == 8:
					if l.Finish(End{Reason: "ended", T: 8000}) == nil {
						s.finished = true
					}
					return
				}
			}
			l.Close()
		})
	}
	wg.Wait()
	return ss
}

// TestJournalPowerLoss cuts the power after every operation of sessions
// writing through the journal at once, and checks three restarts: after
// a power cut (torn remains of what was not synced), after a process
// crash (the kernel kept everything), and after a process crash whose
// restart was itself cut by the power right after the journal's redo.
// Nothing acknowledged may be lost and no cut may read as damage.
func TestJournalPowerLoss(t *testing.T) {
	probe := waltest.NewStrictMem()
	if ss := journalWorkload(probe); ss == nil || ss[4].acked == 0 {
		t.Fatal("workload without a power cut did not run")
	}
	total := probe.Ops()
	if total < 150 {
		t.Fatalf("workload made only %d operations", total)
	}
	restarts := []struct {
		name  string
		after func(m *waltest.StrictMem, rng *rand.Rand) (FS, error)
	}{
		{"power cut", func(m *waltest.StrictMem, rng *rand.Rand) (FS, error) { return m.Recover(rng), nil }},
		{"process crash", func(m *waltest.StrictMem, _ *rand.Rand) (FS, error) { return m.Restart(), nil }},
		{"process crash, then power cut after redo", func(m *waltest.StrictMem, rng *rand.Rand) (FS, error) {
			up := m.Restart()
			d, err := OpenDir("/data", Options{FS: up})
			if err != nil {
				return nil, fmt.Errorf("first restart: %w", err)
			}
			cut := up.Recover(rng)
			d.Close() // only stops its goroutines: its file system is gone
			return cut, nil
		}},
	}
	torn := 0
	for cut := 0; cut <= total+20; cut++ {
		for k, r := range restarts {
			fsys := waltest.NewStrictMem()
			fsys.CrashAfter(cut)
			ss := journalWorkload(fsys)
			after, err := r.after(fsys, rand.New(rand.NewPCG(uint64(cut), uint64(k))))
			if err == nil {
				var rep RedoReport
				rep, err = checkJournalRecovered(after, ss)
				if rep.Tail != nil {
					torn++
				}
			}
			if err != nil {
				t.Fatalf("%s after %d of about %d operations: %v", r.name, cut, total, err)
			}
		}
	}
	if torn == 0 {
		t.Error("no cut left a torn journal tail; the test does not reach it")
	}
	t.Logf("%d cuts over about %d operations, %d with a torn journal tail", total+21, total, torn)
}

// checkJournalRecovered is checkRecovered plus what redo reported.
func checkJournalRecovered(fsys FS, ss []*plSession) (RedoReport, error) {
	d, err := OpenDir("/data", Options{FS: fsys})
	if err != nil {
		return RedoReport{}, fmt.Errorf("reopening the data dir: %w", err)
	}
	rep := d.Redo()
	if len(rep.Damaged) > 0 || len(rep.Missing) > 0 {
		d.Close()
		return rep, fmt.Errorf("redo found damage %v or missing logs %v", rep.Damaged, rep.Missing)
	}
	if _, err := fsys.Stat("/data/" + JournalDir); !errors.Is(err, fs.ErrNotExist) {
		d.Close()
		return rep, fmt.Errorf("journal folder left after redo: %v", err)
	}
	if err := d.Close(); err != nil {
		return rep, err
	}
	return rep, checkRecovered(fsys, ss)
}

// TestCleanCloseLeavesNoJournal writes sessions whose files are never
// synced on their own, closes the directory and cuts the power: Close
// must have checkpointed every session file and removed the journal, so
// that what a tool reading the files sees is everything.
func TestCleanCloseLeavesNoJournal(t *testing.T) {
	mem := waltest.NewStrictMem()
	checkpointed := 0
	d, err := OpenDir("/data", Options{FS: mem, SegmentSize: 1 << 20,
		OnCheckpoint: func(files int, _ time.Duration) { checkpointed += files }})
	if err != nil {
		t.Fatal(err)
	}
	ins := sampleInputs()
	for _, id := range []string{"x", "y"} {
		l, err := d.Create(testHeader(id))
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range ins {
			if _, err := l.Append(in, true); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if checkpointed != 2 {
		t.Errorf("Close checkpointed %d session files, want 2", checkpointed)
	}
	after := mem.Recover(nil) // keeps synced bytes only
	if _, err := after.Stat("/data/" + JournalDir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("journal folder after a clean close: %v", err)
	}
	d2, err := OpenDir("/data", Options{FS: after})
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if rep := d2.Redo(); rep.Segments != 0 {
		t.Fatalf("redo after a clean close: %+v", rep)
	}
	for _, id := range []string{"x", "y"} {
		rec, err := d2.Read(id)
		if err != nil || len(rec.Inputs) != len(ins) || rec.Tail != nil {
			t.Fatalf("%s after a clean close and a power cut: %v inputs, tail %v, err %v", id, len(rec.Inputs), rec.Tail, err)
		}
	}
}
