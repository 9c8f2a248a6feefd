package engine_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
)

const scriptPack = `
name: scripted
duration: 5m
vars: {score: 0, mood: ""}
roles:
  host:
    persona: You host.
    focus: [test*]
    fallback: {default: "Fallback: which test first?"}
routing:
  - {id: R_SCRIPT, type: script, script: route.js#route, on_error: skip}
  - {id: R_DEFAULT, type: role, role: host}
guardrails:
  max_questions: 1
  role_fidelity: true
  rewrite: {script: route.js#rewrite, on_error: fallback}
scripting: {budget: 200ms}
rules:
  - id: on_code
    on: code_submitted
    do:
      - run: {script: route.js#review}
  - id: lucky
    on: candidate_message
    when: {script: route.js#lucky}
    do:
      - emit: {text: lucky}
`

const scriptJS = `
function route(ctx) {
  const t = ctx.msg.text;
  if (t === "loop") { while (true) {} }
  if (t === "deep") { return deeper(1); }
  if (t === "throw") { throw "no!"; }
  if (t === "number") { return 42; }
  if (t === "ghost") { return "ghost"; }
  if (t === "pollute") { globalThis.x = 1; return null; }
  if (t.startsWith("host:")) { return {role: "host", intent_tag: "scripted", goal: "g"}; }
  return null;
}
function deeper(n) { return deeper(n + 1) + 1; }
function rewrite(ctx) {
  if (ctx.text.indexOf("NUMBER") >= 0) return 7;
  if (ctx.text.indexOf("STILLBAD") >= 0) return "Still bad? Really?";
  return "Which test do you run first?";
}
function review(ctx) {
  return [
    {set: {var: "score", value: ctx.vars.score + 10}},
    {set: {var: "mood", value: "happy"}},
    {emit: "reviewed " + ctx.msg.code.length + " bytes at " + Date.now()},
    {say: {role: "host", kind: "review", line: "Which test covers that change?"}},
  ];
}
function lucky(ctx) {
  if (ctx.msg.text === "undef") return undefined;
  return Math.random() < 2;
}
`

