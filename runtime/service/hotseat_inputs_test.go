package service

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/batonhq/baton/engine"
)

// A Hot Seat session over the WebSocket with the candidate's own
// scenario, documents and depth: the Brain's setup request carries those
// files by name, the tickets split seven questions as the seed's
// algorithm does, the verdict names the scenario, and the session's log
// replays to the same effects.
func TestHotSeatOwnMaterialOverWebSocket(t *testing.T) {
	reqs := &requestLog{reqs: map[string][]engine.LLMRequest{}}
	h := newHarness(t, func(c *Config) { c.Model = reqs.factory() })
	const scenario = "We will replace the ledger database with an event log in one quarter, with no downtime."
	pdf := []byte("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n%%EOF\n")
	c := h.dial(nil)
	c.send(inputsStart("s", "hs1", "hotseat", map[string]any{
		"scenario_text":  scenario,
		"depth":          7,
		"candidate_name": "Ada",
		"documents": []any{
			map[string]any{"name": "migration-plan.pdf", "data": base64.StdEncoding.EncodeToString(pdf)},
			map[string]any{"name": "risks.md", "text": "# Risks\nDual writes during the cut-over."},
		},
	}))
	c.expectAck("s")

	var tickets map[string]int
	h.awaitEffect(c, "hs1", "the ticket split", func(e *WireEffect) bool {
		return e.Type == engine.EffectTickets && json.Unmarshal(e.Data, &tickets) == nil
	})
	if tickets["marcus"] != 3 || tickets["priya"] != 2 || tickets["james"] != 2 {
		t.Fatalf("tickets %v, want marcus 3, priya 2, james 2 (7 questions, every juror one, the surplus by weight in roster order)", tickets)
	}

	// The candidate answers every juror's line until the verdict.
	var verdict *WireEffect
	answered := map[uint64]bool{}
	for n := 0; verdict == nil; n++ {
		if n > 60 {
			t.Fatal("no verdict after 60 steps")
		}
		h.awaitEffect(c, "hs1", "a juror's line or the verdict", func(e *WireEffect) bool {
			return e.Type == engine.EffectReport || e.Type == engine.EffectAgentMessage && e.Agent != "brain"
		})
		effs := c.effectList()
		for _, f := range effs {
			if f.Effect.Type == engine.EffectReport && f.Effect.Kind == "verdict" {
				verdict = &f.Effect
			}
		}
		for _, f := range effs {
			switch {
			case verdict != nil:
			case f.Effect.Type == engine.EffectAgentMessage && f.Effect.Agent != "brain" && !answered[f.Seq]:
				answered[f.Seq] = true
				id := fmt.Sprintf("a%d", len(answered))
				c.send(eventFrame(id, map[string]any{"event_type": "candidate_message",
					"data": map[string]any{"text": "We run both stores in parallel for a month and compare every balance nightly."}}))
				c.expectAck(id)
			}
		}
		if verdict == nil {
			st, _ := h.status("hs1")
			h.runUntil("hs1", st.Now+1000)
		}
	}
	if !strings.Contains(string(verdict.Data), scenario) {
		t.Fatalf("verdict %s does not name the scenario", verdict.Data)
	}

	var analyze *engine.LLMRequest
	for _, r := range reqs.of("hs1") {
		if r.Job == "analyze" {
			analyze = &r
			break
		}
	}
	if analyze == nil {
		t.Fatal("no analyze request")
	}
	if len(analyze.Attachments) != 2 || analyze.Attachments[0].Name != "migration-plan.pdf" || analyze.Attachments[0].MIME != "application/pdf" ||
		string(analyze.Attachments[0].Data) != string(pdf) || analyze.Attachments[1].Name != "risks.md" || analyze.Attachments[1].MIME != "text/markdown" {
		t.Fatalf("analyze attachments: %+v", analyze.Attachments)
	}
	if !strings.Contains(analyze.Prompt, scenario) || !strings.Contains(analyze.Prompt, "migration-plan.pdf, risks.md") {
		t.Fatalf("analyze prompt:\n%s", analyze.Prompt)
	}

	// The log holds the material: a replay of it makes the same effects.
	h.quiesce("hs1")
	sameFrames(t, h.replayFrames("hs1"), c.effectList())
}
