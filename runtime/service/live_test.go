package service

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/batonhq/baton/engine"
)

// A client that hosts the live speech session itself (the browser talks to
// the model, as in Hot Seat's seed) forwards the model's tool calls and
// transcripts; the engine answers each call with a tool_result frame and
// moves the floor. Bad frames are refused with a specific error, and the
// client can end the session.
func TestWSClientHostedLiveVoice(t *testing.T) {
	h := newHarness(t)
	c := h.dial(nil)
	c.send(map[string]any{"id": "s", "type": "start", "pack": "hotseat", "session_id": "live1", "candidate_id": "c"})
	c.expectAck("s")
	h.runUntil("live1", 20000)
	c.waitFor("the panel opens", func(f *ServerFrame) bool {
		return f.Type == FrameEffect && f.Effect.Type == engine.EffectHandoff && f.Effect.Agent == "marcus"
	})

	c.send(map[string]any{"id": "a1", "type": "agent_transcript", "agent": map[string]any{"role": "marcus", "text": "How do tokens move?"}})
	c.expectAck("a1")
	args, _ := json.Marshal(map[string]any{"colleague": "priya", "reason": "answered", "summary": "network tokens"})
	c.send(map[string]any{"id": "t1", "type": "tool_call", "tool": map[string]any{"id": "call-1", "name": "transfer", "role": "marcus", "args": json.RawMessage(args)}})
	c.expectAck("t1")
	// The handler moves the floor, then answers the call.
	c.waitFor("handoff to priya", func(f *ServerFrame) bool {
		return f.Type == FrameEffect && f.Effect.Type == engine.EffectHandoff && f.Effect.Agent == "priya"
	})
	res := c.waitFor("tool result", func(f *ServerFrame) bool {
		return f.Type == FrameEffect && f.Effect.Type == engine.EffectToolResult && f.Effect.ID == "call-1"
	})
	if res.Effect.IsError || res.Effect.Role != "marcus" {
		t.Fatalf("tool result: %+v", res.Effect)
	}

	// A transfer to herself is refused with a reason the model can act on.
	self, _ := json.Marshal(map[string]any{"colleague": "priya", "reason": "r", "summary": "s"})
	c.send(map[string]any{"id": "t2", "type": "tool_call", "tool": map[string]any{"id": "call-2", "name": "transfer", "role": "priya", "args": json.RawMessage(self)}})
	c.expectAck("t2")
	ref := c.waitFor("refusal", func(f *ServerFrame) bool {
		return f.Type == FrameEffect && f.Effect.Type == engine.EffectToolResult && f.Effect.ID == "call-2"
	})
	if !ref.Effect.IsError {
		t.Fatalf("self-transfer accepted: %+v", ref.Effect)
	}

	c.send(map[string]any{"id": "b1", "type": "tool_call", "tool": map[string]any{"name": "transfer"}})
	c.expectError("b1", CodeBadFrame)
	c.send(map[string]any{"id": "b2", "type": "agent_transcript", "agent": map[string]any{"role": "priya"}})
	c.expectError("b2", CodeBadFrame)
	c.send(map[string]any{"id": "b3", "type": "ping", "reason": "x"})
	c.expectError("b3", CodeBadFrame)
	// The engine's own triggers cannot be spelled by a client: a tool_loop
	// event once ended a Hot Seat panel, and a live_start event was logged
	// and acknowledged, then refused by the engine.
	for _, typ := range []string{"tool_loop", "live_start", "session_start", "agent_message"} {
		c.send(eventFrame("r-"+typ, map[string]any{"event_type": typ, "ts_ms": 21000, "data": map[string]any{}}))
		c.expectError("r-"+typ, CodeUnknownEventType)
	}
	c.send(map[string]any{"id": "b4", "type": "agent_transcript", "agent": map[string]any{"role": "nobody", "text": "hi"}})
	c.expectError("b4", CodeBadEvent)
	c.send(map[string]any{"id": "b5", "type": "tool_call", "tool": map[string]any{"id": "call-9", "name": "transfer", "role": "nobody"}})
	c.expectError("b5", CodeBadEvent)

	c.send(map[string]any{"id": "e", "type": "end", "reason": "candidate_left"})
	c.expectAck("e")
	end := c.waitFor("end", func(f *ServerFrame) bool { return f.Type == FrameEffect && f.Effect.Type == engine.EffectSessionEnd })
	if end.Effect.Reason != "candidate_left" {
		t.Fatalf("end: %+v", end.Effect)
	}
}

// A transcript or tool call from a role the pack does not have is refused
// with the protocol's error frame, naming the role and the pack's roles,
// and is never logged: replaying the log must not meet it.
func TestWSLiveVoiceUnknownRole(t *testing.T) {
	h := newHarness(t)
	c := h.dial(nil)
	c.send(map[string]any{"id": "s", "type": "start", "pack": "hotseat", "session_id": "live2", "candidate_id": "c"})
	c.expectAck("s")
	h.runUntil("live2", 20000)
	cases := []struct {
		name  string
		frame map[string]any
		want  []string
	}{
		{"transcript from a stranger",
			map[string]any{"type": "agent_transcript", "agent": map[string]any{"role": "nobody", "text": "hi"}},
			[]string{`agent_transcript`, `"nobody"`, "hotseat", "marcus, priya, james"}},
		{"transcript from a near miss",
			map[string]any{"type": "agent_transcript", "agent": map[string]any{"role": "marcs", "text": "hi"}},
			[]string{`"marcs"`, "did you mean marcus?", "marcus, priya, james"}},
		{"tool call from a stranger",
			map[string]any{"type": "tool_call", "tool": map[string]any{"id": "call-1", "name": "transfer", "role": "nobody"}},
			[]string{`tool_call`, `"nobody"`, "marcus, priya, james"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("x%d", i)
			tc.frame["id"] = id
			c.send(tc.frame)
			f := c.expectError(id, CodeBadEvent)
			for _, w := range tc.want {
				if !strings.Contains(f.Message, w) {
					t.Errorf("message %q does not say %q", f.Message, w)
				}
			}
		})
	}
	rec, err := h.srv.dir.Read("live2")
	if err != nil {
		t.Fatal(err)
	}
	for i, in := range rec.Inputs {
		if in.Type == engine.InputAgentTranscript || in.Type == engine.InputToolCall {
			t.Errorf("input %d logged a refused %s", i+1, in.Type)
		}
	}
}
