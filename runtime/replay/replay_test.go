package replay_test

import (
	"os"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/replay"
)

// A pack script stopped at its time budget is the one outcome a replay
// cannot recompute: the log records it with the step, and the replay
// reproduces every effect byte for byte (the measured time included)
// instead of running the script against its budget again.
func TestScriptBudgetReplays(t *testing.T) {
	const dir = "../../engine/testdata/packs/scripted"
	p, err := rules.Load(os.DirFS(dir), ".")
	if err != nil {
		t.Fatal(err)
	}
	evs := []events.Timed{{T: 1000, Event: engine.CandidateEvent{Type: engine.EventMessage, Text: "loop"}}}
	res, err := dryrun.Run(p, dryrun.Options{Events: evs, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	for _, r := range res.Records {
		stopped = stopped || (r.Type == engine.EffectScriptError && r.Kind == engine.ScriptBudget)
	}
	if !stopped {
		t.Fatal("the looping route was not stopped at its budget")
	}
	path, err := replay.SaveDryRun(t.TempDir(), dir, p, 1, time.Unix(0, 0), res)
	if err != nil {
		t.Fatal(err)
	}
	got, err := replay.File(path, func(string) (*rules.Pack, error) { return p, nil })
	if err != nil {
		t.Fatal(err)
	}
	if !got.OK() || got.Verified == 0 {
		t.Fatalf("replay differs from the log (%d verified): %v", got.Verified, got.Diffs)
	}
}
