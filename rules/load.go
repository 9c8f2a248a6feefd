package rules

import (
	"mime"
	"slices"

	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing/fstest"

	"github.com/batonhq/baton/rules/script"

	"go.yaml.in/yaml/v3"
)

// PackFile is the file a pack folder must contain.
const PackFile = "pack.yaml"

// maxFileSize bounds what Load reads so a hostile pack cannot exhaust memory.
const maxFileSize = 4 << 20

// Load reads the pack in folder dir of fsys (pack.yaml plus the files it
// includes), checks it, and compiles every expression. The error, if any,
// is an ErrorList naming every problem as file:line:col.
func Load(fsys fs.FS, dir string) (*Pack, error) {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", dir, err)
	}
	p, err := LoadFS(sub)
	if p != nil {
		p.Dir = dir
	}
	return p, err
}

// LoadFS loads a pack whose folder is the root of fsys.
func LoadFS(fsys fs.FS) (*Pack, error) {
	var errs ErrorList
	p := &Pack{FS: fsys}
	h := sha256.New()
	hashFile := func(name string, data []byte) {
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(data))
		h.Write(data)
	}

	root, data, err := parseFile(fsys, PackFile, &errs)
	if err != nil {
		return nil, err
	}
	hashFile(PackFile, data)
	if root == nil {
		return nil, errs.Err()
	}

	// Sections may live in included sibling files; each section is defined
	// once across all of them.
	type section struct {
		file string
		key  *yaml.Node
		val  *yaml.Node
	}
	var sections []section
	collect := func(file string, n *yaml.Node) {
		n = resolve(n)
		if n == nil {
			return
		}
		if n.Kind != yaml.MappingNode {
			errs.add(Pos{File: file, Line: n.Line, Col: n.Column}, "a pack file must be a mapping of sections")
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			sections = append(sections, section{file, n.Content[i], n.Content[i+1]})
		}
	}
	collect(PackFile, root)
	for _, s := range sections {
		if s.key.Value != "include" {
			continue
		}
		var inc []string
		d := &decoder{file: s.file, errs: &errs}
		d.decode(s.val, refValue(&inc))
		for _, name := range inc {
			clean := path.Clean(name)
			if !fs.ValidPath(clean) || clean == PackFile || !strings.HasSuffix(clean, ".yaml") && !strings.HasSuffix(clean, ".yml") {
				errs.add(Pos{File: s.file, Line: s.val.Line, Col: s.val.Column}, "include %q: must be a .yaml file inside the pack folder", name)
				continue
			}
			n, data, err := parseFile(fsys, clean, &errs)
			if err != nil {
				errs.add(Pos{File: s.file, Line: s.val.Line, Col: s.val.Column}, "include %q: %v", name, err)
				continue
			}
			hashFile(clean, data)
			if n != nil {
				collect(clean, n)
			}
		}
	}

	seen := map[string]Pos{}
	idx, names := fieldIndex(reflect.TypeFor[Pack]())
	pv := reflect.ValueOf(p).Elem()
	p.Pos = Pos{File: PackFile, Line: 1, Col: 1}
	for _, s := range sections {
		d := &decoder{file: s.file, errs: &errs}
		k := s.key.Value
		if first, dup := seen[k]; dup {
			d.errorf(s.key, "section %q is already defined at %s", k, first)
			continue
		}
		seen[k] = d.pos(s.key)
		fi, ok := idx[k]
		if !ok {
			d.errorf(s.key, "unknown section %q (known: %s)", k, strings.Join(names, ", "))
			continue
		}
		if k == "include" && s.file != PackFile {
			d.errorf(s.key, "include is only allowed in %s", PackFile)
			continue
		}
		d.decode(s.val, pv.Field(fi))
	}

	if p.DryRun.Candidate != "" {
		if data, err := readFile(fsys, p.DryRun.Candidate); err != nil {
			errs.add(Pos{File: PackFile}, "dryrun.candidate: %v", err)
		} else {
			hashFile(p.DryRun.Candidate, data)
		}
	}

	p.scriptFiles = loadScripts(fsys, &errs, hashFile)
	for i := range p.Scenario.Attachments {
		a := &p.Scenario.Attachments[i]
		clean := path.Clean(a.File)
		if a.File == "" || !fs.ValidPath(clean) {
			errs.add(a.Pos, "attachment %s: file must be a path inside the pack folder", a.ID)
			continue
		}
		data, err := readFile(fsys, clean)
		if err != nil {
			errs.add(a.Pos, "attachment %s: %v", a.ID, err)
			continue
		}
		hashFile(clean, data)
		a.Data = data
		if a.MIME == "" {
			// Without parameters: providers want "text/csv", not "; charset=...".
			a.MIME, _, _ = mime.ParseMediaType(mime.TypeByExtension(path.Ext(clean)))
		}
		if a.MIME == "" {
			errs.add(a.Pos, "attachment %s: cannot tell the MIME type of %s; set mime", a.ID, a.File)
		}
	}

	// Compile even after decode errors so one run lists every problem; the
	// compiler copes with whatever the decoder could fill in.
	compile(p, &errs)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	p.Hash = hex.EncodeToString(h.Sum(nil))
	return p, nil
}

// ScriptsDir is the pack folder that holds JavaScript files.
const ScriptsDir = "scripts"

// loadScripts compiles scripts/*.js in name order; they share one global
// scope, as script tags on a page do.
func loadScripts(fsys fs.FS, errs *ErrorList, hash func(string, []byte)) []*script.File {
	names, err := fs.Glob(fsys, ScriptsDir+"/*.js")
	if err != nil {
		errs.add(Pos{File: ScriptsDir}, "%v", err)
		return nil
	}
	slices.Sort(names)
	var out []*script.File
	for _, name := range names {
		data, err := readFile(fsys, name)
		if err != nil {
			errs.add(Pos{File: name}, "%v", err)
			continue
		}
		hash(name, data)
		f, serrs := script.Compile(name, string(data))
		for _, e := range serrs {
			errs.add(Pos{File: e.File, Line: e.Line, Col: e.Col}, "%s", e.Msg)
		}
		if f != nil {
			out = append(out, f)
		}
	}
	return out
}

// LoadBytes loads a pack from a single pack.yaml held in memory; used by
// fuzzing and tests.
func LoadBytes(data []byte) (*Pack, error) {
	return LoadFS(fstest.MapFS{PackFile: {Data: data}})
}

func readFile(fsys fs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s is a folder", name)
	}
	if st.Size() > maxFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, maxFileSize)
	}
	return fs.ReadFile(fsys, name)
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseFile parses one YAML file. Syntax errors are added to errs; the
// returned error is only for files that cannot be read at all.
func parseFile(fsys fs.FS, name string, errs *ErrorList) (*yaml.Node, []byte, error) {
	data, err := readFile(fsys, name)
	if errors.Is(err, fs.ErrNotExist) && name == PackFile {
		return nil, nil, ErrNotPack
	}
	if err != nil {
		return nil, nil, err
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		msg := err.Error()
		line := 0
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		} else {
			msg = strings.TrimPrefix(msg, "yaml: ")
		}
		errs.add(Pos{File: name, Line: line, Col: 1}, "YAML syntax: %s", msg)
		return nil, data, nil
	}
	return &root, data, nil
}

// ErrNotPack is returned for folders without a pack.yaml.
var ErrNotPack = errors.New("not a pack folder (no pack.yaml)")
