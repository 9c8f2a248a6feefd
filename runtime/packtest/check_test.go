package packtest_test

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/packtest"
)

// Check reports, at once, exactly the problems of the cases that do not
// load (what Run reports for them), and nothing of the cases that load and
// fail only when run.
func TestCheck(t *testing.T) {
	err := packtest.Check(load(t, pack))
	var el rules.ErrorList
	if !errors.As(err, &el) {
		t.Fatalf("Check = %v, want a rules.ErrorList", err)
	}
	var got, wantLines []string
	for _, e := range el {
		got = append(got, e.Error())
	}
	for file, w := range want {
		if w == "" || strings.HasPrefix(w, "tests/"+file+":\n") {
			continue // passes, or fails only when run
		}
		wantLines = append(wantLines, strings.Split(w, "\n")...)
	}
	slices.Sort(wantLines)
	wantLines = slices.Compact(wantLines)
	sortedGot := slices.Sorted(slices.Values(got))
	if !slices.Equal(sortedGot, wantLines) {
		t.Fatalf("Check:\n%s\n\nwant (in any order):\n%s", strings.Join(got, "\n"), strings.Join(wantLines, "\n"))
	}
}

// mapPack copies the testdata pack into memory, changed by edit.
func mapPack(t *testing.T, edit func(fstest.MapFS)) *rules.Pack {
	t.Helper()
	fsys := fstest.MapFS{}
	err := fs.WalkDir(os.DirFS(pack), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path.Join(pack, name))
		fsys[name] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	edit(fsys)
	p, err := rules.LoadFS(fsys)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// What Check adds to loading each case: the pack's own candidate file,
// and cases in files that would never run.
func TestCheckPackFiles(t *testing.T) {
	cases := []struct {
		name string
		edit func(fstest.MapFS)
		want string
	}{
		{"good", func(fsys fstest.MapFS) {
			keepOnly(fsys, "tests/pass_")
			addCandidate(fsys, "fixtures/candidate.jsonl")
		}, ""},
		{"no tests", func(fsys fstest.MapFS) { keepOnly(fsys, "none") }, ""},
		{"bad candidate", func(fsys fstest.MapFS) {
			keepOnly(fsys, "tests/pass_")
			addCandidate(fsys, "fixtures/bad_candidate.jsonl")
		}, `fixtures/bad_candidate.jsonl:1:70: unknown field "txt": did you mean text? (known: addressed_to, code, language, line, mic_active, run_id, source, stt_confidence, text, typing)
fixtures/bad_candidate.jsonl:2:15: unknown event type: "candidate_mesage" is not handled by pack packtest (did you mean candidate_message?) (it takes candidate_message, mic_state_changed, speech_end, typing_state_changed, code_submitted)
fixtures/bad_candidate.jsonl:3:44: time goes backwards (00:04.0 after 00:06.0)
fixtures/bad_candidate.jsonl:4:15: candidate_message needs data.text`},
		{"yml", func(fsys fstest.MapFS) {
			keepOnly(fsys, "tests/pass_")
			fsys["tests/later.yml"] = &fstest.MapFile{Data: []byte("name: later\n")}
		}, `tests/later.yml: not run: test cases are tests/*.yaml`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := packtest.Check(mapPack(t, c.edit))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Fatalf("Check:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}

// keepOnly drops the case files whose names do not start with prefix.
func keepOnly(fsys fstest.MapFS, prefix string) {
	for name := range fsys {
		if strings.HasPrefix(name, "tests/") && !strings.HasPrefix(name, prefix) {
			delete(fsys, name)
		}
	}
}

func addCandidate(fsys fstest.MapFS, name string) {
	f := fsys["pack.yaml"]
	f.Data = append(f.Data, []byte("  candidate: "+name+"\n")...)
}

// Options.Run keeps the cases whose name or file name matches, in file
// order; the others are not in the results, except cases that do not
// read, which are always there: their name may be what is wrong, and a
// filter must not make a broken case pass.
func TestRunSelects(t *testing.T) {
	p := load(t, pack)
	unread, err := packtest.Run(p, packtest.Options{Run: regexp.MustCompile("nothing matches this")})
	if err != nil {
		t.Fatal(err)
	}
	broken := map[string]bool{}
	for _, r := range unread {
		if r.Err == nil {
			t.Errorf("%s ran though --run matched nothing", r.File)
		}
		broken[r.File] = true
	}
	for _, f := range []string{"tests/fail_syntax.yaml", "tests/fail_unknown_keys.yaml", "tests/fail_unknown_event.yaml"} {
		if !broken[f] {
			t.Errorf("%s, which does not read, was left out", f)
		}
	}
	cases := []struct {
		re   string
		want []string
	}{
		{"^conversation$", []string{"tests/pass_conversation.yaml"}},
		{"golden", []string{"tests/fail_golden_differs.yaml", "tests/fail_golden_missing.yaml"}},
		{"^pass_", []string{"tests/pass_conversation.yaml", "tests/pass_files.yaml", "tests/pass_model_failure.yaml"}},
		{"unknown", []string{"tests/fail_unknown_event.yaml", "tests/fail_unknown_keys.yaml"}},
		{"nothing matches this", nil},
	}
	for _, c := range cases {
		t.Run(c.re, func(t *testing.T) {
			results, err := packtest.Run(p, packtest.Options{Run: regexp.MustCompile(c.re)})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range results {
				if !broken[r.File] || slices.Contains(c.want, r.File) {
					got = append(got, r.File)
				}
			}
			if len(results)-len(got) != len(broken)-countIn(broken, c.want) {
				t.Errorf("with %q, %d results for %d matches and %d unreadable cases", c.re, len(results), len(c.want), len(broken))
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("ran %v, want %v", got, c.want)
			}
		})
	}
}

func countIn(set map[string]bool, list []string) int {
	n := 0
	for _, f := range list {
		if set[f] {
			n++
		}
	}
	return n
}
