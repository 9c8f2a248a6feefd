package record

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/batonhq/baton/engine"
)

func TestWriteSummary(t *testing.T) {
	recs := []Record{
		{Effect: engine.Effect{T: 1200, Type: engine.EffectNote, Kind: engine.NoteWarning, Rule: "analyze", Text: "analysis failed"}},
		{Effect: engine.Effect{T: 1300, Type: engine.EffectNote, Rule: "x", Text: "just a note"}},
		{Effect: engine.Effect{T: 1400, Type: engine.EffectAgentMessage, Agent: "qa", Outcome: "rewritten"}},
		{Effect: engine.Effect{T: 1500, Type: engine.EffectAgentMessage, Agent: "ba", Outcome: "regenerated(10)"}},
		{Effect: engine.Effect{T: 1600, Type: engine.EffectAgentMessage, Agent: "qa", Outcome: "pass"}},
		{Effect: engine.Effect{T: 1700, Type: engine.EffectAgentMessage, Agent: "ba", Outcome: "regenerated(2)"}},
		{Effect: engine.Effect{T: 1800, Type: engine.EffectAgentMessage, Agent: "ba", Outcome: "pass"}},
		{Effect: engine.Effect{T: 1850, Type: engine.EffectAgentMessage, Agent: "qa", Outcome: "pass"}},
		{Effect: engine.Effect{T: 1900, Type: engine.EffectAgentMessage, Agent: "qa", Kind: "repeat_request"}},
		{Effect: engine.Effect{T: 1950, Type: engine.EffectFlag, Agent: "qa", Rule: "leak", Reason: "told the result"}},
		{Effect: engine.Effect{T: 2000, Type: engine.EffectAdapterError, Reason: "network: connection refused"}},
		{Effect: engine.Effect{T: 2100, Type: engine.EffectAdapterError, Reason: "network: connection refused"}},
		{Effect: engine.Effect{T: 2500, Type: engine.EffectAdapterError, Reason: "timeout: no result within 8s"}},
		{Effect: engine.Effect{T: 3000, Type: engine.EffectJobError, Reason: "bad result"}},
		{Effect: engine.Effect{T: 4000, Type: engine.EffectReport, Kind: "verdict", Data: json.RawMessage(`{"verdict": "pass"}`)}},
		{Effect: engine.Effect{T: 4000, Type: engine.EffectSessionEnd, Reason: "verdict", Rule: "deliberate"}},
	}
	var b strings.Builder
	if err := WriteSummary(&b, recs); err != nil {
		t.Fatal(err)
	}
	want := `# ended at 00:04.0: verdict (deliberate)
# outcome: verdict {"verdict":"pass"}
# guardrails pass: 3 (qa 2, ba 1)
# guardrails regenerated(2): 1 (ba 1)
# guardrails regenerated(10): 1 (ba 1)
# guardrails rewritten: 1 (qa 1)
# flags: 1
#   00:01.9 leak (qa): told the result
# warnings: 1
#   00:01.2 analyze: analysis failed
# errors: adapter_error 3, job_error 1
#   adapter_error x2, first at 00:02.0: network: connection refused
#   adapter_error x1, first at 00:02.5: timeout: no result within 8s
#   job_error x1, first at 00:03.0: bad result
`
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	_ = WriteSummary(&b, recs[:1])
	if !strings.HasPrefix(b.String(), "# not ended\n") {
		t.Fatalf("a session without session_end: %q", b.String())
	}
}

// Colour is for terminals: errors red, flags and guardrail actions
// yellow, everything else as it is; without Color no escape is written.
func TestTextColor(t *testing.T) {
	recs := []Record{
		{Effect: engine.Effect{T: 1000, Type: engine.EffectAdapterError, Reason: "network"}},
		{Effect: engine.Effect{T: 2000, Type: engine.EffectFlag, Rule: "leak"}},
		{Effect: engine.Effect{T: 3000, Type: engine.EffectSessionEnd, Reason: "done"}},
	}
	var plain, color strings.Builder
	if err := WriteText(&plain, recs, FormatOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteText(&color, recs, FormatOptions{Color: true}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "\033[") {
		t.Errorf("escape codes without Color:\n%q", plain.String())
	}
	lines := strings.Split(strings.TrimSpace(color.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "\033[31m") || !strings.HasPrefix(lines[1], "\033[33m") || strings.Contains(lines[2], "\033[") {
		t.Errorf("colours:\n%q", color.String())
	}
}
