package record

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/batonhq/baton/engine"
)

// sequenceLine renders a sequence effect as the timeline's kind and text:
// what happened to which run, in words, with the agent's answer clipped.
func sequenceLine(r *Record) (kind, text string) {
	kind = r.Kind
	switch r.Kind {
	case engine.SeqAgentStarted:
		var a engine.AgentStarted
		_ = json.Unmarshal(r.Data, &a)
		return kind, fmt.Sprintf("%s round %d, call %d", a.RunID, a.Round, a.Call)
	case engine.SeqAgentCompleted:
		var a engine.AgentResponse
		_ = json.Unmarshal(r.Data, &a)
		text = a.RunID + "  " + a.Status
		if a.ErrorCode != "" {
			text += " (" + a.ErrorCode + ")"
		}
		switch {
		case a.Content != "":
			text += ": " + clipLine(a.Content, 96)
		case a.ErrorMessage != "":
			text += ": " + a.ErrorMessage
		}
		return kind, text
	case engine.SeqGate:
		var g engine.GateRead
		_ = json.Unmarshal(r.Data, &g)
		keys := make([]string, len(g.Flags))
		for i, f := range g.Flags {
			keys[i] = fmt.Sprintf("%s=%v", f.ID, f.Value)
		}
		text = g.RunID + "  " + g.Source + ": " + strings.Join(keys, " ")
		if g.Why != "" {
			text += "  (" + g.Why + ")"
		}
		return kind, text
	case engine.SeqRound:
		var rd struct {
			RunID string `json:"run_id"`
			engine.SequenceRound
		}
		_ = json.Unmarshal(r.Data, &rd)
		return kind, fmt.Sprintf("%s round %d", rd.RunID, rd.Number)
	}
	var x engine.Exchange
	_ = json.Unmarshal(r.Data, &x)
	switch r.Kind {
	case engine.SeqStart:
		text = x.RunID + "  " + clipLine(x.Prompt, 96)
	case engine.SeqRefused, engine.SeqIgnored:
		text = x.RunID + "  " + x.Reason
	default:
		text = fmt.Sprintf("%s  %s after %d %s, %d %s", x.RunID, x.Reason, len(x.Rounds), plural(len(x.Rounds), "round"), x.Calls, plural(x.Calls, "call"))
	}
	return kind, text
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// quietSequence is bookkeeping of an exchange the next lines restate.
func quietSequence(r *Record) bool {
	return r.Type == engine.EffectSequence && (r.Kind == engine.SeqAgentStarted || r.Kind == engine.SeqRound)
}

// sequenceSummary counts exchanges by how they ended, and starts refused.
func sequenceSummary(recs []Record) string {
	ends := map[string]int{}
	var order []string
	total, calls, refused := 0, 0, 0
	for i := range recs {
		r := &recs[i]
		if r.Type != engine.EffectSequence {
			continue
		}
		switch r.Kind {
		case engine.SeqCompleted, engine.SeqCancelled, engine.SeqTimeout:
			var x engine.Exchange
			_ = json.Unmarshal(r.Data, &x)
			if ends[x.Reason] == 0 {
				order = append(order, x.Reason)
			}
			ends[x.Reason]++
			total++
			calls += x.Calls
		case engine.SeqRefused:
			refused++
		}
	}
	if total == 0 && refused == 0 {
		return ""
	}
	parts := make([]string, len(order))
	for i, k := range order {
		parts[i] = fmt.Sprintf("%s %d", k, ends[k])
	}
	return fmt.Sprintf("# exchanges: %d (%s), %d agent calls, %d refused\n", total, strings.Join(parts, ", "), calls, refused)
}
