package rules_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"unicode/utf8"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/rules/rulestest"
)

func TestLoadDayOne(t *testing.T) {
	p, err := rules.Load(os.DirFS("../scenarios"), "dayone")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.RoleIDs(); strings.Join(got, ",") != "qa,ba,tech_lead" {
		t.Fatalf("roles in file order: got %v", got)
	}
	a := p.Timeline.Anchors[0]
	if a.ID != "A1_BA_INTERRUPT" || a.At.MS != 180000 {
		t.Fatalf("anchor from constant: got %s at %d", a.ID, a.At.MS)
	}
	if p.Silence.Steps[0].After.MS != 12000 || p.Silence.Steps[1].After.MS != 8000 {
		t.Fatalf("silence ladder from constants: %+v", p.Silence.Steps)
	}
	if p.SpeechConfidence.Threshold.Value != 0.75 || p.SpeechConfidence.Steps[1].Count.Value != 2 {
		t.Fatalf("speech confidence from constants: %+v", p.SpeechConfidence)
	}
	if len(p.Hash) != 64 {
		t.Fatalf("hash: %q", p.Hash)
	}
}

func TestDurations(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		bad  bool
	}{
		{"0", 0, false}, {"800ms", 800, false}, {"12s", 12000, false}, {"1m30s", 90000, false},
		{"03:00", 180000, false}, {"03:00.5", 180500, false}, {"1:00:00", 3600000, false},
		{"12", 0, true}, {"-1s", 0, true}, {"03:75", 0, true}, {"1.5:00", 0, true}, {":", 0, true}, {"1:2:3:4", 0, true},
	}
	for _, c := range cases {
		got, err := rules.ParseDuration(c.in)
		if (err != nil) != c.bad || (!c.bad && got != c.want) {
			t.Errorf("ParseDuration(%q) = %d, %v; want %d, bad=%v", c.in, got, err, c.want, c.bad)
		}
	}
}

// fuzzSeeds cuts the bundled packs' YAML files into one top-level
// section each, after a header naming a pack with roles, so the seeds
// cover every feature the packs use while staying short. Whole packs make
// poor seeds: the fuzzer minimizes each input that reaches new code, in
// time quadratic in its length, and a 7 KB pack kept both workers
// minimizing for the whole run.
func fuzzSeeds(f *testing.F) [][]byte {
	const head = "name: seed\nduration: 10m\nroles: {qa: {persona: p}, ba: {persona: p}, tech_lead: {persona: p}}\n"
	files, err := filepath.Glob("../scenarios/*/*.yaml")
	if err != nil || len(files) == 0 {
		f.Fatalf("no packs to seed from: %v", err)
	}
	var seeds [][]byte
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		var section []string
		flush := func() {
			for _, part := range splitSection(section, 512) {
				seeds = append(seeds, []byte(head+strings.Join(part, "\n")+"\n"))
			}
			section = nil
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") || strings.TrimSpace(line) == "" {
				continue
			}
			if line[0] != ' ' && line[0] != '-' {
				flush()
			}
			section = append(section, line)
		}
		flush()
	}
	return seeds
}

// splitSection cuts a long block (its key line, then its body) between
// the body's entries into parts of about size bytes, each under the key
// lines above it; an entry longer than size is cut the same way.
func splitSection(lines []string, size int) [][]string {
	return splitBlock(nil, lines, size)
}

func splitBlock(above, lines []string, size int) [][]string {
	if len(lines) == 0 {
		return nil
	}
	whole := append(slices.Clone(above), lines...)
	if len(strings.Join(lines, "\n")) <= size || len(lines) < 3 {
		return [][]string{whole}
	}
	indent := func(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }
	var entries [][]string
	for _, line := range lines[1:] {
		if len(entries) == 0 || indent(line) <= indent(lines[1]) {
			entries = append(entries, nil)
		}
		entries[len(entries)-1] = append(entries[len(entries)-1], line)
	}
	under := append(slices.Clone(above), lines[0])
	var parts [][]string
	var part []string
	n := 0
	for _, e := range entries {
		l := len(strings.Join(e, "\n"))
		if l > size {
			parts = append(parts, splitBlock(under, e, size)...)
			continue
		}
		if n > 0 && n+l > size {
			parts = append(parts, append(slices.Clone(under), part...))
			part, n = nil, 0
		}
		part = append(part, e...)
		n += l + 1
	}
	if len(part) > 0 {
		parts = append(parts, append(slices.Clone(under), part...))
	}
	return parts
}

// maxFuzzInput and maxFuzzTemplate bound what the fuzz targets try.
// Large packs are TestLoadBounded's; here a long input only costs time:
// each run of it is slower, it reaches new code by its length alone (the
// YAML reader's buffer boundaries), and minimizing it then takes time
// quadratic in that length, during which a worker explores nothing.
const (
	maxFuzzInput    = 4 << 10
	maxFuzzTemplate = 256
)

