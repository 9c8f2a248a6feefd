package packtest_test

import (
	"io/fs"
	"os"
	"path"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/internal/sim"
	"github.com/batonhq/baton/runtime/packtest"
	"github.com/batonhq/baton/scenarios"
)

// docs is the reference for the formats this package reads.
const docs = "../../docs/testing.md"

// A docBlock is an example of docs/testing.md marked for testing: the
// comment line <!-- test: KIND FILE --> before a fenced block, and for the
// kinds that fail, the text block after it that says how.
type docBlock struct {
	kind, file string
	line       int // of the marker, for messages
	body       string
	want       string
}

// The kinds of example, what each must do against the DayOne pack.
var docKinds = map[string]bool{
	"case":          false, // a case that loads and passes
	"case-fails":    true,  // a case that loads, runs and fails as shown
	"case-error":    true,  // a case that does not load, for the reasons shown
	"events":        false, // an events file that loads
	"events-error":  true,  // one that does not
	"replies":       false, // a reply script that loads
	"replies-error": true,  // one that does not
}

var marker = regexp.MustCompile(`^<!-- test: ([a-z-]+) (\S+) -->$`)

// docBlocks reads the marked examples of the page, and fails the test for
// a YAML or JSON example without a mark: every one is tested.
func docBlocks(t *testing.T) []docBlock {
	t.Helper()
	data, err := os.ReadFile(docs)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	// fence reads the fenced block opening at line i: its language, body
	// and the line after it.
	fence := func(i int) (lang, body string, next int) {
		lang = strings.TrimPrefix(lines[i], "```")
		for j := i + 1; j < len(lines); j++ {
			if lines[j] == "```" {
				return lang, strings.Join(lines[i+1:j], "\n") + "\n", j + 1
			}
		}
		t.Fatalf("%s:%d: fence not closed", docs, i+1)
		return "", "", 0
	}
	var out []docBlock
	for i := 0; i < len(lines); i++ {
		m := marker.FindStringSubmatch(lines[i])
		if m == nil {
			if strings.HasPrefix(lines[i], "```") {
				lang, _, next := fence(i)
				if lang == "yaml" || lang == "json" {
					t.Errorf("%s:%d: a %s example not marked for testing", docs, i+1, lang)
				}
				i = next - 1
			}
			continue
		}
		fails, ok := docKinds[m[1]]
		if !ok {
			t.Fatalf("%s:%d: unknown kind of example %q", docs, i+1, m[1])
		}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			t.Fatalf("%s:%d: the mark is not right before a fenced block", docs, i+1)
		}
		b := docBlock{kind: m[1], file: m[2], line: i + 1}
		_, b.body, i = fence(i + 1)
		if fails {
			// The next fenced block, after the prose that introduces it,
			// is what it fails with.
			for i < len(lines) && !strings.HasPrefix(lines[i], "```") {
				i++
			}
			if i == len(lines) || lines[i] != "```text" {
				t.Fatalf("%s:%d: a %s example needs a text block after it", docs, b.line, b.kind)
			}
			_, b.want, i = fence(i)
			b.want = strings.TrimSuffix(b.want, "\n")
		}
		out = append(out, b)
		i--
	}
	return out
}

// dayone is the bundled DayOne pack's files, to add examples to.
func dayone(t *testing.T) fstest.MapFS {
	t.Helper()
	sub, err := fs.Sub(scenarios.FS, "dayone")
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{}
	err = fs.WalkDir(sub, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(sub, name)
		fsys[name] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return fsys
}

// Every example of docs/testing.md does what the page says, through the
// decoders and checks baton uses: cases load and pass (or fail as shown)
// in the DayOne pack, files load, and mistakes give the errors shown, word
// for word.
func TestDocsExamples(t *testing.T) {
	blocks := docBlocks(t)
	if len(blocks) < 10 {
		t.Fatalf("%d examples marked for testing in %s; the marks are not being read", len(blocks), docs)
	}
	base := dayone(t)
	// Files that load are in the pack for every example, so cases can
	// name them as the page's do.
	for _, b := range blocks {
		if b.kind == "events" || b.kind == "replies" {
			base[b.file] = &fstest.MapFile{Data: []byte(b.body)}
		}
	}
	for _, b := range blocks {
		t.Run(b.kind+" "+b.file, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for k, v := range base {
				fsys[k] = v
			}
			fsys[b.file] = &fstest.MapFile{Data: []byte(b.body)}
			switch b.kind {
			case "events", "events-error":
				fsys["tests/zz_docs.yaml"] = &fstest.MapFile{Data: []byte("name: zz\nevents_file: " + b.file + "\n")}
			case "replies", "replies-error":
				fsys["tests/zz_docs.yaml"] = &fstest.MapFile{Data: []byte("name: zz\nevents: []\nllm_file: " + b.file + "\n")}
			}
			p, err := rules.LoadFS(fsys)
			if err != nil {
				t.Fatal(err)
			}
			err = packtest.Check(p)
			switch {
			case strings.HasSuffix(b.kind, "-error"):
				if err == nil || err.Error() != b.want {
					t.Fatalf("%s:%d: Check:\n%v\nthe page says:\n%s", docs, b.line, err, b.want)
				}
				return
			case err != nil:
				t.Fatalf("%s:%d: Check: %v", docs, b.line, err)
			case !strings.HasPrefix(b.kind, "case"):
				return
			}
			stem := strings.TrimSuffix(path.Base(b.file), ".yaml")
			results, err := packtest.Run(p, packtest.Options{Run: regexp.MustCompile("^" + regexp.QuoteMeta(stem) + "$")})
			if err != nil {
				t.Fatal(err)
			}
			if len(results) != 1 {
				t.Fatalf("ran %d cases for %s", len(results), b.file)
			}
			r := results[0]
			if b.kind == "case" {
				if r.Err != nil {
					t.Fatalf("%s:%d: the case fails:\n%v", docs, b.line, r.Err)
				}
				return
			}
			if r.Err == nil {
				t.Fatalf("%s:%d: the case passes", docs, b.line)
			}
			problems, _, _ := strings.Cut(r.Err.Error(), "\ntimeline:\n")
			if problems != b.want {
				t.Fatalf("%s:%d: the case fails with:\n%s\nthe page says:\n%s", docs, b.line, problems, b.want)
			}
		})
	}
}

// The page says its reply script is examples/files/replies.yaml, and that
// its JSON lines are the same script.
func TestDocsRepliesAreTheExample(t *testing.T) {
	scripts := map[string][]sim.Reply{}
	for _, b := range docBlocks(t) {
		if b.kind != "replies" {
			continue
		}
		reps, err := sim.ReadRepliesFile(b.file, []byte(b.body))
		if err != nil {
			t.Fatal(err)
		}
		scripts[b.file] = reps
	}
	data, err := os.ReadFile(examples + "/replies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	example, err := sim.ReadRepliesFile("replies.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"replies.yaml", "replies.jsonl"} {
		if !reflect.DeepEqual(scripts[name], example) {
			t.Errorf("%s in %s:\n%+v\nexamples/files/replies.yaml:\n%+v", name, docs, scripts[name], example)
		}
	}
}
