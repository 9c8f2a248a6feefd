package service

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/llm"
)

// silent is a model that answers nothing until its call is cancelled.
type silent struct{}

func (silent) Generate(ctx context.Context, _ llm.Request) (llm.Response, error) {
	<-ctx.Done()
	return llm.Response{}, ctx.Err()
}

// TestClientInputEndsPreparation: DayOne's opener is due at 00:00, so a
// new session waits for it before its clock starts. The model here does
// not answer; the candidate's first event ends the wait at once: the event is applied at engine time 0, the opener's
// preparation is failed as not ready, and the opener is asked for again.
func TestClientInputEndsPreparation(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Model = RealModel(silent{}) })
	c := h.dial(nil)
	c.send(startFrame("s", "prep"))
	c.expectAck("s")
	c.waitFor("the opener's preparation", func(f *ServerFrame) bool {
		return f.Type == FrameEffect && f.Effect.Type == engine.EffectLLMRequest && f.Effect.Rule == "W1_QA_OPENER"
	})
	// Waiting: the next wake is the end of the 3 s lead, not engine time 0.
	deadline := time.Now().Add(waitLimit)
	for {
		st, ok := h.status("prep")
		if !ok {
			t.Fatal("session gone")
		}
		if st.HasWake && st.Wake == 3000 && st.T == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not waiting for the preparation: %+v", st)
		}
		time.Sleep(time.Millisecond)
	}
	c.send(eventFrame("e", map[string]any{"event_type": "candidate_message", "data": map[string]any{"source": "text", "text": "Ready when you are."}}))
	if a := c.expectAck("e"); a.T == nil || *a.T != 0 {
		t.Fatalf("event applied at %v, want engine time 0", a.T)
	}
	// The wait ended before the event was applied, so its effects came
	// before the ack: the preparation failed, the opener asked again.
	var failed, askedAgain bool
	for _, f := range c.effectList() {
		switch e := f.Effect; {
		case e.Type == engine.EffectNote && e.Kind == engine.NoteWarning && strings.Contains(e.Reason, "not ready when the session's clock started"):
			failed = true
		case failed && e.Type == engine.EffectLLMRequest && e.Rule == "W1_QA_OPENER":
			askedAgain = true
		}
	}
	if !failed || !askedAgain {
		t.Fatalf("preparation failed: %t, opener asked again: %t; effects: %+v", failed, askedAgain, c.effectList())
	}
	c.waitFor("the candidate's message routed", func(f *ServerFrame) bool {
		return f.Type == FrameEffect && f.Effect.Type == engine.EffectRouted
	})
}