func FuzzLoad(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Add([]byte("name: x\nduration: 1m\nroles: {a: {persona: p}}\n"))
	f.Add([]byte("roles: [1, 2]\ntimeline: {anchors: [{at: '1:2:3'}]}\n"))
	f.Add([]byte("constants: {A: &x 1, B: *x}\nend: [{id: e, when: 'A + '}]\n"))
	f.Add([]byte("roles: {a: &r {persona: p}, b: {<<: *r, voice: v}}\n"))
	f.Add([]byte("{{{"))
	f.Add([]byte("name: x\nduration: 1m\nroles: {a: {persona: p}}\nfiles: {n.md: {class: append_only, roles: [a], max_chars: 9}, c.md: {class: write_few, max_writes: 2, text: t}}\nllm: {assembly: [n.md, c.md, goal], context_budget: {max_chars: 20, trim: [n.md]}}\nrules: [{id: r, trigger: e, do: [append: {file: n.md, role: \"'a'\", text: hi}]}]\n"))
	f.Add([]byte("name: x\nduration: 1m\nscenario: {human: interviewer}\nroles: {candidate: {persona: p}}\nslots: {ed: {numbered: true, max_bytes: 100, focus: msg.line, debounce: 400ms}, e: {max_chars: 64}}\ntools: {o: {executor: client, timeout: 3s}}\nworkspace: {files: {a.js: a.js}, tools: {o: open}, on_change: ch}\nrules: [{id: r, trigger: ch, do: [slot: {name: ed, value: '${msg.code}'}]}]\n"))
	f.Add([]byte("name: x\nduration: 1m\nroles: {a: {persona: p, focus: [x]}}\nrouting: [{id: R, type: intent, intents: [{role: a, tag: t, keywords: [k]}, {role: a, keywords: [j]}]}]\nspeech_confidence: {threshold: 0.7, steps: [{count: 1, turn: {role: a, line: l}}]}\nguardrails: {role_fidelity: true, tripwires: [{id: w, when: 'true', do: [{flag: {reason: r}}]}]}\ndryrun: {candidate_model: {answer_latency: {median: 2s, p90: 7s, max: 20s}, answer_words: {dist: normal, mean: 9, sd: 3}, silence: 0.1, low_confidence: L, events: [{type: ev, rate: 2, data: {text: 'n {n}'}}]}}\nconstants: {L: 0.2}\nrules: [{id: r, trigger: ev, do: [{emit: {kind: k}}]}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			return
		}
		p, err := rulestest.LoadBytes(data)
		if err == nil {
			// A pack that loads can start a session without panicking,
			// and lists everything it declares as its own cover item.
			_ = p.NewEnv()
			if got, want := len(p.CoverItems()), declared(p); got != want {
				t.Fatalf("%d cover items for %d things declared", got, want)
			}
			return
		}
		var el rules.ErrorList
		if errors.As(err, &el) {
			for _, e := range el {
				if e.Pos.File == "" || e.Msg == "" {
					t.Fatalf("error without position or message: %+v", e)
				}
			}
		}
	})
}

func FuzzTemplate(f *testing.F) {
	f.Add("You are {{NAME}} and ${tool.args.colleague} said ${join(available(), ', ')}.")
	f.Add("{{ unclosed")
	f.Add("${}")
	f.Add("$$ {{}} }} ${")
	f.Fuzz(func(t *testing.T, tpl string) {
		if len(tpl) > maxFuzzTemplate {
			return
		}
		if !utf8.ValidString(tpl) {
			return // YAML text is UTF-8; quoting would alter the bytes
		}
		src := "name: t\nduration: 1m\nroles: {a: {persona: p}}\ntemplates:\n  x: " + strconvQuote(tpl) + "\n"
		p, err := rulestest.LoadBytes([]byte(src))
		if err != nil {
			return
		}
		tp, ok := p.Template("x")
		if !ok {
			t.Fatal("template lost")
		}
		out, _ := tp.Render(func(string) string { return "S" }, func(*rules.Expr) (any, error) { return "E", nil })
		if !strings.Contains(tpl, "{{") && !strings.Contains(tpl, "${") && out != tpl {
			t.Fatalf("plain text changed: %q -> %q", tpl, out)
		}
	})
}

// strconvQuote renders s as a YAML double-quoted scalar. JSON's quoting
// nearly is YAML's, but YAML reads a raw NEL (U+0085) as a line break and
// folds it to a space, so it is escaped too.
func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return strings.ReplaceAll(string(b), "\u0085", `\u0085`)
}

