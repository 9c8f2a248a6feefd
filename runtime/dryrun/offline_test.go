package dryrun_test

import (
	"bytes"
	"encoding/json"
	"os"
	"runtime"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/rules/script/scripttest"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
)

// A dry run is offline: a pack script runs to its end however far past its
// budget and however loaded the machine, so the timeline is the same on
// every run. The regex pack's route backtracks (a backreference, which
// goja leaves to regexp2) for about a quarter of a second on this message,
// against its 1ms budget.
func TestScriptsRunOffline(t *testing.T) {
	p, err := rules.Load(os.DirFS("../../engine/testdata/packs/regex"), ".")
	if err != nil {
		t.Fatal(err)
	}
	evs := []events.Timed{{T: 1000, Event: engine.CandidateEvent{Type: engine.EventMessage, Text: scripttest.RepeatedWords()}}}
	run := func() []byte {
		res, err := dryrun.Run(p, dryrun.Options{Events: evs, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Records {
			if r.Type == engine.EffectScriptError {
				t.Fatalf("a script failed or was stopped in a dry run: %s", r.Reason)
			}
		}
		data, err := json.Marshal(res.Records)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	idle := run()
	if !bytes.Contains(idle, []byte("repeated_w499")) {
		t.Fatalf("the route did not find the repeated word: %s", idle)
	}
	scripttest.Busy(t, runtime.GOMAXPROCS(0))
	loaded := run()
	if !bytes.Equal(idle, loaded) {
		t.Fatalf("the timeline differs on a loaded machine:\nidle   %s\nloaded %s", idle, loaded)
	}
}
