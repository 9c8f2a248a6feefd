package rules

import (
	"fmt"
	"io/fs"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/batonhq/baton/rules/workspacepath"

	"go.yaml.in/yaml/v3"

	"github.com/batonhq/baton/rules/schema"
)

// Session inputs are what a session brings that the pack cannot know: this
// candidate's name, this job's scenario, this deck, this depth. A pack
// declares each one (inputs:), with a type, limits and a default; a host
// supplies values at start (Supplied) and Bind checks them. Authors use an
// input as they use a constant: by name in expressions, as {{NAME}} in
// templates, as a duration or number where a constant would stand, as
// `inputs.NAME` in scripts, and, for text and files, as a context file's
// starting content (from: input:NAME), the scenario's attachments or
// context, and the workspace's starting files.

// Input declares one session input.
type Input struct {
	Pos
	ID          string    `yaml:"id"`
	Type        InputType `yaml:"type"`
	Description string    `yaml:"description"`
	// Required refuses a session that does not supply the input; an
	// optional one takes Default (or its type's zero value).
	Required bool `yaml:"required"`
	// Default is the value a session that supplies none gets: for a file
	// input, a pack file or a list of them.
	Default any `yaml:"default"`
	// MaxChars bounds text, and each item of a list (default 4,000).
	MaxChars int `yaml:"max_chars"`
	// Min and Max bound a number, or a duration (written as one).
	Min any `yaml:"min"`
	Max any `yaml:"max"`
	// Whole numbers only.
	Whole bool `yaml:"whole"`
	// Values are an enum's choices.
	Values []string `yaml:"values"`
	// MaxItems bounds a list (default 32).
	MaxItems int `yaml:"max_items"`
	// Schema is a JSON Schema an object must meet.
	Schema any `yaml:"schema"`
	// Media are a file input's allowed media types ("text/*" for any
	// text); default text/*.
	Media []string `yaml:"media"`
	// MaxBytes bounds each file, MaxTotal all of them, MaxFiles their
	// count (default 1). Sizes are bytes or 512KiB, 2MiB, 100KB.
	MaxBytes any `yaml:"max_bytes"`
	MaxTotal any `yaml:"max_total"`
	MaxFiles int `yaml:"max_files"`

	// Set by Load.
	def      any    // the default in the form expressions see
	defFiles []File // a file input's default files
	min, max float64
	hasMin   bool
	hasMax   bool
	maxBytes int64
	maxTotal int64
	schema   *schema.Schema
	// timed is set when a duration or number of the pack names the input:
	// a session that supplies another value runs on a pack compiled with
	// it (Bind).
	timed bool
	// root is the workspace's root when workspace.from names the input:
	// its files' names are then held to what the workspace takes.
	root string
}

// InputType is the kind of value an input takes.
type InputType uint8

// Input types.
const (
	InputText InputType = iota
	InputNumber
	InputDuration
	InputEnum
	InputBool
	InputList
	InputObject
	InputFile
)

var inputTypeWords = []string{"text", "number", "duration", "enum", "bool", "list", "object", "file"}

func (k InputType) String() string                       { return word(inputTypeWords, uint8(k)) }
func (InputType) enumWords() []string                    { return inputTypeWords }
func (k *InputType) decodeNode(d *decoder, n *yaml.Node) { decodeEnum(d, n, k, inputTypeWords) }

// Limits on session inputs, whatever a pack declares: a session's
// material travels in its log header (at most 4 MiB, base64 and all).
const (
	DefaultInputChars = 4000
	DefaultInputItems = 32
	MaxInputChars     = 256 << 10
	DefaultInputBytes = 1 << 20
	// MaxInputFiles bounds all of a session's files together.
	MaxInputFiles = 2 << 20
	MaxInputCount = 64
	// MaxInputName bounds a supplied file's name.
	MaxInputName = 200
)

// File is one file of a file input.
type File struct {
	Name      string `json:"name"`
	MediaType string `json:"media_type"`
	Data      []byte `json:"data"`
}

