// Package workspace is an in-memory code workspace: a set of text files
// under one root folder ("/workspace" by default) that an AI agent reads
// and edits through two tools its client executes, open_file and
// write_file. Baton's simulated client uses it for dry runs and pack
// tests; a real client can use it as its editor's model, so both answer
// the agent in exactly the same words.
//
// The contract the tools offer the model:
//
//   - open_file {path?} returns {path, content, lines}, content numbered
//     as "L1:first\nL2:second" (see [Numbered]). Without a path it opens
//     the active file.
//   - write_file {path?, content} replaces (or creates) the whole file;
//     write_file {path?, lineEdits: [{op, line, text?, position?}]}
//     changes lines of an existing file. Exactly one of content and
//     lineEdits is given. The answer is {ok, mode: "replace"|"lineEdits",
//     path, diffs, lines}.
//   - A line edit's op is replace, insert or delete; text (required for
//     replace and insert, refused for delete) may hold several lines;
//     position ("before" or "after", the default) is for insert only.
//     Every line number refers to the file as it was before the call,
//     which is what applying the edits in descending line order gives,
//     so the model never has to account for lines its earlier edits
//     moved. Edits are all or nothing: one bad edit and none is applied,
//     and the error names every bad edit.
//   - Paths are relative to the root ("src/a.js", "./src/a.js") or
//     absolute inside it ("/workspace/src/a.js"). Nothing outside the
//     root, no "..", no backslash, "~" or control character, no path
//     that is not already clean: the error names the root and its files,
//     so the model can correct itself.
//   - A file keeps its line ending (CRLF stays CRLF) and its final
//     newline or the lack of one; lines no edit touches keep their bytes.
//   - Limits: 500 edits a call, 1 MiB a file, 200 files, 256-byte paths.
//     Parameters are decoded strictly: an unknown or misspelt field is an
//     error naming it, never silently ignored.
//
// Errors are sentences for the model, not for a log: each says what was
// wrong and what to do instead. The package does no I/O, starts no
// goroutines and its output never depends on map order. A Workspace is not
// safe for concurrent use.
package workspace

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/batonhq/baton/rules/workspacepath"
)

// Root is the folder the workspace's files live under unless New is
// given another.
const Root = "/workspace"

// Limits keep one call, one file and the whole workspace small enough
// that a runaway model cannot make a client hold unbounded text.
const (
	MaxEdits     = 500                        // line edits in one write_file call
	MaxFileBytes = workspacepath.MaxFileBytes // bytes in one file after a write
	MaxFiles     = workspacepath.MaxFiles     // files in the workspace
	MaxPathBytes = workspacepath.MaxPathBytes // bytes in a path as the model gives it
)

// listCap is how many file names an error lists before "and N more":
// enough to correct a typo, short enough not to flood the model.
const listCap = 20

// Workspace is a set of text files under a root folder. The zero value
// is an empty workspace under Root.
type Workspace struct {
	root   string
	files  map[string]*file
	paths  []string // sorted, so listings never depend on map order
	active string
}

type file struct {
	content  string
	lastEdit int
}

// New returns an empty workspace under root; "" means Root.
func New(root string) *Workspace {
	if root != "" {
		root = path.Clean(root)
	}
	return &Workspace{root: root, files: map[string]*file{}}
}

func (w *Workspace) rootDir() string {
	if w.root == "" {
		return Root
	}
	return w.root
}

// Put creates or replaces the file at path with content, as the host
// sets the workspace up; path is checked as a tool's would be. The first
// file put becomes the active one. Put is not an edit, so the file's
// LastEdit goes back to 0.
func (w *Workspace) Put(path, content string) error {
	rel, err := w.Resolve(path)
	if err != nil {
		return err
	}
	if err := w.checkStore(rel, len(content)); err != nil {
		return err
	}
	w.store(rel, content).lastEdit = 0
	return nil
}

// Get returns the content of the file at path, as stored (not numbered).
func (w *Workspace) Get(path string) (string, bool) {
	rel, err := w.Resolve(path)
	if err != nil {
		return "", false
	}
	f, ok := w.files[rel]
	if !ok {
		return "", false
	}
	return f.content, true
}

// Paths lists the files, sorted, relative to the root.
func (w *Workspace) Paths() []string { return slices.Clone(w.paths) }

// SetActive makes the file at path the one open_file and write_file use
// when the model gives no path (the file the client's editor shows).
func (w *Workspace) SetActive(path string) error {
	rel, err := w.Resolve(path)
	if err != nil {
		return err
	}
	if _, ok := w.files[rel]; !ok {
		return w.missing(rel, "")
	}
	w.active = rel
	return nil
}

// Active is the active file's path relative to the root, "" when the
// workspace has no files.
func (w *Workspace) Active() string { return w.active }

// LastEdit is the 1-based line where the last write to the file at path
// left off, 0 if there is none: a client reports it as the cursor.
func (w *Workspace) LastEdit(path string) int {
	rel, err := w.Resolve(path)
	if err != nil {
		return 0
	}
	if f, ok := w.files[rel]; ok {
		return f.lastEdit
	}
	return 0
}

// Resolve checks path against the workspace's whitelist
// (rules/workspacepath, the rule the pack loader applies too) and returns
// it clean and relative to the root; a refusal names the files there.
func (w *Workspace) Resolve(p string) (string, error) {
	rel, err := workspacepath.Rel(w.rootDir(), p)
	if err != nil {
		return "", fmt.Errorf("%w; %s", err, w.listing())
	}
	return rel, nil
}

