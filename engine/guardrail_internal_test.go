package engine

import (
	"os"
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
