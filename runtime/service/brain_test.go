package service

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/llm"
)

func seqEffect(kind, runID string) func(*ServerFrame) bool {
	return func(f *ServerFrame) bool {
		if f.Type != FrameEffect || f.Effect.Type != engine.EffectSequence || f.Effect.Kind != kind {
			return false
		}
		var x struct {
			RunID string `json:"run_id"`
		}
		return json.Unmarshal(f.Effect.Data, &x) == nil && x.RunID == runID
	}
}

func promptEvent(runID, text string) map[string]any {
	return map[string]any{"event_type": "user_prompt", "data": map[string]any{"run_id": runID, "text": text}}
}

// heldModel answers GPT at once and holds every other call until the
// test releases it, so an exchange stays under way without moving the
// clock.
type heldModel struct {
	release chan struct{}
	held    atomic.Int32
	mu      sync.Mutex
	asked   []string // provider/max tokens of each call
}

func (m *heldModel) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	m.mu.Lock()
	m.asked = append(m.asked, fmt.Sprintf("%s/%d", req.Provider, req.MaxOutputTokens))
	m.mu.Unlock()
	if req.Provider == "openai" {
		return llm.Response{Text: "I am GPT. Log it server-side.\n---\nCALL_CLAUDE=true\nCALL_GEMINI=true\nREASON_TAG=logging\n---"}, nil
	}
	m.held.Add(1)
	select {
	case <-m.release:
		return llm.Response{Text: "I am " + req.Provider + ". Too late to matter."}, nil
	case <-ctx.Done():
		return llm.Response{}, ctx.Err()
	}
}

// TestBrainOverWebSocket plays The Brain through the service as a
// frontend written against its contract would: a user_prompt frame
// starts an exchange whose effects stream back with the contract's
// field names, a second prompt while it runs is refused, and a cancel
// ends it with SEQUENCE_CANCELLED, after which the cancelled agent's
// answer changes nothing. Each role's call reaches the model with its
// vendor and the contract's token cap.
func TestBrainOverWebSocket(t *testing.T) {
	model := &heldModel{release: make(chan struct{})}
	h := newHarness(t, func(c *Config) { c.Model = RealModel(model) })
	c := h.dial(nil)
	start := startFrame("s", "brain1")
	start["pack"] = "brain"
	c.send(start)
	c.expectAck("s")

	c.send(eventFrame("p1", promptEvent("run-1", "Should we log the routing tag?")))
	c.expectAck("p1")
	c.waitFor("SEQUENCE_START", seqEffect(engine.SeqStart, "run-1"))
	done := c.waitFor("GPT's answer", func(f *ServerFrame) bool {
		return seqEffect(engine.SeqAgentCompleted, "run-1")(f) && f.Effect.Agent == "gpt"
	})
	// The contract's field names, as a frontend reads them.
	var a map[string]any
	if err := json.Unmarshal(done.Effect.Data, &a); err != nil {
		t.Fatal(err)
	}
	if a["agent"] != "gpt" || a["run_id"] != "run-1" || a["status"] != "success" || a["content"] != "I am GPT. Log it server-side." || a["errorCode"] != nil {
		t.Fatalf("AGENT_COMPLETED data %s", done.Effect.Data)
	}
	c.waitFor("Claude's call", func(f *ServerFrame) bool {
		return seqEffect(engine.SeqAgentStarted, "run-1")(f) && f.Effect.Agent == "claude"
	})
	// Claude is being asked: a second submit is refused, then the
	// exchange is cancelled.
	c.send(eventFrame("p2", promptEvent("run-2", "And another thing?")))
	c.expectAck("p2")
	c.waitFor("SUBMIT_REFUSED", seqEffect(engine.SeqRefused, "run-2"))
	c.send(eventFrame("x1", map[string]any{"event_type": "cancel", "data": map[string]any{"run_id": "run-1"}}))
	c.expectAck("x1")
	cancelled := c.waitFor("SEQUENCE_CANCELLED", seqEffect(engine.SeqCancelled, "run-1"))
	var x engine.Exchange
	if err := json.Unmarshal(cancelled.Effect.Data, &x); err != nil {
		t.Fatal(err)
	}
	if len(x.Rounds) != 1 || len(x.Rounds[0].Responses) != 3 {
		t.Fatalf("cancelled exchange rounds %s", cancelled.Effect.Data)
	}
	for _, r := range x.Rounds[0].Responses {
		want := engine.StatusCancelled
		if r.Agent == "gpt" {
			want = engine.StatusSuccess
		}
		if r.Status != want {
			t.Errorf("%s: status %s, want %s", r.Agent, r.Status, want)
		}
	}
	// Claude's answer lands now; nothing follows from it.
	close(model.release)
	if _, ok := h.quiesce("brain1"); !ok {
		t.Fatal("session gone")
	}
	for _, f := range c.effectList() {
		if f.Seq > cancelled.Seq {
			t.Errorf("effect after the cancel: %s %s", f.Effect.Type, f.Effect.Kind)
		}
	}
	model.mu.Lock()
	asked := strings.Join(model.asked, " ")
	model.mu.Unlock()
	if asked != "openai/1000 anthropic/1000" || model.held.Load() != 1 {
		t.Errorf("calls %q (%d held), want GPT's on openai and Claude's on anthropic, 1000 tokens each", asked, model.held.Load())
	}
	// The log replays to the same frames.
	sameFrames(t, h.replayFrames("brain1"), c.effectList())
}
