package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"unicode"

	"github.com/cockroachdb/datadriven"
	"github.com/dlclark/regexp2/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"go.yaml.in/yaml/v3"

	"github.com/batonhq/baton/rules/schema"
)

var updateSchema = flag.Bool("update-schema", false, "rewrite docs/pack.schema.json")

const schemaFile = "../docs/pack.schema.json"

// The committed schema is what the model types generate.
func TestJSONSchemaUpToDate(t *testing.T) {
	got, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *updateSchema {
		if err := os.WriteFile(schemaFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run go test ./rules -run TestJSONSchemaUpToDate -update-schema (or baton schema > %s)", schemaFile, schemaFile)
	}
	again, _ := JSONSchema()
	if !bytes.Equal(append(again, '\n'), got) {
		t.Fatal("two runs of JSONSchema differ")
	}
}

// The document is a valid draft 2020-12 schema, checked against the
// metaschema itself, not only by compiling it.
func TestJSONSchemaMetaschema(t *testing.T) {
	c := jsonschema.NewCompiler()
	meta, err := c.Compile("https://json-schema.org/draft/2020-12/schema")
	if err != nil {
		t.Fatal(err)
	}
	doc := schemaDoc(t)
	if err := meta.Validate(doc); err != nil {
		t.Fatalf("the pack schema is not a valid 2020-12 schema: %v", err)
	}
	// A broken document would fail the same check.
	broken := schemaDoc(t).(map[string]any)
	broken["$defs"].(map[string]any)["Rule"].(map[string]any)["additionalProperties"] = "no"
	if meta.Validate(broken) == nil {
		t.Fatal("the metaschema took additionalProperties: \"no\"")
	}
}

// engines are the regular expression engines the schema is checked
// under: Go's RE2, which the validator uses by default, and ECMA-262 with
// the u flag, which editors use. A pattern outside their common subset
// fails to compile under one of them.
var engines = []struct {
	name    string
	compile jsonschema.RegexpEngine
}{
	{"re2", nil},
	{"ecma", func(s string) (jsonschema.Regexp, error) {
		re, err := regexp2.Compile(s, regexp2.ECMAScript|regexp2.Unicode)
		if err != nil {
			return nil, err
		}
		return ecmaRegexp{re}, nil
	}},
}

type ecmaRegexp struct{ re *regexp2.Regexp }

func (r ecmaRegexp) MatchString(s string) bool {
	ok, err := r.re.MatchString(s)
	return ok && err == nil
}

func (r ecmaRegexp) String() string { return r.re.String() }

func schemaDoc(t testing.TB) any {
	t.Helper()
	b, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// compileSchema compiles doc under each engine.
func compileSchema(t testing.TB, doc any) []*jsonschema.Schema {
	t.Helper()
	var out []*jsonschema.Schema
	for _, e := range engines {
		c := jsonschema.NewCompiler()
		if e.compile != nil {
			c.UseRegexpEngine(e.compile)
		}
		if err := c.AddResource("pack.schema.json", doc); err != nil {
			t.Fatal(err)
		}
		sch, err := c.Compile("pack.schema.json")
		if err != nil {
			t.Fatalf("%s: %v", e.name, err)
		}
		out = append(out, sch)
	}
	return out
}

var packSchemas = sync.OnceValue(func() []*jsonschema.Schema {
	return compileSchema(&onceT{}, schemaDoc(&onceT{}))
})

// packSchema is the pack schema compiled under each engine, once.
func packSchema(t testing.TB) []*jsonschema.Schema {
	t.Helper()
	schs := packSchemas()
	if schs == nil {
		t.Fatal("the pack schema does not compile: see TestJSONSchemaMetaschema")
	}
	return schs
}

// onceT stands in for the first test to compile the schema: a failure
// leaves the result nil, which every caller then reports.
type onceT struct{ testing.TB }

func (*onceT) Helper()               {}
func (*onceT) Fatal(...any)          { runtime.Goexit() }
func (*onceT) Fatalf(string, ...any) { runtime.Goexit() }

// validate checks one pack file's YAML under every engine; the engines
// must agree.
func validate(t testing.TB, name string, data []byte) error {
	t.Helper()
	v, err := yamlJSON(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var first error
	for i, sch := range packSchema(t) {
		err := sch.Validate(v)
		if i == 0 {
			first = err
		} else if (err == nil) != (first == nil) {
			t.Fatalf("%s: the engines disagree: %s says %v, %s says %v", name, engines[0].name, first, engines[i].name, err)
		}
	}
	return first
}

// yamlJSON is the JSON an editor validates for a YAML file: scalars by
// their YAML 1.2 tag, keys as written, aliases and merge keys expanded.
func yamlJSON(data []byte) (any, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, err
	}
	v, err := nodeJSON(&root)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(raw))
}

func nodeJSON(n *yaml.Node) (any, error) {
	switch n.Kind {
	case 0:
		return nil, nil
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return nodeJSON(n.Content[0])
	case yaml.AliasNode:
		return nodeJSON(n.Alias)
	case yaml.SequenceNode:
		out := []any{}
		for _, c := range n.Content {
			v, err := nodeJSON(c)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := map[string]any{}
		var merged []*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" {
				merged = append(merged, v)
				continue
			}
			x, err := nodeJSON(v)
			if err != nil {
				return nil, err
			}
			out[k.Value] = x
		}
		for _, m := range merged {
			for m.Kind == yaml.AliasNode {
				m = m.Alias
			}
			srcs := []*yaml.Node{m}
			if m.Kind == yaml.SequenceNode {
				srcs = m.Content
			}
			for _, s := range srcs {
				x, err := nodeJSON(s)
				if err != nil {
					return nil, err
				}
				for k, v := range x.(map[string]any) {
					if _, own := out[k]; !own {
						out[k] = v
					}
				}
			}
		}
		return out, nil
	}
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool", "!!int", "!!float":
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, err
		}
		return v, nil
	}
	return n.Value, nil
}

