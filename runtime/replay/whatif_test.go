package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/record"
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

// recordSession dry-runs the pack in dir with its own candidate and saves the run
// as a session log, as baton dryrun --record does.
func recordSession(t *testing.T, dir string) (path string, p *rules.Pack, res *record.Result) {
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

func answered(res *record.Result) int {
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
			path, p, res := recordSession(t, filepath.Join("../../scenarios", pack))
			rec := openRecording(t, path, p)
			if len(rec.Result.Records) != len(res.Records) {
				t.Fatalf("recording has %d effects, the run had %d", len(rec.Result.Records), len(res.Records))
			}
			wi, err := rec.WhatIf(context.Background(), p, replay.WhatIfOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if wi.Changed() || wi.Asked != 0 || wi.Reused != answered(res) {
				var b strings.Builder
				replay.WriteDiff(&b, wi, replay.DiffOptions{Verbose: true})
				t.Fatalf("changed %v, %d answers asked anew, %d of %d reused\n%s", wi.Changed(), wi.Asked, wi.Reused, answered(res), b.String())
			}
			if len(wi.Notes) != tc.notes {
				t.Errorf("notes on a dry run's recording: %q", wi.Notes)
			}
		})
	}
}

// A longer silence timeout in a copy of the pack: the candidate's
// recorded events play again, the stretch before the first silence reuses
// the recorded answers, and the nudges come later or not at all.
func TestWhatIfSilenceTimeout(t *testing.T) {
	const dir = "../../scenarios/dayone"
	path, p, _ := recordSession(t, dir)
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
			s := wi.Summary(replay.DiffOptions{})
			if tc.fewer != (s.Nudges[1] < s.Nudges[0]) {
				t.Errorf("nudges %d recorded, %d what-if", s.Nudges[0], s.Nudges[1])
			}
			if same := tc.timeout == "12s"; same == wi.Changed() || same != (wi.Asked == 0) {
				t.Errorf("changed %v with %d answers asked anew", wi.Changed(), wi.Asked)
			}
			if wi.Reused == 0 || (tc.fewer && wi.Asked == 0) {
				t.Errorf("%d answers reused, %d asked anew", wi.Reused, wi.Asked)
			}
			first := func(res *record.Result) int64 {
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

// The text diff, its JSON lines and their summaries count the pairs
// record.Diff makes with the same options, no more and no fewer: the
// what-if page counts the same pairs (runtime/timeline).
func TestDiffCountsItsPairs(t *testing.T) {
	const dir = "../../scenarios/dayone"
	path, p, _ := recordSession(t, dir)
	rec := openRecording(t, path, p)
	q := loadPack(t, editedCopy(t, dir, "SILENCE_TIMEOUT: 12s", "SILENCE_TIMEOUT: 20s"))
	wi, err := rec.WhatIf(context.Background(), q, replay.WhatIfOptions{})
	if err != nil {
		t.Fatal(err)
	}
	effects := regexp.MustCompile(`(?m)^# effects: (\d+) unchanged, (\d+) moved, (\d+) only recorded, (\d+) only what-if: (\d+) difference\(s\)$`)
	var counts [2]int
	for k, opt := range []replay.DiffOptions{{}, {Verbose: true}} {
		t.Run(opt.String(), func(t *testing.T) {
			pairs := record.Diff(rec.Result.Records, wi.Result.Records, opt)
			n := map[record.Change]int{}
			for _, d := range pairs {
				n[d.Change]++
			}
			counts[k] = len(pairs) - n[record.Same]
			var text, jsonl bytes.Buffer
			if err := replay.WriteDiff(&text, wi, opt); err != nil {
				t.Fatal(err)
			}
			if err := replay.WriteDiffJSONL(&jsonl, wi, opt); err != nil {
				t.Fatal(err)
			}
			m := effects.FindStringSubmatch(text.String())
			if m == nil {
				t.Fatalf("no effects line in\n%s", text.String())
			}
			want := []int{n[record.Same], n[record.Moved], n[record.Removed], n[record.Added], counts[k]}
			for i, w := range want {
				if got, _ := strconv.Atoi(m[i+1]); got != w {
					t.Errorf("effects line %q: field %d is %d, want %d", m[0], i+1, got, w)
				}
			}
			if !strings.Contains(text.String(), "\n# compared: "+opt.String()+"\n") {
				t.Errorf("the diff does not say what it compared:\n%s", text.String())
			}
			marked := 0
			for _, l := range strings.Split(text.String(), "\n") {
				if l != "" && strings.ContainsRune("-+~", rune(l[0])) {
					marked++
				}
			}
			lines := strings.Split(strings.TrimSpace(jsonl.String()), "\n")
			var sum struct {
				Summary replay.Summary `json:"summary"`
			}
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
				t.Fatal(err)
			}
			if marked != counts[k] || len(lines)-1 != len(pairs) || sum.Summary.Differences() != counts[k] || sum.Summary.Verbose != opt.Verbose {
				t.Errorf("%d marked text lines, %d JSON lines, summary %+v; want %d differences of %d pairs", marked, len(lines)-1, sum.Summary, counts[k], len(pairs))
			}
		})
	}
	if counts[1] <= counts[0] {
		t.Errorf("%d differences with -v, %d without: -v compares more effects", counts[1], counts[0])
	}
}
