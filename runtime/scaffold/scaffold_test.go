package scaffold

import (
	"bytes"
	"context"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/packs"
	"github.com/batonhq/baton/runtime/packtest"
	"github.com/batonhq/baton/runtime/record"
)

// wantFiles is the pack an author gets; a file added to the template
// without a reason to be there shows up here.
var wantFiles = []string{
	"candidate.jsonl",
	"pack.yaml",
	"roles.yaml",
	"scripts/guardrails.js",
	"tests/timeline.yaml",
}

// TestWrittenPackWorks: whatever the name, the pack written loads as a
// command would open it, passes its own tests, and a dry run with its
// candidate reaches the end with the window and the anchor on the
// timeline. Names YAML would read as something else (no, null, true)
// stay names.
func TestWrittenPackWorks(t *testing.T) {
	for _, tc := range []struct {
		name     string
		existing bool // write into a folder that exists and is empty
	}{
		{name: "demo"},
		{name: "panel-2_b", existing: true},
		{name: "null"},
		{name: "no"},
		{name: "true"},
		{name: strings.Repeat("x", MaxNameLen)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "new", "pack")
			if tc.existing {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			got, err := Write(dir, tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, wantFiles) {
				t.Errorf("files written:\n got %q\nwant %q", got, wantFiles)
			}
			if on := onDisk(t, dir); !slices.Equal(on, wantFiles) {
				t.Errorf("files on disk:\n got %q\nwant %q", on, wantFiles)
			}

			p, err := (&packs.Resolver{}).Open(dir)
			if err != nil {
				t.Fatalf("the written pack does not load:\n%v", err)
			}
			if p.Name != tc.name {
				t.Errorf("pack name %q, want %q", p.Name, tc.name)
			}
			if len(p.Roles) != 2 || len(p.Timeline.Windows) != 1 || len(p.Timeline.Anchors) != 2 || len(p.Silence.Steps) != 2 {
				t.Errorf("pack has %d roles, %d windows, %d anchors, %d silence steps; want 2, 1, 2 (one turn, one end), 2",
					len(p.Roles), len(p.Timeline.Windows), len(p.Timeline.Anchors), len(p.Silence.Steps))
			}

			results, err := packtest.Run(p, packtest.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range results {
				if r.Err != nil {
					t.Errorf("pack test %s fails:\n%v", r.File, r.Err)
				}
			}

			checkDryRun(t, p)
		})
	}
}

// checkDryRun plays the pack's own candidate, as `baton dryrun DIR` does.
func checkDryRun(t *testing.T, p *rules.Pack) {
	t.Helper()
	if p.DryRun.Candidate == "" {
		t.Fatal("the pack names no dry-run candidate")
	}
	f, err := p.FS.Open(p.DryRun.Candidate)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := events.ReadAll(f)
	f.Close()
	if err != nil {
		t.Fatalf("%s: %v", p.DryRun.Candidate, err)
	}
	if len(evs) == 0 {
		t.Fatalf("%s holds no events", p.DryRun.Candidate)
	}
	res, err := dryrun.RunContext(context.Background(), p, dryrun.Options{Events: evs})
	if err != nil {
		t.Fatal(err)
	}
	var timeline bytes.Buffer
	if err := record.WriteText(&timeline, res.Records, record.FormatOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := res.EndReason(); got != "session_complete" {
		t.Errorf("dry run ended with %q, want session_complete; timeline:\n%s", got, &timeline)
	}
	has := func(typ engine.EffectType, kind, rule string) bool {
		return slices.ContainsFunc(res.Records, func(r record.Record) bool {
			return r.Type == typ && (kind == "" || r.Kind == kind) && r.Rule == rule
		})
	}
	for _, w := range []struct {
		typ        engine.EffectType
		kind, rule string
	}{
		{engine.EffectAgentMessage, "window", "W1_OPENER"},
		{engine.EffectAnchor, "", "A1_REVIEW"},
		{engine.EffectAgentMessage, "anchor", "A1_REVIEW"},
		{engine.EffectSessionEnd, "", "A2_END"},
	} {
		if !has(w.typ, w.kind, w.rule) {
			t.Errorf("dry run has no %s %s %s; timeline:\n%s", w.typ, w.kind, w.rule, &timeline)
		}
	}
	// Every candidate message is answered by a line the guardrails let
	// through, and nothing went wrong on the way.
	replies := 0
	for _, r := range res.Records {
		switch {
		case r.Type == engine.EffectAgentMessage && r.Kind == "reply":
			replies++
		case r.Type == engine.EffectEngineError, r.Type == engine.EffectScriptError, r.Type == engine.EffectAdapterError,
			r.Type == engine.EffectAgentMessage && r.Fallback:
			t.Errorf("dry run: %s", record.TextLine(&r))
		}
	}
	if replies == 0 {
		t.Errorf("dry run: the candidate's messages got no reply; timeline:\n%s", &timeline)
	}
}

// TestWriteRefuses: a bad name or a folder that holds anything is refused
// with a message that says why, and nothing is written or made.
func TestWriteRefuses(t *testing.T) {
	for _, tc := range []struct {
		about string
		name  string
		setup func(t *testing.T, dir string) // what is there before
		want  []string                       // in the error, in order
	}{
		{about: "no name", name: "", want: []string{"the pack needs a name"}},
		{about: "capitals", name: "Demo", want: []string{`pack name "Demo"`, "lowercase", "for example demo"}},
		{about: "a space", name: "my pack", want: []string{`pack name "my pack"`, "for example my_pack"}},
		{about: "a digit first", name: "2fast", want: []string{`"2fast"`, "starting with a letter", "for example fast"}},
		{about: "a path", name: "../evil", want: []string{`"../evil"`, "for example evil"}},
		{about: "a YAML breaker", name: "a: b", want: []string{`"a: b"`}},
		{about: "too long", name: strings.Repeat("x", MaxNameLen+1), want: []string{"at most 32 characters"}},
		{about: "non-empty folder", name: "demo",
			setup: func(t *testing.T, dir string) {
				mkdir(t, dir)
				writeFile(t, filepath.Join(dir, "pack.yaml"), "name: mine\n")
				writeFile(t, filepath.Join(dir, "NOTES"), "keep me\n")
			},
			// The first entry by name: upper case sorts first.
			want: []string{"is not empty", "it holds " + filepath.Join("DIR", "NOTES"), "nothing there is overwritten"}},
		{about: "only a hidden file", name: "demo",
			setup: func(t *testing.T, dir string) {
				mkdir(t, dir)
				writeFile(t, filepath.Join(dir, ".gitkeep"), "")
			},
			want: []string{"it holds " + filepath.Join("DIR", ".gitkeep")}},
		{about: "only an empty folder", name: "demo",
			setup: func(t *testing.T, dir string) { mkdir(t, filepath.Join(dir, "tests")) },
			want:  []string{"it holds " + filepath.Join("DIR", "tests")}},
		{about: "a file", name: "demo",
			setup: func(t *testing.T, dir string) { writeFile(t, dir, "not a folder\n") },
			want:  []string{"is a file", "new or empty folder"}},
	} {
		t.Run(tc.about, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "pack")
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			before := snapshot(t, filepath.Dir(dir))
			got, err := Write(dir, tc.name)
			if err == nil {
				t.Fatalf("written (%q), want an error", got)
			}
			msg := strings.ReplaceAll(err.Error(), dir, "DIR")
			rest := msg
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("error %q lacks %q (or not in this order)", msg, w)
				}
				rest = rest[i+len(w):]
			}
			if got != nil {
				t.Errorf("files %q returned with an error", got)
			}
			if after := snapshot(t, filepath.Dir(dir)); !maps.Equal(before, after) {
				t.Errorf("the folder changed:\nbefore %q\n after %q", before, after)
			}
		})
	}
}