func loadScripted(t *testing.T, js string) *rules.Pack {
	t.Helper()
	p, err := rules.LoadFS(fstest.MapFS{
		"pack.yaml":        {Data: []byte(scriptPack)},
		"scripts/route.js": {Data: []byte(js)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func msgIn(t int64, text string) engine.Input {
	return engine.Input{T: t, Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{Type: engine.EventMessage, Text: text}}
}

func TestScriptFailuresAreReportedAndContained(t *testing.T) {
	p := loadScripted(t, scriptJS)
	cases := []struct {
		text, reason string
	}{
		{"loop", "timeout"},
		{"deep", "stack"},
		{"throw", "scripts/route.js:6:24: throw: no!"},
		{"number", "want a role id"},
		{"ghost", `unknown role "ghost"`},
		{"pollute", "Cannot add property x, object is not extensible"},
	}
	for _, c := range cases {
		t.Run(c.text, func(t *testing.T) {
			s := engine.New(p, engine.Options{Seed: 1})
			effs, err := s.Step(msgIn(1000, c.text), nil)
			if err != nil {
				t.Fatal(err)
			}
			se := find(effs, engine.EffectScriptError)
			if se == nil || se.Rule != "R_SCRIPT" || !strings.Contains(se.Reason, c.reason) {
				t.Fatalf("want script_error containing %q, got %+v", c.reason, effs)
			}
			// on_error: skip, so the next route answers.
			if r := find(effs, engine.EffectRouted); r == nil || r.Rule != "R_DEFAULT" {
				t.Fatalf("the session should fall through to R_DEFAULT: %+v", effs)
			}
		})
	}
	// A later session on the same pack is unaffected, including by the
	// attempted global mutation.
	s := engine.New(p, engine.Options{Seed: 1})
	effs, _ := s.Step(msgIn(1000, "host: hello"), nil)
	if r := find(effs, engine.EffectRouted); r == nil || r.Rule != "R_SCRIPT" || r.IntentTag != "scripted" {
		t.Fatalf("healthy script route: %+v", effs)
	}
	if find(effs, engine.EffectScriptError) != nil {
		t.Fatalf("state leaked: %+v", effs)
	}
}

func TestScriptRewriteAndActions(t *testing.T) {
	p := loadScripted(t, scriptJS)
	s := engine.New(p, engine.Options{Seed: 1})
	var out []engine.Effect
	step := func(in engine.Input) []engine.Effect {
		t.Helper()
		n := len(out)
		var err error
		if out, err = s.Step(in, out); err != nil {
			t.Fatal(err)
		}
		return out[n:]
	}
	reply := func(tm int64, text string) *engine.Effect {
		t.Helper()
		req := find(step(msgIn(tm, "host: go")), engine.EffectLLMRequest)
		effs := step(engine.Input{T: tm + 500, Type: engine.InputLLMResult, LLM: &engine.LLMResult{ID: req.ID, Text: text}})
		m := find(effs, engine.EffectAgentMessage)
		if m == nil {
			t.Fatalf("no message: %+v", effs)
		}
		step(engine.Input{T: tm + 3000, Type: engine.InputSpeechDone, Speech: &engine.SpeechDone{ID: m.ID}})
		return m
	}
	if m := reply(1000, "Why? How? When?"); m.Text != "Which test do you run first?" || len(m.Guardrail) == 0 {
		t.Fatalf("script rewrite: %+v", m)
	}
	// A wrong shape triggers on_error: fallback.
	if m := reply(10000, "NUMBER? NUMBER?"); m.Text != "Fallback: which test first?" {
		t.Fatalf("fallback after a bad rewrite: %+v", m)
	}
	// A rewrite that still breaks the guardrails is not sent.
	if m := reply(20000, "STILLBAD? STILLBAD?"); m.Text != "Fallback: which test first?" {
		t.Fatalf("a still-bad rewrite must fall back: %+v", m)
	}
	effs := step(engine.Input{T: 30000, Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{Type: engine.EventCodeSubmitted, Code: "abc"}})
	if n := find(effs, engine.EffectNote); n == nil || n.Text != "reviewed 3 bytes at 30000" {
		t.Fatalf("run action emit (Date.now() is the session clock): %+v", effs)
	}
	if m := find(effs, engine.EffectAgentMessage); m == nil || m.Kind != "review" {
		t.Fatalf("run action say: %+v", effs)
	}
	// Condition script returning undefined: false, reported.
	effs = step(msgIn(40000, "undef"))
	if se := find(effs, engine.EffectScriptError); se == nil || !strings.Contains(se.Reason, "want true or false") {
		t.Fatalf("condition returning undefined: %+v", effs)
	}
}

func TestScriptLoadErrors(t *testing.T) {
	cases := map[string]string{
		"function route( {":                        "scripts/route.js:1:",
		"let state = 0;\nfunction route(){}":       "scripts/route.js:1:1: top-level let",
		"function route(){}\nfunction rewrite(){}": "script function review is not declared",
		"function route(){}\nnull.x;":              "loading",
	}
	for js, want := range cases {
		_, err := rules.LoadFS(fstest.MapFS{
			"pack.yaml":        {Data: []byte(scriptPack)},
			"scripts/route.js": {Data: []byte(js)},
		})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: want %q, got %v", js, want, err)
		}
	}
}

func TestScriptEndPolicy(t *testing.T) {
	pack := strings.Replace(scriptPack, "on_error: skip", "on_error: end", 1)
	p, err := rules.LoadFS(fstest.MapFS{"pack.yaml": {Data: []byte(pack)}, "scripts/route.js": {Data: []byte(scriptJS)}})
	if err != nil {
		t.Fatal(err)
	}
	s := engine.New(p, engine.Options{})
	effs, _ := s.Step(msgIn(1000, "throw"), nil)
	if e := find(effs, engine.EffectSessionEnd); e == nil || e.Reason != "script_error" {
		t.Fatalf("on_error: end should end the session: %+v", effs)
	}
}

// llm.shape reshapes each turn's request: extra guidance for a kind of
// turn, a rewritten goal, added context; a bad answer is reported and the
// request goes out unshaped.
func TestShapeScript(t *testing.T) {
	pack := scriptPack + `
llm:
  shape: {script: route.js#shape}
`
	js := scriptJS + `
function shape(ctx) {
  if (ctx.msg.text === "bad shape") return 42;
  return {system: ctx.system + " [" + ctx.turn.kind + "]", turn_goal: "g2", context: {b: 2, a: "one"}};
}
`
	p, err := rules.LoadFS(fstest.MapFS{"pack.yaml": {Data: []byte(pack)}, "scripts/route.js": {Data: []byte(js)}})
	if err != nil {
		t.Fatal(err)
	}
	s := engine.New(p, engine.Options{})
	effs, _ := s.Step(msgIn(1000, "host: hi"), nil)
	req := find(effs, engine.EffectLLMRequest)
	if req == nil || req.Request.System != "You host. [reply]" || req.Request.TurnGoal != "g2" {
		t.Fatalf("shaped request: %+v", req)
	}
	ctx := req.Request.ScenarioContext
	if len(ctx) != 2 || ctx[0].Key != "a" || ctx[1].Value != "2" {
		t.Fatalf("context in key order: %+v", ctx)
	}
	s = engine.New(p, engine.Options{})
	effs, _ = s.Step(msgIn(1000, "bad shape"), nil)
	if se := find(effs, engine.EffectScriptError); se == nil || !strings.Contains(se.Reason, "want the system text") {
		t.Fatalf("bad shape: %+v", effs)
	}
	if req := find(effs, engine.EffectLLMRequest); req == nil || req.Request.System != "You host." {
		t.Fatalf("unshaped request expected: %+v", req)
	}
}