// IsText reports whether the file is text a prompt can carry.
func (f File) IsText() bool { return isTextMedia(f.MediaType) }

func isTextMedia(t string) bool {
	return strings.HasPrefix(t, "text/") || textApplications[t]
}

var textApplications = map[string]bool{
	"application/json": true, "application/xml": true, "application/yaml": true, "application/toml": true,
	"application/javascript": true, "application/sql": true,
}

// maxExact is the largest whole number a JSON number (a float64) holds
// exactly.
const maxExact = 1 << 53

// InputMediaType is the media type of a session's file, told from its
// name by one fixed table, never the machine's MIME database: whether a
// start is accepted must not depend on the host it reaches. Unknown
// extensions give "" (the client then says media_type).
func InputMediaType(name string) string {
	return inputMedia[strings.ToLower(path.Ext(name))]
}

var inputMedia = map[string]string{
	// Documents.
	".pdf": "application/pdf", ".txt": "text/plain", ".md": "text/markdown", ".markdown": "text/markdown",
	".csv": "text/csv", ".tsv": "text/tab-separated-values", ".html": "text/html", ".htm": "text/html",
	".json": "application/json", ".xml": "application/xml", ".yaml": "application/yaml", ".yml": "application/yaml",
	".toml": "application/toml", ".log": "text/plain", ".rtf": "text/rtf",
	// Images.
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp", ".svg": "image/svg+xml",
	// Code, as text an editor and a prompt carry.
	".js": "text/javascript", ".mjs": "text/javascript", ".cjs": "text/javascript", ".jsx": "text/jsx",
	".ts": "text/x-typescript", ".tsx": "text/x-typescript", ".css": "text/css", ".scss": "text/x-scss",
	".py": "text/x-python", ".go": "text/x-go", ".rs": "text/x-rust", ".java": "text/x-java", ".kt": "text/x-kotlin",
	".rb": "text/x-ruby", ".php": "text/x-php", ".c": "text/x-c", ".h": "text/x-c", ".cc": "text/x-c++",
	".cpp": "text/x-c++", ".hpp": "text/x-c++", ".cs": "text/x-csharp", ".swift": "text/x-swift",
	".sh": "text/x-shellscript", ".sql": "application/sql", ".vue": "text/x-vue", ".svelte": "text/x-svelte",
	".ini": "text/plain", ".env": "text/plain", ".gitignore": "text/plain",
}

// InputRef is how a pack names an input where it names a file: input:ID.
const InputRef = "input:"

// inputRef returns the input a reference such as "input:deck" names.
func inputRef(s string) (string, bool) {
	id, ok := strings.CutPrefix(s, InputRef)
	return id, ok
}

// Input returns the declared input id.
func (p *Pack) Input(id string) (*Input, bool) {
	for i := range p.Inputs {
		if p.Inputs[i].ID == id {
			return &p.Inputs[i], true
		}
	}
	return nil, false
}

// MaxBytesOf, MaxTotalOf: a file input's limits as Load worked them out.
func (in *Input) MaxBytesOf() int64 { return in.maxBytes }
func (in *Input) MaxTotalOf() int64 { return in.maxTotal }

// MaxFilesOf is how many files a file input takes.
func (in *Input) MaxFilesOf() int { return max(in.MaxFiles, 1) }

// Range is a number's or a duration's bounds, and whether each is set.
func (in *Input) Range() (lo, hi float64, hasLo, hasHi bool) {
	return in.min, in.max, in.hasMin, in.hasMax
}

// DefaultValue is the value a session that supplies none gets, as
// expressions see it.
func (in *Input) DefaultValue() any { return in.def }

// DefaultFiles are a file input's default files.
func (in *Input) DefaultFiles() []File { return in.defFiles }

// Timed reports whether a duration or number of the pack names the input.
func (in *Input) Timed() bool { return in.timed }

// SchemaJSON is an object input's schema, as written.
func (in *Input) SchemaJSON() []byte {
	if in.schema == nil {
		return nil
	}
	return in.schema.JSON()
}