// TestWriteIsDeterministic: two packs of one name are byte for byte the
// same, so a change to the template is all a diff of its output shows.
func TestWriteIsDeterministic(t *testing.T) {
	var runs []map[string]string
	for range 2 {
		dir := filepath.Join(t.TempDir(), "pack")
		if _, err := Write(dir, "demo"); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, snapshot(t, dir))
	}
	if len(runs[0]) == 0 || !maps.Equal(runs[0], runs[1]) {
		t.Errorf("two runs differ:\n%q\n%q", runs[0], runs[1])
	}
	for p, data := range runs[0] {
		if strings.Contains(data, placeholder) {
			t.Errorf("%s still holds %s", p, placeholder)
		}
	}
}

// TestPutUndoes: a write that fails part way (here a file listed twice,
// which the second time would overwrite the first) leaves the folder as
// it found it: gone if it made it, empty if it was empty.
func TestPutUndoes(t *testing.T) {
	out := []file{
		{path: "a.yaml", data: []byte("a: 1\n")},
		{path: "scripts", dir: true},
		{path: "scripts/x.js", data: []byte("function x() {}\n")},
		{path: "a.yaml", data: []byte("a: 2\n")},
	}
	for _, made := range []bool{true, false} {
		dir := filepath.Join(t.TempDir(), "pack")
		mkdir(t, dir)
		got, err := put(dir, made, out)
		if err == nil {
			t.Fatalf("made=%v: written %q, want an error", made, got)
		}
		if want := "writing " + filepath.Join(dir, "a.yaml"); !strings.Contains(err.Error(), want) {
			t.Errorf("made=%v: error %q does not name %s", made, err, want)
		}
		ents, statErr := os.ReadDir(dir)
		switch {
		case made && !os.IsNotExist(statErr):
			t.Errorf("made=%v: folder left behind (%v, %d entries)", made, statErr, len(ents))
		case !made && (statErr != nil || len(ents) != 0):
			t.Errorf("made=%v: folder not empty again (%v, %d entries)", made, statErr, len(ents))
		}
	}
}

// TestCheckName holds the rule to what the docs promise: the names the
// bundled packs use pass, and a name at the limit still makes a session
// log id (dryrun-NAME-NANOSECONDS) of at most 64 characters.
func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"dayone", true}, {"hotseat", true}, {"a", true}, {"my-pack_2", true},
		{"", false}, {"_x", false}, {"-x", false}, {"x.y", false}, {"x/y", false}, {"é", false},
		{strings.Repeat("a", MaxNameLen), true}, {strings.Repeat("a", MaxNameLen+1), false},
	} {
		if err := CheckName(tc.name); (err == nil) != tc.ok {
			t.Errorf("CheckName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
	if id := "dryrun-" + strings.Repeat("a", MaxNameLen) + "-1234567890123456789"; len(id) > 64 {
		t.Errorf("a session log id of a longest name is %d characters", len(id))
	}
}

func onDisk(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for p := range snapshot(t, dir) {
		if !strings.HasSuffix(p, "/") {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// snapshot is every file under dir (slash paths) with its content, and
// every folder with "/" as content, with its mode.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			out[filepath.ToSlash(rel)+"/"] = info.Mode().String()
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = info.Mode().String() + "\n" + string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, name, data string) {
	t.Helper()
	mkdir(t, filepath.Dir(name))
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
