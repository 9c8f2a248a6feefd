package service

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// The clients below know the protocol's frames and nothing of a pack but
// what GET /v1/packs/{name}/describe says: which event carries a message,
// which one reports an editor's change and with which data fields, which
// file input seeds the workspace, what each client tool takes and what it
// answers. If describe left any of that out, they could not drive their
// pack.

// contract is the describe JSON as a client author decodes it.
type contract struct {
	Inputs []struct {
		ID    string   `json:"id"`
		Type  string   `json:"type"`
		Media []string `json:"media"`
	} `json:"inputs"`
	Events []struct {
		Type     string   `json:"event_type"`
		Accepted bool     `json:"accepted"`
		Sources  []string `json:"sources"`
		Data     []struct {
			Name     string `json:"name"`
			Required bool   `json:"required"`
		} `json:"data"`
	} `json:"events"`
	ClientTools []struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
		Workspace  *struct {
			Op     string   `json:"op"`
			Result []string `json:"result"`
		} `json:"workspace"`
	} `json:"client_tools"`
}

func fetchContract(t *testing.T, h *harness, pack string) contract {
	t.Helper()
	resp, err := http.Get(h.ts.URL + "/v1/packs/" + pack + "/describe")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("describe %s: %d %s", pack, resp.StatusCode, body)
	}
	var c contract
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// event is the accepted event type listed for source src, and the data
// fields it reads.
func (c contract) event(t *testing.T, src string, match func(fields []string) bool) (string, []string) {
	t.Helper()
	for _, e := range c.Events {
		if !e.Accepted || !slices.Contains(e.Sources, src) {
			continue
		}
		var fields []string
		for _, d := range e.Data {
			fields = append(fields, d.Name)
		}
		if match == nil || match(fields) {
			return e.Type, fields
		}
	}
	t.Fatalf("describe lists no accepted event from %s that fits: %+v", src, c.Events)
	return "", nil
}

// data keeps only the fields the contract says the event reads: a field
// it leaves out is one the client would not know to send.
func data(fields []string, all map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range all {
		if slices.Contains(fields, k) {
			out[k] = v
		}
	}
	return out
}

// editor is the training client's editor: files by path, changed by the
// contract's workspace operations.
type editor map[string][]string

func (ed editor) open(path string) map[string]any {
	lines := ed[path]
	numbered := make([]string, len(lines))
	for i, l := range lines {
		numbered[i] = fmt.Sprintf("L%d:%s", i+1, l)
	}
	return map[string]any{"path": path, "content": strings.Join(numbered, "\n"), "lines": len(lines)}
}

// write applies a whole-file content or line edits, each edit naming a
// line of the file as it was before the call (so they apply from the
// bottom up).
func (ed editor) write(params map[string]any) (map[string]any, error) {
	path, _ := params["path"].(string)
	if content, ok := params["content"].(string); ok {
		ed[path] = strings.Split(content, "\n")
		return map[string]any{"ok": true, "mode": "replace", "path": path, "diffs": []any{}, "lines": len(ed[path])}, nil
	}
	edits, _ := params["lineEdits"].([]any)
	slices.SortStableFunc(edits, func(a, b any) int {
		return int(b.(map[string]any)["line"].(float64)) - int(a.(map[string]any)["line"].(float64))
	})
	lines := ed[path]
	var diffs []any
	for _, e := range edits {
		m := e.(map[string]any)
		at := int(m["line"].(float64)) - 1
		text, _ := m["text"].(string)
		add := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		if at < 0 || at > len(lines) {
			return nil, fmt.Errorf("line %d outside 1..%d", at+1, len(lines))
		}
		switch m["op"] {
		case "insert":
			if m["position"] == "after" {
				at++
			}
			lines = slices.Insert(lines, at, add...)
		case "replace":
			lines = slices.Replace(lines, at, at+1, add...)
		case "delete":
			lines = slices.Delete(lines, at, at+1)
		default:
			return nil, fmt.Errorf("op %v", m["op"])
		}
		diffs = append(diffs, fmt.Sprintf("%v line %d", m["op"], at+1))
	}
	ed[path] = lines
	return map[string]any{"ok": true, "mode": "lineEdits", "path": path, "diffs": diffs, "lines": len(lines)}, nil
}

