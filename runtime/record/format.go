package record

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
)

// FormatOptions choose what a printed timeline shows.
type FormatOptions struct {
	// Verbose adds adapter requests and routing decisions.
	Verbose bool
	// Color marks errors red and flags and guardrail actions yellow with
	// ANSI codes, for a terminal.
	Color bool
}

// quiet effects are bookkeeping a reader of the timeline rarely needs.
func quiet(t engine.EffectType) bool {
	return t == engine.EffectLLMRequest || t == engine.EffectRouted || t == engine.EffectDeferred
}

// WriteText prints the readable timeline: mm:ss.s  role  kind  text.
func WriteText(w io.Writer, recs []Record, opt FormatOptions) error {
	t := NewTextStream(w, opt)
	for i := range recs {
		if err := t.Add(&recs[i]); err != nil {
			return err
		}
	}
	return t.Close()
}

// TextStream prints a timeline a record at a time, as a run produces
// them. A record whose line depends on the next one (a job result that
// the next effect restates) is held until that one comes or Close.
type TextStream struct {
	w    io.Writer
	opt  FormatOptions
	held *Record
}

// NewTextStream prints the records it is given to w.
func NewTextStream(w io.Writer, opt FormatOptions) *TextStream {
	return &TextStream{w: w, opt: opt}
}

// Add prints r, or holds it until the next record says whether to.
func (t *TextStream) Add(r *Record) error {
	if h := t.held; h != nil {
		t.held = nil
		if !restates(h, r) {
			if err := t.print(h); err != nil {
				return err
			}
		}
	}
	if !t.opt.Verbose && r.Type == engine.EffectJobResult {
		c := *r
		t.held = &c
		return nil
	}
	return t.print(r)
}

// Close prints a record still held.
func (t *TextStream) Close() error {
	if h := t.held; h != nil {
		t.held = nil
		return t.print(h)
	}
	return nil
}

func (t *TextStream) print(r *Record) error {
	if !t.opt.Verbose && (quiet(r.Type) || quietSequence(r)) {
		return nil
	}
	line := TextLine(r)
	if t.opt.Color {
		switch {
		case slices.Contains(ErrorTypes, r.Type):
			line = "\033[31m" + line + "\033[0m"
		case r.Type == engine.EffectFlag || r.Type == engine.EffectGuardrail:
			line = "\033[33m" + line + "\033[0m"
		}
	}
	_, err := io.WriteString(t.w, line+"\n")
	return err
}

// restates reports that n writes job result r to a context file: the
// write's line says it (a question buffer refreshed every 15 s would
// otherwise take two lines each time).
func restates(r, n *Record) bool {
	return r.Type == engine.EffectJobResult && n.Type == engine.EffectContext && n.T == r.T && n.Agent == r.Agent && n.Rule == r.Rule
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
		if r.Cleaned != "" {
			if note != "" {
				note += "; "
			}
			note += "cleaned: " + r.Cleaned
		}
		if note != "" {
			text += "  [" + note + "]"
		}
		late := ""
		if l := r.Lateness; l != nil && l.LateMS > max(r.TickMS, 0) {
			late = fmt.Sprintf(", late %.1fs", float64(l.LateMS)/1000)
		}
		text += fmt.Sprintf("  (%s, %.1fs%s)", r.Rule, float64(r.SpeechMS)/1000, late)
	case engine.EffectLLMRequest:
		kind = "llm_request"
		text = r.ID + " goal=" + r.Request.TurnGoal
		// What the budgets cut, so a designer sees what the model missed.
		for _, f := range r.Request.Files {
			if f.Trimmed > 0 {
				text += fmt.Sprintf("  %s -%d", f.Path, f.Trimmed)
			}
		}
	case engine.EffectContext:
		// One line per write: what, where, and the start of the text.
		kind = string(r.Type)
		var w engine.FileWritten
		_ = json.Unmarshal(r.Data, &w)
		text = fmt.Sprintf("%s  %s %s  #%d, %d chars: %s", r.Rule, r.Kind, r.Text, w.Writes, w.Chars, clipLine(w.Text, 72))
	case engine.EffectContextViolation:
		kind = string(r.Type)
		text = r.Rule + "  " + r.Reason
	case engine.EffectSequence:
		kind, text = sequenceLine(r)
	default:
		kind = string(r.Type)
		parts := []string{}
		for _, s := range []string{r.Rule, r.Kind, r.IntentTag, r.Text, r.Reason} {
			if s != "" {
				// One record, one line: a client's error may span several.
				parts = append(parts, strings.ReplaceAll(strings.ReplaceAll(s, "\r", ""), "\n", " | "))
			}
		}
		if len(r.Data) > 0 && r.Type != engine.EffectToolResult {
			parts = append(parts, compactJSON(r.Data))
		} else if r.IsError {
			parts = append(parts, "refused")
		}
		text = strings.Join(parts, "  ")
		if r.Type == engine.EffectToolResult && !r.IsError {
			text += editSummary(r.Data)
		}
	}
	return fmt.Sprintf("%s  %-10s %-20s %s", rules.FormatClock(r.T), who, kind, text)
}

