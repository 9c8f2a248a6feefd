package rules

import (
	"io/fs"
	"path"
	"strings"

	"github.com/batonhq/baton/rules/workspacepath"

	"go.yaml.in/yaml/v3"
)

// Workspace is the code a session's client holds and its client tools
// edit: files under a root, seeded from the pack folder. The simulated
// client of dry runs and pack tests runs the tools it binds against an
// in-memory copy (runtime/workspace) and, after each write, reports the
// change as an OnChange event, as an editor would; a real client may
// read the same section to seed its editor.
type Workspace struct {
	Pos
	// Root is where the files live, as tools name them; default
	// /workspace.
	Root At[string] `yaml:"root"`
	// Files are the starting files: path in the workspace to file in the
	// pack folder. The first is the one open.
	Files []WorkspaceFile `yaml:"files"`
	// From, input:NAME, takes the starting files from a file input
	// instead, each at its name (WorkspaceOf).
	From At[string] `yaml:"from"`
	// Tools binds client tools to what the workspace does: open (its
	// numbered content) or write (replace, or line edits).
	Tools []WorkspaceTool `yaml:"tools"`
	// OnChange is the event type the simulated client reports after a
	// write, with data.code (the file) and data.line (the last line
	// edited); a pack rule on it keeps a slot up to date.
	OnChange At[string] `yaml:"on_change"`
	// Latency is the simulated client's time per tool call; default
	// 50ms.
	Latency Duration `yaml:"latency"`
}

// DefaultWorkspaceRoot is a workspace's root when the pack gives none.
const DefaultWorkspaceRoot = "/workspace"

// DefaultClientLatencyMS is the simulated client's time per tool call.
const DefaultClientLatencyMS = 50

// WorkspaceFile is a starting file of the workspace.
type WorkspaceFile struct {
	Pos
	Path string `yaml:"id"`
	File string `yaml:"file"`
	// Content is the file's text, read at load.
	Content string `yaml:"-"`
}

func (f *WorkspaceFile) setShorthand(d *decoder, n *yaml.Node) { d.decode(n, refValue(&f.File)) }

// WorkspaceTool binds a client tool to a workspace operation.
type WorkspaceTool struct {
	Pos
	Tool string      `yaml:"id"`
	Op   WorkspaceOp `yaml:"op"`
}

func (t *WorkspaceTool) setShorthand(d *decoder, n *yaml.Node) { t.Op.decodeNode(d, n) }

// WorkspaceOp is what a bound tool does to the workspace.
type WorkspaceOp uint8

// Workspace operations; word 0 is none, so a binding must name one.
const (
	WorkspaceOpNone WorkspaceOp = iota
	WorkspaceOpen
	WorkspaceWrite
)

var workspaceOpWords = []string{"", "open", "write"}

func (o WorkspaceOp) String() string                       { return word(workspaceOpWords, uint8(o)) }
func (WorkspaceOp) enumWords() []string                    { return workspaceOpWords }
func (o *WorkspaceOp) decodeNode(d *decoder, n *yaml.Node) { decodeEnum(d, n, o, workspaceOpWords) }

// WorkspaceOpOf is the operation tool is bound to, if any.
func (w *Workspace) WorkspaceOpOf(tool string) (WorkspaceOp, bool) {
	for _, t := range w.Tools {
		if t.Tool == tool {
			return t.Op, true
		}
	}
	return WorkspaceOpNone, false
}

// RootDir is the workspace's root.
func (w *Workspace) RootDir() string {
	if w.Root.Val != "" {
		return w.Root.Val
	}
	return DefaultWorkspaceRoot
}

// read loads the starting files from the pack folder.
func (w *Workspace) read(fsys fs.FS, errs *ErrorList, hashFile func(string, []byte)) {
	for i := range w.Files {
		f := &w.Files[i]
		clean := path.Clean(f.File)
		if f.File == "" || !fs.ValidPath(clean) {
			errs.add(f.Pos, "workspace file %s: the file must be a path inside the pack folder", f.Path)
			continue
		}
		data, err := readFile(fsys, clean, workspacepath.MaxFileBytes)
		if err != nil {
			errs.add(f.Pos, "workspace file %s: %s: %v", f.Path, clean, fileErr(fsys, clean, err))
			continue
		}
		hashFile(clean, data)
		f.Content = string(data)
	}
}

func (w *Workspace) check(c *compiler) {
	root := w.RootDir()
	if r := w.Root.Val; r != "" && (!strings.HasPrefix(r, "/") || path.Clean(r) != r || r == "/") {
		c.errorf(w.Root.Pos, "workspace.root %q: an absolute folder such as /workspace", r)
		root = DefaultWorkspaceRoot // checked against a root that is, the paths add no knock-on errors
	}
	for _, f := range w.Files {
		// The rule every tool call is held to (runtime/workspace): a pack
		// must not seed a file its own tools could not name.
		if rel, err := workspacepath.Rel(root, f.Path); err != nil {
			c.errorf(f.Pos, "workspace file: %v", err)
		} else if rel != f.Path {
			c.errorf(f.Pos, "workspace file %q: write it as %s, relative to %s", f.Path, rel, root)
		}
	}
	if len(w.Files) > workspacepath.MaxFiles {
		c.errorf(w.Pos, "workspace: %d files; a workspace holds at most %d", len(w.Files), workspacepath.MaxFiles)
	}
	for _, t := range w.Tools {
		tool, ok := c.p.Tool(t.Tool)
		switch {
		case !ok:
			c.missingf(t.Pos, "tools", "workspace.tools: %s names no tool of this pack%s", t.Tool, c.suggest(t.Tool, c.p.toolNames()))
		case tool.Executor != ExecClient:
			c.errorf(t.Pos, "workspace.tools: %s is run by the pack's rules; the workspace answers client tools (executor: client)", t.Tool)
		case t.Op == WorkspaceOpNone:
			c.errorf(t.Pos, "workspace.tools: %s needs an operation: open or write", t.Tool)
		case w.Latency.ok() && tool.Timeout.ok() && tool.Timeout.MS > 0 && w.Latency.MS >= tool.Timeout.MS:
			// The simulated client would always be too late.
			c.errorf(w.Latency.Pos, "workspace.latency %dms is not under %s's timeout (%dms), so every call would time out", w.Latency.MS, t.Tool, tool.Timeout.MS)
		}
	}
	if ev := w.OnChange.Val; ev != "" {
		if err := CheckEventType(ev); err != nil {
			c.errorf(w.OnChange.Pos, "workspace.on_change: %v", err)
		} else if len(c.p.RulesOn(EventTrigger(ev))) == 0 && !IsBuiltinEvent(ev) {
			c.errorf(w.OnChange.Pos, "workspace.on_change: no rule has trigger: %s, so the change would go unnoticed (and a live client's event be refused)", ev)
		}
	}
	if len(w.Tools) > 0 && len(w.Files) == 0 && w.From.Val == "" {
		c.errorf(w.Pos, "workspace: tools are bound but no files are given; add files: {index.js: files/index.js}")
	}
}