// writeFiles writes name -> content under dir; a content starting with
// "->" makes a symbolic link to the rest.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(content, "->"); ok {
			err = os.Symlink(filepath.FromSlash(target), p)
		} else {
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// A pack is its folder: a file or folder that a symbolic link takes
// outside it is refused, named where the pack refers to it, whether the
// folder is read through os.DirFS or os.Root; links that stay inside are
// followed.
func TestLinksOutsideThePack(t *testing.T) {
	top := t.TempDir()
	writeFiles(t, top, map[string]string{
		"secret/passwd.csv": "root:x:0:0\n",
		"secret/evil.js":    "function evil() { return 1; }\n",
		"secret/roles.yaml": "roles: {qa: {persona: p}}\n",
		"secret/cand.jsonl": "{}\n",
		"pack/pack.yaml": `name: links
duration: 1m
include: [roles.yaml]
roles: {ba: {persona: p}}
scenario:
  attachments:
    abs: files/abs.csv
    up: files/up.csv
    dir: outside/passwd.csv
    ok: files/ok.csv
dryrun:
  candidate: cand.jsonl
`,
		"pack/files/abs.csv":   "->" + filepath.ToSlash(filepath.Join(top, "secret/passwd.csv")),
		"pack/files/up.csv":    "->../../secret/passwd.csv",
		"pack/outside":         "->../secret",
		"pack/data/ok.csv":     "a,b\n",
		"pack/files/ok.csv":    "->../data/./ok.csv",
		"pack/roles.yaml":      "->../secret/roles.yaml",
		"pack/cand.jsonl":      "->../secret/cand.jsonl",
		"pack/scripts/evil.js": "->../../secret/evil.js",
	})
	dir := filepath.Join(top, "pack")
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	want := []string{
		`cand.jsonl is a symbolic link that leads outside the pack folder`,
		`include "roles.yaml": roles.yaml is a symbolic link that leads outside the pack folder; copy what it points to into the pack instead of linking to it`,
		`pack.yaml:7:5: attachment abs: files/abs.csv is a symbolic link that leads outside the pack folder`,
		`pack.yaml:8:5: attachment up: files/up.csv is a symbolic link that leads outside the pack folder`,
		`pack.yaml:9:5: attachment dir: outside/passwd.csv: folder outside is a symbolic link that leads outside the pack folder; copy what it points to into the pack instead of linking to it`,
		`scripts/evil.js: scripts/evil.js is a symbolic link that leads outside the pack folder`,
	}
	for name, fsys := range map[string]fs.FS{"DirFS": os.DirFS(dir), "Root": root.FS()} {
		t.Run(name, func(t *testing.T) {
			_, err := rules.Load(fsys, ".")
			var el rules.ErrorList
			if !errors.As(err, &el) {
				t.Fatalf("want problems, got %v", err)
			}
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("no problem %q in:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), "attachment ok") || strings.Contains(err.Error(), top) {
				t.Errorf("a link inside the pack refused, or a path outside named:\n%v", err)
			}
			if len(el) != len(want) {
				t.Errorf("%d problems, want %d:\n%v", len(el), len(want), err)
			}
		})
	}

	// Without the links it loads, and a link inside the pack reads the
	// file it points to.
	for _, name := range []string{"files/abs.csv", "files/up.csv", "outside", "roles.yaml", "cand.jsonl", "scripts/evil.js"} {
		os.Remove(filepath.Join(dir, filepath.FromSlash(name)))
	}
	writeFiles(t, dir, map[string]string{"pack.yaml": "name: links\nduration: 1m\nroles: {ba: {persona: p}}\nscenario:\n  attachments: {ok: files/ok.csv}\n"})
	p, err := rules.Load(root.FS(), ".")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(p.Scenario.Attachments[0].Data); got != "a,b\n" {
		t.Fatalf("linked attachment read %q", got)
	}

	// A scripts folder that leads out is named, not read as empty.
	if err := os.RemoveAll(filepath.Join(dir, "scripts")); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{"scripts": "->../secret"})
	if _, err := rules.Load(os.DirFS(dir), "."); err == nil || !strings.Contains(err.Error(), "scripts: scripts is a symbolic link that leads outside the pack folder") {
		t.Fatalf("scripts folder outside the pack: %v", err)
	}
}

