package service

import (
	"encoding/json"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/workspace"
	"github.com/batonhq/baton/scenarios"
)

// stepUntil moves session id's fake clock on a tick at a time until a
// frame matching pred arrives, so a test sees it before any later timer
// (a tool's timeout) fires. Before each tick it waits until the client
// has received every effect the session has sent so far (its status's
// seq), so a frame on its way over the socket is never stepped past.
func (h *harness) stepUntil(c *wsClient, id, what string, pred func(*ServerFrame) bool) ServerFrame {
	h.t.Helper()
	for range 3000 {
		st, ok := h.quiesce(id)
		if !ok {
			h.t.Fatalf("session %s is gone while waiting for %s", id, what)
		}
		deadline := time.Now().Add(waitLimit)
		for c.lastSeq() < st.Seq {
			if time.Now().After(deadline) {
				h.t.Fatalf("effect %d never reached the client", st.Seq)
			}
			time.Sleep(time.Millisecond)
		}
		for drained := false; !drained; {
			select {
			case f, ok := <-c.frames:
				if !ok {
					h.t.Fatalf("connection closed while waiting for %s", what)
				}
				if pred(&f) {
					return f
				}
			default:
				drained = true
			}
		}
		h.runUntil(id, st.Now+100)
	}
	h.t.Fatalf("no %s within 300s of session time", what)
	return ServerFrame{}
}

// clientToolCall steps the session until its next client_tool_call.
func (h *harness) clientToolCall(c *wsClient, id string) ServerFrame {
	h.t.Helper()
	return h.stepUntil(c, id, "client_tool_call", func(f *ServerFrame) bool { return f.Type == FrameClientToolCall })
}

// trainingWorkspace is the workspace the training pack starts from, as a
// client's editor would hold it.
func trainingWorkspace(t *testing.T) *workspace.Workspace {
	t.Helper()
	src, err := fs.ReadFile(scenarios.FS, "training/files/index.js")
	if err != nil {
		t.Fatal(err)
	}
	ws := workspace.New("")
	if err := ws.Put("index.js", string(src)); err != nil {
		t.Fatal(err)
	}
	return ws
}

