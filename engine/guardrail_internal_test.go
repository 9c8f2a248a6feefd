package engine

import (
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/batonhq/baton/rules"
)

// The guardrails run on every generated line, so their checks must cost
// next to nothing beside the model call they follow.
func BenchmarkGuardrailCheck(b *testing.B) {
	p, err := rules.Load(os.DirFS("../scenarios/dayone"), ".")
	if err != nil {
		b.Fatal(err)
	}
	const reply = "Noted, the retry fires twice under load. The hotfix is a one-line guard. What is your rollback plan if it fails?"
	for _, bc := range []struct {
		name      string
		tripwires bool
	}{
		// The built-in limits and the repeat cap: questions, sentences,
		// role fidelity, times said.
		{"builtin", false},
		// DayOne's whole check, with its tripwire script.
		{"dayone", true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := New(p, Options{Seed: 1})
			if !bc.tripwires {
				s.p = shallowWithoutTripwires(p)
			}
			t := &turn{role: "tech_lead", kind: "reply", goal: "respond_to_candidate", rule: "bench"}
			if v := s.check(t, reply); len(v) != 0 {
				b.Fatalf("the reply breaks %v", v)
			}
			b.ReportAllocs()
			for b.Loop() {
				s.check(t, reply)
			}
		})
	}
}

func shallowWithoutTripwires(p *rules.Pack) *rules.Pack {
	cp := *p
	cp.Guardrails.Tripwires = nil
	return &cp
}

// DayOne's input checks on an everyday answer: its script (a keyword
// search that turns the message away before any pattern runs) and its
// expression.
func BenchmarkInputGuard(b *testing.B) {
	p, err := rules.Load(os.DirFS("../scenarios/dayone"), ".")
	if err != nil {
		b.Fatal(err)
	}
	s := New(p, Options{Seed: 1})
	ev := &CandidateEvent{Type: EventMessage, Source: "text", Text: "I would check the gateway logs and replay the failed payment."}
	s.env.Msg.Text = ev.Text
	if _, ok := s.screen(ev); !ok {
		b.Fatal("an everyday answer was refused")
	}
	b.ReportAllocs()
	for b.Loop() {
		s.screen(ev)
	}
}

// A script's argument is emptied when its call returns: a script that
// kept it (pooled runtimes serve every session) would otherwise hold the
// session itself, read from another session's goroutine.
func TestFacadeEndsWithItsCall(t *testing.T) {
	p, err := rules.Load(os.DirFS("testdata/packs/guard"), ".")
	if err != nil {
		t.Fatal(err)
	}
	s := New(p, Options{Seed: 1})
	arg := s.scriptArg("qa")
	if _, ok := arg.Field("msg"); !ok {
		t.Fatal("a live facade has no msg")
	}
	s.callScript(&rules.ScriptRef{File: "guard.js", Func: "shouting"}, arg, "test")
	if v, ok := arg.Field("msg"); ok || v != nil || arg.Keys() != nil || arg.s != nil {
		t.Fatalf("after the call the facade still answers: %v %v %v", v, ok, arg.Keys())
	}
}

// Each view a script reads answers every field as the expression view
// of the same name holds it, and reads as empty once its call is over.
func TestScriptViewsMatchExpressions(t *testing.T) {
	p, err := rules.Load(os.DirFS("testdata/packs/guard"), ".")
	if err != nil {
		t.Fatal(err)
	}
	s := New(p, Options{Seed: 1})
	arg := s.scriptArg("qa") // refreshes the views from the session
	// Distinct values, so a field answered from its neighbour shows.
	s.env.Msg = rules.MessageView{Type: "message", Text: "the text", Source: "voice", Confidence: 0.5, AddressedTo: "qa", LowConfidence: true, Code: "x := 1", RunID: "run-1", Line: 7}
	s.env.Candidate = rules.CandidateView{MicActive: true, Typing: false, Speaking: true, LowSTTCount: 2, Messages: 3, LastMessageMS: 4000, LastMessage: "last", LastKeystrokeMS: 11, LastSpeechEndMS: 12}
	s.env.Session = rules.SessionView{LastRole: "qa", Turns: 5, AgentSpeaking: true, AwaitingReply: false, LiveVoice: true, TurnPending: true, HardTurnPending: false}
	s.env.Floor = rules.FloorView{Holder: "qa", SinceMS: 6000, Lines: 8, Answers: 9, AutoAdvances: 10}
	for name, view := range map[string]any{"msg": &s.env.Msg, "candidate": &s.env.Candidate, "session": &s.env.Session, "floor": &s.env.Floor} {
		v, ok := arg.Field(name)
		obj, isObj := v.(interface {
			Keys() []string
			Field(string) (any, bool)
		})
		if !ok || !isObj {
			t.Fatalf("%s: %T", name, v)
		}
		keys := obj.Keys()
		if !slices.IsSorted(keys) {
			t.Errorf("%s: keys not sorted: %v", name, keys)
		}
		rv := reflect.ValueOf(view).Elem()
		for _, k := range keys {
			got, ok := obj.Field(k)
			var want any
			for i := range rv.NumField() {
				if rv.Type().Field(i).Tag.Get("expr") == k {
					want = rv.Field(i).Interface()
				}
			}
			if !ok || want == nil || got != want {
				t.Errorf("%s.%s = %v (%v), want %v", name, k, got, ok, want)
			}
		}
		defer func() {
			if v, ok := obj.Field(keys[0]); ok || v != nil || obj.Keys() != nil {
				t.Errorf("%s.%s still reads %v after the call, keys %v", name, keys[0], v, obj.Keys())
			}
		}()
	}
	arg.done()
}
