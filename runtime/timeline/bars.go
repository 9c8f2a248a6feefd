package timeline

import (
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/record"
)

// addWindows draws the pack's windows that open before the axis ends as
// bands on the timeline lane, each named by what became of it. Bands
// that overlap in time go on rows of their own, as few as keep them
// apart.
func (b *builder) addWindows() {
	if b.p == nil {
		return
	}
	status := windowStatus(b.res.Records)
	var rows bandRows
	for _, w := range b.p.Timeline.Windows {
		if w.Open.MS > b.end {
			continue
		}
		st := status(w.ID)
		row := rows.place(w.Open.MS, w.Close.MS)
		open, closes := rules.FormatClock(w.Open.MS), rules.FormatClock(w.Close.MS)
		decl := windowDetail{Window: w.ID, Open: open, Close: closes, Role: w.Turn.Role, Kind: w.Turn.Kind, Status: st}
		e := b.l.addEntry(open+"–"+closes+"  window "+w.ID+": "+st, w.Pos.String(), decl)
		b.l.marks = append(b.l.marks, mark{lane: laneTimeline, row: row, t: w.Open.MS, d: max(min(w.Close.MS, b.end)-w.Open.MS, 1),
			typ: "window", class: "win " + st, label: w.ID, rule: w.ID, entry: e})
	}
	b.l.lanes[0].rows = max(1, len(rows))
}

// windowStatus says, by window id, what became of each window in recs:
// skipped, deferred (said after it was held), taken or untaken.
func windowStatus(recs []record.Record) func(id string) string {
	taken, held, skipped := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i := range recs {
		r := &recs[i]
		switch r.Type {
		case engine.EffectAgentMessage:
			taken[r.Rule] = true
		case engine.EffectDeferred, engine.EffectDeferCap:
			held[r.Rule] = true
		case engine.EffectWindowSkipped:
			skipped[r.Rule] = true
		}
	}
	return func(id string) string {
		switch {
		case skipped[id]:
			return "skipped"
		case taken[id] && held[id]:
			return "deferred"
		case taken[id]:
			return "taken"
		}
		return "untaken"
	}
}

// bandRows holds, per row of window bands, where its last band closes.
type bandRows []int64

// place puts a band from open to closes on the first row free by open,
// a new row when none is, and returns the row.
func (r *bandRows) place(open, closes int64) int {
	row := 0
	for row < len(*r) && (*r)[row] > open {
		row++
	}
	if row == len(*r) {
		*r = append(*r, 0)
	}
	(*r)[row] = closes
	return row
}

// cutTimes is, by message id, where each line the candidate talked over
// stopped: where its interrupted speech_done says, not where the voice
// would have ended it.
func cutTimes(inputs []engine.Input) map[string]int64 {
	cutAt := map[string]int64{}
	for i := range inputs {
		if in := &inputs[i]; in.Type == engine.InputSpeechDone && in.Speech != nil && in.Speech.Interrupted {
			cutAt[in.Speech.ID] = in.T
		}
	}
	return cutAt
}

// speechBar draws agent message i as a bar as long as it played, marked
// when the guardrails rewrote it or fell back and when the candidate cut
// it short.
func (b *builder) speechBar(i int, ln string) {
	r := &b.res.Records[i]
	class := "say k-" + cssName(r.Kind)
	if r.Original != "" || r.Outcome == engine.OutcomeRewritten {
		class += " rewritten"
	}
	if r.Fallback || r.Outcome == engine.OutcomeFallback {
		class += " fallback"
	}
	label := r.Kind
	if r.Rule != "" {
		label += " · " + r.Rule
	}
	d := r.SpeechMS
	// A recording's records already say how long a line played (the
	// speech_done came before the record was rebuilt); a dry run's say
	// how long it would have.
	if at, ok := b.cutAt[r.ID]; ok && at >= r.T && at-r.T <= d {
		d, class = at-r.T, class+" cut"
	}
	b.put(i, mark{lane: ln, row: rowSpeech, t: r.T, d: max(d, 1), class: class, label: label})
}

// heldBar draws the turn deferral i held, from the deferral until its
// line is said; nothing when the line never came or came at once.
func (b *builder) heldBar(i int, ln string) {
	recs := b.res.Records
	r := &recs[i]
	for j := i + 1; j < len(recs); j++ {
		n := &recs[j]
		if n.Type == engine.EffectAgentMessage && n.Agent == r.Agent && n.Rule == r.Rule {
			if n.T > r.T {
				b.l.marks = append(b.l.marks, mark{lane: ln, row: rowSpeech, t: r.T, d: n.T - r.T, typ: "held",
					class: "held", rule: r.Rule, entry: b.recEntry[i]})
			}
			return
		}
	}
}

// requestMark draws model request i: a background job's as a bar until
// its result, any other as a point.
func (b *builder) requestMark(i int, ln string) {
	r := &b.res.Records[i]
	if r.Request == nil || r.Request.Job == "" {
		b.put(i, mark{lane: ln, row: rowJobs, t: r.T, class: "pt req"})
		return
	}
	d, class := b.jobSpan(i)
	b.put(i, mark{lane: ln, row: rowJobs, t: r.T, d: max(d, 1), class: class, label: r.Request.Job})
}

// jobSpan is how long job request i ran and its bar's class: until its
// result or error, or, still open, until the axis ends.
func (b *builder) jobSpan(i int) (int64, string) {
	recs := b.res.Records
	r := &recs[i]
	for j := i + 1; j < len(recs); j++ {
		if n := &recs[j]; n.ID == r.ID && (n.Type == engine.EffectJobResult || n.Type == engine.EffectJobError) {
			return n.T - r.T, "job " + cssName(string(n.Type))
		}
	}
	return b.end - r.T, "job open"
}

// toolMark draws client tool call i as a bar until its result, or as a
// point when none came later.
func (b *builder) toolMark(i int, ln string) {
	r := &b.res.Records[i]
	if d := b.toolSpan(i); d > 0 {
		b.put(i, mark{lane: ln, row: rowJobs, t: r.T, d: d, class: "ctool", label: r.Kind})
		return
	}
	b.put(i, mark{lane: ln, row: rowMarks, t: r.T, class: "pt ctool", label: r.Kind})
}

// toolSpan is how long after client tool call i its result came; 0 for
// none.
func (b *builder) toolSpan(i int) int64 {
	recs := b.res.Records
	r := &recs[i]
	for j := i + 1; j < len(recs); j++ {
		if n := &recs[j]; n.ID == r.ID && n.Type == engine.EffectToolResult {
			return n.T - r.T
		}
	}
	return 0
}