// readInputs checks the declarations and reads file defaults from the
// pack folder.
func (p *Pack) readInputs(fsys fs.FS, errs *ErrorList, hashFile func(string, []byte)) {
	seen := map[string]Pos{}
	for i := range p.Inputs {
		in := &p.Inputs[i]
		if !isIdent(in.ID) {
			errs.add(in.Pos, "input %q: names are letters, digits and _", in.ID)
		}
		if first, dup := seen[in.ID]; dup {
			errs.add(in.Pos, "input %q is already defined at %s", in.ID, first)
		}
		seen[in.ID] = in.Pos
		if slices.Contains(builtinNames, in.ID) {
			errs.add(in.Pos, "input %q shadows a built-in name", in.ID)
		}
		if p.Workspace.From.Val == InputRef+in.ID {
			in.root = p.Workspace.RootDir()
		}
		in.check(fsys, errs, hashFile)
		// A pack compiled for a session's value (Bind) starts its sessions
		// with it, so its expressions and its fields agree.
		if v, ok := p.over[in.ID]; ok {
			in.def = v
		}
	}
}

func (in *Input) check(fsys fs.FS, errs *ErrorList, hashFile func(string, []byte)) {
	bad := func(format string, args ...any) {
		errs.add(in.Pos, "input %s: "+format, append([]any{in.ID}, args...)...)
	}
	only := func(field string, set bool, types ...InputType) {
		if set && !slices.Contains(types, in.Type) {
			names := make([]string, len(types))
			for i, t := range types {
				names[i] = t.String()
			}
			bad("%s applies to %s inputs, not %s", field, strings.Join(names, " and "), in.Type)
		}
	}
	only("max_chars", in.MaxChars != 0, InputText, InputList)
	only("min", in.Min != nil, InputNumber, InputDuration)
	only("max", in.Max != nil, InputNumber, InputDuration)
	only("whole", in.Whole, InputNumber)
	only("values", len(in.Values) > 0, InputEnum)
	only("max_items", in.MaxItems != 0, InputList)
	only("schema", in.Schema != nil, InputObject)
	only("media", len(in.Media) > 0, InputFile)
	only("max_bytes", in.MaxBytes != nil, InputFile)
	only("max_total", in.MaxTotal != nil, InputFile)
	only("max_files", in.MaxFiles != 0, InputFile)
	if in.MaxChars < 0 || in.MaxChars > MaxInputChars {
		bad("max_chars %d: between 1 and %d", in.MaxChars, MaxInputChars)
	}
	if in.MaxItems < 0 || in.MaxItems > 1000 {
		bad("max_items %d: between 1 and 1000", in.MaxItems)
	}
	switch in.Type {
	case InputNumber, InputDuration:
		for _, b := range []struct {
			name string
			v    any
			out  *float64
			set  *bool
		}{{"min", in.Min, &in.min, &in.hasMin}, {"max", in.Max, &in.max, &in.hasMax}} {
			if b.v == nil {
				continue
			}
			f, err := in.scalar(b.v)
			if err != nil {
				bad("%s: %v", b.name, err)
				continue
			}
			*b.out, *b.set = f, true
		}
		if in.hasMin && in.hasMax && in.min > in.max {
			bad("min is above max")
		}
	case InputEnum:
		if len(in.Values) == 0 {
			bad("an enum lists its values: values: [short, medium, long]")
		}
	case InputObject:
		sch := in.Schema
		if sch == nil {
			sch = map[string]any{"type": "object"}
		}
		s, err := schema.Compile(sch)
		if err != nil {
			bad("%v", err)
		} else if !slices.Equal(s.Types, []string{"object"}) {
			bad("schema: an object input's schema has type: object")
		} else {
			in.schema = s
		}
	case InputFile:
		in.maxBytes = in.size(in.MaxBytes, "max_bytes", DefaultInputBytes, bad)
		in.maxTotal = in.size(in.MaxTotal, "max_total", min(in.maxBytes*int64(in.MaxFilesOf()), MaxInputFiles), bad)
		if in.MaxFiles < 0 || in.MaxFiles > MaxInputCount {
			bad("max_files %d: between 1 and %d", in.MaxFiles, MaxInputCount)
		}
		if len(in.Media) == 0 {
			in.Media = []string{"text/*"}
		}
		for _, m := range in.Media {
			if t, sub, ok := strings.Cut(m, "/"); !ok || t == "" || sub == "" || strings.ContainsAny(m, " ;,") {
				bad("media %q: a media type such as text/markdown, application/pdf or text/*", m)
			}
		}
	}
	if in.Type == InputFile {
		in.readDefaultFiles(fsys, errs, hashFile)
		return
	}
	if in.Default == nil {
		in.def = in.zero()
		return
	}
	v, err := in.value(in.Default)
	if err != nil {
		bad("default: %s", err.Msg)
		in.def = in.zero()
		return
	}
	in.def = v
}

