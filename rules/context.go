package rules

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Context files are what a role knows, as named documents: shared by the
// panel or one per role, each with a mutability class the engine
// enforces. A role's character lives in immutable files the pack ships;
// what it learns during a session lives in files that rules, jobs and
// scripts write through the engine (the write and append actions), and
// llm.assembly (or a role's own assembly) lays them out, in order and
// within a budget, in every model call the role makes.

// ContextFile declares one context file.
type ContextFile struct {
	Pos
	// ID is the file's name ("focus-brief.md"); an archive stores it as
	// shared/ID or ROLE/ID.
	ID    string    `yaml:"id"`
	Class FileClass `yaml:"class"`
	// MaxWrites bounds the writes of a write_few file.
	MaxWrites int `yaml:"max_writes"`
	// Roles, if set, gives each listed role its own copy; otherwise the
	// file is shared.
	Roles []string `yaml:"roles"`
	// From names a pack file holding the starting content; "{role}" in it
	// stands for the role of each copy. Text is inline starting content.
	// Starting content counts as the file's first write.
	From string `yaml:"from"`
	Text string `yaml:"text"`
	// MaxChars bounds what a model call carries of the file; Keep says
	// which end is kept (default: the end of an append_only file, where
	// the newest entries are, the start of any other).
	MaxChars int      `yaml:"max_chars"`
	Keep     FileKeep `yaml:"keep"`

	initial []string // starting content, by copy (Roles order, or one)
}

// FileClass is how a context file may change during a session.
type FileClass uint8

// File classes. The zero value is immutable, so a file declared without
// a class can never be written.
const (
	// ClassImmutable: the pack's text, never written at runtime.
	ClassImmutable FileClass = iota
	// ClassWriteOnce: written once (starting content counts).
	ClassWriteOnce
	// ClassWriteFew: written at most MaxWrites times.
	ClassWriteFew
	// ClassAppendOnly: only appended to; it only grows.
	ClassAppendOnly
	// ClassOverwrite: replaced or appended to freely.
	ClassOverwrite
)

var fileClassWords = []string{"immutable", "write_once", "write_few", "append_only", "overwrite"}

func (k FileClass) String() string                       { return word(fileClassWords, uint8(k)) }
func (FileClass) enumWords() []string                    { return fileClassWords }
func (k *FileClass) decodeNode(d *decoder, n *yaml.Node) { decodeEnum(d, n, k, fileClassWords) }

// FileKeep is which end of a file a trimmed model call keeps.
type FileKeep uint8

// Keep choices; the zero value picks by class.
const (
	KeepDefault FileKeep = iota
	KeepStart
	KeepEnd
)

var fileKeepWords = []string{"", "start", "end"}

func (k FileKeep) String() string                       { return word(fileKeepWords, uint8(k)) }
func (FileKeep) enumWords() []string                    { return fileKeepWords[1:] }
func (k *FileKeep) decodeNode(d *decoder, n *yaml.Node) { decodeEnum(d, n, k, fileKeepWords) }

// KeepsEnd reports whether a trimmed copy keeps the file's end.
func (f *ContextFile) KeepsEnd() bool {
	if f.Keep == KeepDefault {
		return f.Class == ClassAppendOnly
	}
	return f.Keep == KeepEnd
}

// FileOp is how a write changes a context file.
type FileOp uint8

// File operations: the write and append actions.
const (
	OpWrite FileOp = iota
	OpAppend
)

func (o FileOp) String() string { return [...]string{"write", "append"}[o] }

// Refuses says why class refuses a write of kind op to a file written
// writes times before ("" when it is allowed). The engine asks it at
// runtime; the checker asks it of writes it can see at load.
func (f *ContextFile) Refuses(op FileOp, writes int) string {
	switch f.Class {
	case ClassImmutable:
		return "immutable: the pack's text never changes during a session"
	case ClassWriteOnce:
		if writes >= 1 {
			return "write_once: it has already been written"
		}
	case ClassWriteFew:
		if writes >= f.MaxWrites {
			return fmt.Sprintf("write_few: it has been written %d of %d times", writes, f.MaxWrites)
		}
	case ClassAppendOnly:
		if op != OpAppend {
			return "append_only: it only grows; use append"
		}
	}
	return ""
}

// MinFileChars is the smallest max_chars: room for the cut's mark and a
// line of text.
const MinFileChars = 64

// MaxContextFile bounds one context file during a session; a write past
// it is refused, so no rule can grow a session without limit.
const MaxContextFile = 512 << 10

// FileSlot is one copy of a context file in a session: the file, the
// role it belongs to ("" when shared) and its path in an archive.
type FileSlot struct {
	File    *ContextFile
	Role    string
	Path    string
	Initial string
}

// FileSlots lists every context file copy a session holds, in
// declaration order (shared, or each role in the file's roles order).
func (p *Pack) FileSlots() []FileSlot { return p.fileSlots }