// packDirs are the packs the project ships or tests with.
func packDirs(t *testing.T) []string {
	var dirs []string
	for _, glob := range []string{"../scenarios/*/pack.yaml", "../engine/testdata/packs/*/pack.yaml", "../runtime/*/testdata/*/pack.yaml", "../runtime/scaffold/template/pack.yaml"} {
		m, _ := filepath.Glob(glob)
		for _, f := range m {
			dirs = append(dirs, filepath.Dir(f))
		}
	}
	if len(dirs) < 20 {
		t.Fatalf("found only %v", dirs)
	}
	return dirs
}

// Every file of every pack the project ships or tests with validates.
func TestJSONSchemaAcceptsBundledPacks(t *testing.T) {
	for _, dir := range packDirs(t) {
		t.Run(dir, func(t *testing.T) {
			fsys := dirFS(t, dir)
			if base, _, ok := strings.Cut(filepath.Base(dir), "_"); ok && !hasScripts(fsys) {
				// A variant test pack takes its scripts from its base
				// (engine/datadriven_test.go).
				if _, err := os.Stat(filepath.Join(filepath.Dir(dir), base)); err == nil {
					for name, f := range dirFS(t, filepath.Join(filepath.Dir(dir), base)) {
						if _, own := fsys[name]; !own {
							fsys[name] = f
						}
					}
				}
			}
			if _, err := LoadFS(fsys); err != nil {
				t.Fatalf("the pack does not load: %v", err)
			}
			files := packFiles(t, fsys)
			if len(files) == 0 {
				t.Fatal("no pack files")
			}
			for _, name := range files {
				data, _ := fs.ReadFile(fsys, name)
				if err := validate(t, name, data); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
		})
	}
}

// dirFS reads a pack folder into memory; the scaffold's template has a
// placeholder where baton init writes the name.
func dirFS(t *testing.T, dir string) fstest.MapFS {
	out := fstest.MapFS{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = &fstest.MapFile{Data: bytes.ReplaceAll(data, []byte("__PACK_NAME__"), []byte("scaffold"))}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func hasScripts(fsys fstest.MapFS) bool {
	for name := range fsys {
		if strings.HasPrefix(name, ScriptsDir+"/") {
			return true
		}
	}
	return false
}

// packFiles lists pack.yaml and the files it includes.
func packFiles(t testing.TB, fsys fs.FS) []string {
	data, err := fs.ReadFile(fsys, PackFile)
	if err != nil {
		return nil
	}
	files := []string{PackFile}
	v, err := yamlJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := v.(map[string]any); ok {
		inc, _ := m["include"].([]any)
		for _, f := range inc {
			if s, ok := f.(string); ok {
				files = append(files, path.Clean(s))
			}
		}
	}
	return files
}

// Every pack the load transcripts (testdata/load) load validates: they
// use the loader's corners (merge keys, shorthands, every kind of
// trigger) far more than the bundled packs do.
func TestJSONSchemaAcceptsTranscriptPacks(t *testing.T) {
	loaded := 0
	datadriven.Walk(t, filepath.Join("testdata", "load"), func(t *testing.T, file string) {
		fsys := fstest.MapFS{}
		datadriven.RunTest(t, file, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "file":
				var name string
				d.ScanArgs(t, "name", &name)
				fsys[name] = &fstest.MapFile{Data: []byte(d.Input)}
			case "reset":
				fsys = fstest.MapFS{}
			case "load":
				if _, err := LoadFS(fsys); err != nil {
					break
				}
				loaded++
				for _, name := range packFiles(t, fsys) {
					if err := validate(t, name, fsys[name].Data); err != nil {
						t.Errorf("%s: Load takes it, the schema does not: %s: %v", d.Pos, name, err)
					}
				}
			}
			return d.Expected
		})
	})
	if loaded < 5 {
		t.Fatalf("only %d transcript packs loaded", loaded)
	}
}

// A fixture in testdata/schema is a pack (txtar files) with what the
// schema and the loader must say of it, in its comment:
//
//	ok                      both take it
//	schema: FILE PTR KIND   a problem of this kind at this JSON pointer of FILE
//	load: POS TEXT          a load error at file:line:col containing TEXT
//
// A broken fixture has both of the last two: the schema and the loader
// agree it is broken, and where. Every schema problem must be at PTR or
// around it (a parent), so a fixture is broken only where it says.
func TestJSONSchemaFixtures(t *testing.T) {
	files, _ := filepath.Glob("testdata/schema/*.txtar")
	if len(files) < 20 {
		t.Fatalf("found only %d fixtures", len(files))
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			comment, fsys := readFixture(t, file)
			var ok bool
			var wantSchema, wantLoad [][]string
			for _, line := range strings.Split(comment, "\n") {
				switch f := strings.Fields(line); {
				case len(f) == 1 && f[0] == "ok":
					ok = true
				case len(f) == 4 && f[0] == "schema:":
					wantSchema = append(wantSchema, f[1:])
				case len(f) > 2 && f[0] == "load:":
					wantLoad = append(wantLoad, []string{f[1], strings.Join(f[2:], " ")})
				}
			}
			if ok == (len(wantSchema) > 0 || len(wantLoad) > 0) || !ok && (len(wantSchema) == 0 || len(wantLoad) == 0) {
				t.Fatal("the comment says neither ok nor both schema: and load:")
			}
			_, loadErr := LoadFS(fsys)
			yamls := packFiles(t, fsys)
			if ok {
				if loadErr != nil {
					t.Fatalf("Load: %v", loadErr)
				}
				for _, name := range yamls {
					if err := validate(t, name, fsys[name].Data); err != nil {
						t.Errorf("%s: %v", name, err)
					}
				}
				return
			}
			var el ErrorList
			if !errors.As(loadErr, &el) {
				t.Fatalf("Load took the pack (%v)", loadErr)
			}
			for _, w := range wantLoad {
				if !slices.ContainsFunc(el, func(e *Error) bool { return e.Pos.String() == w[0] && strings.Contains(e.Msg, w[1]) }) {
					t.Errorf("Load did not say %q at %s; it said:\n%v", w[1], w[0], loadErr)
				}
			}
			problems := map[string][]problem{}
			for _, name := range yamls {
				err := validate(t, name, fsys[name].Data)
				problems[name] = leaves(err)
				if err == nil {
					problems[name] = nil
				}
			}
			for _, w := range wantSchema {
				name, ptr, kind := w[0], w[1], w[2]
				if !slices.Contains(problems[name], problem{ptr, kind}) {
					t.Errorf("the schema did not find a %s problem at %s %s; it found %v", kind, name, ptr, problems[name])
				}
			}
			for name, ps := range problems {
				for _, p := range ps {
					if !slices.ContainsFunc(wantSchema, func(w []string) bool {
						return w[0] == name && (w[1] == p.at || strings.HasPrefix(w[1], p.at+"/") || p.at == "")
					}) {
						t.Errorf("the schema found a problem the fixture does not name: %s %s %s", name, p.at, p.kind)
					}
				}
			}
		})
	}
}

