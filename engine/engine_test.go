package engine_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/record"
)

func loadDayOne(t testing.TB) *rules.Pack {
	t.Helper()
	p, err := rules.Load(os.DirFS("../scenarios/dayone"), ".")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func dayOneCandidate(t testing.TB) []events.Timed {
	t.Helper()
	return readCandidate(t, "../scenarios/dayone/candidate.jsonl")
}

func jsonl(t testing.TB, recs []record.Record) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := record.WriteJSONL(&b, recs, record.FormatOptions{Verbose: true}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Same pack and inputs must give byte-identical effects, run after run.
func TestDeterministic(t *testing.T) {
	p := loadDayOne(t)
	evs := dayOneCandidate(t)
	first, err := dryrun.Run(p, dryrun.Options{Events: evs})
	if err != nil {
		t.Fatal(err)
	}
	want := jsonl(t, first.Records)
	for i := 0; i < 5; i++ {
		// A freshly loaded pack too: nothing may hang off pointer identity.
		res, err := dryrun.Run(loadDayOne(t), dryrun.Options{Events: evs})
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonl(t, res.Records); !bytes.Equal(got, want) {
			t.Fatalf("run %d differs from run 0 (-run 0 +run %d):\n%s", i+1, i+1, diffRecords(t, first.Records, res.Records))
		}
	}
	if len(first.Records) < 50 {
		t.Fatalf("suspiciously short session: %d effects", len(first.Records))
	}
}

// Stepping the clock tick by tick (or in finer steps) and jumping straight to
// the next deadline must produce the same effects.
func TestStepEqualsJump(t *testing.T) {
	p := loadDayOne(t)
	for _, evs := range [][]events.Timed{nil, dayOneCandidate(t)} {
		jump, err := dryrun.Run(p, dryrun.Options{Events: evs})
		if err != nil {
			t.Fatal(err)
		}
		want := jsonl(t, jump.Records)
		for _, step := range []int64{100, 50, 37, 1} {
			res, err := dryrun.Run(p, dryrun.Options{Events: evs, StepMS: step})
			if err != nil {
				t.Fatal(err)
			}
			if got := jsonl(t, res.Records); !bytes.Equal(got, want) {
				t.Errorf("events=%d step=%dms: effects differ from jumping (-jump +step):\n%s", len(evs), step, diffRecords(t, jump.Records, res.Records))
			}
		}
	}
}

// diffRecords reports how two runs differ: their effects, or else what
// the simulated host added to them.
func diffRecords(t testing.TB, want, got []record.Record) string {
	if d := diffEffects(t, recordEffects(want), recordEffects(got)); d != "" {
		return d
	}
	return cmp.Diff(strings.Split(string(jsonl(t, want)), "\n"), strings.Split(string(jsonl(t, got)), "\n"))
}

// Folding the recorded inputs through a new session reproduces the effects:
// recovery, replay and regression tests are the same operation.
func TestReplayInputs(t *testing.T) {
	p := loadDayOne(t)
	res, err := dryrun.Run(p, dryrun.Options{Events: dayOneCandidate(t)})
	if err != nil {
		t.Fatal(err)
	}
	// The inputs survive a JSON round trip, as they would in a log.
	data, err := json.Marshal(res.Inputs)
	if err != nil {
		t.Fatal(err)
	}
	var inputs []engine.Input
	if err := json.Unmarshal(data, &inputs); err != nil {
		t.Fatal(err)
	}
	s := engine.New(p, engine.Options{})
	var got []engine.Effect
	for _, in := range inputs {
		got, err = s.Step(in, got)
		if err != nil && !errors.Is(err, engine.ErrEnded) {
			t.Fatal(err)
		}
	}
	if diff := diffEffects(t, recordEffects(res.Records), got); diff != "" {
		t.Fatalf("replay differs from the recorded run (-recorded +replayed):\n%s", diff)
	}
}
