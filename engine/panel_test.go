package engine_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/batonhq/baton/engine"
)

const toolPack = `
name: tools
duration: 10m
vars: {handoffs: 0}
roles:
  a: {persona: "You are A. {{NOTE}}", fallback: {default: "A here?"}}
  b: {name: Bee, template: t, slots: {TOPIC: risk}}
templates:
  t: "You are {{NAME}} and ask about {{TOPIC}}."
tickets: {roles: [a, b], total: 3}
tools:
  pass:
    parameters: {type: object, properties: {to: {type: string, enum: [a, b]}, n: {type: integer, minimum: 1}}, required: [to]}
routing:
  - {id: R, type: role, role: active}
rules:
  - id: start
    on: live_start
    do: [floor: "'a'"]
  - id: pass
    on: tool:pass
    do:
      - ticket: {role: tool.caller, add: -1}
      - floor: tool.args.to
      - set: {var: handoffs, value: "handoffs + 1"}
      - inject: {role: tool.args.to, text: "Handed over by ${tool.caller} (${tickets(tool.caller)} left)."}
      - tool_result: "{'to': tool.args.to, 'total': tickets_total()}"
`

// A tool call arriving from a live speech-to-speech session (not from an
// llm_request) is validated, handled by the pack's rules, and answered.
func TestLiveToolCall(t *testing.T) {
	h := newHarness(t, toolPack)
	effs := h.step(engine.Input{T: 0, Type: engine.InputAdvance})
	if tk := find(effs, engine.EffectTickets); tk == nil || string(tk.Data) != `{"a":2,"b":1}` {
		t.Fatalf("tickets: %+v", effs)
	}
	call := func(tm int64, args string) []engine.Effect {
		return h.step(engine.Input{T: tm, Type: engine.InputToolCall, Tool: &engine.ToolCall{ID: "c1", Name: "pass", Args: json.RawMessage(args)}})
	}
	effs = call(1000, `{"to":"b"}`)
	res := find(effs, engine.EffectToolResult)
	if res == nil || res.IsError || res.Agent != "a" || string(res.Data) != `{"to":"b","total":2}` {
		t.Fatalf("tool result: %+v", effs)
	}
	if ho := find(effs, engine.EffectHandoff); ho == nil || ho.Agent != "b" {
		t.Fatalf("handoff: %+v", effs)
	}
	for _, bad := range []struct{ args, want string }{
		{`{"to":"c"}`, "is not one of"},
		{`{}`, `missing "to"`},
		{`{"to":"a","n":0}`, "below 1"},
		{`[1]`, "not a JSON object"},
	} {
		effs = call(2000, bad.args)
		res := find(effs, engine.EffectToolResult)
		if res == nil || !res.IsError || !strings.Contains(res.Reason, bad.want) {
			t.Errorf("%s: want refusal containing %q, got %+v", bad.args, bad.want, effs)
		}
	}
	effs = h.step(engine.Input{T: 3000, Type: engine.InputToolCall, Tool: &engine.ToolCall{ID: "c2", Name: "fly"}})
	if res := find(effs, engine.EffectToolResult); res == nil || !res.IsError || !strings.Contains(res.Reason, "not available") {
		t.Fatalf("unknown tool: %+v", effs)
	}
	// The next request for b carries its template, slots and the injection.
	effs = h.say(4000, "hello")
	req := find(effs, engine.EffectLLMRequest)
	if req == nil || req.Agent != "b" {
		t.Fatalf("b should answer: %+v", effs)
	}
	if want := "Handed over by a (1 left).\n\nYou are Bee and ask about risk."; req.Request.System != want {
		t.Fatalf("system:\n%q\nwant\n%q", req.Request.System, want)
	}
	if len(req.Request.Tools) != 1 || req.Request.Tools[0].Name != "pass" {
		t.Fatalf("tools offered: %+v", req.Request.Tools)
	}
}

// An agent that keeps making refused calls is a loop: after ToolLoopLimit
// refusals in a row the engine reports it and runs the pack's tool_loop
// rules; a successful call resets the count.
func TestToolLoop(t *testing.T) {
	h := newHarness(t, toolPack+`
  - id: looping
    on: tool_loop
    do: [end: {reason: "tool_loop"}]
`)
	h.step(engine.Input{T: 0, Type: engine.InputAdvance})
	bad := func(tm int64) []engine.Effect {
		return h.step(engine.Input{T: tm, Type: engine.InputToolCall, Tool: &engine.ToolCall{ID: "x", Name: "pass", Args: json.RawMessage(`{"to":"z"}`)}})
	}
	for i := 1; i < engine.ToolLoopLimit; i++ {
		bad(int64(i) * 100)
	}
	// A good call resets the count.
	h.step(engine.Input{T: 1000, Type: engine.InputToolCall, Tool: &engine.ToolCall{ID: "g", Name: "pass", Args: json.RawMessage(`{"to":"b"}`)}})
	for i := 1; i < engine.ToolLoopLimit; i++ {
		if effs := bad(1000 + int64(i)*100); find(effs, engine.EffectSessionEnd) != nil {
			t.Fatalf("ended after %d refusals", i)
		}
	}
	effs := bad(2000)
	if e := find(effs, engine.EffectAdapterError); e == nil || !strings.Contains(e.Reason, "tool loop") {
		t.Fatalf("want a tool loop report: %+v", effs)
	}
	if e := find(effs, engine.EffectSessionEnd); e == nil || e.Reason != "tool_loop" {
		t.Fatalf("tool_loop rules should run: %+v", effs)
	}
}