// Every load ends soon and in little memory, whatever the pack holds:
// each of these would take seconds, run out of stack or grow without end
// if loaded, so it is refused with its reason at its place.
func TestLoadBounded(t *testing.T) {
	const head = "name: x\nduration: 1m\nroles: {a: {persona: p}}\n"
	laughs := func(levels int) string {
		var b strings.Builder
		b.WriteString("name: x\nduration: 1m\nl0: &l0 {persona: p, voice: v}\n")
		for i := 1; i < levels; i++ {
			fmt.Fprintf(&b, "l%d: &l%d {<<: [", i, i)
			for j := range 10 {
				if j > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "*l%d", i-1)
			}
			b.WriteString("]}\n")
		}
		fmt.Fprintf(&b, "roles: {a: *l%d}\n", levels-1)
		return b.String()
	}
	for _, tc := range []struct{ name, src, want string }{
		{"merge into itself", "roles: &a {<<: *a}\n", "pack.yaml:1:16: alias *a is inside the node it names"},
		{"alias in itself", "name: &a [*a]\n", "pack.yaml:1:11: alias *a is inside the node it names"},
		{"billion laughs", laughs(9), "pack.yaml:12:12: aliases expand this file by more than 262144 values and characters"},
		{"deep nesting", head + "scenario: {context: {a: " + strings.Repeat("[", 70) + strings.Repeat("]", 70) + "}}\n", "nested more than 64 levels deep"},
		{"deep through aliases", head + "x: &x " + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "\nscenario: {context: {a: " + strings.Repeat("[", 30) + "*x" + strings.Repeat("]", 30) + "}}\n",
			"pack.yaml:5:55: nested more than 64 levels deep (aliases followed)"},
		{"deep brackets", head + "end: [{id: e, reason: r, when: '" + strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000) + " > 0'}]\n",
			"is 10005 bytes long; at most 4096"},
		{"nested brackets", head + "end: [{id: e, reason: r, when: '" + strings.Repeat("[", 40) + strings.Repeat("]", 40) + " != nil'}]\n",
			`nests brackets 40 deep; at most 32`},
		{"many expressions", head + "templates: {x: '" + strings.Repeat("${1}", 5000) + "'}\n", "more than 4096 expressions in the pack"},
		{"long expressions", head + "end:\n" + strings.Repeat("- {id: e, reason: r, when: '"+strings.Repeat("1+", 2000)+"1 > 0'}\n", 70), "the pack's expressions are longer than 262144 bytes together"},
		{"many problems", head + "routing: [" + strings.Repeat("1, ", 5000) + "]\n", "more than 1000 problems; fix these first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rulestest.LoadBytes([]byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %.2000v\nwant %q", err, tc.want)
			}
			var el rules.ErrorList
			if !errors.As(err, &el) || len(el) > 1001 {
				t.Fatalf("want at most 1001 problems, got %d", len(el))
			}
		})
	}

	// Scripts: one file and all of them together are bounded, and so is
	// pack.yaml with its includes.
	js := "function f(a) { return " + strings.Repeat("a+", 6000) + "1; }\n"
	files := fstest.MapFS{"pack.yaml": {Data: []byte(head + "include: [a.yaml, b.yaml, a.yaml]\n")},
		"a.yaml":       {Data: []byte("tick: 100ms\n")},
		"b.yaml":       {Data: []byte("# " + strings.Repeat("x", rules.MaxYAML) + "\n")},
		"scripts/a.js": {Data: []byte(js + strings.Repeat("// pad\n", 1000))},
	}
	for _, name := range []string{"b", "c", "d", "e", "f", "g"} {
		files["scripts/"+name+".js"] = &fstest.MapFile{Data: []byte(strings.ReplaceAll(js, "f(", name+"(")[:len(js)])}
	}
	_, err := rules.LoadFS(files)
	for _, want := range []string{
		`pack.yaml:4:27: include "a.yaml": listed twice`,
		`pack.yaml:4:19: include "b.yaml": b.yaml: pack.yaml and the files it includes are larger than 4194304 bytes together`,
		`scripts/a.js: scripts/a.js is larger than 16384 bytes`,
		`scripts/g.js: scripts/g.js: scripts/*.js are larger than 65536 bytes together`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no problem %q in:\n%.3000v", want, err)
		}
	}
}

// declared counts what a pack declares that a session can exercise, as
// the pack format says, to check rules.Pack.CoverItems against.
func declared(p *rules.Pack) int {
	n := len(p.Rules) + len(p.Timeline.Anchors) + len(p.Timeline.Windows) + len(p.Silence.Steps) +
		len(p.SpeechConfidence.Steps) + len(p.Tools) + len(p.Jobs) + len(p.End)
	for _, r := range p.Routing {
		if r.Type == rules.RouteIntent && len(r.Intents) > 0 {
			n += len(r.Intents)
		} else {
			n++
		}
	}
	g := &p.Guardrails
	focus := false
	for _, r := range p.Roles {
		focus = focus || len(r.Focus) > 0
	}
	for _, on := range []bool{g.MaxQuestions > 0, g.MinSentences > 0 || g.MaxSentences.Int() > 0, g.RoleFidelity && focus, g.MaxRepeats > 0} {
		if on {
			n++
		}
	}
	return n + len(g.Tripwires) + len(g.Input)
}
