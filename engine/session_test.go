package engine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
)

const miniPack = `
name: mini
tick: 100ms
duration: 2m
constants:
  WAIT: 5s
vars:
  answers: 0
roles:
  host:
    persona: You host.
    fallback: {default: "Shall we go on?"}
    lines: {default: ["Tell me more?"]}
timeline:
  windows:
    - id: W_SKIP
      open: 30s
      close: 40s
      when: "session.turns > 100"
      on_close: skip
      turn: {role: host, goal: never}
routing:
  - {id: R_HOST, type: role, role: host}
turn_taking:
  typing_debounce: 3s
  speech_resume: 800ms
  defer:
    when: candidate.speaking || candidate.typing
    max: 15s
silence:
  steps:
    - {after: WAIT, action: auto_advance}
rules:
  - id: count
    on: candidate_message
    do:
      - set: {var: answers, value: "answers + 1"}
  - id: bye
    on: candidate_message
    priority: -1
    when: "answers >= 2"
    do:
      - emit: {text: "two answers"}
  - id: tick
    every: 50s
    do:
      - emit: {text: "heartbeat"}
end:
  - id: too_many
    when: answers >= 3
    reason: enough_answers
`

type harness struct {
	t   *testing.T
	s   *engine.Session
	out []engine.Effect
}

func newHarness(t *testing.T, src string) *harness {
	t.Helper()
	p, err := rules.LoadBytes([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, s: engine.New(p, engine.Options{})}
}

func (h *harness) step(in engine.Input) []engine.Effect {
	h.t.Helper()
	var err error
	n := len(h.out)
	h.out, err = h.s.Step(in, h.out)
	if err != nil {
		h.t.Fatalf("step %+v: %v", in, err)
	}
	return h.out[n:]
}

func (h *harness) say(t int64, text string) []engine.Effect {
	return h.step(engine.Input{T: t, Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{Type: engine.EventMessage, Text: text}})
}

func find(effs []engine.Effect, typ engine.EffectType) *engine.Effect {
	for i := range effs {
		if effs[i].Type == typ {
			return &effs[i]
		}
	}
	return nil
}

func TestRulesAndEnd(t *testing.T) {
	h := newHarness(t, miniPack)
	h.step(engine.Input{T: 0, Type: engine.InputAdvance})
	effs := h.say(1000, "hello")
	req := find(effs, engine.EffectLLMRequest)
	if req == nil || req.Agent != "host" {
		t.Fatalf("want an llm_request for host, got %+v", effs)
	}
	// A stale id is ignored; the right one produces the message.
	if got := h.step(engine.Input{T: 1200, Type: engine.InputLLMResult, LLM: &engine.LLMResult{ID: "r999", Text: "nope"}}); len(got) != 0 {
		t.Fatalf("stale result produced %+v", got)
	}
	effs = h.step(engine.Input{T: 1500, Type: engine.InputLLMResult, LLM: &engine.LLMResult{ID: req.ID, Text: "Tell me more?"}})
	msg := find(effs, engine.EffectAgentMessage)
	if msg == nil || msg.Text != "Tell me more?" || msg.T != 1500 {
		t.Fatalf("want the agent message at 1500, got %+v", effs)
	}
	effs = h.say(2000, "again")
	if n := find(effs, engine.EffectNote); n == nil || n.Text != "two answers" {
		t.Fatalf("rule bye should fire on the second answer: %+v", effs)
	}
	effs = h.step(engine.Input{T: 50000, Type: engine.InputAdvance})
	if n := find(effs, engine.EffectNote); n == nil || n.Text != "heartbeat" || n.T != 50000 {
		t.Fatalf("every-rule should fire at 50s: %+v", effs)
	}
	effs = h.say(51000, "third")
	if e := find(effs, engine.EffectSessionEnd); e == nil || e.Reason != "enough_answers" {
		t.Fatalf("end rule should end the session: %+v", effs)
	}
	if _, err := h.s.Step(engine.Input{T: 52000, Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{Type: engine.EventMessage, Text: "late"}}, nil); !errors.Is(err, engine.ErrEnded) {
		t.Fatalf("want ErrEnded, got %v", err)
	}
}

func TestWindowSkippedWhenConditionNeverHolds(t *testing.T) {
	h := newHarness(t, miniPack)
	effs := h.step(engine.Input{T: 45000, Type: engine.InputAdvance})
	if w := find(effs, engine.EffectWindowSkipped); w == nil || w.T != 40000 || w.Rule != "W_SKIP" {
		t.Fatalf("want W_SKIP skipped at 40s, got %+v", effs)
	}
}

func TestTypingDebounceDefersReply(t *testing.T) {
	h := newHarness(t, miniPack)
	typing := true
	h.step(engine.Input{T: 1000, Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{Type: engine.EventTypingState, Typing: &typing}})
	// A voice message arrives while the candidate is still typing.
	effs := h.step(engine.Input{T: 1500, Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{Type: engine.EventMicState, MicActive: &typing}})
	effs = append(effs, h.step(engine.Input{T: 2000, Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{Type: engine.EventSpeechEnd}})...)
	effs = append(effs, h.say(2000, "spoken answer")...)
	if find(effs, engine.EffectDeferred) == nil || find(effs, engine.EffectLLMRequest) != nil {
		t.Fatalf("reply should be deferred while speaking: %+v", effs)
	}
	// The mic is still open: the reply waits until the cap (15 s).
	effs = h.step(engine.Input{T: 16900, Type: engine.InputAdvance})
	if find(effs, engine.EffectLLMRequest) != nil {
		t.Fatalf("released too early: %+v", effs)
	}
	effs = h.step(engine.Input{T: 17000, Type: engine.InputAdvance})
	if c := find(effs, engine.EffectDeferCap); c == nil || c.T != 17000 {
		t.Fatalf("want defer cap at 17s: %+v", effs)
	}
	if find(effs, engine.EffectLLMRequest) == nil {
		t.Fatalf("capped turn must go out: %+v", effs)
	}
}

func TestSpeechResumeBuffer(t *testing.T) {
	h := newHarness(t, miniPack)
	on, off := true, false
	h.step(engine.Input{T: 1000, Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{Type: engine.EventMicState, MicActive: &on}})
	h.say(2000, "answer while talking")
	h.step(engine.Input{T: 3000, Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{Type: engine.EventMicState, MicActive: &off}})
	if effs := h.step(engine.Input{T: 3700, Type: engine.InputAdvance}); find(effs, engine.EffectLLMRequest) != nil {
		t.Fatalf("released before the 800 ms buffer: %+v", effs)
	}
	effs := h.step(engine.Input{T: 3800, Type: engine.InputAdvance})
	if r := find(effs, engine.EffectLLMRequest); r == nil || r.T != 3800 {
		t.Fatalf("want release at speech end + 800 ms: %+v", effs)
	}
}

func TestInputErrors(t *testing.T) {
	h := newHarness(t, miniPack)
	h.step(engine.Input{T: 5000, Type: engine.InputAdvance})
	bad := 1.5
	cases := []struct {
		name string
		in   engine.Input
		want error
	}{
		{"backwards", engine.Input{T: 4000, Type: engine.InputAdvance}, engine.ErrTimeBackwards},
		{"no payload", engine.Input{T: 6000, Type: engine.InputCandidate}, engine.ErrBadInput},
		{"bad confidence", engine.Input{T: 6000, Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{Type: "candidate_message", Text: "x", STTConfidence: &bad}}, engine.ErrBadInput},
		{"unknown type", engine.Input{T: 6000, Type: "bogus"}, engine.ErrBadInput},
		{"reserved event type", engine.Input{T: 6000, Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{Type: "session_start"}}, engine.ErrBadInput},
		{"reserved tool trigger", engine.Input{T: 6000, Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{Type: "tool:pass"}}, engine.ErrBadInput},
		{"llm without id", engine.Input{T: 6000, Type: engine.InputLLMResult, LLM: &engine.LLMResult{}}, engine.ErrBadInput},
		{"speech without id", engine.Input{T: 6000, Type: engine.InputSpeechDone, Speech: &engine.SpeechDone{}}, engine.ErrBadInput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := h.s.Step(c.in, nil)
			if !errors.Is(err, c.want) {
				t.Fatalf("want %v, got %v", c.want, err)
			}
		})
	}
	// The session is unharmed by bad input.
	if effs := h.say(7000, "still here"); find(effs, engine.EffectLLMRequest) == nil {
		t.Fatal("session stopped working after bad input")
	}
}