// readFixture reads a txtar archive: a comment, then files each headed
// by a "-- NAME --" line.
func readFixture(t *testing.T, file string) (string, fstest.MapFS) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var comment strings.Builder
	fsys := fstest.MapFS{}
	var cur *fstest.MapFile
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if name, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "-- "); ok && strings.HasSuffix(name, " --") {
			cur = &fstest.MapFile{}
			fsys[strings.TrimSuffix(name, " --")] = cur
			continue
		}
		if cur == nil {
			comment.WriteString(line)
		} else {
			cur.Data = append(cur.Data, line...)
		}
	}
	if len(fsys) == 0 {
		t.Fatalf("%s holds no files", file)
	}
	return comment.String(), fsys
}

// problem is one leaf of a validation error: where it is (for an unknown
// key, the key itself) and its keyword.
type problem struct{ at, kind string }

func (p problem) String() string { return p.at + " " + p.kind }

func leaves(err error) []problem {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil
	}
	var out []problem
	// A property name is validated as a value of its own, so the problems
	// under propertyNames are located at the name, not below it.
	var walk func(e *jsonschema.ValidationError, name string)
	walk = func(e *jsonschema.ValidationError, name string) {
		at := name
		if at == "" && len(e.InstanceLocation) > 0 {
			at = "/" + strings.Join(e.InstanceLocation, "/")
		}
		if pn, ok := e.ErrorKind.(*kind.PropertyNames); ok {
			name = at + "/" + pn.Property
		}
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c, name)
			}
			return
		}
		if ap, ok := e.ErrorKind.(*kind.AdditionalProperties); ok {
			for _, p := range ap.Properties {
				out = append(out, problem{at + "/" + p, "additionalProperties"})
			}
			return
		}
		out = append(out, problem{at, keyword(e.ErrorKind)})
	}
	walk(ve, "")
	return out
}

