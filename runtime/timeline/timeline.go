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

// builder turns one run into a layout: the lanes, then the marks and
// bars of its records, the pack's windows and anchors, and its human's
// inputs. What it appends, and in which order, is the page's byte order.
type builder struct {
	l     *layout
	p     *rules.Pack // nil for a run drawn without its pack
	res   *record.Result
	end   int64  // where the run's axis ends
	human string // the human's lane
	// roles are the agents with a lane of their own: the pack's roles and
	// any other agent an effect names.
	roles map[string]bool
	// diffAt is, on a what-if page, how each record that differs does.
	diffAt map[int]diffMark
	// recEntry is each record's detail entry.
	recEntry []int
	// cutAt is when each line the candidate talked over stopped.
	cutAt map[string]int64
	// anchorDrawn holds the anchors whose line across the run is drawn.
	anchorDrawn map[string]bool
}

// build lays out one run; diffs are how its records differ on a what-if
// page. The steps keep this order: entries are numbered, and marks at
// one time painted, in the order they are added.
func build(run Run, diffs []diffMark) *layout {
	b := newBuilder(run, diffs)
	b.addLanes()
	b.addRecordEntries()
	b.addWindows()
	b.addUnfiredAnchors()
	b.addEffects()
	b.addHuman()
	b.l.sortMarks()
	b.l.sub = summary(run.Pack, run.Result, run.Title != "")
	return b.l
}

func newBuilder(run Run, diffs []diffMark) *builder {
	b := &builder{
		l:           &layout{title: run.Title},
		p:           run.Pack,
		res:         run.Result,
		end:         endOf(run.Result),
		human:       rules.DefaultHuman,
		roles:       map[string]bool{},
		diffAt:      make(map[int]diffMark, len(diffs)),
		cutAt:       cutTimes(run.Result.Inputs),
		anchorDrawn: map[string]bool{},
	}
	if b.p != nil {
		b.human = b.p.HumanName()
	}
	for _, d := range diffs {
		b.diffAt[d.rec] = d
	}
	return b
}

// addEntry adds what hovering a mark shows and returns its index.
func (l *layout) addEntry(head, where string, v any) int {
	data, err := json.Marshal(v)
	if err != nil {
		data = []byte("null")
	}
	l.entries = append(l.entries, entry{Head: head, Where: where, JSON: clipJSON(data)})
	return len(l.entries) - 1
}

// sortMarks puts spans first so points stay on top, then orders by time:
// the SVG's order is its paint order, and the page's bytes depend on it.
// The sorts are stable, so marks at one time keep the order they were
// added in.
func (l *layout) sortMarks() {
	slices.SortStableFunc(l.marks, func(a, b mark) int {
		if c := cmp.Compare(boolInt(a.d == 0), boolInt(b.d == 0)); c != 0 {
			return c
		}
		return cmp.Compare(a.t, b.t)
	})
	slices.SortStableFunc(l.diffs, func(a, b diffLine) int { return cmp.Compare(a.t, b.t) })
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