// scalar reads a bound: a number, or for a duration input a duration.
func (in *Input) scalar(v any) (float64, error) {
	if in.Type == InputDuration {
		s, ok := v.(string)
		if !ok {
			return 0, fmt.Errorf("want a duration such as 90s or 10:00")
		}
		ms, err := ParseDuration(s)
		return float64(ms), err
	}
	f, ok := toNumber(v)
	if !ok {
		return 0, fmt.Errorf("want a number")
	}
	return f, nil
}

func toNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	}
	return 0, false
}

// size reads a byte count: a number, or text such as 512KiB or 2MB.
func (in *Input) size(v any, field string, def int64, bad func(string, ...any)) int64 {
	if v == nil {
		return def
	}
	n, err := ParseSize(v)
	if err != nil {
		bad("%s: %v", field, err)
		return def
	}
	if n > MaxInputFiles {
		bad("%s %s: a session's files are at most %s", field, sizeWords(n), sizeWords(MaxInputFiles))
		return MaxInputFiles
	}
	return n
}

// ParseSize reads a size in bytes: a whole number, or one with a unit
// (KB, MB: powers of ten; KiB, MiB: of two).
func ParseSize(v any) (int64, error) {
	if f, ok := toNumber(v); ok {
		if f < 1 || f != math.Trunc(f) || f > 1<<40 {
			return 0, fmt.Errorf("a size is a whole number of bytes, at least 1")
		}
		return int64(f), nil
	}
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("want a size such as 512KiB or 2MB")
	}
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"KB", 1000}, {"MB", 1000_000}, {"B", 1}}
	for _, u := range units {
		num, ok := strings.CutSuffix(s, u.suffix)
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil || f <= 0 || f > 1<<30 {
			break
		}
		return int64(f * float64(u.mult)), nil
	}
	return 0, fmt.Errorf("bad size %q: want bytes, or a number with KB, MB, KiB or MiB", s)
}

