package timeline

import (
	"strings"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/record"
)

// where is where the pack declares rule, for a mark's detail; "" for a
// run without its pack or a rule the pack does not declare.
func (b *builder) where(rule string) string {
	if b.p == nil || rule == "" {
		return ""
	}
	if it, ok := b.p.Where(rule); ok {
		return it.Pos.String() + "  (" + it.Name() + ")"
	}
	return ""
}

// addRecordEntries gives every record its detail entry, the first ones
// of the page's list, whether or not a mark of its own shows it: its
// timeline line, how it differs on a what-if page, where its rule is
// declared and the effect.
func (b *builder) addRecordEntries() {
	recs := b.res.Records
	b.recEntry = make([]int, len(recs))
	for i := range recs {
		r := &recs[i]
		head := strings.TrimSpace(record.TextLine(r))
		if d, ok := b.diffAt[i]; ok {
			head += "\n" + d.note()
		}
		b.recEntry[i] = b.l.addEntry(head, b.where(r.Rule), shortRequest(r))
	}
}

// put adds m, the mark of record i, with the record's entry, rule and
// type; on a what-if page, how the record differs, in the list of
// differences too, and for one that moved, where the baseline had it.
func (b *builder) put(i int, m mark) {
	r := &b.res.Records[i]
	if m.lane == laneSession {
		m.row = 0 // the session lane has one row
	}
	m.entry = b.recEntry[i]
	m.rule = r.Rule
	m.typ = string(r.Type)
	if d, ok := b.diffAt[i]; ok {
		m.diff, m.shift = d.kind, d.shift
		if d.kind == diffShifted {
			// Where the baseline had it, joined to where it is now.
			b.l.marks = append(b.l.marks, mark{lane: m.lane, row: m.row, t: r.T - d.shift, d: 0, typ: "shift",
				class: "shift", entry: m.entry, rule: m.rule, shift: d.shift, label: "", diff: "from"})
		}
		b.l.diffs = append(b.l.diffs, diffLine{t: r.T, text: d.note() + "  " + strings.TrimSpace(record.TextLine(r)), entry: m.entry, diff: d.kind})
	}
	b.l.marks = append(b.l.marks, m)
}

// addEffects draws every record in its agent's lane: speech, held turns,
// jobs and client tools as bars (bars.go), anything else as a point.
func (b *builder) addEffects() {
	for i := range b.res.Records {
		b.addEffect(i)
	}
}

func (b *builder) addEffect(i int) {
	r := &b.res.Records[i]
	ln := b.laneOf(r.Agent)
	switch r.Type {
	case engine.EffectAgentMessage:
		b.speechBar(i, ln)
	case engine.EffectAnchor:
		b.anchorMark(i, ln)
	case engine.EffectSessionEnd:
		b.endMark(i)
	case engine.EffectDeferred:
		b.heldBar(i, ln)
		b.put(i, mark{lane: ln, row: rowMarks, t: r.T, class: "pt deferred"}) // the routing mark beside it is named
	case engine.EffectRouted:
		b.put(i, mark{lane: ln, row: rowMarks, t: r.T, class: "pt routed", label: r.Rule})
	case engine.EffectLLMRequest:
		b.requestMark(i, ln)
	case engine.EffectClientToolCall:
		b.toolMark(i, ln)
	case engine.EffectTickets, engine.EffectLive:
		b.put(i, mark{lane: laneSession, row: 0, t: r.T, class: "pt " + cssName(string(r.Type)), label: string(r.Type)})
	default:
		b.put(i, mark{lane: ln, row: rowMarks, t: r.T, class: "pt " + cssName(string(r.Type)), label: pointLabel(r)})
	}
}

// pointLabel names a point mark by its record's kind, else its rule,
// else its type.
func pointLabel(r *record.Record) string {
	switch {
	case r.Kind != "":
		return r.Kind
	case r.Rule != "":
		return r.Rule
	}
	return string(r.Type)
}

// anchorMark draws an anchor that fired as a point, and the first time
// it fires as a line across the run.
func (b *builder) anchorMark(i int, ln string) {
	r := &b.res.Records[i]
	if !b.anchorDrawn[r.Rule] {
		b.anchorDrawn[r.Rule] = true
		b.l.vlines = append(b.l.vlines, vline{t: r.T, typ: "anchor", rule: r.Rule, label: r.Rule, entry: b.recEntry[i]})
	}
	b.put(i, mark{lane: ln, row: rowMarks, t: r.T, class: "pt anchor"})
}

// endMark draws the session's end as a line across the run, named in
// the session lane: at the top it would cover an anchor's name a little
// before it.
func (b *builder) endMark(i int) {
	r := &b.res.Records[i]
	b.l.vlines = append(b.l.vlines, vline{t: r.T, typ: "session_end", rule: r.Rule, class: "end", entry: b.recEntry[i]})
	b.put(i, mark{lane: laneSession, row: 0, t: r.T, class: "pt end", label: "end: " + r.Reason})
}

// addUnfiredAnchors draws the pack's anchors that did not fire before
// the axis ends as lines across the run, each with its declaration.
func (b *builder) addUnfiredAnchors() {
	if b.p == nil {
		return
	}
	fired := map[string]bool{}
	for i := range b.res.Records {
		if r := &b.res.Records[i]; r.Type == engine.EffectAnchor {
			fired[r.Rule] = true
		}
	}
	for _, a := range b.p.Timeline.Anchors {
		if fired[a.ID] || a.At.MS > b.end {
			continue
		}
		at := rules.FormatClock(a.At.MS)
		e := b.l.addEntry(at+"  anchor "+a.ID+": did not fire", a.Pos.String(), anchorDetail{Anchor: a.ID, At: at, Status: "did not fire"})
		b.l.vlines = append(b.l.vlines, vline{t: a.At.MS, typ: "anchor", rule: a.ID, label: a.ID, class: "unfired", entry: e})
	}
}