// A frontend written for the vendor's client tool protocol drives the
// training pack over the service unchanged: it reads client_tool_call
// frames in the vendor's shape, runs the tools against its own
// workspace, and answers with client_tool_result frames that carry no
// frame id; the agent's edits land in that workspace.
func TestClientToolsOverWebSocket(t *testing.T) {
	h := newHarness(t)
	c := h.dial(nil)
	c.send(map[string]any{"id": "s", "type": "start", "pack": "training", "session_id": "tr1"})
	secret := c.expectAck("s").SessionSecret
	c.send(map[string]any{"id": "e1", "type": "event", "event": map[string]any{
		"event_type": "candidate_message", "data": map[string]any{"text": "Open index.js and add a greet() that returns 'hi'."}}})
	c.expectAck("e1")
	ws := trainingWorkspace(t)
	ops := map[string]string{"open_file": "open", "write_file": "write"}
	for _, want := range []string{"open_file", "write_file"} {
		f := h.clientToolCall(c, "tr1")
		call := f.ClientToolCall
		if call == nil || call.ToolName != want || call.ToolCallID == "" || f.Seq == 0 || f.Effect == nil || f.Effect.Type != engine.EffectClientToolCall {
			t.Fatalf("client_tool_call frame: %+v (effect %+v), want tool %s with an id, a seq and the effect", f, f.Effect, want)
		}
		// A client that resumes now learns which calls still wait.
		r := h.dial(nil)
		r.send(map[string]any{"id": "r", "type": "resume", "session_id": "tr1", "session_secret": secret})
		if st := r.expectAck("r").State; st == nil || len(st.ToolCalls) != 1 || st.ToolCalls[0] != call.ToolCallID {
			t.Fatalf("resume state %+v: want tool_calls [%s]", st, call.ToolCallID)
		}
		result, isErr := ws.Call(ops[call.ToolName], call.Parameters)
		if isErr {
			t.Fatalf("%s %s: %s", call.ToolName, call.Parameters, result)
		}
		// The vendor's shape: no frame id, the call's id instead.
		c.send(map[string]any{"type": "client_tool_result", "tool_call_id": call.ToolCallID, "result": json.RawMessage(result), "is_error": false})
		ack := c.expectAck(call.ToolCallID)
		if ack.InputSeq == 0 {
			t.Fatalf("ack %+v: the result was not logged", ack)
		}
		c.waitFor("tool_result for "+call.ToolCallID, func(f *ServerFrame) bool {
			return f.Type == FrameEffect && f.Effect.Type == engine.EffectToolResult && f.Effect.ID == call.ToolCallID && !f.Effect.IsError
		})
		// The same answer again is refused: it was already answered.
		c.send(map[string]any{"id": "again", "type": "client_tool_result", "tool_call_id": call.ToolCallID, "result": "ok"})
		if e := c.expectError("again", CodeUnknownToolCall); !strings.Contains(e.Message, "already answered") {
			t.Fatalf("repeated result: %s", e.Message)
		}
	}
	// The confirmation may have come while the test read the answers
	// above: look among every effect received.
	confirmed := func() bool {
		for _, e := range c.effectList() {
			if e.Effect.Type == engine.EffectAgentMessage && strings.Contains(e.Effect.Text, "greet() returns 'hi'") {
				return true
			}
		}
		return false
	}
	for range 100 {
		if confirmed() {
			break
		}
		st, _ := h.quiesce("tr1")
		h.runUntil("tr1", st.Now+100)
	}
	if !confirmed() {
		t.Fatal("the candidate never confirmed the edit")
	}
	if got, _ := ws.Get("index.js"); !strings.Contains(got, "function greet() {\n  return \"hi\";\n}") {
		t.Fatalf("the client's workspace after the edits:\n%s", got)
	}

	// Malformed and stray results get their own errors and are not logged.
	for _, tc := range []struct {
		frame map[string]any
		code  string
		says  string
	}{
		{map[string]any{"id": "x1", "type": "client_tool_result", "tool_call_id": "nope", "result": "ok"}, CodeUnknownToolCall, "no call with that id"},
		{map[string]any{"id": "x2", "type": "client_tool_result", "tool_call_id": "nope"}, CodeBadFrame, "needs result"},
		{map[string]any{"id": "x3", "type": "client_tool_result", "result": "ok"}, CodeBadFrame, "needs tool_call_id"},
		{map[string]any{"id": "x4", "type": "client_tool_result", "tool_call_id": "nope", "result": "ok", "parameters": map[string]any{}}, CodeBadFrame, "unknown field"},
	} {
		c.send(tc.frame)
		if e := c.expectError(tc.frame["id"].(string), tc.code); !strings.Contains(e.Message, tc.says) {
			t.Errorf("%v: %s %q, want it to say %q", tc.frame, e.Code, e.Message, tc.says)
		}
	}
}

// A client that never answers: the tool's timeout (3s in the pack)
// answers for it, and the late answer is refused as timed out, never
// logged. The answer is sent the moment the clock passes the deadline,
// before the session may have woken for it: whichever comes first, the
// session asks about the call at the answer's own time.
func TestClientToolTimeoutOverWebSocket(t *testing.T) {
	for i := range 4 {
		id := "tr" + string(rune('a'+i))
		h := newHarness(t)
		c := h.dial(nil)
		c.send(map[string]any{"id": "s", "type": "start", "pack": "training", "session_id": id})
		c.expectAck("s")
		c.send(map[string]any{"id": "e1", "type": "event", "event": map[string]any{
			"event_type": "candidate_message", "data": map[string]any{"text": "Open index.js and add a greet() that returns 'hi'."}}})
		c.expectAck("e1")
		call := h.clientToolCall(c, id).ClientToolCall
		h.clk.Advance(3500 * time.Millisecond)
		c.send(map[string]any{"type": "client_tool_result", "tool_call_id": call.ToolCallID, "result": "late"})
		if e := c.expectError(call.ToolCallID, CodeUnknownToolCall); !strings.Contains(e.Message, "timed out") {
			t.Fatalf("late result: %s", e.Message)
		}
		h.runUntil(id, 20000)
		timedOut := false
		for _, e := range c.effectList() {
			if e.Effect.Type == engine.EffectToolResult && e.Effect.ID == call.ToolCallID {
				if !e.Effect.IsError || !strings.Contains(e.Effect.Reason, "did not answer open_file within") {
					t.Fatalf("tool_result after the timeout: %+v", e.Effect)
				}
				timedOut = true
			}
		}
		if !timedOut {
			t.Fatal("no tool_result for the call that timed out")
		}
	}
}
