package scenarios_test

import (
	"flag"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
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

// TestEveryPackIsBundled: TestPacks tests the folders on disk, but the
// binary only has what embed.go embeds and Names lists, so a pack folder
// added here and forgotten there would pass its tests and be missing from
// `baton dryrun NAME`.
func TestEveryPackIsBundled(t *testing.T) {
	for _, p := range unbundled(os.DirFS("."), scenarios.FS, scenarios.Names()) {
		t.Error(p)
	}
}

// The check above can fail: a forgotten folder, a name with no embedded
// pack, and an embedded pack with no name are each reported.
func TestUnbundledReportsEachGap(t *testing.T) {
	pack := &fstest.MapFile{Data: []byte("name: x\n")}
	disk := fstest.MapFS{
		"dayone/pack.yaml":  pack,
		"hotseat/pack.yaml": pack,
		"newpack/pack.yaml": pack,
		// A pack's own subfolders and testdata are not bundled packs.
		"hotseat/files/pack.yaml":    pack,
		"testdata/fixture/pack.yaml": pack,
	}
	bundled := fstest.MapFS{
		"dayone/pack.yaml":  pack,
		"hotseat/pack.yaml": pack,
		"spare/pack.yaml":   pack,
	}
	got := unbundled(disk, bundled, []string{"dayone", "hotseat", "ghost"})
	want := []string{
		"newpack has a pack.yaml but is not embedded (add it to the go:embed line in embed.go)",
		"newpack has a pack.yaml but Names does not list it",
		"Names lists ghost, which is not an embedded pack",
		"spare is embedded but Names does not list it",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := unbundled(disk, scenarios.FS, scenarios.Names()); len(got) != 2 {
		t.Errorf("against the real bundle, newpack should give two problems: %q", got)
	}
}

// unbundled lists what keeps the packs on disk, the embedded files and
// Names from agreeing.
func unbundled(disk, bundled fs.FS, names []string) []string {
	isPack := func(fsys fs.FS, dir string) bool {
		_, err := fs.Stat(fsys, path.Join(dir, "pack.yaml"))
		return err == nil
	}
	var out []string
	err := fs.WalkDir(disk, ".", func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || dir == "." {
			return err
		}
		// Folders the go tool ignores hold fixtures, not packs to ship.
		if n := d.Name(); n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") {
			return fs.SkipDir
		}
		if !isPack(disk, dir) {
			return nil
		}
		if !isPack(bundled, dir) {
			out = append(out, dir+" has a pack.yaml but is not embedded (add it to the go:embed line in embed.go)")
		}
		if !slices.Contains(names, dir) {
			out = append(out, dir+" has a pack.yaml but Names does not list it")
		}
		return fs.SkipDir
	})
	if err != nil {
		out = append(out, err.Error())
	}
	for _, n := range names {
		if !isPack(bundled, n) {
			out = append(out, "Names lists "+n+", which is not an embedded pack")
		}
	}
	top, err := fs.ReadDir(bundled, ".")
	if err != nil {
		out = append(out, err.Error())
	}
	for _, e := range top {
		if e.IsDir() && !slices.Contains(names, e.Name()) {
			out = append(out, e.Name()+" is embedded but Names does not list it")
		}
	}
	return out
}

// Changing a number in the pack changes the run: the behaviour is data.
func TestDayOneConstantsDriveTheTimeline(t *testing.T) {
	load := func(replace ...string) *rules.Pack {
		t.Helper()
		fsys := fstest.MapFS{}
		scripts, _ := filepath.Glob("dayone/scripts/*.js")
		names := []string{"pack.yaml", "roles.yaml", "candidate.jsonl"}
		for _, sc := range scripts {
			names = append(names, "scripts/"+filepath.Base(sc))
		}
		for _, name := range names {
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
