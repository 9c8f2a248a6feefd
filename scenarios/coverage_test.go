package scenarios_test

import (
	"testing"

	"github.com/batonhq/baton/engine"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
)

// TestCoverageCounts plays the bundled packs' built-in candidates and
// checks what the engine counted against what their timelines show:
// DayOne's built-in candidate meets both confidence steps, the BA anchor,
// three intent branches and the first silence step, and never gets its
// outcome-leak tripwire or an injection refused.
func TestCoverageCounts(t *testing.T) {
	type want struct {
		kind rules.CoverKind
		id   string
		hit  bool
	}
	cases := []struct {
		pack string
		want []want
	}{
		{"dayone", []want{
			{rules.CoverAnchor, "A1_BA_INTERRUPT", true},
			{rules.CoverAnchor, "A2_END", true},
			{rules.CoverWindow, "W1_QA_OPENER", true},
			{rules.CoverRoute, "R2_ADDRESSED", true},
			{rules.CoverRoute, "R3_INTENT/qa_repro_validation", true},
			{rules.CoverRoute, "R1_ANCHOR_DUE", false},
			{rules.CoverSilence, "1", true},
			{rules.CoverSilence, "2", true},
			{rules.CoverConfidence, "1", true},
			{rules.CoverConfidence, "2", true},
			{rules.CoverGuardrail, rules.GuardMaxQuestions, true},
			{rules.CoverGuardrail, "outcome_leaked", false},
			{rules.CoverGuardrail, "instruction_override", false},
		}},
		{"hotseat", []want{
			{rules.CoverTool, "transfer", true},
			{rules.CoverTool, "endPanel", true},
			{rules.CoverJob, "supervise", true},
			{rules.CoverJob, "deliberate", true},
		}},
	}
	for _, c := range cases {
		t.Run(c.pack, func(t *testing.T) {
			p, ev := loadBundled(t, c.pack)
			res, err := dryrun.Run(p, dryrun.Options{Events: ev})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Coverage) != len(p.CoverItems()) {
				t.Fatalf("coverage has %d counts for %d items", len(res.Coverage), len(p.CoverItems()))
			}
			for _, w := range c.want {
				i := p.CoverIndex(w.kind, w.id)
				if i < 0 {
					t.Errorf("%s %s is not a cover item", w.kind, w.id)
					continue
				}
				if got := res.Coverage[i] > 0; got != w.hit {
					t.Errorf("%s: hit %v (%d times), want %v", p.CoverItems()[i].Name(), got, res.Coverage[i], w.hit)
				}
			}
		})
	}
}

// A window is covered when its line is said: a window turn preempted by a
// reply waits again and is counted once, when it speaks, and one dropped
// after its window closed is not counted at all. Played over seeds of
// DayOne's candidate model, whose replies preempt windows often.
func TestWindowCoverageIsItsLine(t *testing.T) {
	p, _ := loadBundled(t, "dayone")
	m, err := dryrun.NewCandidateModel(p)
	if err != nil {
		t.Fatal(err)
	}
	preempted := 0
	for seed := range uint64(30) {
		res, err := dryrun.Run(p, dryrun.Options{Seed: seed, Candidate: m})
		if err != nil {
			t.Fatal(err)
		}
		said := map[string]uint32{}
		for _, r := range res.Records {
			switch {
			case r.Type == engine.EffectAgentMessage && r.Kind != rules.KindCover:
				said[r.Rule]++ // a cover line carries the rule of the turn it covers
			case r.Type == engine.EffectPreempted && r.Kind == "window":
				preempted++
			}
		}
		for i, it := range p.CoverItems() {
			if it.Kind == rules.CoverWindow && res.Coverage[i] != said[it.ID] {
				t.Errorf("seed %d: %s counted %d times, said %d times", seed, it.Name(), res.Coverage[i], said[it.ID])
			}
		}
	}
	if preempted == 0 {
		t.Fatal("no window turn was preempted: the test shows nothing")
	}
}