// FileSlot finds the copy of file id for role (ignored for a shared
// file).
func (p *Pack) FileSlot(id, role string) (int, bool) {
	i, ok := p.fileByID[id]
	if !ok {
		return 0, false
	}
	f := &p.Files[i]
	if len(f.Roles) == 0 {
		return p.fileFirst[i], true
	}
	k := slices.Index(f.Roles, role)
	if k < 0 {
		return 0, false
	}
	return p.fileFirst[i] + k, true
}

// FileByPath finds a copy by its archive path (shared/ID, ROLE/ID).
func (p *Pack) FileByPath(path string) (int, bool) {
	i, ok := p.fileByPath[path]
	return i, ok
}

// FilePaths lists the copies' paths, for messages.
func (p *Pack) FilePaths() []string {
	out := make([]string, len(p.fileSlots))
	for i := range p.fileSlots {
		out[i] = p.fileSlots[i].Path
	}
	return out
}

// SharedScope is the folder of shared files in an archive.
const SharedScope = "shared"

// readFileSources reads each file's starting content from the pack
// folder; it runs at load, before the checker, which reports the rest.
func (p *Pack) readFileSources(fsys fs.FS, errs *ErrorList, hash func(string, []byte)) {
	for i := range p.Files {
		f := &p.Files[i]
		copies := f.Roles
		if len(copies) == 0 {
			copies = []string{""}
		}
		f.initial = make([]string, len(copies))
		for k, role := range copies {
			if f.From == "" {
				f.initial[k] = f.Text
				continue
			}
			if id, ok := inputRef(f.From); ok {
				// The session's (FileSlot.InitialOf); the default until then.
				if in, ok := p.Input(id); ok {
					f.initial[k] = in.textDefault()
				}
				continue
			}
			if role == "" && strings.Contains(f.From, "{role}") {
				break // the checker says why
			}
			name := path.Clean(strings.ReplaceAll(f.From, "{role}", role))
			if !fs.ValidPath(name) {
				errs.add(f.Pos, "file %s: from %q must be a path inside the pack folder", f.ID, clip(f.From))
				break
			}
			data, err := readFile(fsys, name, MaxContextFile)
			if err != nil {
				errs.add(f.Pos, "file %s: from: %v", f.ID, err)
				continue
			}
			hash(name, data)
			f.initial[k] = string(data)
		}
	}
}

func (f *ContextFile) check(c *compiler, i int) {
	p := c.p
	if !isFileName(f.ID) {
		c.errorf(f.Pos, "file %q: a context file's name is lower-case letters, digits, '-', '_' and '.', such as focus-brief.md", f.ID)
	} else if builtinPart(f.ID) {
		c.errorf(f.Pos, "file %q has the name of a built-in part of llm.assembly (%s); call it %s.md", f.ID, strings.Join(partWords(), ", "), f.ID)
	}
	if _, dup := p.fileByID[f.ID]; dup {
		c.errorf(f.Pos, "file %q is declared twice", f.ID)
		return
	}
	p.fileByID[f.ID] = i
	switch {
	case f.Class == ClassWriteFew && f.MaxWrites <= 0:
		c.errorf(f.Pos, "file %s: write_few needs max_writes, the most times it may be written", f.ID)
	case f.Class != ClassWriteFew && f.MaxWrites != 0:
		c.errorf(f.Pos, "file %s: max_writes is only for write_few files (this one is %s)", f.ID, f.Class)
	}
	if f.From != "" && f.Text != "" {
		c.errorf(f.Pos, "file %s: give from or text, not both", f.ID)
	}
	if f.Class == ClassImmutable && f.From == "" && f.Text == "" {
		c.errorf(f.Pos, "file %s is immutable and so needs its content: from (a file in the pack) or text", f.ID)
	}
	if f.MaxChars < 0 || f.MaxChars > 0 && f.MaxChars < MinFileChars {
		c.errorf(f.Pos, "file %s: max_chars must be at least %d (a cut file carries a mark saying what was cut), or left out", f.ID, MinFileChars)
	}
	seen := map[string]bool{}
	for _, r := range f.Roles {
		c.roleRef(f.Pos, "file "+f.ID, r)
		if seen[r] {
			c.errorf(f.Pos, "file %s: role %s is listed twice", f.ID, r)
		}
		seen[r] = true
	}
	if len(f.Roles) == 0 && strings.Contains(f.From, "{role}") {
		c.errorf(f.Pos, "file %s is shared, so its from: cannot use {role}; list its roles to give each its own copy", f.ID)
	}
	p.fileFirst = append(p.fileFirst, len(p.fileSlots))
	copies := f.Roles
	if len(copies) == 0 {
		copies = []string{""}
	}
	for k, role := range copies {
		scope := role
		if role == "" {
			scope = SharedScope
		}
		init := ""
		if k < len(f.initial) {
			init = f.initial[k]
		}
		slot := FileSlot{File: f, Role: role, Path: scope + "/" + f.ID, Initial: init}
		p.fileByPath[slot.Path] = len(p.fileSlots)
		p.fileSlots = append(p.fileSlots, slot)
	}
}

