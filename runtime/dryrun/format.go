package dryrun

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
)

// FormatOptions choose what a printed timeline shows.
type FormatOptions struct {
	// Verbose adds adapter requests and routing decisions.
	Verbose bool
}

// quiet effects are bookkeeping a reader of the timeline rarely needs.
func quiet(t engine.EffectType) bool {
	return t == engine.EffectLLMRequest || t == engine.EffectRouted || t == engine.EffectDeferred
}

// WriteText prints the readable timeline: mm:ss.s  role  kind  text.
func WriteText(w io.Writer, recs []Record, opt FormatOptions) error {
	for i := range recs {
		if !opt.Verbose && quiet(recs[i].Type) {
			continue
		}
		if _, err := io.WriteString(w, TextLine(&recs[i])+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// TextLine renders one record as a timeline line.
func TextLine(r *Record) string {
	who := r.Agent
	if who == "" {
		who = "-"
	}
	var kind, text string
	switch r.Type {
	case engine.EffectAgentMessage:
		kind = r.Kind
		text = r.Text
		// The guardrails' outcome, unless the line simply passed.
		note := r.Outcome
		if note == "" && r.Fallback {
			note = engine.OutcomeFallback
		}
		if note == engine.OutcomePass && len(r.Guardrail) == 0 {
			note = ""
		}
		if len(r.Guardrail) > 0 {
			note += ": " + strings.Join(r.Guardrail, ",")
		}
		if note != "" {
			text += "  [" + note + "]"
		}
		text += fmt.Sprintf("  (%s, %.1fs)", r.Rule, float64(r.SpeechMS)/1000)
	case engine.EffectLLMRequest:
		kind = "llm_request"
		text = r.ID + " goal=" + r.Request.TurnGoal
	default:
		kind = string(r.Type)
		parts := []string{}
		for _, s := range []string{r.Rule, r.Kind, r.IntentTag, r.Text, r.Reason} {
			if s != "" {
				parts = append(parts, s)
			}
		}
		if len(r.Data) > 0 && r.Type != engine.EffectToolResult {
			parts = append(parts, compactJSON(r.Data))
		} else if r.IsError {
			parts = append(parts, "refused")
		}
		text = strings.Join(parts, "  ")
	}
	return fmt.Sprintf("%s  %-10s %-20s %s", rules.FormatClock(r.T), who, kind, text)
}

// WriteSummary prints what a reader of a long timeline checks first, as
// comment lines: how the session ended and with what outcome (its last
// report), each warning, and how many adapter, job and script errors
// there were.
func WriteSummary(w io.Writer, recs []Record) error {
	var b strings.Builder
	var report, end *Record
	var warnings []*Record
	counts := map[engine.EffectType]int{}
	for i := range recs {
		r := &recs[i]
		switch r.Type {
		case engine.EffectReport:
			report = r
		case engine.EffectSessionEnd:
			end = r
		case engine.EffectNote:
			if r.Kind == engine.NoteWarning {
				warnings = append(warnings, r)
			}
		case engine.EffectAdapterError, engine.EffectJobError, engine.EffectScriptError, engine.EffectEngineError:
			counts[r.Type]++
		}
	}
	if end != nil {
		fmt.Fprintf(&b, "# ended at %s: %s", rules.FormatClock(end.T), end.Reason)
		if end.Rule != "" {
			fmt.Fprintf(&b, " (%s)", end.Rule)
		}
		b.WriteString("\n")
	} else {
		b.WriteString("# not ended\n")
	}
	if report != nil {
		fmt.Fprintf(&b, "# outcome: %s %s\n", report.Kind, compactJSON(report.Data))
	}
	if len(warnings) > 0 {
		fmt.Fprintf(&b, "# warnings: %d\n", len(warnings))
		for _, r := range warnings {
			fmt.Fprintf(&b, "#   %s %s: %s\n", rules.FormatClock(r.T), r.Rule, r.Text)
		}
	}
	var errs []string
	for _, t := range []engine.EffectType{engine.EffectAdapterError, engine.EffectJobError, engine.EffectScriptError, engine.EffectEngineError} {
		if n := counts[t]; n > 0 {
			errs = append(errs, fmt.Sprintf("%s %d", t, n))
		}
	}
	if len(errs) > 0 {
		b.WriteString("# errors: " + strings.Join(errs, ", ") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSONL prints one JSON object per effect. Adapter request bodies are
// left out unless verbose, to keep lines readable.
func WriteJSONL(w io.Writer, recs []Record, opt FormatOptions) error {
	enc := json.NewEncoder(w)
	for _, r := range recs {
		if !opt.Verbose {
			r.Request = nil
		}
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// compactJSON shortens a payload for the one-line timeline.
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	s := b.String()
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}
