package scenarios_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/dryrun"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/packtest"
	"github.com/batonhq/baton/scenarios"
)

var update = flag.Bool("update", false, "rewrite golden timelines")

// TestPacks runs every bundled pack's timeline tests from the folder on
// disk, so -update can rewrite goldens in place.
func TestPacks(t *testing.T) {
	for _, name := range scenarios.Names() {
		t.Run(name, func(t *testing.T) {
			p, err := rules.Load(os.DirFS(name), ".")
			if err != nil {
				t.Fatal(err)
			}
			results, err := packtest.Run(p, packtest.Options{Update: *update, WriteDir: name})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range results {
				t.Run(r.Name, func(t *testing.T) {
					if r.Err != nil {
						t.Error(r.Err)
					}
					if r.Updated {
						t.Logf("golden updated: %s", r.File)
					}
				})
			}
		})
	}
}

// TestEmbeddedMatchesDisk guards against a binary whose bundled pack
// differs from the folder its tests ran on.
func TestEmbeddedMatchesDisk(t *testing.T) {
	for _, name := range scenarios.Names() {
		disk, err := rules.Load(os.DirFS(name), ".")
		if err != nil {
			t.Fatal(err)
		}
		emb, err := rules.Load(scenarios.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		if disk.Hash != emb.Hash {
			t.Errorf("%s: embedded hash %s, disk %s", name, emb.Hash, disk.Hash)
		}
	}
}

// Changing a number in the pack changes the run: the behaviour is data.
func TestDayOneConstantsDriveTheTimeline(t *testing.T) {
	load := func(replace ...string) *rules.Pack {
		t.Helper()
		fsys := fstest.MapFS{}
		for _, name := range []string{"pack.yaml", "roles.yaml", "candidate.jsonl", "scripts/guardrails.js"} {
			data, err := os.ReadFile(filepath.Join("dayone", name))
			if err != nil {
				t.Fatal(err)
			}
			fsys[name] = &fstest.MapFile{Data: data}
		}
		src := string(fsys["pack.yaml"].Data)
		for i := 0; i+1 < len(replace); i += 2 {
			if !strings.Contains(src, replace[i]) {
				t.Fatalf("pack.yaml has no %q", replace[i])
			}
			src = strings.Replace(src, replace[i], replace[i+1], 1)
		}
		fsys["pack.yaml"] = &fstest.MapFile{Data: []byte(src)}
		p, err := rules.LoadFS(fsys)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := func(p *rules.Pack, typ engine.EffectType, kind string) int64 {
		t.Helper()
		res, err := dryrun.Run(p, dryrun.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Records {
			if r.Type == typ && (kind == "" || r.Kind == kind) {
				return r.T
			}
		}
		t.Fatalf("no %s %s", typ, kind)
		return 0
	}
	base := load()
	if got := first(base, engine.EffectAnchor, ""); got != 180000 {
		t.Fatalf("anchor at %d", got)
	}
	if got := first(load(`ANCHOR_BA_INTERRUPT: "03:00"`, `ANCHOR_BA_INTERRUPT: "04:10"`), engine.EffectAnchor, ""); got != 250000 {
		t.Fatalf("moved anchor fired at %d, want 250000", got)
	}
	nudge := first(base, engine.EffectAgentMessage, "nudge")
	if got := first(load("SILENCE_TIMEOUT: 12s", "SILENCE_TIMEOUT: 20s"), engine.EffectAgentMessage, "nudge"); got != nudge+8000 {
		t.Fatalf("nudge at %d with a 20 s timeout, want %d", got, nudge+8000)
	}
}