// checkFiles indexes the context files and checks them.
func (c *compiler) checkFiles() {
	p := c.p
	p.fileByID, p.fileByPath = map[string]int{}, map[string]int{}
	p.fileSlots, p.fileFirst = nil, nil
	for i := range p.Files {
		p.Files[i].check(c, i)
	}
	for _, clash := range []string{SharedScope, "templates"} {
		if len(p.Files) > 0 && slices.Contains(p.RoleIDs(), clash) {
			c.errorf(p.Pos, "a role called %q would share its context folder (%s/) with the %s files; rename the role", clash, clash, clash)
		}
	}
}

func isFileName(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '.' || s[0] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return !strings.Contains(s, "..")
}

func (p *Pack) fileNames() []string {
	return names(p.Files, func(f *ContextFile) string { return f.ID })
}

// WriteAction replaces a context file's content: which file, whose copy
// (role, for a file kept per role) and the text (a template).
type WriteAction struct {
	Pos
	File string   `yaml:"file"`
	Role Value    `yaml:"role"`
	Text Template `yaml:"text"`

	file *ContextFile
}

// AppendAction adds the text to a context file as a new line; it has the
// fields of a write.
type AppendAction WriteAction

// Target is the declared file written.
func (w *WriteAction) Target() *ContextFile { return w.file }

func (w *WriteAction) check(c *compiler, where string) { w.checkOp(c, where, OpWrite) }
func (a *AppendAction) check(c *compiler, where string) {
	(*WriteAction)(a).checkOp(c, where, OpAppend)
}

func (w *WriteAction) checkOp(c *compiler, where string, op FileOp) {
	i, ok := c.p.fileByID[w.File]
	if !ok {
		c.missingf(w.Pos, "files", "%s: %s: unknown context file %q%s", where, op, w.File, c.suggest(w.File, c.p.fileNames()))
		return
	}
	w.file = &c.p.Files[i]
	switch perRole := len(w.file.Roles) > 0; {
	case perRole && !w.Role.Set():
		c.errorf(w.Pos, "%s: %s: %s is kept per role (%s); say whose copy with role:", where, op, w.File, strings.Join(w.file.Roles, ", "))
	case !perRole && w.Role.Set():
		c.errorf(w.Pos, "%s: %s: %s is shared; it takes no role", where, op, w.File)
	}
	switch {
	case !w.Text.Set() && op == OpAppend:
		c.errorf(w.Pos, "%s: append needs the text to add", where)
	case !w.Text.Set() && w.file.Class != ClassOverwrite && !c.script:
		// Clearing an overwrite file (a question asked, say) is a write;
		// an empty write would only use up any other file's writes.
		c.errorf(w.Pos, "%s: write to %s needs its text (only an overwrite file may be cleared)", where, w.File)
	}
	// A write a script returns is refused at runtime, with a
	// context_violation the session goes on from; one written in the
	// pack can be refused now. Only the class is known here, not how
	// often the file will have been written.
	if !c.script && (w.file.Class != ClassWriteFew || w.file.MaxWrites > 0) {
		// Starting content is a write already, if every copy has some.
		writes := 1
		for _, init := range w.file.initial {
			if init == "" {
				writes = 0
			}
		}
		if why := w.file.Refuses(op, writes); why != "" {
			c.errorf(w.Pos, "%s: %s %s is refused: %s", where, op, w.File, why)
		}
	}
}

// ContextBudget bounds the context files one model call carries.
type ContextBudget struct {
	Pos
	// MaxChars is the total over the files (their max_chars applied
	// first); 0 means no total.
	MaxChars int `yaml:"max_chars"`
	// Trim lists the files cut, in order, while a call is over MaxChars;
	// files not listed are never cut for the total.
	Trim []string `yaml:"trim"`
}

func (b *ContextBudget) check(c *compiler) {
	if b.MaxChars < 0 {
		c.errorf(b.Pos, "llm.context_budget.max_chars must not be negative")
	}
	for i, id := range b.Trim {
		if _, ok := c.p.fileByID[id]; !ok && !slices.Contains(SequenceParts, id) {
			c.missingf(b.Pos, "files", "llm.context_budget.trim: %q is neither a context file nor a sequence part (%s)%s", id, strings.Join(SequenceParts, ", "), c.suggest(id, append(c.p.fileNames(), SequenceParts...)))
		}
		if slices.Contains(b.Trim[:i], id) {
			c.errorf(b.Pos, "llm.context_budget.trim: %s is listed twice", id)
		}
	}
	switch {
	case len(b.Trim) > 0 && b.MaxChars == 0:
		c.errorf(b.Pos, "llm.context_budget.trim needs max_chars, the total it trims to")
	case b.MaxChars > 0 && len(b.Trim) == 0:
		c.errorf(b.Pos, "llm.context_budget.max_chars needs trim, the files cut (in order) to keep within it")
	}
}