// keyword is the keyword of an error kind: *kind.MinItems is minItems.
func keyword(k jsonschema.ErrorKind) string {
	name := reflect.TypeOf(k).Elem().Name()
	return strings.ToLower(name[:1]) + name[1:]
}

// subschema compiles one schema the generator makes, on its own.
func subschema(t testing.TB, s jsch) []*jsonschema.Schema {
	t.Helper()
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return compileSchema(t, doc)
}

// agrees checks that the schema s takes a text value exactly when the
// loader does, for every string over alphabet up to max long, under
// every engine.
func agrees(t *testing.T, s jsch, alphabet []string, max int, loader func(string) bool, gap func(string) bool) {
	t.Helper()
	schs := subschema(t, s)
	bad := 0
	var walk func(prefix string, n int)
	walk = func(prefix string, n int) {
		want := loader(prefix)
		for i, sch := range schs {
			if gap != nil && gap(prefix) {
				break
			}
			if got := sch.Validate(prefix) == nil; got != want && bad < 10 {
				bad++
				t.Errorf("%s: schema %v, loader %v for %q", engines[i].name, got, want, prefix)
			}
		}
		if n == max {
			return
		}
		for _, a := range alphabet {
			walk(prefix+a, n+1)
		}
	}
	walk("", 0)
}

