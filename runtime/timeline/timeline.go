// Package timeline draws dry runs as one self-contained HTML page: a lane
// per role and one for the human, agent speech as bars as long as it was
// spoken, the candidate's microphone, typing and messages, the pack's
// anchors and windows, and every other effect as a mark whose JSON and
// pack rule (file:line) show on hover. Two runs make a what-if page: the
// second drawn under the first on the same time axis, with the effects
// only one of them has highlighted.
//
// The page carries its own SVG, CSS and JS (no network, no build step),
// so it can be mailed, archived or embedded in another page with iframe
// srcdoc, and the same runs always give the same bytes.
package timeline

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/record"
)

// Run is one dry run to draw: a title for its header, the pack it ran
// (for lanes, windows, anchors and where rules are declared; may be nil)
// and its result.
type Run struct {
	Title  string
	Pack   *rules.Pack
	Result *record.Result
}

// Lane kinds: what a lane shows, in the order a run's lanes are drawn.
const (
	laneTimeline = "timeline" // the pack's windows and anchors
	laneRole     = "role"
	laneHuman    = "human"
	laneSession  = "session" // effects no role owns: tickets, live, the end
)

type lane struct {
	id, name, kind string
	rows           int
	y              int // top, in px
}

// mark is one drawn thing: a bar (d > 0) or a point on a lane's row.
type mark struct {
	lane  string
	row   int
	t, d  int64
	typ   string // data-type: the effect or event type
	class string // extra CSS classes
	label string // short text drawn next to it when zoomed in
	rule  string
	entry int // index into the page's detail list, -1 for none
	// diff is "only" or "shifted" on a what-if page; shift is by how much.
	diff  string
	shift int64
}

// entry is what hovering a mark shows: a header line, where the pack
// declares its rule, and the effect, input or declaration as JSON.
type entry struct {
	Head  string          `json:"h"`
	Where string          `json:"w,omitempty"`
	JSON  json.RawMessage `json:"e"`
}

// windowDetail and anchorDetail are what hovering a window's band or an
// anchor that did not fire shows: the declaration and what happened.
type windowDetail struct {
	Window string `json:"window"`
	Open   string `json:"open"`
	Close  string `json:"close"`
	Role   string `json:"role,omitempty"`
	Kind   string `json:"kind,omitempty"`
	Status string `json:"status"`
}

type anchorDetail struct {
	Anchor string `json:"anchor"`
	At     string `json:"at"`
	Status string `json:"status"`
}

// layout is one run turned into lanes and marks.
type layout struct {
	title   string
	sub     string
	lanes   []lane
	marks   []mark
	vlines  []vline
	entries []entry
	diffs   []diffLine
}

// vline is a line across every lane of a run: an anchor or the end.
type vline struct {
	t     int64
	typ   string // anchor, session_end
	rule  string
	label string
	class string
	entry int
}

type diffLine struct {
	t     int64
	text  string
	entry int
	diff  string
}

// Row numbers inside lanes.
const (
	rowSpeech = 0 // role: speech bars and held turns
	rowMarks  = 1 // role: routing, deferrals, guardrails, tools...
	rowJobs   = 2 // role: model requests and background jobs
	roleRows  = 3

	rowMic    = 0
	rowTyping = 1
	rowSaid   = 2
	humanRows = 3
)

// endOf is where a run's axis ends: the later of its end and its last
// effect or input.
func endOf(r *record.Result) int64 {
	end := r.EndMS
	for i := range r.Records {
		end = max(end, r.Records[i].T)
	}
	for i := range r.Inputs {
		end = max(end, r.Inputs[i].T)
	}
	return end
}

