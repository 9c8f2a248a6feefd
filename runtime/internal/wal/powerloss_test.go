package wal

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/internal/wal/waltest"
)

// plSession is what the workload was told about one session before the
// power went: what it wrote, and what was acknowledged.
type plSession struct {
	id       string
	created  bool // Create returned
	written  []engine.Input
	acked    int  // inputs covered by a sync that returned
	finished bool // Finish returned
}

// powerLossWorkload runs three sessions side by side on fsys the way a
// host does: synced and unsynced inputs, held step records, one session
// finished and one closed and reopened. It stops at the first error (the
// power cut).
func powerLossWorkload(fsys FS) (ss []*plSession, err error) {
	d, err := OpenDir("/data", Options{FS: fsys})
	if err != nil {
		return nil, err
	}
	ss = []*plSession{{id: "a"}, {id: "b"}, {id: "c"}}
	logs := make([]*Log, len(ss))
	for i, s := range ss {
		if logs[i], err = d.Create(testHeader(s.id)); err != nil {
			return ss, err
		}
		s.created = true
	}
	ins := sampleInputs()
	for round := range 30 {
		for i, s := range ss {
			if s.finished {
				continue
			}
			in := ins[(round+i)%len(ins)]
			in.T = int64(round*1000 + i)
			sync := (round+i)%3 != 1 // some inputs ride on the next sync
			s.written = append(s.written, in)
			seq, err := logs[i].Append(in, sync)
			if err != nil {
				return ss, err
			}
			if sync {
				s.acked = int(seq)
			}
			if err := logs[i].AppendStep(seq, Step{Effects: []EffectDigest{{T: in.T, Type: engine.EffectNote, Hash: fmt.Sprint(seq)}}}); err != nil {
				return ss, err
			}
		}
		switch round {
		case 5: // b is closed and recovered, as after a clean restart
			if err := logs[1].Close(); err != nil {
				return ss, err
			}
			l, rec, err := d.Open("b")
			if err != nil {
				return ss, err
			}
			logs[1] = l
			ss[1].written = ss[1].written[:len(rec.Inputs)]
		case 18:
			if err := logs[2].Finish(End{Reason: "ended", T: 18000}); err != nil {
				return ss, err
			}
			ss[2].finished = true
		}
	}
	return ss, err
}

// TestPowerLoss cuts the power after every operation of the workload in
// turn, on a file system that keeps only what was synced (and random
// torn remains of the rest), and restarts. No acknowledged input may be
// lost, no torn record may be read as data, and no crash may look like
// damage.
func TestPowerLoss(t *testing.T) {
	probe := waltest.NewStrictMem()
	if _, err := powerLossWorkload(probe); err != nil {
		t.Fatalf("workload without a power cut: %v", err)
	}
	total := probe.Ops()
	if total < 100 {
		t.Fatalf("workload made only %d operations", total)
	}
	points := 0
	for cut := 0; cut <= total; cut++ {
		for variant := range 3 {
			fsys := waltest.NewStrictMem()
			fsys.CrashAfter(cut)
			ss, _ := powerLossWorkload(fsys)
			after := fsys.Recover(rand.New(rand.NewPCG(uint64(cut), uint64(variant))))
			points++
			if err := checkRecovered(after, ss); err != nil {
				t.Fatalf("power cut after %d of %d operations (variant %d): %v", cut, total, variant, err)
			}
		}
	}
	t.Logf("%d crash points over %d operations", points, total)
}

func checkRecovered(fsys FS, ss []*plSession) error {
	d, err := OpenDir("/data", Options{FS: fsys})
	if err != nil {
		return fmt.Errorf("reopening the data dir: %w", err)
	}
	defer d.Close()
	for _, s := range ss {
		st, err := d.State(s.id)
		if err != nil {
			return err
		}
		if s.finished && st != StateDone {
			return fmt.Errorf("session %s: Finish returned but the log is not finished after the cut", s.id)
		}
		var rec *Recovered
		switch st {
		case StateDone:
			if rec, err = d.Read(s.id); err != nil {
				return fmt.Errorf("session %s: finished log: %w", s.id, err)
			}
		case StateLive:
			var l *Log
			l, rec, err = d.Open(s.id)
			if errors.Is(err, ErrNotFound) && !s.created {
				continue // unborn: Create never returned
			}
			if err != nil {
				return fmt.Errorf("session %s: %w", s.id, err)
			}
			if rec.End != nil {
				// Ended before the cut but not yet renamed: the host
				// finishes it.
				if err := l.Finish(*rec.End); err != nil {
					return fmt.Errorf("session %s: finishing a recovered ended log: %w", s.id, err)
				}
				if _, err := d.Read(s.id); err != nil {
					return fmt.Errorf("session %s: %w", s.id, err)
				}
				break
			}
			// The recovered log takes appends and reads back whole.
			if _, err := l.AppendInput(engine.Input{T: 99999, Type: engine.InputAdvance}); err != nil {
				return fmt.Errorf("session %s: append after recovery: %w", s.id, err)
			}
			l.Close()
			again, err := d.Read(s.id)
			if err != nil || again.Tail != nil || len(again.Inputs) != len(rec.Inputs)+1 {
				return fmt.Errorf("session %s: after recovery and one append: err %v tail %v", s.id, err, again.Tail)
			}
		default:
			if s.created {
				return fmt.Errorf("session %s: Create returned but the log is gone", s.id)
			}
			continue
		}
		if len(rec.Inputs) < s.acked {
			return fmt.Errorf("session %s: %d inputs recovered, %d were acknowledged", s.id, len(rec.Inputs), s.acked)
		}
		if len(rec.Inputs) > len(s.written) {
			return fmt.Errorf("session %s: %d inputs recovered, only %d written", s.id, len(rec.Inputs), len(s.written))
		}
		if len(rec.Inputs) > 0 && !reflect.DeepEqual(rec.Inputs, s.written[:len(rec.Inputs)]) {
			return fmt.Errorf("session %s: recovered inputs differ from those written:\n%+v\n%+v", s.id, rec.Inputs, s.written[:len(rec.Inputs)])
		}
	}
	return nil
}