// decodes says whether the loader's decoder reads s, written as YAML
// text, into a T without a problem.
func decodes[T any](s string) bool {
	var errs ErrorList
	var v T
	d := &decoder{file: "t", errs: &errs}
	d.decode(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}, reflect.ValueOf(&v).Elem())
	return len(errs) == 0
}

func chars(s string) []string { return strings.Split(s, "") }

// The patterns take what the loader's own functions take.
func TestJSONSchemaPatternsAgreeWithLoader(t *testing.T) {
	t.Parallel()
	g := &schemaGen{defs: map[string]any{}}
	for _, tt := range []struct {
		name     string
		schema   jsch
		alphabet []string
		max      int
		loader   func(string) bool
		// gap, if set, marks what the loader takes and no pattern can
		// express (TestJSONSchemaDurationCases pins examples).
		gap func(string) bool
	}{
		{"duration", g.base(durationType), []string{"0", "5", ".", ":", "+", "-", "s", "m", "h", "ns", "us", "µs", "μs", "ms", " "}, 4, decodes[Duration], tinyNegative},
		{"clock", g.base(durationType), []string{"0", "1", "59", "60", ":", ".", "+", "-"}, 5, decodes[Duration], tinyNegative},
		{"number", g.base(numberType), []string{"0", "9", ".", "e", "E", "+", "-", "_", "0x", "p", "a", "F", "inf", " "}, 4, decodes[Number], nil},
		{"whole number", g.base(reflect.TypeFor[int]()), chars("09_+-.ae"), 5, decodes[int], nil},
		{"template", g.base(templateType), []string{"{", "}", "$", " ", "a", "1", "\n", "{{", "}}", "${"}, 5, func(s string) bool { return (&Template{Src: s}).parse() == nil }, nil},
		{"file name", fileNameSchema(""), chars("az09.-_A/"), 4, isFileName, nil},
		{"name", str(namePattern, ""), chars("aZ09_-.:"), 3, isName, nil},
		{"ident", identSchema(""), chars("aZ09_-$"), 3, isIdent, nil},
		{"fence", g.fieldSchema(reflect.TypeFor[Gate](), "fence"), append(chars("-= \n\ta"), "\u3000"), 4, func(s string) bool {
			// check.go, Gate.check
			return !strings.ContainsAny(s, "\n=") && strings.TrimSpace(s) == s
		}, nil},
		{"trigger", g.base(triggerType), []string{"a", "_", "0", ":", "-", "A", "tool:", "job:", "sequence:", "session_start", "stalled"}, 3, func(s string) bool { _, err := ParseTrigger(s); return err == nil }, nil},
		{"job role", g.fieldSchema(reflect.TypeFor[Job](), "role"), []string{"args", ".", "args.", "a", "1", "_", "-"}, 4, func(s string) bool {
			// check.go, Job.check; a role id is an identifier.
			if arg, ok := strings.CutPrefix(s, "args."); ok {
				return isIdent(arg)
			}
			return isIdent(s)
		}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) { agrees(t, tt.schema, tt.alphabet, tt.max, tt.loader, tt.gap) })
	}
}

// tinyNegative is a negative duration the loader takes because it
// truncates to 0ns (-.5ns); which ones do depends on float rounding.
func tinyNegative(s string) bool {
	s = strings.TrimSpace(s)
	return strings.HasPrefix(s, "-") && !strings.Contains(s, ":") && strings.ContainsAny(s, "123456789") && decodes[Duration](s)
}