func sizeWords(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

func (in *Input) readDefaultFiles(fsys fs.FS, errs *ErrorList, hashFile func(string, []byte)) {
	var names []string
	switch d := in.Default.(type) {
	case nil:
	case string:
		names = []string{d}
	case []any:
		for _, x := range d {
			s, ok := x.(string)
			if !ok {
				errs.add(in.Pos, "input %s: default: a file input's default is a pack file or a list of them", in.ID)
				return
			}
			names = append(names, s)
		}
	default:
		errs.add(in.Pos, "input %s: default: a file input's default is a pack file or a list of them", in.ID)
		return
	}
	var files []File
	for _, name := range names {
		clean := path.Clean(name)
		if !fs.ValidPath(clean) {
			errs.add(in.Pos, "input %s: default %q: a path inside the pack folder", in.ID, name)
			continue
		}
		data, err := readFile(fsys, clean, MaxFileSize)
		if err != nil {
			errs.add(in.Pos, "input %s: default %q: %v", in.ID, name, fileErr(fsys, clean, err))
			continue
		}
		hashFile(clean, data)
		files = append(files, File{Name: path.Base(clean), MediaType: InputMediaType(clean), Data: data})
	}
	// A pack's own default must pass the checks a session's files do.
	if len(files) > 0 {
		if _, err := in.checkFiles(files); err != nil {
			errs.add(in.Pos, "input %s: default: %s", in.ID, err.Msg)
		}
	}
	in.defFiles = files
	in.def = fileValues(files)
}

// zero is the value of an optional input nobody supplied, with no default.
func (in *Input) zero() any {
	switch in.Type {
	case InputNumber:
		if in.Whole {
			return int64(max(in.min, 0))
		}
		return max(in.min, 0)
	case InputDuration:
		return int64(max(in.min, 0))
	case InputBool:
		return false
	case InputList:
		return []any{}
	case InputObject:
		return map[string]any{}
	case InputFile:
		return []any{}
	case InputEnum:
		if len(in.Values) > 0 {
			return in.Values[0]
		}
	}
	return ""
}

// fileValues is a file input as expressions and scripts see it: a list
// of {name, media_type, size, text} (text is empty for binary media).
func fileValues(files []File) []any {
	out := make([]any, len(files))
	for i, f := range files {
		text := ""
		if f.IsText() {
			text = string(f.Data)
		}
		out[i] = map[string]any{"name": f.Name, "media_type": f.MediaType, "size": int64(len(f.Data)), "text": text}
	}
	return out
}

// value checks one supplied (or default) value and returns it in the
// form expressions see. v is decoded JSON or YAML.
func (in *Input) value(v any) (any, *InputError) {
	fail := func(code, format string, args ...any) (any, *InputError) {
		return nil, &InputError{Code: code, Input: in.ID, Msg: fmt.Sprintf(format, args...)}
	}
	switch in.Type {
	case InputText:
		s, ok := v.(string)
		if !ok {
			return fail(CodeInputType, "want text, got %s", Describe(v))
		}
		if n := utf8.RuneCountInString(s); n > in.maxChars() {
			return fail(CodeInputTooLarge, "%d characters; at most %d", n, in.maxChars())
		}
		return s, nil
	case InputEnum:
		s, ok := v.(string)
		if !ok || !slices.Contains(in.Values, s) {
			return fail(CodeInputType, "want one of %s, got %s", strings.Join(in.Values, ", "), Describe(v))
		}
		return s, nil
	case InputBool:
		b, ok := v.(bool)
		if !ok {
			return fail(CodeInputType, "want true or false, got %s", Describe(v))
		}
		return b, nil
	case InputNumber:
		f, ok := toNumber(v)
		if !ok {
			return fail(CodeInputType, "want a number, got %s", Describe(v))
		}
		if in.Whole && f != math.Trunc(f) {
			return fail(CodeInputType, "want a whole number, got %v", f)
		}
		if math.Abs(f) > maxExact {
			// Past 2^53 a JSON number is no longer the whole number that
			// was written, and what it converts to differs by machine.
			return fail(CodeInputRange, "%g is beyond ±2^53, the largest whole numbers JSON carries exactly", f)
		}
		if r := in.outOfRange(f, strconv.FormatFloat(f, 'f', -1, 64)); r != "" {
			return fail(CodeInputRange, "%s", r)
		}
		if in.Whole {
			return int64(f), nil
		}
		return f, nil
	case InputDuration:
		var ms int64
		switch x := v.(type) {
		case string:
			d, err := ParseDuration(x)
			if err != nil {
				return fail(CodeInputType, "%v", err)
			}
			ms = d
		default:
			return fail(CodeInputType, "want a duration such as 90s or 10:00, got %s", Describe(v))
		}
		if r := in.outOfRange(float64(ms), FormatClock(ms)); r != "" {
			return fail(CodeInputRange, "%s", r)
		}
		return ms, nil
	case InputList:
		list, ok := v.([]any)
		if !ok {
			return fail(CodeInputType, "want a list of text, got %s", Describe(v))
		}
		if n := in.maxItems(); len(list) > n {
			return fail(CodeInputTooLarge, "%d items; at most %d", len(list), n)
		}
		out := make([]any, len(list))
		for i, x := range list {
			s, ok := x.(string)
			if !ok {
				return fail(CodeInputType, "item %d: want text, got %s", i+1, Describe(x))
			}
			if n := utf8.RuneCountInString(s); n > in.maxChars() {
				return fail(CodeInputTooLarge, "item %d: %d characters; at most %d", i+1, n, in.maxChars())
			}
			out[i] = s
		}
		return out, nil
	case InputObject:
		m, ok := jsonData(v).(map[string]any)
		if !ok {
			return fail(CodeInputType, "want an object, got %s", Describe(v))
		}
		if in.schema != nil {
			if errs := in.schema.Validate(m); len(errs) > 0 {
				return fail(CodeInputType, "%s", strings.Join(errs, "; "))
			}
		}
		return m, nil
	}
	return fail(CodeInputType, "a file input takes files")
}

func (in *Input) maxChars() int {
	if in.MaxChars > 0 {
		return in.MaxChars
	}
	return DefaultInputChars
}

func (in *Input) maxItems() int {
	if in.MaxItems > 0 {
		return in.MaxItems
	}
	return DefaultInputItems
}

func (in *Input) outOfRange(f float64, shown string) string {
	word := func(x float64) string {
		if in.Type == InputDuration {
			return FormatClock(int64(x))
		}
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	switch {
	case in.hasMin && f < in.min:
		return fmt.Sprintf("%s is below the minimum %s", shown, word(in.min))
	case in.hasMax && f > in.max:
		return fmt.Sprintf("%s is above the maximum %s", shown, word(in.max))
	}
	return ""
}

// checkFiles holds supplied files to the input's limits, filling in
// media types from names where none was given.
func (in *Input) checkFiles(files []File) ([]File, *InputError) {
	fail := func(code, format string, args ...any) ([]File, *InputError) {
		return nil, &InputError{Code: code, Input: in.ID, Msg: fmt.Sprintf(format, args...)}
	}
	if n := in.MaxFilesOf(); len(files) > n {
		return fail(CodeInputTooMany, "%d files; at most %d", len(files), n)
	}
	var total int64
	seen := map[string]bool{}
	out := make([]File, len(files))
	root := in.root
	if root == "" {
		root = "/"
	}
	for i, f := range files {
		// One rule for every file's name, the workspace's: a session's
		// files may seed it, and a name an editor or a prompt would show
		// differently from what it is (a control or format character)
		// has no place in either.
		if len(f.Name) > MaxInputName {
			return fail(CodeInputType, "file %d: the name is %d bytes; at most %d", i+1, len(f.Name), MaxInputName)
		}
		if rel, err := workspacepath.Rel(root, f.Name); err != nil || rel != f.Name {
			why := "write it relative, as in deck.md or src/app.js"
			if err != nil {
				why = err.Error()
			}
			return fail(CodeInputType, "file %d: name %q: %s", i+1, clip(f.Name), why)
		}
		if seen[f.Name] {
			return fail(CodeInputType, "file %q is given twice", clip(f.Name))
		}
		seen[f.Name] = true
		if f.MediaType == "" {
			f.MediaType = InputMediaType(f.Name)
		}
		if f.MediaType == "" {
			return fail(CodeInputMedia, "file %q: cannot tell its media type; give media_type", f.Name)
		}
		if !in.allows(f.MediaType) {
			return fail(CodeInputMedia, "file %q is %s; this input takes %s", f.Name, f.MediaType, strings.Join(in.Media, ", "))
		}
		if n := int64(len(f.Data)); n > in.maxBytes {
			return fail(CodeInputTooLarge, "file %q is %s; at most %s each", f.Name, sizeWords(n), sizeWords(in.maxBytes))
		}
		if f.IsText() && !utf8.Valid(f.Data) {
			return fail(CodeInputMedia, "file %q is %s but not UTF-8 text", f.Name, f.MediaType)
		}
		total += int64(len(f.Data))
		out[i] = f
	}
	if total > in.maxTotal {
		return fail(CodeInputTooLarge, "the files are %s together; at most %s", sizeWords(total), sizeWords(in.maxTotal))
	}
	if in.root != "" {
		// A workspace cannot hold a file and a folder of one name.
		for name := range seen {
			for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
				if seen[dir] {
					return fail(CodeInputType, "file %q and folder %q have one name; a workspace holds one or the other", clip(dir), clip(dir+"/"))
				}
			}
		}
	}
	return out, nil
}

func (in *Input) allows(media string) bool {
	for _, m := range in.Media {
		if m == media || strings.HasSuffix(m, "/*") && strings.HasPrefix(media, strings.TrimSuffix(m, "*")) {
			return true
		}
	}
	return false
}

// jsonData turns YAML's map[string]any and int values into JSON's, so an
// object default and a supplied object look the same.
func jsonData(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonData(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonData(e)
		}
		return out
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	}
	return v
}

