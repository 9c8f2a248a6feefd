package engine_test

import (
	"os"
	"strings"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
)

// A context file holds at most rules.MaxContextFile bytes: a write that
// reaches the cap exactly is taken, one a byte past it is refused with a
// context_violation naming the sizes, and the file keeps what it had.
func TestContextFileCap(t *testing.T) {
	p, err := rules.Load(os.DirFS("testdata/packs/files"), ".")
	if err != nil {
		t.Fatal(err)
	}
	s := engine.New(p, engine.Options{Seed: 1})
	step := func(in engine.Input) []engine.Effect {
		t.Helper()
		out, err := s.Step(in, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	// refresh starts the job that overwrites ann's buffer.md with its
	// result, which comes back as size bytes.
	write := func(at int64, size int) engine.Effect {
		t.Helper()
		var id string
		for _, e := range step(engine.Input{T: at, Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{Type: "refresh"}}) {
			if e.Type == engine.EffectLLMRequest {
				id = e.ID
			}
		}
		if id == "" {
			t.Fatalf("%dms: no job asked for", at)
		}
		for _, e := range step(engine.Input{T: at + 1000, Type: engine.InputLLMResult, LLM: &engine.LLMResult{ID: id, Text: strings.Repeat("q", size)}}) {
			if (e.Type == engine.EffectContext || e.Type == engine.EffectContextViolation) && e.Text == "ann/buffer.md" {
				return e
			}
		}
		t.Fatalf("%dms: the job's result wrote nothing to ann/buffer.md", at)
		return engine.Effect{}
	}
	step(engine.Input{T: 0, Type: engine.InputAdvance})

	if e := write(1000, rules.MaxContextFile); e.Type != engine.EffectContext {
		t.Fatalf("a write of exactly the cap was refused: %s %s", e.Type, e.Reason)
	}
	e := write(10000, rules.MaxContextFile+1)
	if e.Type != engine.EffectContextViolation {
		t.Fatalf("a write a byte past the cap was taken: %s", e.Type)
	}
	if want := "it would hold 524289 bytes, over the 524288 a context file may hold"; !strings.Contains(e.Reason, want) {
		t.Fatalf("refusal %q does not say %q", e.Reason, want)
	}
}
