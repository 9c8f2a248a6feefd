package scenarios_test

import (
	"flag"
	"os"
	"testing"

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