// Input error codes: each refusal of a session's inputs has its own.
const (
	CodeInputMissing  = "input_missing"
	CodeInputUnknown  = "input_unknown"
	CodeInputType     = "input_type"
	CodeInputRange    = "input_out_of_range"
	CodeInputTooLarge = "input_too_large"
	CodeInputTooMany  = "input_too_many_files"
	CodeInputMedia    = "input_media_type"
	CodeInputUpload   = "input_upload_unknown"
)

// InputError says why one input was refused, with its own code.
type InputError struct {
	Code  string `json:"code"`
	Input string `json:"input"`
	Msg   string `json:"message"`
}

func (e *InputError) Error() string {
	if e.Input == "" {
		return "inputs: " + e.Msg
	}
	return "input " + e.Input + ": " + e.Msg
}

// InputErrors are every refused input of a start, in declaration order.
type InputErrors []*InputError

func (l InputErrors) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

// Code is the first refusal's code: what a start frame's error carries.
func (l InputErrors) Code() string {
	if len(l) == 0 {
		return ""
	}
	return l[0].Code
}

// checkInputRefs checks every place a pack names an input as a file or a
// text: attachments, context files' from:, the workspace's from: and the
// scenario's context_from:.
func (c *compiler) checkInputRefs() {
	p := c.p
	want := func(pos Pos, where, ref string, types ...InputType) {
		id, _ := inputRef(ref)
		in, ok := p.Input(id)
		if !ok {
			c.missingf(pos, "inputs", "%s: %s names no input of this pack%s", where, ref, c.suggest(id, p.inputNames()))
			return
		}
		if !slices.Contains(types, in.Type) {
			names := make([]string, len(types))
			for i, t := range types {
				names[i] = t.String()
			}
			c.errorf(pos, "%s: input %s is a %s input; this takes a %s input", where, id, in.Type, strings.Join(names, " or "))
		}
	}
	for _, a := range p.Scenario.Attachments {
		if _, ok := inputRef(a.File); ok {
			want(a.Pos, "attachment "+a.ID, a.File, InputFile)
		}
	}
	for _, f := range p.Files {
		if _, ok := inputRef(f.From); ok {
			want(f.Pos, "file "+f.ID+": from", f.From, InputFile, InputText, InputEnum)
		}
	}
	if w := p.Workspace.From; w.Val != "" {
		if _, ok := inputRef(w.Val); !ok {
			c.errorf(w.Pos, "workspace.from %q: write input:NAME, naming a file input", w.Val)
		} else {
			want(w.Pos, "workspace.from", w.Val, InputFile)
			if len(p.Workspace.Files) > 0 {
				c.errorf(w.Pos, "workspace: from and files both give the starting files; give the pack's files as the input's default")
			}
		}
	}
	for _, e := range p.Scenario.Context {
		if _, ok := inputRef(e.Value); ok {
			want(e.Pos, "scenario.context."+e.Key, e.Value, InputText, InputEnum)
		}
	}
	if s := p.Scenario.ContextFrom; s.Val != "" {
		if _, ok := inputRef(s.Val); !ok {
			c.errorf(s.Pos, "scenario.context_from %q: write input:NAME, naming an object input", s.Val)
		} else {
			want(s.Pos, "scenario.context_from", s.Val, InputObject)
		}
	}
}

