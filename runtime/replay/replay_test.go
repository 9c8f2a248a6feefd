package replay_test

import (
	"os"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/internal/wal"
	"github.com/batonhq/baton/runtime/replay"
)

// A pack script stopped at its time budget in a live session is the one
// outcome a replay cannot recompute: the log records it with the step, and
// the replay reproduces every effect byte for byte (the measured time
// included) instead of running the script against its budget again.
func TestScriptBudgetReplays(t *testing.T) {
	const dir = "../../engine/testdata/packs/scripted"
	p, err := rules.Load(os.DirFS(dir), ".")
	if err != nil {
		t.Fatal(err)
	}
	d, err := wal.OpenDir(t.TempDir(), wal.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// What a live host writes: its options in the header, each input and
	// the digest of its step.
	opts := engine.Options{Seed: 1, LiveBudgets: true}
	l, err := d.Create(wal.Header{Engine: engine.Version, Pack: p.Name, PackRef: dir, PackHash: p.Hash, Options: opts,
		SessionID: "live", CandidateID: "c", StartWall: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	in := engine.Input{T: 1000, Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{Type: engine.EventMessage, Text: "loop"}}
	out, stepErr := engine.New(p, opts).Step(in, nil)
	if engine.FactsOf(out) == nil {
		t.Fatal("the looping route was not stopped at its budget")
	}
	seq, err := l.Append(in, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.AppendStep(seq, wal.Digest(out, stepErr)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := replay.File(d.LivePath("live"), func(string) (*rules.Pack, error) { return p, nil })
	if err != nil {
		t.Fatal(err)
	}
	if !got.OK() || got.Verified != 1 {
		t.Fatalf("replay differs from the log (%d verified): %v", got.Verified, got.Diffs)
	}
}

// A session whose agent edits code through client tools replays offline
// from its log alone: the client's results are recorded inputs, so the
// replay needs neither the client nor its workspace, and reproduces
// every effect, the debounced editor slot's included.
func TestClientToolsReplay(t *testing.T) {
	const dir = "../../scenarios/training"
	p, err := rules.Load(os.DirFS(dir), ".")
	if err != nil {
		t.Fatal(err)
	}
	f, err := p.FS.Open(p.DryRun.Candidate)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := events.ReadAll(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	res, err := dryrun.Run(p, dryrun.Options{Events: evs, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	calls, results := 0, 0
	for _, in := range res.Inputs {
		if in.Type == engine.InputClientToolResult {
			results++
		}
	}
	for _, r := range res.Records {
		if r.Type == engine.EffectClientToolCall {
			calls++
		}
	}
	if calls == 0 || calls != results {
		t.Fatalf("%d client tool calls and %d results in the log; want some, one result each", calls, results)
	}
	path, err := replay.SaveDryRun(t.TempDir(), dir, p, 7, time.Unix(0, 0), res)
	if err != nil {
		t.Fatal(err)
	}
	got, err := replay.File(path, func(string) (*rules.Pack, error) { return p, nil })
	if err != nil {
		t.Fatal(err)
	}
	if !got.OK() || got.Verified != len(res.Inputs) || got.Effects != len(res.Records) {
		t.Fatalf("replay: ok %v, %d of %d inputs verified, %d of %d effects: %v", got.OK(), got.Verified, len(res.Inputs), got.Effects, len(res.Records), got.Diffs)
	}
}