func build(run Run, diffs []diffMark) *layout {
	p, res := run.Pack, run.Result
	l := &layout{title: run.Title}
	end := endOf(res)

	where := func(rule string) string {
		if p == nil || rule == "" {
			return ""
		}
		if it, ok := p.Where(rule); ok {
			return it.Pos.String() + "  (" + it.Name() + ")"
		}
		return ""
	}
	add := func(head, w string, v any) int {
		data, err := json.Marshal(v)
		if err != nil {
			data = []byte("null")
		}
		l.entries = append(l.entries, entry{Head: head, Where: w, JSON: clipJSON(data)})
		return len(l.entries) - 1
	}

	// Lanes: the timeline, the pack's roles in its order, any other agent
	// an effect names (sorted), the human, then the session.
	human := rules.DefaultHuman
	roleSet := map[string]bool{}
	l.lanes = append(l.lanes, lane{id: laneTimeline, name: "timeline", kind: laneTimeline, rows: 1})
	if p != nil {
		human = p.HumanName()
		for _, r := range p.Roles {
			roleSet[r.ID] = true
			name := r.ID
			if r.Name != "" && r.Name != r.ID {
				name = r.ID + " · " + r.Name
			}
			l.lanes = append(l.lanes, lane{id: r.ID, name: name, kind: laneRole, rows: roleRows})
		}
	}
	var extra []string
	for i := range res.Records {
		if a := res.Records[i].Agent; a != "" && !roleSet[a] && !slices.Contains(extra, a) {
			extra = append(extra, a)
		}
	}
	slices.Sort(extra)
	for _, a := range extra {
		roleSet[a] = true
		l.lanes = append(l.lanes, lane{id: a, name: a, kind: laneRole, rows: roleRows})
	}
	l.lanes = append(l.lanes, lane{id: human, name: human, kind: laneHuman, rows: humanRows})
	l.lanes = append(l.lanes, lane{id: laneSession, name: "session", kind: laneSession, rows: 1})
	laneOf := func(agent string) string {
		if agent != "" && roleSet[agent] {
			return agent
		}
		return laneSession
	}

	recs := res.Records
	diffAt := map[int]diffMark{}
	for _, d := range diffs {
		diffAt[d.rec] = d
	}
	recEntry := make([]int, len(recs))
	for i := range recs {
		r := &recs[i]
		head := strings.TrimSpace(record.TextLine(r))
		if d, ok := diffAt[i]; ok {
			head += "\n" + d.note()
		}
		recEntry[i] = add(head, where(r.Rule), shortRequest(r))
	}
	put := func(i int, m mark) {
		if m.lane == laneSession {
			m.row = 0 // the session lane has one row
		}
		m.entry = recEntry[i]
		m.rule = recs[i].Rule
		m.typ = string(recs[i].Type)
		if d, ok := diffAt[i]; ok {
			m.diff, m.shift = d.kind, d.shift
			if d.kind == diffShifted {
				// Where the baseline had it, joined to where it is now.
				l.marks = append(l.marks, mark{lane: m.lane, row: m.row, t: recs[i].T - d.shift, d: 0, typ: "shift",
					class: "shift", entry: m.entry, rule: m.rule, shift: d.shift, label: "", diff: "from"})
			}
			l.diffs = append(l.diffs, diffLine{t: recs[i].T, text: d.note() + "  " + strings.TrimSpace(record.TextLine(&recs[i])), entry: m.entry, diff: d.kind})
		}
		l.marks = append(l.marks, m)
	}

	// Which windows were taken, held or skipped, and which anchors fired.
	taken, held, skipped, fired := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i := range recs {
		r := &recs[i]
		switch r.Type {
		case engine.EffectAgentMessage:
			taken[r.Rule] = true
		case engine.EffectDeferred, engine.EffectDeferCap:
			held[r.Rule] = true
		case engine.EffectWindowSkipped:
			skipped[r.Rule] = true
		case engine.EffectAnchor:
			fired[r.Rule] = true
		}
	}
	if p != nil {
		var rowEnd []int64 // per band row: where its last band closes
		for _, w := range p.Timeline.Windows {
			if w.Open.MS > end {
				continue
			}
			status := "untaken"
			switch {
			case skipped[w.ID]:
				status = "skipped"
			case taken[w.ID] && held[w.ID]:
				status = "deferred"
			case taken[w.ID]:
				status = "taken"
			}
			row := 0
			for row < len(rowEnd) && rowEnd[row] > w.Open.MS {
				row++
			}
			if row == len(rowEnd) {
				rowEnd = append(rowEnd, 0)
			}
			rowEnd[row] = w.Close.MS
			decl := windowDetail{Window: w.ID, Open: rules.FormatClock(w.Open.MS), Close: rules.FormatClock(w.Close.MS),
				Role: w.Turn.Role, Kind: w.Turn.Kind, Status: status}
			e := add(rules.FormatClock(w.Open.MS)+"–"+rules.FormatClock(w.Close.MS)+"  window "+w.ID+": "+status, w.Pos.String(), decl)
			l.marks = append(l.marks, mark{lane: laneTimeline, row: row, t: w.Open.MS, d: max(min(w.Close.MS, end)-w.Open.MS, 1),
				typ: "window", class: "win " + status, label: w.ID, rule: w.ID, entry: e})
		}
		l.lanes[0].rows = max(1, len(rowEnd))
		for _, a := range p.Timeline.Anchors {
			if fired[a.ID] || a.At.MS > end {
				continue
			}
			e := add(rules.FormatClock(a.At.MS)+"  anchor "+a.ID+": did not fire", a.Pos.String(), anchorDetail{Anchor: a.ID, At: rules.FormatClock(a.At.MS), Status: "did not fire"})
			l.vlines = append(l.vlines, vline{t: a.At.MS, typ: "anchor", rule: a.ID, label: a.ID, class: "unfired", entry: e})
		}
	}

	// A line the candidate talked over stopped where its interrupted
	// speech_done says, not where the voice would have ended it.
	cutAt := map[string]int64{}
	for i := range res.Inputs {
		if in := &res.Inputs[i]; in.Type == engine.InputSpeechDone && in.Speech != nil && in.Speech.Interrupted {
			cutAt[in.Speech.ID] = in.T
		}
	}

	// Effects.
	seenAnchor := map[string]bool{}
	for i := range recs {
		r := &recs[i]
		ln := laneOf(r.Agent)
		switch r.Type {
		case engine.EffectAgentMessage:
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
			// A recording's records already say how long a line played
			// (the speech_done came before the record was rebuilt); a
			// dry run's say how long it would have.
			if at, ok := cutAt[r.ID]; ok && at >= r.T && at-r.T <= d {
				d, class = at-r.T, class+" cut"
			}
			put(i, mark{lane: ln, row: rowSpeech, t: r.T, d: max(d, 1), class: class, label: label})
		case engine.EffectAnchor:
			if !seenAnchor[r.Rule] {
				seenAnchor[r.Rule] = true
				l.vlines = append(l.vlines, vline{t: r.T, typ: "anchor", rule: r.Rule, label: r.Rule, entry: recEntry[i]})
			}
			put(i, mark{lane: ln, row: rowMarks, t: r.T, class: "pt anchor"})
		case engine.EffectSessionEnd:
			// Named in the session lane: at the top it would cover an
			// anchor's name a little before it.
			l.vlines = append(l.vlines, vline{t: r.T, typ: "session_end", rule: r.Rule, class: "end", entry: recEntry[i]})
			put(i, mark{lane: laneSession, row: 0, t: r.T, class: "pt end", label: "end: " + r.Reason})
		case engine.EffectDeferred:
			// The turn is held from here until its line is said.
			for j := i + 1; j < len(recs); j++ {
				n := &recs[j]
				if n.Type == engine.EffectAgentMessage && n.Agent == r.Agent && n.Rule == r.Rule {
					if n.T > r.T {
						l.marks = append(l.marks, mark{lane: ln, row: rowSpeech, t: r.T, d: n.T - r.T, typ: "held",
							class: "held", rule: r.Rule, entry: recEntry[i]})
					}
					break
				}
			}
			put(i, mark{lane: ln, row: rowMarks, t: r.T, class: "pt deferred"}) // the routing mark beside it is named
		case engine.EffectRouted:
			put(i, mark{lane: ln, row: rowMarks, t: r.T, class: "pt routed", label: r.Rule})
		case engine.EffectLLMRequest:
			if r.Request != nil && r.Request.Job != "" {
				d := int64(0)
				cls := "job open"
				for j := i + 1; j < len(recs); j++ {
					n := &recs[j]
					if n.ID == r.ID && (n.Type == engine.EffectJobResult || n.Type == engine.EffectJobError) {
						d, cls = n.T-r.T, "job "+cssName(string(n.Type))
						break
					}
				}
				if d == 0 && cls == "job open" {
					d = end - r.T
				}
				put(i, mark{lane: ln, row: rowJobs, t: r.T, d: max(d, 1), class: cls, label: r.Request.Job})
				continue
			}
			put(i, mark{lane: ln, row: rowJobs, t: r.T, class: "pt req"})
		case engine.EffectClientToolCall:
			d := int64(0)
			for j := i + 1; j < len(recs); j++ {
				if n := &recs[j]; n.ID == r.ID && n.Type == engine.EffectToolResult {
					d = n.T - r.T
					break
				}
			}
			if d > 0 {
				put(i, mark{lane: ln, row: rowJobs, t: r.T, d: d, class: "ctool", label: r.Kind})
			} else {
				put(i, mark{lane: ln, row: rowMarks, t: r.T, class: "pt ctool", label: r.Kind})
			}
		case engine.EffectTickets, engine.EffectLive:
			put(i, mark{lane: laneSession, row: 0, t: r.T, class: "pt " + cssName(string(r.Type)), label: string(r.Type)})
		default:
			label := r.Kind
			if label == "" {
				label = r.Rule
			}
			if label == "" {
				label = string(r.Type)
			}
			put(i, mark{lane: ln, row: rowMarks, t: r.T, class: "pt " + cssName(string(r.Type)), label: label})
		}
	}

	// The human: microphone and typing spans, messages and speech ends.
	// Typing ends as the engine ends it: typing false, a message, or the
	// pack's typing debounce passing without a keystroke.
	var debounce int64 = -1
	if p != nil {
		debounce = p.TurnTaking.TypingDebounce.MS
	}
	var micAt, typeAt, lastKey int64 = -1, -1, 0
	var micEntry, typeEntry int
	endTyping := func(at int64) {
		if typeAt < 0 {
			return
		}
		if debounce >= 0 {
			at = min(at, lastKey+debounce)
		}
		l.marks = append(l.marks, mark{lane: human, row: rowTyping, t: typeAt, d: max(at-typeAt, 1), typ: "typing", class: "typing", entry: typeEntry, label: "typing"})
		typeAt = -1
	}
	for i := range res.Inputs {
		in := &res.Inputs[i]
		if in.Type != engine.InputCandidate || in.Candidate == nil {
			continue
		}
		ev := in.Candidate
		if typeAt >= 0 && debounce >= 0 && in.T >= lastKey+debounce {
			endTyping(in.T)
		}
		head := rules.FormatClock(in.T) + "  " + human + "  " + ev.Type
		if ev.Text != "" {
			head += "  " + ev.Text
		}
		e := add(head, "", in)
		switch {
		case ev.Type == rules.EventMicState && ev.MicActive != nil:
			if *ev.MicActive && micAt < 0 {
				micAt, micEntry = in.T, e
			} else if !*ev.MicActive && micAt >= 0 {
				l.marks = append(l.marks, mark{lane: human, row: rowMic, t: micAt, d: max(in.T-micAt, 1), typ: "mic", class: "mic", entry: micEntry, label: "mic"})
				micAt = -1
			}
		case ev.Type == rules.EventTypingState && ev.Typing != nil:
			switch {
			case *ev.Typing && typeAt < 0:
				typeAt, typeEntry, lastKey = in.T, e, in.T
			case *ev.Typing:
				lastKey = in.T
			default:
				endTyping(in.T)
			}
		case ev.Type == rules.EventMessage:
			endTyping(in.T)
			cls := "pt said"
			if ev.Source != "" {
				cls += " src-" + cssName(ev.Source)
			}
			l.marks = append(l.marks, mark{lane: human, row: rowSaid, t: in.T, typ: ev.Type, class: cls, label: clip(ev.Text, 40), entry: e})
		default:
			label := ev.Type
			if ev.Type == rules.EventSpeechEnd {
				label = "" // it ends what the message beside it says
			}
			l.marks = append(l.marks, mark{lane: human, row: rowSaid, t: in.T, typ: ev.Type, class: "pt ev " + cssName(ev.Type), label: label, entry: e})
		}
	}
	if micAt >= 0 {
		l.marks = append(l.marks, mark{lane: human, row: rowMic, t: micAt, d: max(end-micAt, 1), typ: "mic", class: "mic", entry: micEntry, label: "mic"})
	}
	endTyping(end)

	// Spans first so points stay on top; then by time: the SVG's order is
	// its paint order, and the page's bytes depend on it.
	slices.SortStableFunc(l.marks, func(a, b mark) int {
		if c := cmp.Compare(boolInt(a.d == 0), boolInt(b.d == 0)); c != 0 {
			return c
		}
		return cmp.Compare(a.t, b.t)
	})
	slices.SortStableFunc(l.diffs, func(a, b diffLine) int { return cmp.Compare(a.t, b.t) })
	l.sub = summary(p, res, run.Title != "")
	return l
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// summary is the line under a run's title: pack, end and counts.
func summary(p *rules.Pack, res *record.Result, titled bool) string {
	var b strings.Builder
	if p != nil && !titled {
		b.WriteString(p.Name)
		if p.Hash != "" {
			b.WriteString(" (" + p.Hash[:min(8, len(p.Hash))] + ")")
		}
		b.WriteString(" · ")
	}
	says := 0
	for i := range res.Records {
		if res.Records[i].Type == engine.EffectAgentMessage {
			says++
		}
	}
	b.WriteString("ended at " + rules.FormatClock(res.EndMS) + ": " + res.EndReason())
	b.WriteString(" · " + itoa(len(res.Records)) + " effects, " + itoa(says) + " lines spoken")
	return b.String()
}

// cssName keeps the letters, digits, - and _ of s, so any kind or event
// type can be a class name.
func cssName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// Of a model request's context files and transcript, a mark's detail
// shows how each file starts and the newest lines: the whole of them, in
// every request of a pack with background jobs, is most of a page.
const (
	fileHead = 160
	tailKept = 4
)

// shortRequest is r with its request's files and transcript shortened
// as the page shows them; r itself is left as it is.
func shortRequest(r *record.Record) *record.Record {
	q := r.Request
	if q == nil || (len(q.Files) == 0 && len(q.TranscriptTail) <= tailKept && len(q.Attachments) == 0) {
		return r
	}
	c, sq := *r, *q
	c.Request = &sq
	if n := len(sq.TranscriptTail); n > tailKept {
		sq.TranscriptTail = sq.TranscriptTail[n-tailKept:]
	}
	sq.Files = make([]engine.FilePart, len(q.Files))
	for i, f := range q.Files {
		if n := utf8.RuneCountInString(f.Text); n > fileHead {
			f.Text = string([]rune(f.Text)[:fileHead]) + "… (" + itoa(n-fileHead) + " more characters)"
		}
		sq.Files[i] = f
	}
	sq.Attachments = make([]engine.Attachment, len(q.Attachments))
	for i, a := range q.Attachments {
		sq.Attachments[i] = engine.Attachment{Name: a.Name, MIME: a.MIME}
	}
	return &c
}