// Longer values the alphabets above cannot reach, and the values the
// loader takes that a pattern cannot express, pinned so a change to
// either side is noticed.
func TestJSONSchemaDurationCases(t *testing.T) {
	g := &schemaGen{defs: map[string]any{}}
	schs := subschema(t, g.base(durationType))
	for _, tt := range []struct {
		in           string
		load, schema bool
		why          string
	}{
		{"12s", true, true, ""},
		{"1m30s", true, true, ""},
		{"1h2m3s4ms5us6ns", true, true, ""},
		{"03:00", true, true, ""},
		{"100:00", true, true, "the first part of a clock time has no bound"},
		{"01:02:03.5", true, true, ""},
		{"1:59.999", true, true, ""},
		{"1:60", false, false, ""},
		{"1:60:00", false, false, ""},
		{"1.5:00", false, false, ""},
		{"1:2:3:4", false, false, ""},
		{"SESSION_LENGTH", true, true, ""},
		{" 12s\t", true, true, "ParseDuration trims"},
		{"\u3000" + "12s", true, true, ""},
		{"-0s", true, true, ""},
		{"-1s", false, false, ""},
		{"12", false, false, ""},
		{"12 s", false, false, ""},
		{"", false, false, ""},
		{"-0.5ns", true, false, "a negative duration that rounds to 0"},
		{"1e1:30", true, false, "a clock part in exponent form"},
		{"0x1p1:30", true, false, "a clock part in hexadecimal"},
		{"1_0:30", true, false, "a clock part with an underscore"},
		{"9999999999999h", false, true, "too large for a duration"},
		{"300000:00:00", false, true, "a clock time past 1e9 seconds"},
	} {
		if got := decodes[Duration](tt.in); got != tt.load {
			t.Errorf("Load %v for %q, want %v", got, tt.in, tt.load)
		}
		for i, sch := range schs {
			if got := sch.Validate(tt.in) == nil; got != tt.schema {
				t.Errorf("%s: schema %v for %q, want %v", engines[i].name, got, tt.in, tt.schema)
			}
		}
	}
}

// The space class is unicode.IsSpace, which strings.TrimSpace uses.
func TestJSONSchemaSpaceClass(t *testing.T) {
	for _, e := range engines {
		compile := e.compile
		if compile == nil {
			compile = func(s string) (jsonschema.Regexp, error) { return regexp.Compile(s) }
		}
		re, err := compile("^" + spaceRE + "$")
		if err != nil {
			t.Fatal(err)
		}
		// Every space is in the Basic Multilingual Plane.
		for r := rune(0); r <= 0x10000; r++ {
			if r >= 0xd800 && r <= 0xdfff {
				continue
			}
			if re.MatchString(string(r)) != unicode.IsSpace(r) {
				t.Errorf("%s: %U: class %v, unicode.IsSpace %v", e.name, r, re.MatchString(string(r)), unicode.IsSpace(r))
			}
		}
	}
}

