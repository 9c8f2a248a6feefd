package rules

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Supplied is what a session brings for a pack's inputs, before Bind
// checks it: each input's value as JSON. A file input's value is a file
// or a list of files, each {"name", "media_type", and "data" (base64) or
// "text" (UTF-8) or "sha256" (an upload the host holds)}. It is the one
// form inputs take on the wire, in a session's log and in a test case.
type Supplied map[string]json.RawMessage

// Inputs are a session's inputs, checked against its pack: every declared
// input's value, supplied or default.
type Inputs struct {
	pack  *Pack
	vals  map[string]any
	files map[string][]File
	canon Supplied
	// context and scenario are the scenario's context for these inputs,
	// as a list and as expressions see it, worked out once when they are
	// bound: a session read it three times as it started, and sessions
	// that supply nothing share the pack's defaults.
	context  []StrEntry
	scenario map[string]string
}

// settle works out what depends on the bound values alone.
func (in *Inputs) settle() *Inputs {
	in.context = in.pack.scenarioContext(in)
	in.scenario = scenarioMap(in.pack, in.context)
	return in
}

// Pack is the pack the session runs: the pack Bind was called on, or,
// when a duration or number of it names an input the session supplied,
// the same pack compiled with that value.
func (in *Inputs) Pack() *Pack { return in.pack }

// Value is input id's value as expressions see it.
func (in *Inputs) Value(id string) (any, bool) {
	v, ok := in.vals[id]
	return v, ok
}

// Files are file input id's files, supplied or default.
func (in *Inputs) Files(id string) []File { return in.files[id] }

// Text is input id as text: a text or enum input's value, a file input's
// text files one after another, anything else as a prompt shows it.
func (in *Inputs) Text(id string) string {
	if files, ok := in.files[id]; ok {
		var b strings.Builder
		for i, f := range files {
			if !f.IsText() {
				continue
			}
			if len(files) > 1 {
				if i > 0 {
					b.WriteString("\n\n")
				}
				fmt.Fprintf(&b, "## %s\n\n", f.Name)
			}
			b.Write(f.Data)
		}
		return b.String()
	}
	return Stringify(in.vals[id])
}

// Supplied is what the session supplied, canonical and self-contained
// (uploads resolved to their data): what its log keeps.
func (in *Inputs) Supplied() Supplied { return in.canon }

// BindOptions are what a host adds to a bind.
type BindOptions struct {
	// Upload returns the content of an upload by its SHA-256 (hex), for
	// files supplied by hash. Unset, such a file is refused.
	Upload func(sha256 string) ([]byte, bool)
}

