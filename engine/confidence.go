package engine

import (
	"strconv"

	"github.com/batonhq/baton/rules"
)

// confidence is speech-to-text confidence handling: a message heard
// below the pack's threshold is not routed (its words may be wrong, so no
// intent is read into them); the agents ask again, differently each time
// it happens in a row.
type confidence struct {
	lowInRow int
}

// low reports whether ev is a message heard below the threshold.
func (c *confidence) low(s *Session, ev *CandidateEvent) bool {
	sc := &s.p.SpeechConfidence
	return len(sc.Steps) > 0 && ev.STTConfidence != nil && *ev.STTConfidence < sc.Threshold.Value
}

func (c *confidence) reset() { c.lowInRow = 0 }

// ask answers an unclear message with the step for its count in a row.
func (c *confidence) ask(s *Session, ev *CandidateEvent) {
	sc := &s.p.SpeechConfidence
	c.lowInRow++
	n := 0
	for i := range sc.Steps {
		if float64(c.lowInRow) >= sc.Steps[i].Count.Value {
			n = i
		}
	}
	step := &sc.Steps[n]
	s.coverage.step(s, rules.CoverConfidence, n)
	t := s.newTurn(&step.Turn, "speech_confidence", false)
	s.emit(Effect{Type: EffectRouted, Agent: t.role, Kind: t.kind, Rule: "speech_confidence",
		Reason: "low confidence " + strconv.FormatFloat(*ev.STTConfidence, 'f', 2, 64) + ", " + strconv.Itoa(c.lowInRow) + " in a row"})
	s.preemptScheduled("speech_confidence")
	s.enqueue(t)
}
