package engine_test

import (
	"fmt"
	"os"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
)

// A host's loop: take the next input (here only the clock, a candidate who
// stays silent, a model that answers every request 600 ms later and a
// voice that speaks every line in 2 s), check it, step the engine, act on
// the effects. The panel's nudges follow its silence ladder; the BA's line
// at 03:00 is the pack's hard anchor. A model that always says the same
// line is asked again once a line would be said a fourth time
// (max_repeats), or the BA's line is off role, and then rewritten from
// the role's lines. The pack prepares its scheduled lines 3 s ahead
// (llm.prepare), so windows, nudges and the anchor land on their second
// although the model takes 600 ms.
func Example() {
	pack, err := rules.Load(os.DirFS("../scenarios/dayone"), ".")
	if err != nil {
		fmt.Println(err)
		return
	}
	s := engine.New(pack, engine.Options{Seed: 1})
	var pending []engine.Input // results the host owes the engine, in time order
	var buf []engine.Effect
	// Lines due within their lead of second 0 are asked for before the
	// clock starts; the host waits for the answers and hands them in at
	// T 0, so the first line is on time too.
	if s.NeedsPrepare() {
		buf, _ = s.Step(engine.Input{Type: engine.InputPrepare}, buf[:0])
		for _, e := range buf {
			if e.Type == engine.EffectLLMRequest {
				pending = append(pending, engine.Input{Type: engine.InputLLMResult,
					LLM: &engine.LLMResult{ID: e.ID, Text: "What would you test first?"}})
			}
		}
	}
	for !s.Ended() {
		deadline, ok := s.NextDeadline()
		var in engine.Input
		switch {
		case len(pending) > 0 && (!ok || pending[0].T <= deadline):
			in, pending = pending[0], pending[1:]
		case ok && deadline > 200_000:
			// The operator ends the example after the 03:00 anchor.
			in = engine.Input{T: deadline, Type: engine.InputEnd, End: &engine.EndRequest{Reason: "example over"}}
		case ok:
			in = engine.Input{T: deadline, Type: engine.InputAdvance}
		default:
			return
		}
		if err := engine.CheckInput(pack, &in); err != nil {
			fmt.Println("refused:", err)
			return
		}
		// A real host appends in to the session's log here, before it
		// is applied.
		buf, err = s.Step(in, buf[:0])
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, e := range buf {
			switch e.Type {
			case engine.EffectLLMRequest:
				pending = append(pending, engine.Input{T: e.T + 600, Type: engine.InputLLMResult,
					LLM: &engine.LLMResult{ID: e.ID, Text: "What would you test first?"}})
			case engine.EffectAgentMessage:
				fmt.Printf("%s %s: %.40s\n", rules.FormatClock(e.T), e.Agent, e.Text)
				pending = append(pending, engine.Input{T: e.T + 2000, Type: engine.InputSpeechDone,
					Speech: &engine.SpeechDone{ID: e.ID}})
			case engine.EffectSessionEnd:
				fmt.Printf("%s end: %s\n", rules.FormatClock(e.T), e.Reason)
			}
		}
	}
	// Output:
	// 00:00.0 qa: What would you test first?
	// 00:14.0 qa: What would you test first?
	// 01:00.0 tech_lead: What would you test first?
	// 01:14.0 tech_lead: What is your first priority, and what is
	// 03:00.0 ba: What is the customer impact if we keep t
	// 03:14.0 ba: Should refunds go out before the launch,
	// 03:24.0 end: example over
}
