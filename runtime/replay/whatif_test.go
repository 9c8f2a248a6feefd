package replay_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/replay"
)

func loadPack(t *testing.T, dir string) *rules.Pack {
	t.Helper()
	p, err := rules.Load(os.DirFS(dir), ".")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// record dry-runs the pack in dir with its own candidate and saves the run
// as a session log, as baton dryrun --record does.
func record(t *testing.T, dir string) (path string, p *rules.Pack, res *dryrun.Result) {
	t.Helper()
	p = loadPack(t, dir)
	var evs []events.Timed
	if p.DryRun.Candidate != "" {
		f, err := p.FS.Open(p.DryRun.Candidate)
		if err != nil {
			t.Fatal(err)
		}
		evs, err = events.ReadAll(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	res, err := dryrun.Run(p, dryrun.Options{Events: evs, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	path, err = replay.SaveDryRun(t.TempDir(), dir, p, 3, time.Unix(0, 0), res)
	if err != nil {
		t.Fatal(err)
	}
	return path, p, res
}

func openRecording(t *testing.T, path string, p *rules.Pack) *replay.Recording {
	t.Helper()
	rec, err := replay.OpenRecording(path, func(*replay.Session) (*rules.Pack, error) { return p, nil })
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// editedCopy copies the pack folder dir and replaces old with new in its
// pack.yaml.
func editedCopy(t *testing.T, dir, old, new string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(dir))
	if err := os.CopyFS(dst, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dst, "pack.yaml")
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s does not hold %q", name, old)
	}
	if err := os.WriteFile(name, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

func answered(res *dryrun.Result) int {
	n := 0
	for _, in := range res.Inputs {
		if in.Type == engine.InputLLMResult {
			n++
		}
	}
	return n
}

// Played through the pack it was recorded with, a recorded session comes
// out as recorded: every answer is the recording's (none asked anew), every
// effect at its time. This is what makes a what-if's differences the
// pack's and not the replay's.
func TestWhatIfWithItsOwnPackChangesNothing(t *testing.T) {
	tests := []struct {
		pack string
		// notes is how many notes the what-if makes: a recording whose
		// client tools ran says the simulated client answers them.
		notes int
	}{{"dayone", 0}, {"hotseat", 0}, {"boardroom", 0}, {"brain", 0}, {"training", 1}}
	for _, tc := range tests {
		pack := tc.pack
		t.Run(pack, func(t *testing.T) {
			// A pack script stopped at its 20ms budget on a loaded machine
			// makes a run differ from the next; only then is the pair of
			// runs tried again.
			for attempt := 1; ; attempt++ {
				path, p, res := record(t, filepath.Join("../../scenarios", pack))
				rec := openRecording(t, path, p)
				if len(rec.Result.Records) != len(res.Records) {
					t.Fatalf("recording has %d effects, the run had %d", len(rec.Result.Records), len(res.Records))
				}
				wi, err := rec.WhatIf(context.Background(), p, replay.WhatIfOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if !wi.Changed() && wi.Asked == 0 && wi.Reused == answered(res) {
					if len(wi.Notes) != tc.notes {
						t.Errorf("notes on a dry run's recording: %q", wi.Notes)
					}
					return
				}
				if attempt < 3 && (budgetStop(res) || budgetStop(wi.Result)) {
					continue
				}
				var b strings.Builder
				replay.WriteDiff(&b, wi, replay.DiffOptions{Verbose: true})
				t.Fatalf("changed %v, %d answers asked anew, %d of %d reused\n%s", wi.Changed(), wi.Asked, wi.Reused, answered(res), b.String())
			}
		})
	}
}

func budgetStop(res *dryrun.Result) bool {
	for _, r := range res.Records {
		if r.Type == engine.EffectScriptError && r.Kind == engine.ScriptBudget {
			return true
		}
	}
	return false
}

// A longer silence timeout in a copy of the pack: the candidate's
// recorded events play again, the stretch before the first silence reuses
// the recorded answers, and the nudges come later or not at all.
func TestWhatIfSilenceTimeout(t *testing.T) {
	const dir = "../../scenarios/dayone"
	path, p, _ := record(t, dir)
	rec := openRecording(t, path, p)
	tests := []struct {
		timeout    string
		fewer      bool // fewer nudges than recorded
		sameFirst  bool // the first nudge unchanged
		wantMarker string
	}{
		{timeout: "20s", fewer: true, wantMarker: "~ "},
		// Only a comment differs: the hash does, the session does not.
		{timeout: "12s", sameFirst: true},
		{timeout: "40s", fewer: true, wantMarker: "- "},
	}
	for _, tc := range tests {
		t.Run(tc.timeout, func(t *testing.T) {
			q := loadPack(t, editedCopy(t, dir, "SILENCE_TIMEOUT: 12s", "SILENCE_TIMEOUT: "+tc.timeout+" # edited"))
			if q.Hash == p.Hash {
				t.Fatal("the edited pack hashes as the recorded one")
			}
			wi, err := rec.WhatIf(context.Background(), q, replay.WhatIfOptions{})
			if err != nil {
				t.Fatal(err)
			}
			s := wi.Summary()
			if tc.fewer != (s.Nudges[1] < s.Nudges[0]) {
				t.Errorf("nudges %d recorded, %d what-if", s.Nudges[0], s.Nudges[1])
			}
			if same := tc.timeout == "12s"; same == wi.Changed() || same != (wi.Asked == 0) {
				t.Errorf("changed %v with %d answers asked anew", wi.Changed(), wi.Asked)
			}
			if wi.Reused == 0 || (tc.fewer && wi.Asked == 0) {
				t.Errorf("%d answers reused, %d asked anew", wi.Reused, wi.Asked)
			}
			first := func(res *dryrun.Result) int64 {
				for _, r := range res.Records {
					if r.Type == engine.EffectAgentMessage && r.Rule == "silence" {
						return r.T
					}
				}
				return -1
			}
			a, b := first(rec.Result), first(wi.Result)
			if tc.sameFirst != (a == b) || (!tc.sameFirst && b != -1 && b <= a) {
				t.Errorf("first nudge at %d recorded, %d what-if", a, b)
			}
			var out1, out2 bytes.Buffer
			if err := replay.WriteDiff(&out1, wi, replay.DiffOptions{}); err != nil {
				t.Fatal(err)
			}
			again, err := rec.WhatIf(context.Background(), q, replay.WhatIfOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := replay.WriteDiff(&out2, again, replay.DiffOptions{}); err != nil {
				t.Fatal(err)
			}
			if out1.String() != out2.String() {
				t.Errorf("two what-ifs print differently:\n%s\n---\n%s", out1.String(), out2.String())
			}
			if tc.wantMarker != "" && !strings.Contains(out1.String(), "\n"+tc.wantMarker) {
				t.Errorf("no %q line in the diff:\n%s", tc.wantMarker, out1.String())
			}
		})
	}
}

// The diff pairs an effect that moved past others with itself, and says
// by how much it moved.
func TestDiffPairsMovedEffects(t *testing.T) {
	msg := func(t int64, text string) dryrun.Record {
		return dryrun.Record{Effect: engine.Effect{T: t, Type: engine.EffectAgentMessage, Agent: "qa", Kind: "reply", Text: text, Rule: "R"}}
	}
	tests := []struct {
		name     string
		rec, wi  []dryrun.Record
		want     string
		shiftsMS []int64
	}{
		{"same", []dryrun.Record{msg(0, "a"), msg(10, "b")}, []dryrun.Record{msg(0, "a"), msg(10, "b")}, "  ", []int64{0, 0}},
		{"later", []dryrun.Record{msg(0, "a"), msg(10, "b")}, []dryrun.Record{msg(0, "a"), msg(30, "b")}, " ~", []int64{0, 20}},
		{"past another", []dryrun.Record{msg(0, "a"), msg(10, "b"), msg(20, "c")}, []dryrun.Record{msg(0, "a"), msg(20, "c"), msg(25, "b")}, "  ~", []int64{0, 0, 15}},
		{"gone and new", []dryrun.Record{msg(0, "a"), msg(10, "b")}, []dryrun.Record{msg(0, "a"), msg(10, "x")}, " -+", []int64{0, 0, 0}},
	}
	p := loadPack(t, "../../scenarios/dayone")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wi := &replay.WhatIf{Recorded: &replay.Recording{Pack: p, Result: &dryrun.Result{Records: tc.rec}}, Pack: p, Result: &dryrun.Result{Records: tc.wi}}
			var got strings.Builder
			var shifts []int64
			for _, d := range wi.Diff(false) {
				got.WriteByte(byte(d.Change))
				shifts = append(shifts, d.ShiftMS())
			}
			if got.String() != tc.want || !slices.Equal(shifts, tc.shiftsMS) {
				t.Errorf("diff %q shifts %v, want %q %v", got.String(), shifts, tc.want, tc.shiftsMS)
			}
		})
	}
}
