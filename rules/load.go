package rules

import (
	"mime"
	"slices"

	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/batonhq/baton/rules/script"

	"go.yaml.in/yaml/v3"
)

// PackFile is the file a pack folder must contain.
const PackFile = "pack.yaml"

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

// LoadFS loads a pack whose folder is the root of fsys. Every file is read
// through the pack's own view of fsys, which refuses names that a symbolic
// link takes outside the folder; the Pack's FS is that view too, so pack
// tests and the dry run read what the load checked.
func LoadFS(fsys fs.FS) (*Pack, error) { return loadFS(fsys, nil) }

// loadFS loads a pack, with the inputs in over taking those values where
// a duration or number names them (Bind).
func loadFS(fsys fs.FS, over map[string]any) (*Pack, error) {
	var errs ErrorList
	fsys = packFS{fsys}
	p := &Pack{FS: fsys, boundCache: &boundCache{sources: map[string][]byte{}}, over: over}
	h := sha256.New()
	hashFile := func(name string, data []byte) {
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(data))
		h.Write(data)
		p.sources[name] = data
	}

	yamlLeft := int64(MaxYAML)
	root, data, err := parseFile(fsys, PackFile, yamlLeft, &errs)
	if err != nil {
		return nil, err
	}
	yamlLeft -= int64(len(data))
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
			errs.addRoot(Pos{File: file, Line: n.Line, Col: n.Column}, causeAll, "a pack file must be a mapping of sections")
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
		before := len(errs)
		d.decode(s.val, refValue(&inc))
		// A file that is not read may have held any definition: every
		// problem with the include list is a root cause.
		errs.markRoots(before, causeAll)
		p.Include = append(p.Include, inc...)
		entries := includeEntries(d, s.val, len(inc))
		if len(inc) > MaxIncludes {
			errs.addRoot(d.pos(s.val), causeAll, "include lists %d files; at most %d", len(inc), MaxIncludes)
			continue
		}
		included := map[string]bool{}
		for i, name := range inc {
			at := entries[i]
			clean := path.Clean(name)
			if !fs.ValidPath(clean) || clean == PackFile || !strings.HasSuffix(clean, ".yaml") && !strings.HasSuffix(clean, ".yml") {
				errs.addRoot(at, causeAll, "include %q: must be a .yaml file inside the pack folder", clip(name))
				continue
			}
			if included[clean] {
				errs.add(at, "include %q: listed twice", clean)
				continue
			}
			included[clean] = true
			before := len(errs)
			n, data, err := parseFile(fsys, clean, yamlLeft, &errs)
			if err != nil {
				errs.addRoot(at, causeAll, "include %q: %v", clip(name), includeErr(fsys, clean, err))
				continue
			}
			yamlLeft -= int64(len(data))
			hashFile(clean, data)
			if n == nil {
				// Its syntax errors leave the whole file out.
				errs.markRoots(before, causeAll)
				continue
			}
			collect(clean, n)
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
			errs.addRoot(d.pos(s.key), k, "section %q is already defined at %s", k, first)
			continue
		}
		seen[k] = d.pos(s.key)
		fi, ok := idx[k]
		if !ok {
			unknownSection(d, s.key, names)
			continue
		}
		if k == "include" {
			if s.file != PackFile {
				errs.addRoot(d.pos(s.key), causeAll, "include is only allowed in %s", PackFile)
			}
			continue // read above, before the sections it brings
		}
		d.decode(s.val, pv.Field(fi))
	}

	if p.DryRun.Candidate != "" {
		if data, err := readFile(fsys, p.DryRun.Candidate, MaxFileSize); err != nil {
			errs.add(p.DryRun.Pos, "dryrun.candidate %q: %v", p.DryRun.Candidate, fileErr(fsys, p.DryRun.Candidate, err))
		} else {
			hashFile(p.DryRun.Candidate, data)
		}
	}

	p.scriptFiles = loadScripts(fsys, &errs, hashFile)
	p.readInputs(fsys, &errs, hashFile)
	for i := range p.Scenario.Attachments {
		a := &p.Scenario.Attachments[i]
		if _, ok := inputRef(a.File); ok {
			continue // the session's files (checked by the compiler)
		}
		clean := path.Clean(a.File)
		if a.File == "" || !fs.ValidPath(clean) {
			errs.add(a.Pos, "attachment %s: file must be a path inside the pack folder", a.ID)
			continue
		}
		data, err := readFile(fsys, clean, MaxFileSize)
		if err != nil {
			errs.add(a.Pos, "attachment %s: %v", a.ID, err)
			continue
		}
		hashFile(clean, data)
		a.Data = data
		if a.MIME == "" {
			a.MIME = mimeType(path.Ext(clean))
		}
		if a.MIME == "" {
			errs.add(a.Pos, "attachment %s: cannot tell the MIME type of %s; set mime", a.ID, a.File)
		}
	}

	p.readFileSources(fsys, &errs, hashFile)
	p.Workspace.read(fsys, &errs, hashFile)

	// Compile even after decode errors so one run lists every problem; the
	// compiler copes with whatever the decoder could fill in.
	compile(p, &errs)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	p.Hash = hex.EncodeToString(h.Sum(nil))
	p.owner = p
	p.bindDefaults()
	return p, nil
}