func TestEmptyReplyUsesFallback(t *testing.T) {
	h := newHarness(t, miniPack)
	req := find(h.say(1000, "hi"), engine.EffectLLMRequest)
	effs := h.step(engine.Input{T: 1500, Type: engine.InputLLMResult, LLM: &engine.LLMResult{ID: req.ID, Text: "  "}})
	if e := find(effs, engine.EffectAdapterError); e == nil || !strings.Contains(e.Reason, "empty") {
		t.Fatalf("want adapter_error for an empty reply: %+v", effs)
	}
	if m := find(effs, engine.EffectAgentMessage); m == nil || !m.Fallback || m.Text != "Shall we go on?" {
		t.Fatalf("want the fallback line: %+v", effs)
	}
}

func TestEndInput(t *testing.T) {
	h := newHarness(t, miniPack)
	h.say(1000, "hello")
	effs := h.step(engine.Input{T: 2000, Type: engine.InputEnd, End: &engine.EndRequest{Reason: "candidate_left"}})
	if e := find(effs, engine.EffectSessionEnd); e == nil || e.Reason != "candidate_left" || e.T != 2000 {
		t.Fatalf("want session_end candidate_left at 2s: %+v", effs)
	}
	if !h.s.Ended() {
		t.Fatal("session should have ended")
	}
}