// maxDiffLines bounds the diff lines a timeline shows for one write.
const maxDiffLines = 12

// editSummary shows a workspace write's result (runtime/workspace: ok,
// mode, path, diffs) as the file it changed and its diff lines, indented
// under the record; any other result shows nothing more.
func editSummary(data json.RawMessage) string {
	var w struct {
		OK    bool   `json:"ok"`
		Mode  string `json:"mode"`
		Path  string `json:"path"`
		Lines int    `json:"lines"`
		Diffs []struct {
			Op      string   `json:"op"`
			Line    int      `json:"line"`
			Removed []string `json:"removed"`
			Added   []string `json:"added"`
		} `json:"diffs"`
	}
	if json.Unmarshal(data, &w) != nil || !w.OK || w.Mode == "" {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  %s %s, %d lines", w.Mode, w.Path, w.Lines)
	shown := 0
	for _, d := range w.Diffs {
		for _, pair := range []struct {
			sign  string
			lines []string
		}{{"-", d.Removed}, {"+", d.Added}} {
			for i, l := range pair.lines {
				if shown == maxDiffLines {
					b.WriteString("\n" + diffIndent + "...")
					return b.String()
				}
				at := "     " // the line number once per run of lines
				if i == 0 {
					at = fmt.Sprintf("L%-4d", d.Line)
				}
				fmt.Fprintf(&b, "\n%s%s %s %s", diffIndent, pair.sign, at, l)
				shown++
			}
		}
	}
	return b.String()
}

// diffIndent lines diff lines up under a record's text.
var diffIndent = strings.Repeat(" ", len("00:00.0  ")+11+21)

// WriteWorkspace prints the simulated client's workspace as the run
// ended, as comment lines under the summary: what the agents' edits
// left in the person's editor.
func WriteWorkspace(w io.Writer, root string, files []WorkspaceFile) error {
	var b strings.Builder
	for _, f := range files {
		var lines []string
		if f.Content != "" {
			lines = strings.Split(strings.TrimSuffix(strings.ReplaceAll(f.Content, "\r\n", "\n"), "\n"), "\n")
		}
		fmt.Fprintf(&b, "# %s/%s as the session ended (%d lines):\n", strings.TrimSuffix(root, "/"), f.Path, len(lines))
		for i, l := range lines {
			fmt.Fprintf(&b, "# %4d  %s\n", i+1, strings.ReplaceAll(l, "\r", ""))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteSummary prints what a reader of a long timeline checks first, as
// comment lines: how the session ended and with what outcome (its last
// report), what the guardrails did with the generated lines (one line per
// outcome), each flag and warning, and how many adapter, job, script and
// engine errors there were.
func WriteSummary(w io.Writer, recs []Record) error {
	var b strings.Builder
	var report, end *Record
	var warnings, flags []*Record
	counts := map[engine.EffectType]int{}
	var lines outcomeCounts
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
		case engine.EffectFlag:
			flags = append(flags, r)
		case engine.EffectAgentMessage:
			lines.add(r)
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
	b.WriteString(lines.String())
	b.WriteString(sequenceSummary(recs))
	b.WriteString(lateness(recs))
	if len(flags) > 0 {
		fmt.Fprintf(&b, "# flags: %d\n", len(flags))
		for _, r := range flags {
			who := r.Rule
			if r.Agent != "" {
				who += " (" + r.Agent + ")"
			}
			fmt.Fprintf(&b, "#   %s %s: %s\n", rules.FormatClock(r.T), who, r.Reason)
		}
	}
	if len(warnings) > 0 {
		fmt.Fprintf(&b, "# warnings: %d\n", len(warnings))
		for _, r := range warnings {
			fmt.Fprintf(&b, "#   %s %s: %s\n", rules.FormatClock(r.T), r.Rule, r.Text)
		}
	}
	var errs []string
	for _, t := range ErrorTypes {
		if n := counts[t]; n > 0 {
			errs = append(errs, fmt.Sprintf("%s %d", t, n))
		}
	}
	if len(errs) > 0 {
		b.WriteString("# errors: " + strings.Join(errs, ", ") + "\n")
		b.WriteString(errorDigest(recs))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ErrorTypes are the effects that report something failing: what the
// summary counts and what a strict run refuses.
var ErrorTypes = []engine.EffectType{engine.EffectAdapterError, engine.EffectJobError, engine.EffectScriptError, engine.EffectEngineError}

// errorDigest lists each distinct error once with how often it happened
// and when first, so a run where every call failed says why in one line
// instead of leaving the reader to scroll the timeline.
func errorDigest(recs []Record) string {
	type seen struct {
		first *Record
		n     int
	}
	var order []string
	by := map[string]*seen{}
	for i := range recs {
		r := &recs[i]
		if !slices.Contains(ErrorTypes, r.Type) {
			continue
		}
		key := string(r.Type) + "\x00" + r.Reason
		if e, ok := by[key]; ok {
			e.n++
			continue
		}
		by[key] = &seen{first: r, n: 1}
		order = append(order, key)
	}
	const shown = 5
	var b strings.Builder
	for i, key := range order {
		if i == shown {
			fmt.Fprintf(&b, "#   and %d more kinds\n", len(order)-shown)
			break
		}
		e := by[key]
		fmt.Fprintf(&b, "#   %s x%d, first at %s: %s\n", e.first.Type, e.n, rules.FormatClock(e.first.T), clipLine(e.first.Reason, 160))
	}
	return b.String()
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

// outcomeCounts tallies the guardrails' outcomes of the generated lines,
// by outcome and role, in the order they first occur.
type outcomeCounts struct {
	outcomes []string
	roles    map[string][]string
	n        map[[2]string]int
}

func (c *outcomeCounts) add(r *Record) {
	if r.Outcome == "" {
		return // a line the pack wrote, not a generated one
	}
	if c.n == nil {
		c.n, c.roles = map[[2]string]int{}, map[string][]string{}
	}
	if _, ok := c.roles[r.Outcome]; !ok {
		c.outcomes = append(c.outcomes, r.Outcome)
	}
	k := [2]string{r.Outcome, r.Agent}
	if c.n[k] == 0 {
		c.roles[r.Outcome] = append(c.roles[r.Outcome], r.Agent)
	}
	c.n[k]++
}

// String prints one line per outcome, pass first, then regenerations by
// attempts, rewritten, fallback, tripped:
//
//	# guardrails pass: 6 (qa 6)
func (c *outcomeCounts) String() string {
	rank := func(o string) (int, int) {
		switch {
		case o == engine.OutcomePass:
			return 0, 0
		case strings.HasPrefix(o, "regenerated("):
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(o, "regenerated("), ")"))
			return 1, n
		case o == engine.OutcomeRewritten:
			return 2, 0
		case o == engine.OutcomeFallback:
			return 3, 0
		}
		return 4, 0
	}
	order := slices.Clone(c.outcomes)
	slices.SortStableFunc(order, func(a, b string) int {
		ra, na := rank(a)
		rb, nb := rank(b)
		return cmp.Or(cmp.Compare(ra, rb), cmp.Compare(na, nb))
	})
	var b strings.Builder
	for _, o := range order {
		total := 0
		parts := make([]string, 0, len(c.roles[o]))
		for _, role := range c.roles[o] {
			n := c.n[[2]string{o, role}]
			total += n
			parts = append(parts, fmt.Sprintf("%s %d", role, n))
		}
		fmt.Fprintf(&b, "# guardrails %s: %d (%s)\n", o, total, strings.Join(parts, ", "))
	}
	return b.String()
}

// lateness is the summary line of how late agent messages were, by kind
// in order of first appearance: the worst and the 95th percentile
// (nearest rank).
//
//	# lateness max/p95: window 0.0s/0.0s, reply 2.0s/2.0s, anchor 0.0s/0.0s
func lateness(recs []Record) string {
	var kinds []string
	by := map[string][]int64{}
	for i := range recs {
		r := &recs[i]
		if r.Type != engine.EffectAgentMessage || r.Lateness == nil {
			continue
		}
		if _, ok := by[r.Kind]; !ok {
			kinds = append(kinds, r.Kind)
		}
		by[r.Kind] = append(by[r.Kind], r.Lateness.LateMS)
	}
	if len(kinds) == 0 {
		return ""
	}
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		late := by[k]
		slices.Sort(late)
		p95 := late[(len(late)*95+99)/100-1]
		parts[i] = fmt.Sprintf("%s %.1fs/%.1fs", k, float64(late[len(late)-1])/1000, float64(p95)/1000)
	}
	return "# lateness max/p95: " + strings.Join(parts, ", ") + "\n"
}

// clipLine shows text on one line, cut to about n bytes on a character
// boundary.
func clipLine(text string, n int) string {
	s := strings.Join(strings.Fields(strings.ReplaceAll(text, "\n", " / ")), " ")
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