// An editor client written from training's contract alone seeds the
// session's workspace with its own file, asks for an edit, runs the
// agent's open_file and write_file calls on its own copy and reports the
// change with the event and fields the contract names.
func TestEditorClientFromContract(t *testing.T) {
	h := newHarness(t)
	ct := fetchContract(t, h, "training")

	var wsInput string
	for _, in := range ct.Inputs {
		if in.Type == "file" && slices.Contains(in.Media, "text/*") {
			wsInput = in.ID
		}
	}
	if wsInput == "" {
		t.Fatalf("describe lists no text file input to seed the workspace: %+v", ct.Inputs)
	}
	code := "// The client's own file.\nconst team = [\"Grace\"];\n\nmodule.exports = { team };\n"
	c := h.dial(nil)
	c.send(map[string]any{"id": "s", "type": "start", "pack": "training", "session_id": "ed1",
		"inputs": map[string]any{wsInput: []any{map[string]any{"name": "index.js", "text": code}}}})
	ack := c.expectAck("s")
	if ack.Workspace == nil || len(ack.Workspace.Files) != 1 || ack.Workspace.Files[0].Path != "index.js" || ack.Workspace.Files[0].Content != code {
		t.Fatalf("start ack workspace: %+v", ack.Workspace)
	}
	ed := editor{"index.js": strings.Split(code, "\n")}

	say, sayFields := ct.event(t, "routing", func(f []string) bool { return slices.Contains(f, "text") })
	changed, changedFields := ct.event(t, "workspace.on_change", nil)
	c.send(map[string]any{"id": "m", "type": "event", "event": map[string]any{"event_type": say,
		"data": data(sayFields, map[string]any{"text": "Open index.js and add a greet() that returns 'hi'."})}})
	c.expectAck("m")

	tools := map[string]string{}
	for _, tool := range ct.ClientTools {
		if tool.Workspace != nil {
			tools[tool.Name] = tool.Workspace.Op
		}
	}
	wrote := false
	for n := 0; !wrote; n++ {
		if n > 4 {
			t.Fatal("no write after four tool calls")
		}
		call := h.clientToolCall(c, "ed1").ClientToolCall
		var params map[string]any
		if err := json.Unmarshal(call.Parameters, &params); err != nil {
			t.Fatal(err)
		}
		path, _ := params["path"].(string)
		var result map[string]any
		switch tools[call.ToolName] {
		case "open":
			result = ed.open(path)
		case "write":
			r, err := ed.write(params)
			if err != nil {
				t.Fatalf("%s %s: %v", call.ToolName, call.Parameters, err)
			}
			result, wrote = r, true
		default:
			t.Fatalf("describe says nothing of how to answer %s", call.ToolName)
		}
		c.send(map[string]any{"type": "client_tool_result", "tool_call_id": call.ToolCallID, "result": result})
		c.expectAck(call.ToolCallID)
		if wrote {
			c.send(map[string]any{"id": "chg", "type": "event", "event": map[string]any{"event_type": changed,
				"data": data(changedFields, map[string]any{"code": strings.Join(ed["index.js"], "\n"), "line": 3})}})
			c.expectAck("chg")
		}
	}
	if got := strings.Join(ed["index.js"], "\n"); !strings.Contains(got, "function greet()") || !strings.Contains(got, "const team") {
		t.Fatalf("the agent's edit did not land in the client's own file:\n%s", got)
	}
	h.awaitEffect(c, "ed1", "the agent's line after its edit", func(e *WireEffect) bool {
		return e.Type == "agent_message" && strings.Contains(e.Text, "greet()")
	})
}

// awaitEffect returns once an effect matching pred has reached c: one
// that came while the client waited for an ack, or one the session makes
// as its clock moves on.
func (h *harness) awaitEffect(c *wsClient, id, what string, pred func(*WireEffect) bool) {
	h.t.Helper()
	for _, f := range c.effectList() {
		if pred(&f.Effect) {
			return
		}
	}
	h.stepUntil(c, id, what, func(f *ServerFrame) bool { return f.Type == FrameEffect && pred(f.Effect) })
}

// A prompt client written from the Brain's contract alone starts an
// exchange with the event and fields it names, and cancels a second one.
func TestPromptClientFromContract(t *testing.T) {
	h := newHarness(t)
	ct := fetchContract(t, h, "brain")
	prompt, promptFields := ct.event(t, "rules", func(f []string) bool {
		return slices.Contains(f, "text") && slices.Contains(f, "run_id")
	})
	cancel, cancelFields := ct.event(t, "rules", func(f []string) bool {
		return slices.Contains(f, "run_id") && !slices.Contains(f, "text")
	})
	c := h.dial(nil)
	c.send(map[string]any{"id": "s", "type": "start", "pack": "brain", "session_id": "pr1"})
	c.expectAck("s")
	send := func(id, typ string, fields []string, d map[string]any) {
		c.send(map[string]any{"id": id, "type": "event", "event": map[string]any{"event_type": typ, "data": data(fields, d)}})
		c.expectAck(id)
	}
	ended := func(run, kind string) func(*WireEffect) bool {
		return func(e *WireEffect) bool {
			if e.Type != "sequence" || e.Kind != kind {
				return false
			}
			var x struct {
				RunID string `json:"run_id"`
			}
			return json.Unmarshal(e.Data, &x) == nil && x.RunID == run
		}
	}
	send("p1", prompt, promptFields, map[string]any{"text": "Should we log the routing tag?", "run_id": "run-1"})
	h.awaitEffect(c, "pr1", "run-1's end", ended("run-1", "SEQUENCE_COMPLETED"))
	send("p2", prompt, promptFields, map[string]any{"text": "And the retries?", "run_id": "run-2"})
	send("c2", cancel, cancelFields, map[string]any{"run_id": "run-2"})
	h.awaitEffect(c, "pr1", "run-2's cancel", ended("run-2", "SEQUENCE_CANCELLED"))
}