// contextNamesInput reports whether the scenario's context takes any of
// its entries from the session's inputs.
func (p *Pack) contextNamesInput() bool {
	if p.Scenario.ContextFrom.Val != "" {
		return true
	}
	return slices.ContainsFunc(p.Scenario.Context, func(e StrEntry) bool {
		_, ok := inputRef(e.Value)
		return ok
	})
}

func (p *Pack) inputNames() []string {
	return names(p.Inputs, func(in *Input) string { return in.ID })
}

// ScenarioContext is the scenario's context for a session: the pack's
// entries (an entry written input:NAME, naming a text or enum input,
// takes the session's value), then those of the object input
// context_from names (replacing an entry of the same key in place,
// adding the rest in key order). Values that are not text are written
// as JSON.
//
// The list is shared: read it, never change it.
func (p *Pack) ScenarioContext(in *Inputs) []StrEntry {
	if in != nil && in.context != nil {
		return in.context
	}
	return p.scenarioContext(in)
}

func (p *Pack) scenarioContext(in *Inputs) []StrEntry {
	out := slices.Clone([]StrEntry(p.Scenario.Context))
	for i, e := range out {
		ref, ok := inputRef(e.Value)
		if !ok {
			continue
		}
		if in != nil {
			out[i].Value = in.Text(ref)
		} else if decl, ok := p.Input(ref); ok {
			out[i].Value = decl.textDefault()
		}
	}
	id, ok := inputRef(p.Scenario.ContextFrom.Val)
	if !ok {
		return out
	}
	var obj map[string]any
	if in != nil {
		obj, _ = in.vals[id].(map[string]any)
	} else if decl, ok := p.Input(id); ok {
		obj, _ = decl.def.(map[string]any)
	}
	for _, k := range slices.Sorted(mapKeys(obj)) {
		v := Stringify(obj[k])
		if i := slices.IndexFunc(out, func(e StrEntry) bool { return e.Key == k }); i >= 0 {
			out[i].Value = v
			continue
		}
		out = append(out, StrEntry{Key: k, Value: v})
	}
	return out
}