// A script reference the loader resolves always matches the pattern, and
// one the pattern takes always decodes; that the file and function exist
// is for Load to say.
func TestJSONSchemaScriptRefs(t *testing.T) {
	schs := subschema(t, scriptRefSchema())
	for _, ref := range []string{
		"fix", "guard.js#fix", "./guard.js#fix", "#fix", "guard.js/#fix", "sub/../guard.js#fix", "../scripts/guard.js#fix",
		"guard#fix", "guard.ts#fix", "other.js#fix", "guard.js#", "guard.js#1fix", "guard.js#fix#", "fix-it", "", "$fix",
	} {
		pack := fmt.Sprintf("name: s\nduration: 1m\nroles: {qa: {}}\nend: [{id: e, when: {script: %q}}]\n", ref)
		_, err := LoadFS(fstest.MapFS{
			PackFile:           {Data: []byte(pack)},
			"scripts/guard.js": {Data: []byte("function fix() { return false }\nfunction $fix() { return false }\n")},
		})
		for i, sch := range schs {
			schemaOK := sch.Validate(ref) == nil
			if err == nil && !schemaOK {
				t.Errorf("%s: Load resolves %q, the schema refuses it", engines[i].name, ref)
			}
			var r ScriptRef
			var errs ErrorList
			r.decodeNode(&decoder{file: "t", errs: &errs}, &yaml.Node{Kind: yaml.ScalarNode, Value: ref})
			if schemaOK && len(errs) > 0 {
				t.Errorf("%s: the schema takes %q, the loader cannot read it: %v", engines[i].name, ref, errs)
			}
		}
	}
}

// The words the schema gives booleans are the ones scalarBool reads.
func TestJSONSchemaBoolWords(t *testing.T) {
	g := &schemaGen{defs: map[string]any{}}
	schs := subschema(t, g.base(reflect.TypeFor[bool]()))
	for _, w := range []string{"true", "True", "TRUE", "yes", "Yes", "on", "On", "y", "1", "false", "False", "FALSE", "no", "No", "off", "n", "0", "", "tRUE"} {
		_, want := scalarBool(&yaml.Node{Kind: yaml.ScalarNode, Value: w})
		for i, sch := range schs {
			if got := sch.Validate(w) == nil; got != want {
				t.Errorf("%s: %q: schema %v, scalarBool %v", engines[i].name, w, got, want)
			}
		}
	}
}

// rules/schema compiles exactly the keywords and types the ToolSchema
// definition lists: every keyword of JSON Schema 2020-12 is tried.
func TestJSONSchemaToolSchemaKeywords(t *testing.T) {
	all := []string{"$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary", "$comment", "$defs",
		"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "prefixItems", "items", "contains",
		"properties", "patternProperties", "additionalProperties", "propertyNames", "unevaluatedItems", "unevaluatedProperties",
		"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength",
		"minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains", "minContains", "maxProperties",
		"minProperties", "required", "dependentRequired", "format", "contentEncoding", "contentMediaType", "contentSchema",
		"title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples", "definitions", "dependencies"}
	var took []string
	for _, k := range all {
		_, err := schema.Compile(map[string]any{k: nil})
		if err == nil || !strings.Contains(err.Error(), "unsupported keyword") {
			took = append(took, k)
		}
	}
	if !slices.Equal(slices.Sorted(slices.Values(took)), slices.Sorted(slices.Values(toolSchemaKeywords))) {
		t.Errorf("rules/schema takes %v; the pack schema lists %v", took, toolSchemaKeywords)
	}
	for _, typ := range append(slices.Clone(toolSchemaTypes), "float", "text", "Object") {
		_, err := schema.Compile(map[string]any{"type": typ})
		if (err == nil) != slices.Contains(toolSchemaTypes, typ) {
			t.Errorf("rules/schema on type %q: %v", typ, err)
		}
	}
}

// fieldSchemas and required name fields the types have.
func TestJSONSchemaFieldTablesNameFields(t *testing.T) {
	for k := range fieldSchemas {
		if !slices.Contains(names2(k.t), k.key) {
			t.Errorf("fieldSchemas: %s has no field %s", k.t, k.key)
		}
	}
	for typ, keys := range required {
		for _, k := range keys {
			if !slices.Contains(names2(typ), k) {
				t.Errorf("required: %s has no field %s", typ, k)
			}
		}
	}
	for _, typ := range idRequired {
		if !slices.Contains(names2(typ), "id") {
			t.Errorf("idRequired: %s has no id", typ)
		}
	}
}

func names2(t reflect.Type) []string { _, n := fieldIndex(t); return n }

