package main

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/dop251/goja"
)

// flow runs the Code nodes of ../workflow.json the way n8n chains them
// behind each webhook, with one static data object for the workflow, so
// the decision logic the benchmark measures is checked without n8n.
type flow struct {
	t  *testing.T
	vm *goja.Runtime
}

func loadFlow(t *testing.T) *flow {
	t.Helper()
	data, err := os.ReadFile("../workflow.json")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Nodes []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Parameters struct {
				JSCode string `json:"jsCode"`
			} `json:"parameters"`
		} `json:"nodes"`
		Connections map[string]struct {
			Main [][]struct {
				Node string `json:"node"`
			} `json:"main"`
		} `json:"connections"`
	}
	if err := json.Unmarshal(data, &wf); err != nil {
		t.Fatalf("../workflow.json: %v", err)
	}
	vm := goja.New()
	if _, err := vm.RunString(`
		var store = {}, nodes = {};
		function $getWorkflowStaticData(kind) {
			if (kind !== 'global') throw new Error('static data ' + kind);
			return store;
		}
		// run passes one item through the named nodes, as n8n does.
		function run(names, json) {
			let item = JSON.parse(json);
			for (const n of names) {
				const out = nodes[n]({ first: () => ({ json: item }), all: () => [{ json: item }] });
				if (!Array.isArray(out) || out.length !== 1) throw new Error(n + ' returned ' + JSON.stringify(out));
				item = out[0].json;
			}
			return JSON.stringify(item);
		}`); err != nil {
		t.Fatal(err)
	}
	codes := 0
	for _, n := range wf.Nodes {
		if n.Type != "n8n-nodes-base.code" {
			continue
		}
		codes++
		name, _ := json.Marshal(n.Name)
		if _, err := vm.RunString("nodes[" + string(name) + "] = function ($input) {\n" + n.Parameters.JSCode + "\n};"); err != nil {
			t.Fatalf("Code node %s: %v", n.Name, err)
		}
	}
	if codes != 3 {
		t.Fatalf("%d Code nodes in ../workflow.json, want 3", codes)
	}
	// The webhooks must reach the nodes this test chains.
	for from, to := range map[string]string{"Webhook Start Session": "Init Session State", "Webhook Candidate Event": "Update Runtime State",
		"Update Runtime State": "Decide Next Turn", "Decide Next Turn": "Respond Decision", "Init Session State": "Respond Start"} {
		c := wf.Connections[from].Main
		if len(c) != 1 || len(c[0]) != 1 || c[0][0].Node != to {
			t.Fatalf("%s is connected to %+v, want %s", from, c, to)
		}
	}
	return &flow{t: t, vm: vm}
}

// post sends a body through one webhook's Code nodes and returns what
// Respond to Webhook would answer.
func (f *flow) post(path string, body map[string]any) map[string]any {
	f.t.Helper()
	names := []string{"Update Runtime State", "Decide Next Turn"}
	if path == "start" {
		names = []string{"Init Session State"}
	}
	in, err := json.Marshal(map[string]any{"headers": map[string]any{}, "body": body})
	if err != nil {
		f.t.Fatal(err)
	}
	run, _ := goja.AssertFunction(f.vm.Get("run"))
	namesJS := f.vm.ToValue(names)
	v, err := run(goja.Undefined(), namesJS, f.vm.ToValue(string(in)))
	if err != nil {
		f.t.Fatalf("%s %v: %v", path, body, err)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(v.String()), &out); err != nil {
		f.t.Fatal(err)
	}
	return out
}

func startBodyFor(id string) map[string]any {
	return map[string]any{"session_id": id, "candidate_id": "cand_demo", "started_at": "2026-02-20T23:00:00Z",
		"scenario_id": "payment_double_charge_vip_discount_v1", "frontend_agent_webhook": "http://localhost:3000/a", "end_callback_webhook": "http://localhost:3000/e"}
}

type step struct {
	ts   float64
	typ  string
	data map[string]any
	// want: decision action, and for a turn its role, kind and rule;
	// or the error code and status.
	action, role, kind, rule string
	code                     string
	status                   float64
}

func mic(on bool) map[string]any    { return map[string]any{"mic_active": on} }
func typing(on bool) map[string]any { return map[string]any{"typing": on} }
func said(text string) map[string]any {
	return map[string]any{"source": "voice", "text": text, "stt_confidence": 0.92}
}