// Attachments are the files jobs with attachments: true send: the pack's,
// and for an attachment naming a file input, the session's files.
func (p *Pack) AttachmentsOf(in *Inputs) []File {
	var out []File
	for _, a := range p.Scenario.Attachments {
		if id, ok := inputRef(a.File); ok {
			if in != nil {
				out = append(out, in.files[id]...)
			} else if decl, ok := p.Input(id); ok {
				out = append(out, decl.defFiles...)
			}
			continue
		}
		out = append(out, File{Name: a.ID, MediaType: a.MIME, Data: a.Data})
	}
	return out
}

// WorkspaceOf is the workspace's starting files for a session: the
// pack's, or the file input workspace.from names.
func (p *Pack) WorkspaceOf(in *Inputs) []WorkspaceFile {
	id, ok := inputRef(p.Workspace.From.Val)
	if !ok {
		return p.Workspace.Files
	}
	var files []File
	if in != nil {
		files = in.files[id]
	} else if decl, ok := p.Input(id); ok {
		files = decl.defFiles
	}
	out := make([]WorkspaceFile, len(files))
	for i, f := range files {
		out[i] = WorkspaceFile{Path: f.Name, File: p.Workspace.From.Val, Content: string(f.Data)}
	}
	return out
}

// textDefault is a text, enum or file input's default as text.
func (in *Input) textDefault() string {
	if in.Type == InputFile {
		return (&Inputs{files: map[string][]File{in.ID: in.defFiles}}).Text(in.ID)
	}
	s, _ := in.def.(string)
	return s
}

// InitialOf is a context file copy's starting content in a session: the
// pack's, or the session's input its from: names.
func (fs FileSlot) InitialOf(in *Inputs) string {
	if id, ok := inputRef(fs.File.From); ok && in != nil {
		return in.Text(id)
	}
	return fs.Initial
}
