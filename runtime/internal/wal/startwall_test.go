package wal

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/internal/wal/waltest"
)

// TestStartWallSurvivesPowerLoss: the step record that places a session's
// clock after it waited for prepared lines is flushed, so a power cut at
// any point after Flush returned still recovers the real start, not the
// log's creation time.
func TestStartWallSurvivesPowerLoss(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	started := created.Add(2500 * time.Millisecond)
	// workload logs a prepare input and its answer, then the advance that
	// starts the clock with its step, flushes, and goes on with an input
	// that is not synced. It returns how many operations Flush took.
	workload := func(fsys FS) (flushed int, err error) {
		d, err := OpenDir("/data", Options{FS: fsys})
		if err != nil {
			return -1, err
		}
		hdr := testHeader("s")
		hdr.StartWall = created
		l, err := d.Create(hdr)
		if err != nil {
			return -1, err
		}
		res := engine.LLMResult{ID: "r1", Text: "Hello?"}
		for _, in := range []engine.Input{
			{Type: engine.InputPrepare},
			{Type: engine.InputLLMResult, LLM: &res},
		} {
			if _, err := l.Append(in, false); err != nil {
				return -1, err
			}
		}
		seq, err := l.Append(engine.Input{Type: engine.InputAdvance}, true)
		if err != nil {
			return -1, err
		}
		if err := l.AppendStep(seq, Step{StartWall: &started}); err != nil {
			return -1, err
		}
		if err := l.Flush(); err != nil {
			return -1, err
		}
		if m, ok := fsys.(*waltest.StrictMem); ok {
			flushed = m.Ops()
		}
		_, err = l.Append(engine.Input{T: 100, Type: engine.InputAdvance}, false)
		return flushed, err
	}
	probe := waltest.NewStrictMem()
	flushed, err := workload(probe)
	if err != nil {
		t.Fatal(err)
	}
	for cut := flushed; cut <= probe.Ops(); cut++ {
		for variant := range 3 {
			fsys := waltest.NewStrictMem()
			fsys.CrashAfter(cut)
			_, _ = workload(fsys)
			after := fsys.Recover(rand.New(rand.NewPCG(uint64(cut), uint64(variant))))
			d, err := OpenDir("/data", Options{FS: after})
			if err != nil {
				t.Fatal(err)
			}
			_, rec, err := d.Open("s")
			if err != nil {
				t.Fatalf("cut %d: %v", cut, err)
			}
			if got := rec.StartWall(); !got.Equal(started) {
				t.Fatalf("cut %d variant %d: start wall %v, want %v (the log was created at %v)", cut, variant, got, started, created)
			}
			d.Close()
		}
	}
}