// mimeType is the MIME type of a file extension, without parameters
// (providers want "text/csv", not "; charset=..."), or "" when unknown.
func mimeType(ext string) string {
	// The table inputs use first: a pack's attachments go to the model as
	// the same type everywhere; the machine's database only for the rest.
	if t, ok := inputMedia[strings.ToLower(ext)]; ok {
		return t
	}
	t, _, _ := mime.ParseMediaType(mime.TypeByExtension(ext))
	return t
}

// ScriptsDir is the pack folder that holds JavaScript files.
const ScriptsDir = "scripts"

// loadScripts compiles scripts/*.js in name order; they share one global
// scope, as script tags on a page do.
func loadScripts(fsys fs.FS, errs *ErrorList, hash func(string, []byte)) []*script.File {
	// Glob skips a folder it cannot read, so a scripts folder that links
	// outside the pack would look empty; say so instead.
	if _, err := fs.Stat(fsys, ScriptsDir); errors.Is(err, ErrOutsidePack) {
		errs.add(Pos{File: ScriptsDir}, "%v", pathErr(err))
		return nil
	}
	names, err := fs.Glob(fsys, ScriptsDir+"/*.js")
	if err != nil {
		errs.add(Pos{File: ScriptsDir}, "%v", err)
		return nil
	}
	slices.Sort(names)
	if len(names) > MaxScriptFiles {
		errs.add(Pos{File: ScriptsDir}, "%d scripts; a pack has at most %d", len(names), MaxScriptFiles)
		return nil
	}
	var out []*script.File
	left := int64(MaxScripts)
	for _, name := range names {
		data, err := readFile(fsys, name, min(MaxScript, left))
		if err != nil {
			err = overBudget(err, name, ScriptsDir+"/*.js", MaxScripts, MaxScript, left)
			errs.add(Pos{File: name}, "%v", err)
			continue
		}
		left -= int64(len(data))
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

// readFile reads one pack file of at most limit bytes. Only regular files
// are read: a named pipe would block the load and a device never ends.
func readFile(fsys fs.FS, name string, limit int64) ([]byte, error) {
	st, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, pathErr(err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s is a folder", name)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	if st.Size() > limit {
		return nil, tooLarge(name, limit)
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, pathErr(err)
	}
	defer f.Close()
	// The size can change after Stat: read no more than the limit anyway.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(name, limit)
	}
	return data, nil
}

// tooLargeError is readFile's error for a file over its limit, so callers
// whose limit is what a shared budget has left can say so.
type tooLargeError struct {
	name  string
	limit int64
}

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %d bytes", e.name, e.limit)
}

func tooLarge(name string, limit int64) error { return &tooLargeError{name, limit} }

// overBudget explains a file refused because files read before it used up
// their shared budget of total bytes (what), when what was left of it was
// below the one-file limit; it passes other errors through.
func overBudget(err error, name, what string, total, oneFile, left int64) error {
	var tl *tooLargeError
	if errors.As(err, &tl) && left < oneFile {
		return fmt.Errorf("%s: %s are larger than %d bytes together", name, what, total)
	}
	return err
}

// pathErr drops the "open NAME:" wrapper from a link refusal, whose
// message names the file already.
func pathErr(err error) error {
	var o *outsideError
	if errors.As(err, &o) {
		return o
	}
	return err
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlMessage is a yaml.v3 syntax error without its "yaml: line N:"
// prefix, whose line is where the block that broke began (and is counted
// from 0 for some errors, from 1 for others), not where it broke.
func yamlMessage(msg string) string {
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		return m[2]
	}
	return strings.TrimPrefix(msg, "yaml: ")
}

// maxSyntaxSearch bounds the files syntaxError searches: each step of the
// search parses the file up to a point again.
const maxSyntaxSearch = 1 << 20

