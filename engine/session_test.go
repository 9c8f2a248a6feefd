package engine_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
)

// loadTestPack loads a pack folder under testdata/packs, the ones the
// transcripts use.
func loadTestPack(t testing.TB, dir string) *rules.Pack {
	t.Helper()
	p, err := rules.Load(os.DirFS(filepath.Join("testdata", "packs", dir)), ".")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func say(t int64, text string) engine.Input {
	return engine.Input{T: t, Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{Type: engine.EventMessage, Text: text}}
}

func find(effs []engine.Effect, typ engine.EffectType) *engine.Effect {
	for i := range effs {
		if effs[i].Type == typ {
			return &effs[i]
		}
	}
	return nil
}

// Refused inputs are checked with errors.Is, which a transcript's printed
// message cannot do for every sentinel a host branches on.
func TestInputErrors(t *testing.T) {
	s := engine.New(loadTestPack(t, "mini"), engine.Options{})
	if _, err := s.Step(engine.Input{T: 5000, Type: engine.InputAdvance}, nil); err != nil {
		t.Fatal(err)
	}
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
		{"engine trigger as event", engine.Input{T: 6000, Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{Type: "tool_loop"}}, engine.ErrUnknownEventType},
		{"event nobody handles", engine.Input{T: 6000, Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{Type: "slide_changed"}}, engine.ErrUnknownEventType},
		{"two payloads", engine.Input{T: 6000, Type: engine.InputSpeechDone, Speech: &engine.SpeechDone{ID: "m1"}, LLM: &engine.LLMResult{ID: "r1"}}, engine.ErrBadInput},
		{"advance with a payload", engine.Input{T: 6000, Type: engine.InputAdvance, Speech: &engine.SpeechDone{ID: "m1"}}, engine.ErrBadInput},
		{"payload of another kind", engine.Input{T: 6000, Type: engine.InputLLMResult, Speech: &engine.SpeechDone{ID: "m1"}}, engine.ErrBadInput},
		{"transcript from a stranger", engine.Input{T: 6000, Type: engine.InputAgentTranscript, Agent: &engine.AgentLine{Role: "ghost", Text: "hi"}}, engine.ErrBadInput},
		{"tool call from a stranger", engine.Input{T: 6000, Type: engine.InputToolCall, Tool: &engine.ToolCall{ID: "c1", Name: "x", Role: "ghost"}}, engine.ErrBadInput},
		{"long end reason", engine.Input{T: 6000, Type: engine.InputEnd, End: &engine.EndRequest{Reason: strings.Repeat("x", engine.MaxReason+1)}}, engine.ErrBadInput},
		{"negative time", engine.Input{T: -1, Type: engine.InputAdvance}, engine.ErrTimeBackwards},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.Step(c.in, nil)
			if !errors.Is(err, c.want) {
				t.Fatalf("want %v, got %v", c.want, err)
			}
		})
	}
	// The session is unharmed by bad input.
	effs, err := s.Step(say(7000, "still here"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if find(effs, engine.EffectLLMRequest) == nil {
		t.Fatal("session stopped working after bad input")
	}
}

// A routed effect's intent_tag is what the route read the message as; the
// route's id is its rule, and a route that only picks a role has no tag.
func TestRoutedIntentTag(t *testing.T) {
	cases := []struct {
		name, text, addressed string
		rule, agent, tag      string
	}{
		{name: "intent class", text: "I would replay the logs to verify it", rule: "R3_INTENT", agent: "qa", tag: "qa_repro_validation"},
		{name: "addressed", text: "what do you think", addressed: "ba", rule: "R2_ADDRESSED", agent: "ba"},
		{name: "mention", text: "@qa what do you think", rule: "R2_ADDRESSED", agent: "qa"},
		{name: "default", text: "hmm, not sure", rule: "R4_DEFAULT", agent: "tech_lead"},
	}
	p := loadDayOne(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := engine.New(p, engine.Options{})
			in := say(1000, c.text)
			in.Candidate.AddressedTo = c.addressed
			effs, err := s.Step(in, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := find(effs, engine.EffectRouted)
			if r == nil {
				t.Fatal("no routed effect")
			}
			if r.Rule != c.rule || r.Agent != c.agent || r.IntentTag != c.tag {
				t.Fatalf("routed rule=%q agent=%q intent_tag=%q, want rule=%q agent=%q intent_tag=%q", r.Rule, r.Agent, r.IntentTag, c.rule, c.agent, c.tag)
			}
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if c.tag == "" && strings.Contains(string(b), `"intent_tag"`) {
				t.Fatalf("a route without an intent writes an intent_tag: %s", b)
			}
		})
	}
}