// TestWorkflowDecisions plays sessions through the workflow's Code nodes
// and checks each decision against the seed's rules.
func TestWorkflowDecisions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{name: "window waits for speech to end", steps: []step{
			{ts: 9, typ: "mic_state_changed", data: mic(true), action: "defer", role: "qa", rule: "W1_QA_OPENER"},
			{ts: 12, typ: "mic_state_changed", data: mic(false), action: "say", role: "qa", kind: "window", rule: "W1_QA_OPENER"},
		}},
		{name: "routing: addressed, then intent, then tech lead", steps: []step{
			{ts: 40, typ: "candidate_message", data: map[string]any{"source": "text", "text": "@ba is the launch still on?"}, action: "say", role: "ba", kind: "reply", rule: "R2_ADDRESSED"},
			{ts: 41, typ: "candidate_message", data: map[string]any{"source": "text", "text": "the logs", "addressed_to": "tech_lead"}, action: "say", role: "tech_lead", rule: "R2_ADDRESSED"},
			{ts: 42, typ: "candidate_message", data: said("I'd replay it and check the gateway logs"), action: "say", role: "qa", rule: "R3_INTENT"},
			{ts: 43, typ: "candidate_message", data: said("the deadline impact on customers"), action: "say", role: "ba", rule: "R3_INTENT"},
			{ts: 44, typ: "candidate_message", data: said("a rollback is the lower risk"), action: "say", role: "tech_lead", rule: "R3_INTENT"},
			{ts: 45, typ: "candidate_message", data: said("not sure"), action: "say", role: "tech_lead", rule: "R4_DEFAULT"},
		}},
		{name: "low confidence: repeat, then typed answer, no intent", steps: []step{
			{ts: 40, typ: "candidate_message", data: map[string]any{"source": "voice", "text": "replay the logs", "stt_confidence": 0.5}, action: "say", role: "tech_lead", kind: "repeat_request"},
			{ts: 45, typ: "candidate_message", data: map[string]any{"source": "voice", "text": "logs", "stt_confidence": 0.6}, action: "say", role: "tech_lead", kind: "typed_answer_hint"},
			{ts: 50, typ: "candidate_message", data: said("replay the logs"), action: "say", role: "qa", kind: "reply"},
		}},
		{name: "typing defers a reply to the cap", steps: []step{
			{ts: 40, typ: "typing_state_changed", data: typing(true), action: "wait"},
			{ts: 41, typ: "candidate_message", data: said("replay it"), action: "defer", role: "qa", rule: "R3_INTENT"},
			{ts: 43, typ: "typing_state_changed", data: typing(true), action: "defer", role: "qa"},
			{ts: 56, typ: "typing_state_changed", data: typing(true), action: "say", role: "qa", kind: "assumption_followup", rule: "R3_INTENT"},
		}},
		{name: "silence: nudge after 12 s, advance 8 s later", steps: []step{
			{ts: 110, typ: "candidate_message", data: said("not sure"), action: "say", role: "tech_lead"},
			{ts: 121, typ: "speech_end", action: "wait"},
			{ts: 122, typ: "speech_end", action: "say", role: "tech_lead", kind: "nudge", rule: "SILENCE"},
			{ts: 129, typ: "speech_end", action: "wait"},
			{ts: 130, typ: "speech_end", action: "auto_advance", rule: "SILENCE"},
			{ts: 150, typ: "speech_end", action: "wait"},
		}},
		{name: "the BA anchor is never deferred, and the end ends", steps: []step{
			{ts: 179, typ: "mic_state_changed", data: mic(true), action: "wait"},
			{ts: 180, typ: "mic_state_changed", data: mic(true), action: "say", role: "ba", kind: "anchor", rule: "A1_BA_INTERRUPT"},
			{ts: 181, typ: "mic_state_changed", data: mic(true), action: "wait"},
			{ts: 600, typ: "speech_end", action: "end", rule: "A2_END"},
			{ts: 601, typ: "speech_end", code: "session_not_found", status: 404},
		}},
		{name: "bad events", steps: []step{
			{ts: 35, typ: "speech_end", action: "wait"},
			{ts: 34, typ: "speech_end", code: "time_backwards", status: 409},
			{ts: 36, typ: "dance", code: "unknown_event_type", status: 400},
			{ts: -1, typ: "speech_end", code: "bad_event", status: 400},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := loadFlow(t)
			if got := f.post("start", startBodyFor("s1")); got["ok"] != true || got["status"] != 200.0 {
				t.Fatalf("start: %v", got)
			}
			for i, s := range tc.steps {
				body := map[string]any{"session_id": "s1", "event_type": s.typ, "ts_sec": s.ts}
				if s.data != nil {
					body["data"] = s.data
				}
				got := f.post("event", body)
				if s.code != "" {
					e, _ := got["error"].(map[string]any)
					if got["ok"] != false || e["code"] != s.code || got["status"] != s.status {
						t.Errorf("step %d (%s at %v): %v, want error %s %v", i, s.typ, s.ts, got, s.code, s.status)
					}
					continue
				}
				d, _ := got["decision"].(map[string]any)
				if got["ok"] != true || got["status"] != 200.0 || d == nil {
					t.Fatalf("step %d (%s at %v): %v", i, s.typ, s.ts, got)
				}
				for k, want := range map[string]string{"action": s.action, "role": s.role, "kind": s.kind, "rule": s.rule} {
					if want != "" && d[k] != want {
						t.Errorf("step %d (%s at %v): %s %v, want %s (decision %v)", i, s.typ, s.ts, k, d[k], want, d)
					}
				}
				if d["action"] == "say" {
					if text, _ := d["text"].(string); text == "" {
						t.Errorf("step %d: a turn with no text: %v", i, d)
					}
				}
			}
		})
	}
}

// TestWorkflowSessions checks what the start webhook refuses and that
// each session counts only its own events.
func TestWorkflowSessions(t *testing.T) {
	f := loadFlow(t)
	for _, id := range []string{"a", "b"} {
		if got := f.post("start", startBodyFor(id)); got["ok"] != true {
			t.Fatalf("start %s: %v", id, got)
		}
	}
	if got := f.post("start", startBodyFor("a")); got["status"] != 409.0 {
		t.Errorf("second start of a: %v, want 409", got)
	}
	missing := startBodyFor("c")
	delete(missing, "end_callback_webhook")
	if got := f.post("start", missing); got["status"] != 400.0 {
		t.Errorf("start without end_callback_webhook: %v, want 400", got)
	}
	for i, id := range []string{"a", "a", "b", "a"} {
		f.post("event", map[string]any{"session_id": id, "event_type": "speech_end", "ts_sec": float64(i)})
	}
	for id, want := range map[string]float64{"a": 4, "b": 2} {
		got := f.post("event", map[string]any{"session_id": id, "event_type": "speech_end", "ts_sec": 10.0})
		if got["events"] != want {
			t.Errorf("session %s: events %v, want %v", id, got["events"], want)
		}
	}
}
