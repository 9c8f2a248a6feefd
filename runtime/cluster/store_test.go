package cluster

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/internal/wal"
)

// op is one call on a store or its log, done alike on a data directory
// and on the cluster store.
type op struct {
	append *engine.Input
	sync   bool
	step   bool // AppendStep for the last input
	flush  bool
	reopen bool // Close, then Open
	finish bool
}

func in(i int) *engine.Input { return &sampleInputs()[i] }

func stepFor(seq uint64) wal.Step {
	return wal.Step{Effects: []wal.EffectDigest{{T: int64(seq) * 100, Type: engine.EffectAgentMessage, ID: "m", Hash: "00112233"}}}
}

// TestRoundTripMatchesFile: whatever the calls, the cluster store's
// messages concatenate to the bytes of the file a data directory writes,
// and Open and Read return what the data directory's do.
func TestRoundTripMatchesFile(t *testing.T) {
	tests := []struct {
		name string
		ops  []op
	}{
		{"header only", nil},
		{"synced inputs", []op{{append: in(0), sync: true}, {append: in(1), sync: true}, {append: in(2), sync: true}}},
		{"steps held until the next input", []op{
			{append: in(0), sync: true}, {step: true}, {append: in(1), sync: true}, {step: true},
			{append: in(2), sync: false}, {step: true}, {append: in(3), sync: true},
		}},
		{"flushed step", []op{{append: in(0), sync: true}, {step: true}, {flush: true}, {append: in(1), sync: true}}},
		{"step sent by close", []op{{append: in(0), sync: true}, {step: true}, {reopen: true}, {append: in(1), sync: true}, {step: true}}},
		{"finished", []op{{append: in(0), sync: true}, {step: true}, {append: in(4), sync: true}, {step: true}, {finish: true}}},
		{"finished after reopen", []op{{append: in(0), sync: true}, {reopen: true}, {append: in(1), sync: true}, {finish: true}}},
	}
	c := node(t, soloConfig(t), "a")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := "rt_" + strings.ReplaceAll(tt.name, " ", "_")
			dir, err := wal.OpenDir(t.TempDir(), wal.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			defer dir.Close()
			stores := []wal.Store{dir.Store(), c.Store()}
			logs := make([]wal.SessionLog, 2)
			for i, s := range stores {
				if logs[i], err = s.Create(testHeader(id)); err != nil {
					t.Fatalf("store %d: %v", i, err)
				}
			}
			finished := false
			for n, o := range tt.ops {
				for i, s := range stores {
					l := logs[i]
					switch {
					case o.append != nil:
						seq, err := l.Append(*o.append, o.sync)
						if err != nil || seq != l.Seq() {
							t.Fatalf("op %d store %d: seq %d, %v", n, i, seq, err)
						}
					case o.step:
						err = l.AppendStep(l.Seq(), stepFor(l.Seq()))
					case o.flush:
						err = l.Flush()
					case o.reopen:
						if err = l.Close(); err == nil {
							logs[i], _, err = s.Open(id)
						}
					case o.finish:
						err = l.Finish(wal.End{Reason: "done", T: 5000, Wall: time.Date(2026, 2, 20, 23, 5, 0, 0, time.UTC)})
						finished = true
					}
					if err != nil {
						t.Fatalf("op %d store %d: %v", n, i, err)
					}
				}
			}
			if !finished {
				for i, l := range logs {
					if err := l.Close(); err != nil {
						t.Fatalf("close %d: %v", i, err)
					}
				}
			}
			path := dir.LivePath(id)
			if finished {
				path = dir.DonePath(id)
			}
			file, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := rawLog(t, c, id); !bytes.Equal(got, file) {
				t.Fatalf("messages concatenate to\n%q\nthe file holds\n%q", got, file)
			}
			var recs [2]*wal.Recovered
			for i, s := range stores {
				if recs[i], err = s.Read(id); err != nil {
					t.Fatalf("read %d: %v", i, err)
				}
				st, err := s.State(id)
				want := map[bool]wal.State{false: wal.StateLive, true: wal.StateDone}[finished]
				if err != nil || st != want {
					t.Fatalf("store %d state %v, %v; want %v", i, st, err, want)
				}
			}
			if d := cmp.Diff(recs[0], recs[1]); d != "" {
				t.Fatalf("Read differs (-dir +cluster):\n%s", d)
			}
			if finished {
				for i, s := range stores {
					if _, _, err := s.Open(id); !errors.Is(err, wal.ErrFinished) {
						t.Fatalf("store %d: open of a finished log: %v, want ErrFinished", i, err)
					}
					if _, err := s.Create(testHeader(id)); !errors.Is(err, wal.ErrFinished) {
						t.Fatalf("store %d: create of a finished id: %v, want ErrFinished", i, err)
					}
				}
				return
			}
			for i, s := range stores {
				var l wal.SessionLog
				l, recs[i], err = s.Open(id)
				if err != nil {
					t.Fatalf("open %d: %v", i, err)
				}
				if l.Seq() != uint64(len(recs[i].Inputs)) {
					t.Fatalf("store %d: opened at seq %d with %d inputs", i, l.Seq(), len(recs[i].Inputs))
				}
				if _, err := s.Create(testHeader(id)); !errors.Is(err, wal.ErrExists) {
					t.Fatalf("store %d: create of a live id: %v, want ErrExists", i, err)
				}
				l.Close()
			}
			if d := cmp.Diff(recs[0], recs[1]); d != "" {
				t.Fatalf("Open differs (-dir +cluster):\n%s", d)
			}
		})
	}
}

// TestOpenUnwritten: a session registered by a node that died before
// writing its header is not found, and its id is free again.
func TestOpenUnwritten(t *testing.T) {
	cfg := soloConfig(t)
	a, _ := fakeNode(t, cfg, "a")
	b, _ := fakeNode(t, cfg, "b")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Acquire(ctx, "u1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "owner view on b", func() bool { _, _, ok := b.Owner("u1"); return ok })
	a.freeze()
	expire(t, a)
	if got := collect(t, b.Orphans(), 1, 10*time.Second); got[0] != "u1" {
		t.Fatalf("orphan %v", got)
	}
	if _, _, err := b.Store().Open("u1"); !errors.Is(err, wal.ErrNotFound) {
		t.Fatalf("open: %v, want ErrNotFound", err)
	}
	waitFor(t, 10*time.Second, "the id let go", func() bool { live, _ := b.Store().Live(); return len(live) == 0 })
	if _, err := b.Store().Create(testHeader("u1")); err != nil {
		t.Fatalf("create of the free id: %v", err)
	}
}