// listing names the root and its files for an error, so the model can
// pick a path that exists.
func (w *Workspace) listing() string {
	root := w.rootDir()
	if len(w.paths) == 0 {
		return root + " has no files yet; write_file with content creates one"
	}
	var b strings.Builder
	b.WriteString("files in ")
	b.WriteString(root)
	b.WriteString(": ")
	for i, p := range w.paths {
		if i == listCap {
			b.WriteString(" and ")
			b.WriteString(strconv.Itoa(len(w.paths) - listCap))
			b.WriteString(" more")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p)
	}
	return b.String()
}

// missing is the error for a clean path naming no file; hint says what
// else the model can do.
func (w *Workspace) missing(rel, hint string) error {
	if hint != "" {
		hint = "; " + hint
	}
	return fmt.Errorf("there is no file %s in %s%s; %s", rel, w.rootDir(), hint, w.listing())
}

// target is the file a tool call names: its path, or the active file.
func (w *Workspace) target(p string) (string, error) {
	if p == "" {
		if w.active == "" {
			return "", fmt.Errorf("no path was given and no file is open; give a path; %s", w.listing())
		}
		return w.active, nil
	}
	return w.Resolve(p)
}

// checkStore refuses a write that would break a limit or make a path
// both a file and a folder (which no real file system can hold, so a
// client could not mirror it).
func (w *Workspace) checkStore(rel string, size int) error {
	if size > MaxFileBytes {
		return fmt.Errorf("%s would be %d bytes; a file holds at most %d bytes (1 MiB)", rel, size, MaxFileBytes)
	}
	if _, ok := w.files[rel]; ok {
		return nil
	}
	if len(w.paths) >= MaxFiles {
		return fmt.Errorf("%s already holds %d files, the most it takes; edit an existing file instead; %s", w.rootDir(), MaxFiles, w.listing())
	}
	for i := strings.IndexByte(rel, '/'); i >= 0; i = nextSlash(rel, i) {
		if _, ok := w.files[rel[:i]]; ok {
			return fmt.Errorf("%s is a file, so it cannot also be a folder holding %s; %s", rel[:i], rel, w.listing())
		}
	}
	dir := rel + "/"
	if i, _ := slices.BinarySearch(w.paths, dir); i < len(w.paths) && strings.HasPrefix(w.paths[i], dir) {
		return fmt.Errorf("%s is a folder (it holds %s), so it cannot also be a file; %s", rel, w.paths[i], w.listing())
	}
	return nil
}

func nextSlash(s string, i int) int {
	j := strings.IndexByte(s[i+1:], '/')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

// store sets rel's content, creating the file if need be; checkStore has
// passed.
func (w *Workspace) store(rel, content string) *file {
	if w.files == nil {
		w.files = map[string]*file{}
	}
	f, ok := w.files[rel]
	if !ok {
		f = &file{}
		w.files[rel] = f
		i, _ := slices.BinarySearch(w.paths, rel)
		w.paths = slices.Insert(w.paths, i, rel)
		if w.active == "" {
			w.active = rel
		}
	}
	f.content = content
	return f
}

// Open reads the file at path ("" for the active file) as open_file
// returns it.
func (w *Workspace) Open(path string) (OpenResult, error) {
	rel, err := w.target(path)
	if err != nil {
		return OpenResult{}, err
	}
	f, ok := w.files[rel]
	if !ok {
		return OpenResult{}, w.missing(rel, "")
	}
	return OpenResult{Path: rel, Content: Numbered(f.content), Lines: countLines(f.content)}, nil
}

// OpenResult is open_file's answer.
type OpenResult struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	Lines   int    `json:"lines"`
}

// countLines counts lines as editors do: a final newline ends the last
// line rather than starting another, and "" has none.
func countLines(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if s[len(s)-1] != '\n' {
		n++
	}
	return n
}

// Numbered renders content as "L1:first\nL2:second", with no trailing
// newline and no carriage returns: the form open_file returns, where the
// model reads the line numbers its edits name.
func Numbered(content string) string {
	if content == "" {
		return ""
	}
	body := strings.TrimSuffix(content, "\n")
	n := strings.Count(body, "\n") + 1
	digits := 1
	for m := n; m >= 10; m /= 10 {
		digits++
	}
	var b strings.Builder
	b.Grow(len(body) + n*(2+digits))
	cr := hasCR(body)
	var num [20]byte
	for line := 1; ; line++ {
		if line > 1 {
			b.WriteByte('\n')
		}
		b.WriteByte('L')
		b.Write(strconv.AppendInt(num[:0], int64(line), 10))
		b.WriteByte(':')
		i := strings.IndexByte(body, '\n')
		l := body
		if i >= 0 {
			l = body[:i]
		}
		if cr {
			writeNoCR(&b, l)
		} else {
			b.WriteString(l)
		}
		if i < 0 {
			return b.String()
		}
		body = body[i+1:]
	}
}

func writeNoCR(b *strings.Builder, s string) {
	for {
		i := strings.IndexByte(s, '\r')
		if i < 0 {
			b.WriteString(s)
			return
		}
		b.WriteString(s[:i])
		s = s[i+1:]
	}
}

func hasCR(s string) bool { return strings.IndexByte(s, '\r') >= 0 }

// display is a line as the model sees it: without carriage returns.
func display(s string) string {
	if strings.IndexByte(s, '\r') < 0 {
		return s
	}
	return strings.ReplaceAll(s, "\r", "")
}