// syntaxError finds where the YAML in data breaks, which yaml.v3 does not
// say: its message names the line where the enclosing block began. The
// place is the shortest start of the file that fails with the same
// message: the first line whose text makes the file fail, then the first
// character of that line that does. Each is found by bisection, so the
// search costs some twenty parses; past maxSyntaxSearch bytes, or if the
// search finds nothing, the message's own line is used.
func syntaxError(file string, data []byte, msg string) Pos {
	fallback := Pos{File: file, Col: 1}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		fallback.Line, _ = strconv.Atoi(m[1])
	}
	if len(data) > maxSyntaxSearch {
		return fallback
	}
	fails := func(n int) bool {
		var node yaml.Node
		err := yaml.Unmarshal(data[:n], &node)
		return err != nil && err.Error() == msg
	}
	// ends[i] is the offset just past line i+1, its newline included.
	var ends []int
	for i, b := range data {
		if b == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] != len(data) {
		ends = append(ends, len(data))
	}
	line, ok := firstTrue(len(ends), func(i int) bool { return fails(ends[i]) })
	if !ok {
		return fallback
	}
	start := 0
	if line > 0 {
		start = ends[line-1]
	}
	// The first n bytes of the line fail: its n-th character is where.
	n, _ := firstTrue(ends[line]-start, func(i int) bool { return fails(start + i + 1) })
	return Pos{File: file, Line: line + 1, Col: utf8.RuneCount(data[start:start+n]) + 1}
}

// firstTrue is the smallest i in [0, n) for which f holds, found by
// bisection, assuming f holds from some i on.
func firstTrue(n int, f func(int) bool) (int, bool) {
	i := sort.Search(n, f)
	return i, i < n
}

// parseFile parses one YAML file. Syntax errors are added to errs; the
// returned error is only for files that cannot be read at all.
func parseFile(fsys fs.FS, name string, limit int64, errs *ErrorList) (*yaml.Node, []byte, error) {
	if limit < 0 {
		limit = 0
	}
	data, err := readFile(fsys, name, limit)
	err = overBudget(err, name, PackFile+" and the files it includes", MaxYAML, MaxYAML, limit)
	if errors.Is(err, fs.ErrNotExist) && name == PackFile {
		return nil, nil, ErrNotPack
	}
	if err != nil {
		return nil, nil, err
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		errs.addRoot(syntaxError(name, data, err.Error()), causeAll, "YAML syntax: %s", yamlMessage(err.Error()))
		return nil, data, nil
	}
	if !checkTree(name, &root, errs) {
		return nil, data, nil
	}
	return &root, data, nil
}

// includeEntries gives the position of each of the n names an include
// list holds, so a problem with one points at it; a list written some
// other way (already reported) points at the list.
func includeEntries(d *decoder, list *yaml.Node, n int) []Pos {
	out := make([]Pos, n)
	items := resolve(list)
	for i := range out {
		out[i] = d.pos(list)
		if items != nil && items.Kind == yaml.SequenceNode && i < len(items.Content) {
			out[i] = d.pos(items.Content[i])
		}
	}
	return out
}

// includeErr says why an included file could not be read; for a file that
// is not there, it names the pack's YAML file nearest to the name.
func includeErr(fsys fs.FS, name string, err error) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	var files []string
	for _, pat := range []string{"*.yaml", "*.yml", path.Join(path.Dir(name), "*.yaml"), path.Join(path.Dir(name), "*.yml")} {
		m, _ := fs.Glob(fsys, pat)
		for _, f := range m {
			if f != PackFile && !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
	}
	return fmt.Errorf("there is no such file in the pack folder%s", DidYouMean(name, files))
}

// fileErr says why a file the pack names could not be read: for one that
// is not there, the file nearest to the name in the same folder, and never
// the file system call that failed.
func fileErr(fsys fs.FS, name string, err error) error {
	if !errors.Is(err, fs.ErrNotExist) {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return pe.Err
		}
		return err
	}
	var files []string
	if ents, err := fs.ReadDir(fsys, path.Dir(name)); err == nil {
		for _, e := range ents {
			if !e.IsDir() {
				files = append(files, path.Join(path.Dir(name), e.Name()))
			}
		}
	}
	return fmt.Errorf("there is no such file in the pack folder%s", DidYouMean(name, files))
}

// unknownSection reports a top-level key that is no section. One close to
// a section's name is that section misspelt, so its content is missing:
// what refers to it is left for after the fix.
func unknownSection(d *decoder, key *yaml.Node, names []string) {
	if near, ok := Nearest(key.Value, names); ok {
		d.errs.addRoot(d.pos(key), near, "unknown section %q: did you mean %s? (known: %s)", key.Value, near, strings.Join(names, ", "))
		return
	}
	d.errorf(key, "unknown section %q (known: %s)", key.Value, strings.Join(names, ", "))
}

// ErrNotPack is returned for folders without a pack.yaml.
var ErrNotPack = errors.New("not a pack folder (no pack.yaml)")