// Bind checks what a session supplied against the pack's inputs and
// returns them bound: refused inputs are InputErrors, each with its own
// code, all at once. Bind does no I/O and is deterministic: the same
// supplied values give the same Inputs, the same pack, the same bytes.
func (p *Pack) Bind(sup Supplied, opt BindOptions) (*Inputs, error) {
	// A copy of a pack (a test's variant) shares the cache but is not its
	// pack: it binds afresh.
	if len(sup) == 0 && p.defaults != nil && p.defaults.pack == p {
		return p.defaults, nil
	}
	in := &Inputs{pack: p, vals: make(map[string]any, len(p.Inputs)), files: map[string][]File{}}
	var errs InputErrors
	// Names the pack does not declare are one refusal, however many: a
	// start's answer may not grow with what it sent.
	var unknown []string
	for _, k := range slices.Sorted(mapKeys(sup)) {
		if _, ok := p.Input(k); !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		msg := "the pack declares no inputs"
		if len(p.Inputs) > 0 {
			msg = "the pack declares no such input (it takes " + strings.Join(p.inputNames(), ", ") + ")"
		}
		if len(unknown) > 1 {
			shown := make([]string, 0, 4)
			for _, k := range unknown[:min(len(unknown), 3)] {
				shown = append(shown, clip(k))
			}
			if len(unknown) > 3 {
				shown = append(shown, "…")
			}
			msg = fmt.Sprintf("%d inputs (%s): %s", len(unknown), strings.Join(shown, ", "), msg)
		}
		errs = append(errs, &InputError{Code: CodeInputUnknown, Input: clip(unknown[0]), Msg: msg})
	}
	canon := Supplied{}
	var timed []string
	for i := range p.Inputs {
		decl := &p.Inputs[i]
		raw, given := sup[decl.ID]
		if given && isNull(raw) {
			given = false
		}
		if !given {
			if decl.Required {
				errs = append(errs, &InputError{Code: CodeInputMissing, Input: decl.ID, Msg: "required, and not supplied" + decl.hint()})
			}
			in.vals[decl.ID] = decl.def
			if decl.Type == InputFile {
				in.files[decl.ID] = decl.defFiles
			}
			continue
		}
		if decl.Type == InputFile {
			files, err := decl.decodeFiles(raw, opt)
			if err == nil {
				files, err = decl.checkFiles(files)
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			in.files[decl.ID] = files
			in.vals[decl.ID] = fileValues(files)
			canon[decl.ID], _ = json.Marshal(files)
			continue
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			errs = append(errs, &InputError{Code: CodeInputType, Input: decl.ID, Msg: "not JSON: " + err.Error()})
			continue
		}
		val, err := decl.value(v)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		in.vals[decl.ID] = val
		canon[decl.ID], _ = json.Marshal(val)
		if ms, ok := val.(int64); ok && decl.Type == InputDuration {
			// As a duration Bind takes again: the canonical form re-binds
			// (a replay binds its log header's), and ms would not.
			canon[decl.ID], _ = json.Marshal(durationText(ms))
		}
		if decl.timed && !sameValue(val, decl.def) {
			timed = append(timed, decl.ID+"="+string(canon[decl.ID]))
		}
	}
	if len(errs) == 0 {
		// What the log keeps must fit its header, JSON escapes and all.
		size, largest, most := 0, "", 0
		for k, raw := range canon {
			size += len(k) + len(raw) + 4
			if len(raw) > most {
				largest, most = k, len(raw)
			}
		}
		if size > MaxSuppliedJSON {
			errs = append(errs, &InputError{Code: CodeInputTooLarge, Input: largest,
				Msg: fmt.Sprintf("the session's inputs take %s as JSON; at most %s (this one is %s)", sizeWords(int64(size)), sizeWords(MaxSuppliedJSON), sizeWords(int64(most)))})
		}
		// Each input holds to its own limit; together they hold to what a
		// session's log carries.
		var total int64
		for _, files := range in.files {
			for _, f := range files {
				total += int64(len(f.Data))
			}
		}
		if total > MaxInputFiles {
			errs = append(errs, &InputError{Code: CodeInputTooLarge,
				Msg: fmt.Sprintf("the session's files are %s together; at most %s", sizeWords(total), sizeWords(MaxInputFiles))})
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if len(canon) > 0 {
		in.canon = canon
	}
	if len(timed) > 0 {
		bound, err := p.compiledWith(timed, in.vals)
		if err != nil {
			return nil, err
		}
		in.pack = bound
	}
	return in.settle(), nil
}

// durationText is ms as the shortest duration ParseDuration reads back
// exactly: 5m, 90s, 1500ms.
func durationText(ms int64) string {
	switch {
	case ms > 0 && ms%60000 == 0:
		return strconv.FormatInt(ms/60000, 10) + "m"
	case ms > 0 && ms%1000 == 0:
		return strconv.FormatInt(ms/1000, 10) + "s"
	}
	return strconv.FormatInt(ms, 10) + "ms"
}

func (decl *Input) hint() string {
	switch decl.Type {
	case InputEnum:
		return " (one of " + strings.Join(decl.Values, ", ") + ")"
	case InputFile:
		return " (" + strings.Join(decl.Media, ", ") + ")"
	}
	return " (" + decl.Type.String() + ")"
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func sameValue(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// wireFile is a supplied file as JSON carries it.
type wireFile struct {
	Name      string  `json:"name"`
	MediaType string  `json:"media_type"`
	Data      *string `json:"data"`
	Text      *string `json:"text"`
	SHA256    string  `json:"sha256"`
}

func (decl *Input) decodeFiles(raw json.RawMessage, opt BindOptions) ([]File, *InputError) {
	fail := func(code, format string, args ...any) ([]File, *InputError) {
		return nil, &InputError{Code: code, Input: decl.ID, Msg: fmt.Sprintf(format, args...)}
	}
	var list []wireFile
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var one wireFile
		if err := strictJSON(trimmed, &one); err != nil {
			return fail(CodeInputType, "want a file {name, media_type, data | text | sha256} or a list of them: %v", err)
		}
		list = []wireFile{one}
	} else if err := strictJSON(trimmed, &list); err != nil {
		return fail(CodeInputType, "want a file {name, media_type, data | text | sha256} or a list of them: %v", err)
	}
	if n := decl.MaxFilesOf(); len(list) > n {
		return fail(CodeInputTooMany, "%d files; at most %d", len(list), n)
	}
	out := make([]File, len(list))
	for i, w := range list {
		given := 0
		for _, set := range []bool{w.Data != nil, w.Text != nil, w.SHA256 != ""} {
			if set {
				given++
			}
		}
		if given != 1 {
			return fail(CodeInputType, "file %d (%q): give exactly one of data (base64), text or sha256", i+1, clip(w.Name))
		}
		f := File{Name: w.Name, MediaType: w.MediaType}
		switch {
		case w.Data != nil:
			// The limit is checked on the encoded size first, so a huge
			// field is refused before it is decoded.
			if int64(base64.StdEncoding.DecodedLen(len(*w.Data))) > decl.maxBytes+3 {
				return fail(CodeInputTooLarge, "file %q is over %s", clip(w.Name), sizeWords(decl.maxBytes))
			}
			data, err := base64.StdEncoding.DecodeString(*w.Data)
			if err != nil {
				return fail(CodeInputType, "file %q: data is not base64: %v", clip(w.Name), err)
			}
			f.Data = data
		case w.Text != nil:
			f.Data = []byte(*w.Text)
		default:
			sum := strings.ToLower(w.SHA256)
			if len(sum) != 64 || strings.Trim(sum, "0123456789abcdef") != "" {
				return fail(CodeInputType, "file %q: sha256 %q is not 64 hex digits", clip(w.Name), clip(w.SHA256))
			}
			var data []byte
			ok := false
			if opt.Upload != nil {
				data, ok = opt.Upload(sum)
			}
			if !ok {
				return fail(CodeInputUpload, "file %q: no upload has sha256 %s; upload it first", clip(w.Name), sum)
			}
			if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != sum {
				return fail(CodeInputUpload, "file %q: the upload's content does not match sha256 %s", clip(w.Name), sum)
			}
			f.Data = data
		}
		out[i] = f
	}
	return out, nil
}

func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// compiledWith is the pack compiled with the given inputs' values where
// its durations and numbers name them. It is compiled from the bytes the
// pack was loaded from, so it is the same pack with the same hash, and
// kept: a sweep over three depths compiles three packs, once each.
func (p *Pack) compiledWith(timed []string, vals map[string]any) (*Pack, error) {
	key := strings.Join(timed, "\x00")
	// A copy of a pack (a shallow copy a test or a host made) shares the
	// cache but not its pack: it compiles afresh, from the same bytes.
	cached := p.owner == p
	if cached {
		p.boundMu.Lock()
		v, ok := p.bound[key]
		p.boundMu.Unlock()
		if ok {
			return v.pack, v.err
		}
	}
	over := map[string]any{}
	for _, kv := range timed {
		id, _, _ := strings.Cut(kv, "=")
		over[id] = vals[id]
	}
	// Compiled outside the lock: a bind of a value already compiled never
	// waits for another value's compile.
	b, err := loadFS(memFS(p.sources), over)
	if err != nil {
		// The pack's checks hold for the values it was written with; a
		// supplied value can break one (a window past the session's end).
		b, err = nil, InputErrors{{Code: CodeInputRange, Input: strings.SplitN(timed[0], "=", 2)[0],
			Msg: "the pack does not hold with this value: " + clip(err.Error())}}
	} else {
		b.Dir, b.FS = p.Dir, p.FS
	}
	if !cached {
		return b, err
	}
	p.boundMu.Lock()
	defer p.boundMu.Unlock()
	if v, ok := p.bound[key]; ok {
		return v.pack, v.err // another bind compiled it meanwhile
	}
	if p.bound == nil || len(p.bound) >= maxBound {
		// A host that keeps asking for new values pays a compile each.
		p.bound = map[string]boundPack{}
	}
	p.bound[key] = boundPack{b, err}
	return b, err
}

// boundPack is a compiled variant, or why the pack refused the values.
type boundPack struct {
	pack *Pack
	err  error
}

// maxBound bounds the compiled variants a pack keeps.
const maxBound = 64

// MaxSuppliedJSON bounds a session's inputs as its log header keeps them
// (within wal's 4 MiB header, with room for the rest of it).
const MaxSuppliedJSON = 3 << 20

// boundCache is the Pack's cache of compiled variants (compiledWith).
type boundCache struct {
	owner   *Pack // the pack the cache was made for
	boundMu sync.Mutex
	bound   map[string]boundPack
	sources map[string][]byte // every file the pack was read from, by name
	// defaults are the inputs of a session that supplies none, when the
	// pack requires none: shared, read-only, so a session costs nothing.
	defaults *Inputs
}

// bindDefaults works out the inputs of a session that supplies none.
func (p *Pack) bindDefaults() {
	if slices.ContainsFunc(p.Inputs, func(in Input) bool { return in.Required }) {
		return
	}
	p.defaults = p.DefaultInputs()
}

// DefaultInputs are the inputs of a session that supplies none, a
// required one at its default or zero value: what a session whose inputs
// were refused holds, so it can say so instead of failing to exist.
func (p *Pack) DefaultInputs() *Inputs {
	in := &Inputs{pack: p, vals: make(map[string]any, len(p.Inputs)), files: map[string][]File{}}
	for i := range p.Inputs {
		decl := &p.Inputs[i]
		in.vals[decl.ID] = decl.def
		if decl.Type == InputFile {
			in.files[decl.ID] = decl.defFiles
		}
	}
	return in.settle()
}

// FormatSupplied renders supplied values for a message: name=value, files
// by name.
func FormatSupplied(sup Supplied) string {
	var parts []string
	for _, k := range slices.Sorted(mapKeys(sup)) {
		v := string(sup[k])
		if len(v) > 40 {
			v = v[:37] + "…"
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

// ParseInputArg reads one command-line input, name=value, for the pack's
// declared type: text and enums as written, numbers, booleans and
// durations parsed, lists comma-separated or JSON, objects JSON. A file
// input's value is @path; read reads it (relative to where the command
// runs) and a comma-separated list of @paths gives several files.
func (p *Pack) ParseInputArg(arg string, read func(path string) ([]byte, error)) (string, json.RawMessage, error) {
	name, val, ok := strings.Cut(arg, "=")
	if !ok || name == "" {
		return "", nil, fmt.Errorf("--input %q: want name=value", arg)
	}
	decl, ok := p.Input(name)
	if !ok {
		return "", nil, fmt.Errorf("--input %s: the pack declares no such input", name)
	}
	raw, err := decl.ArgJSON(val, read)
	if err != nil {
		return "", nil, fmt.Errorf("--input %s: %w", name, err)
	}
	return name, raw, nil
}

// ArgJSON is a value written as text (a flag, a sweep's list) as the JSON
// Bind takes, for this input's type.
func (decl *Input) ArgJSON(val string, read func(path string) ([]byte, error)) (json.RawMessage, error) {
	switch decl.Type {
	case InputText, InputEnum, InputDuration:
		return json.Marshal(val)
	case InputNumber:
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", val)
		}
		return json.Marshal(f)
	case InputBool:
		b, err := strconv.ParseBool(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false", val)
		}
		return json.Marshal(b)
	case InputList:
		if strings.HasPrefix(strings.TrimSpace(val), "[") {
			return json.RawMessage(val), nil
		}
		var items []string
		for _, s := range strings.Split(val, ",") {
			if s = strings.TrimSpace(s); s != "" {
				items = append(items, s)
			}
		}
		return json.Marshal(items)
	case InputObject:
		if !json.Valid([]byte(val)) {
			return nil, fmt.Errorf("an object input takes JSON, such as {\"key\": \"value\"}")
		}
		return json.RawMessage(val), nil
	}
	var files []File
	for _, part := range strings.Split(val, ",") {
		name, ok := strings.CutPrefix(strings.TrimSpace(part), "@")
		if !ok || read == nil {
			return nil, fmt.Errorf("a file input takes @path (e.g. @deck.md)")
		}
		data, err := read(name)
		if err != nil {
			return nil, err
		}
		files = append(files, File{Name: baseName(name), Data: data})
	}
	return json.Marshal(files)
}

func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}