// A value left out, null or empty: wherever Load takes a pack with one
// of its settings so, the schema takes it too. Each setting of a pack
// that uses most sections is tried in turn; Load is asked only about the
// variants the schema refuses, which must be the ones it refuses too.
func TestJSONSchemaTakesWhatLoadLeavesOut(t *testing.T) {
	t.Parallel()
	_, fsys := readFixture(t, "testdata/schema/ok-rich.txtar")
	doc, err := yamlJSON(fsys[PackFile].Data)
	if err != nil {
		t.Fatal(err)
	}
	sch := packSchema(t)[0]
	if err := sch.Validate(doc); err != nil {
		t.Fatal(err)
	}
	type variant struct {
		what string
		yaml []byte
	}
	var refused []variant
	tried := 0
	try := func(path string, set func(any), old, blank any) {
		tried++
		set(blank)
		defer set(old)
		if sch.Validate(doc) == nil {
			return
		}
		out, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		refused = append(refused, variant{fmt.Sprintf("%s %#v", path, blank), out})
	}
	blanks := func(v any) []any {
		switch v.(type) {
		case map[string]any, []any:
			return []any{nil}
		}
		return []any{nil, ""}
	}
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				old := x[k]
				for _, b := range blanks(old) {
					try(path+"/"+k, func(v any) { x[k] = v }, old, b)
				}
				walk(old, path+"/"+k)
			}
		case []any:
			for i, e := range x {
				walk(e, path+"/"+strconv.Itoa(i))
			}
		}
	}
	walk(doc, "")
	// The settings the checker needs are refused blank by both.
	if tried < 400 || len(refused) < 40 {
		t.Fatalf("the schema refused %d of %d variants", len(refused), tried)
	}
	var wg sync.WaitGroup
	work := make(chan variant)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for v := range work {
				pack := cloneFS(fsys)
				pack[PackFile] = &fstest.MapFile{Data: v.yaml}
				if _, err := LoadFS(pack); err == nil {
					t.Errorf("Load takes %s, the schema does not", v.what)
				}
			}
		})
	}
	for _, v := range refused {
		work <- v
	}
	close(work)
	wg.Wait()
}

func cloneFS(m fstest.MapFS) fstest.MapFS {
	out := fstest.MapFS{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Each action kind written every way a pack might: where Load takes it,
// the schema does too.
func TestJSONSchemaTakesWhatLoadTakesForActions(t *testing.T) {
	t.Parallel()
	const base = `name: a
duration: 1m
roles: {qa: {}}
vars: {n: 0}
files: {x: {class: overwrite}}
jobs: {x: {role: qa, prompt: p}}
sequences: {x: {steps: [qa]}}
`
	bodies := []string{"~", "x", "qa", "1", "true", "''", "[]", "[x]", "{}", "{role: qa, kind: k, line: l}",
		"{script: f}", "{id: x}", "{var: n, value: 1}", "{file: x, text: t}", "{file: x}", "{text: t}", "{role: qa}",
		"{name: s, value: v}", "{kind: k, value: 1}", "{reason: r}", "{text: t, level: warning}", "{role: qa, add: 1}"}
	loaded := 0
	for _, k := range ActionKeys() {
		for _, body := range bodies {
			for _, where := range []string{
				"rules: {r: {trigger: e, do: [{%s: %s}]}}\n",
				"guardrails: {input: {c: {when: 'true', do: [{%s: %s}]}}}\n",
			} {
				src := base + fmt.Sprintf(where, k, body)
				_, err := LoadFS(fstest.MapFS{PackFile: {Data: []byte(src)}, "scripts/f.js": {Data: []byte("function f() { return [] }")}})
				if err != nil {
					continue
				}
				loaded++
				if err := validate(t, PackFile, []byte(src)); err != nil {
					t.Errorf("Load takes %s: %s; the schema does not: %v", k, body, err)
				}
			}
		}
	}
	if loaded < len(ActionKeys()) {
		t.Fatalf("only %d variants loaded", loaded)
	}
}
