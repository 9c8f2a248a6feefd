package sim

import (
	"encoding/json"
	"fmt"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/record"
	"github.com/batonhq/baton/runtime/workspace"
)

// Client is the simulated session client of dry runs and pack tests: it
// runs the pack's client tools against an in-memory copy of its
// workspace (rules.Workspace) and reports each write as the pack's
// on_change event, as an editor would.
type Client struct {
	pack *rules.Pack
	ws   *workspace.Workspace
	err  error // a starting file the workspace refused
}

// NewClient seeds a workspace from p's starting files for a session with
// inputs in (nil: the inputs' defaults): the pack's own, or the files of
// the input its workspace.from names.
func NewClient(p *rules.Pack, in *rules.Inputs) *Client {
	c := &Client{pack: p, ws: workspace.New(p.Workspace.RootDir())}
	for _, f := range p.WorkspaceOf(in) {
		if err := c.ws.Put(f.Path, f.Content); err != nil && c.err == nil {
			c.err = fmt.Errorf("workspace file %s: %w", f.Path, err)
		}
	}
	return c
}

// Answer runs the client tool call e (a client_tool_call effect) and
// returns its result and, after a write, the change event to report
// (nil otherwise). A tool the workspace does not run is answered with an
// error, as a client without it would.
func (c *Client) Answer(e *engine.Effect) (engine.ClientToolResult, *engine.CandidateEvent) {
	res := engine.ClientToolResult{ID: e.ID}
	op, ok := c.pack.Workspace.WorkspaceOpOf(e.Kind)
	if !ok || c.err != nil {
		why := fmt.Sprintf("the simulated client does not run %s (bind it under workspace.tools)", e.Kind)
		if c.err != nil {
			why = c.err.Error()
		}
		res.Result, _ = json.Marshal(map[string]string{"error": why})
		res.IsError = true
		return res, nil
	}
	out, isErr := c.ws.Call(op.String(), e.Data)
	res.Result, res.IsError = out, isErr
	if isErr || op != rules.WorkspaceWrite || c.pack.Workspace.OnChange.Val == "" {
		return res, nil
	}
	var w struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(out, &w) != nil || w.Path == "" {
		return res, nil
	}
	code, _ := c.ws.Get(w.Path)
	return res, &engine.CandidateEvent{Type: c.pack.Workspace.OnChange.Val, Code: code, Line: c.ws.LastEdit(w.Path), Source: "editor"}
}

// LatencyMS is how long the client takes per call.
func (c *Client) LatencyMS() int64 { return c.pack.Workspace.Latency.MS }

// Files lists the workspace's files, in path order: the workspace as a
// run ended.
func (c *Client) Files() []record.WorkspaceFile {
	var out []record.WorkspaceFile
	for _, p := range c.ws.Paths() {
		content, _ := c.ws.Get(p)
		out = append(out, record.WorkspaceFile{Path: p, Content: content})
	}
	return out
}
