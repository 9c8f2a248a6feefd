package engine_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/rules/script/scripttest"
)

// A broken script is a load error naming the file and position. The cases
// swap scripts/route.js of the scripted pack; its pack.yaml stays as is.
func TestScriptLoadErrors(t *testing.T) {
	packYAML, err := os.ReadFile(filepath.Join("testdata", "packs", "scripted", rules.PackFile))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"function route( {":                        "scripts/route.js:1:",
		"let state = 0;\nfunction route(){}":       "scripts/route.js:1:1: top-level let",
		"function route(){}\nfunction rewrite(){}": "script function review is not declared",
		"function route(){}\nnull.x;":              "loading",
	}
	for js, want := range cases {
		_, err := rules.LoadFS(fstest.MapFS{
			rules.PackFile:     {Data: packYAML},
			"scripts/route.js": {Data: []byte(js)},
		})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: want %q, got %v", js, want, err)
		}
	}
}

// A live session's script budget is the one thing about a call that
// depends on the machine, so its outcome is a recorded fact. A call
// stopped live is stopped again in a replay without running, with the
// same effect bytes; a call that finished live runs to completion in a
// replay even where the budget would stop it now, and so does every call
// of an offline session.
func TestScriptBudgetIsARecordedFact(t *testing.T) {
	dir := filepath.Join("testdata", "packs", "scripted")
	p, err := rules.Load(os.DirFS(dir), ".")
	if err != nil {
		t.Fatal(err)
	}
	say := func(text string) engine.Input {
		return engine.Input{T: 1000, Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{Type: engine.EventMessage, Text: text}}
	}
	live := engine.Options{Seed: 1, LiveBudgets: true}
	run := func(p *rules.Pack, in engine.Input) []engine.Effect {
		s := engine.New(p, live)
		out, err := s.Step(in, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	stopped := run(p, say("loop"))
	facts := engine.FactsOf(stopped)
	if facts == nil || len(facts.Stopped) != 1 || facts.Stopped[0].Call != 0 || facts.Stopped[0].TookUS < 200_000 {
		t.Fatalf("live budget hit not reported as a fact: %+v in %+v", facts, stopped)
	}
	in := say("loop")
	in.Scripts = facts
	replay := run(p, in)
	if diff := cmp.Diff(stopped, replay); diff != "" {
		t.Fatalf("replay of a stopped call differs (-live +replay):\n%s", diff)
	}

	// A call stopped after drawing from Math.random leaves the session's
	// random source where it was live, so later scripts draw the same.
	code := engine.Input{T: 2000, Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{Type: engine.EventCodeSubmitted, Code: "rand"}}
	steps := func(facts1, facts2 *engine.ScriptFacts) ([]engine.Effect, []engine.Effect) {
		s := engine.New(p, live)
		in1 := say("drawloop")
		in1.Scripts = facts1
		out1, err := s.Step(in1, nil)
		if err != nil {
			t.Fatal(err)
		}
		in2 := code
		in2.Scripts = facts2
		out2, err := s.Step(in2, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out1, out2
	}
	live1, live2 := steps(nil, nil)
	f1 := engine.FactsOf(live1)
	if f1 == nil || f1.Stopped[0].Draws != 2 {
		t.Fatalf("draws before the stop not recorded: %+v", f1)
	}
	rep1, rep2 := steps(f1, &engine.ScriptFacts{})
	if diff := cmp.Diff(append(live1, live2...), append(rep1, rep2...)); diff != "" {
		t.Fatalf("replay after a stopped call that drew numbers differs (-live +replay):\n%s", diff)
	}

	// With a 1ms budget the slow route is stopped when it runs live on
	// any machine this runs on; replayed as a call that finished, it
	// finishes and routes.
	packYAML, err := os.ReadFile(filepath.Join(dir, rules.PackFile))
	if err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(filepath.Join(dir, "scripts", "route.js"))
	if err != nil {
		t.Fatal(err)
	}
	tight, err := rules.LoadFS(fstest.MapFS{
		rules.PackFile:     {Data: []byte(strings.Replace(string(packYAML), "budget: 200ms", "budget: 1ms", 1))},
		"scripts/route.js": {Data: js},
	})
	if err != nil {
		t.Fatal(err)
	}
	in = say("slow")
	in.Scripts = &engine.ScriptFacts{}
	offline, err := engine.New(tight, engine.Options{Seed: 1}).Step(say("slow"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string][]engine.Effect{"replay": run(tight, in), "offline": offline} {
		routed := false
		for _, e := range out {
			if e.Type == engine.EffectScriptError {
				t.Fatalf("%s: a call past the pack's budget was stopped: %+v", name, e)
			}
			routed = routed || (e.Type == engine.EffectRouted && e.IntentTag == "slowtrue")
		}
		if !routed {
			t.Fatalf("%s: the slow route did not answer: %+v", name, out)
		}
	}
}

func loadPack(t testing.TB, name string) *rules.Pack {
	t.Helper()
	p, err := rules.Load(os.DirFS(filepath.Join("testdata", "packs", name)), ".")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func repeatedInput() engine.Input {
	return engine.Input{T: 1000, Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{Type: engine.EventMessage, Text: scripttest.RepeatedWords()}}
}

// A session no host runs live is the same on every machine: the regex
// pack's route runs far past its budget and still answers with what its
// match found, and the effects are the same bytes on an idle machine and a
// loaded one.
func TestOfflineScriptsIgnoreTheMachine(t *testing.T) {
	p := loadPack(t, "regex")
	run := func() []byte {
		out, err := engine.New(p, engine.Options{Seed: 1}).Step(repeatedInput(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range out {
			if e.Type == engine.EffectScriptError {
				t.Fatalf("offline call stopped or failed: %+v", e)
			}
		}
		data, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	idle := run()
	if !bytes.Contains(idle, []byte(`"intent_tag":"repeated_w499"`)) {
		t.Fatalf("the route did not find the repeated word: %s", idle)
	}
	scripttest.Busy(t, runtime.GOMAXPROCS(0))
	if loaded := run(); !bytes.Equal(idle, loaded) {
		t.Fatalf("effects differ under load:\nidle   %s\nloaded %s", idle, loaded)
	}
}

// Live, the same call is stopped at its 1ms budget, and the stop is a
// recorded fact in the effects: a replay given the facts makes the same
// effects without running the call, on a loaded machine too.
func TestLiveScriptStopIsRecorded(t *testing.T) {
	p := loadPack(t, "regex")
	opts := engine.Options{Seed: 1, LiveBudgets: true}
	live, err := engine.New(p, opts).Step(repeatedInput(), nil)
	if err != nil {
		t.Fatal(err)
	}
	facts := engine.FactsOf(live)
	if facts == nil || len(facts.Stopped) != 1 || facts.Stopped[0].Call != 0 {
		t.Fatalf("the route's stop is not a recorded fact: %+v in %+v", facts, live)
	}
	for _, e := range live {
		if e.Type == engine.EffectRouted && e.Rule != "R_DEFAULT" {
			t.Fatalf("routed by the stopped script: %+v", e)
		}
		if e.Type == engine.EffectScriptError && !strings.Contains(e.Reason, "stopped after its 1ms budget") {
			t.Fatalf("stop reported as %q", e.Reason)
		}
	}
	scripttest.Busy(t, runtime.GOMAXPROCS(0))
	in := repeatedInput()
	in.Scripts = facts
	replay, err := engine.New(p, opts).Step(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(live, replay); diff != "" {
		t.Fatalf("replay of the stopped call differs (-live +replay):\n%s", diff)
	}
}
