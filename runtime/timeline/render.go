package timeline

import (
	"bufio"
	"cmp"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/record"
)

//go:embed page.css
var pageCSS string

//go:embed page.js
var pageJS string

// Geometry, in px. The page is drawn for an axis of baseWidth so it reads
// without scripts; the script fits it to the window and zooms it.
const (
	baseWidth = 1200
	pad       = 14 // left of the axis
	padRight  = 90 // right of it: room for the labels of the end
	axisH     = 22
	runHeadH  = 22
	rowH      = 14
	laneGap   = 6
	namesW    = 170
)

// WriteHTML writes one self-contained HTML page: one run's timeline, or
// for two runs a what-if page, the first (the baseline) above the second
// on the same axis, with the effects only one has, and those that moved,
// highlighted. Two runs compare as WriteWhatIf's do with the zero
// record.DiffOptions, as baton replay's text diff does without -v.
func WriteHTML(w io.Writer, runs ...Run) error {
	return write(w, record.DiffOptions{}, runs)
}

// WriteWhatIf writes the what-if page of base and other, the differences
// marked and counted as record.Diff pairs them with opt: the same lines
// baton replay's text diff marks with the same options. Every effect of
// both runs is drawn; those opt does not compare are never marked.
func WriteWhatIf(w io.Writer, base, other Run, opt record.DiffOptions) error {
	return write(w, opt, []Run{base, other})
}

func write(w io.Writer, opt record.DiffOptions, runs []Run) error {
	switch {
	case len(runs) == 0:
		return errors.New("timeline: no run to draw")
	case len(runs) > 2:
		return fmt.Errorf("timeline: %d runs: a page draws one run or a baseline and a what-if", len(runs))
	}
	for i, r := range runs {
		if r.Result == nil {
			return fmt.Errorf("timeline: run %d (%q) has no result", i+1, r.Title)
		}
	}
	diffs := make([][]diffMark, len(runs))
	if len(runs) == 2 {
		diffs[0], diffs[1] = compare(runs[0].Result, runs[1].Result, opt)
	}
	var end int64 = 1
	lays := make([]*layout, len(runs))
	for i, r := range runs {
		end = max(end, endOf(r.Result))
		lays[i] = build(r, diffs[i])
	}
	bw := bufio.NewWriter(w)
	p := &page{w: bw, end: end, k: float64(baseWidth) / float64(end), opt: opt}
	p.write(runs, lays)
	if p.err != nil {
		return p.err
	}
	return bw.Flush()
}

type page struct {
	w   *bufio.Writer
	err error
	end int64
	k   float64 // px per ms at the drawn width
	opt record.DiffOptions
}

func (p *page) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func (p *page) str(s string) {
	if p.err == nil {
		_, p.err = p.w.WriteString(s)
	}
}

// x is where time t is drawn, as the attribute's text.
func (p *page) x(t int64) string { return px(float64(pad) + float64(t)*p.k) }

func (p *page) width(d int64) string { return px(max(float64(d)*p.k, 1.5)) }

func px(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

func itoa(n int) string { return strconv.Itoa(n) }

func esc(s string) string { return html.EscapeString(s) }

func (p *page) write(runs []Run, lays []*layout) {
	title := "baton timeline"
	if runs[0].Title != "" {
		title = runs[0].Title
	}
	if len(runs) == 2 {
		title = "what-if: " + runs[1].Title + " vs " + runs[0].Title
	}
	p.str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n")
	p.str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	p.str("<title>" + esc(title) + "</title>\n<style>\n" + pageCSS + "</style></head>\n<body>\n")
	p.str("<header><h1>" + esc(title) + "</h1>\n")
	for i, l := range lays {
		role := ""
		if len(lays) == 2 {
			role = [...]string{"baseline: ", "what-if: "}[i]
		}
		head := l.sub
		if len(lays) == 2 {
			head = role + l.title + " · " + head
		}
		p.str("<p class=\"sub\">" + esc(head) + "</p>\n")
	}
	p.str(`<nav id="tl-zoom"><button data-zoom="out" title="zoom out (-)">−</button><button data-zoom="in" title="zoom in (+)">+</button>` +
		`<button data-zoom="fit" title="the whole session (0)">whole</button><button data-zoom="120000" title="two minutes across">2 min</button>` +
		`<button data-zoom="30000" title="thirty seconds across">30 s</button><span class="hint">ctrl+wheel zooms · hover a mark for its JSON · click pins it</span></nav>` + "\n")
	p.legend()
	p.str("</header>\n")

	// Geometry of every run's lanes, top to bottom.
	y := axisH
	tops := make([]int, len(lays))
	bottoms := make([]int, len(lays))
	for i, l := range lays {
		tops[i] = y
		y += runHeadH
		for j := range l.lanes {
			l.lanes[j].y = y
			y += l.lanes[j].rows*rowH + laneGap
		}
		bottoms[i] = y
	}
	height := y + 4

	p.str(`<div id="tl">` + "\n")
	// Lane names, outside the scrolling plot so they stay in view.
	p.printf(`<svg id="tl-names" width="%d" height="%d">`+"\n", namesW, height)
	for i, l := range lays {
		if len(lays) == 2 {
			p.printf(`<text class="run" x="4" y="%d">%s</text>`+"\n", tops[i]+15, esc(clip(runName(lays, i), 26)))
		}
		for _, ln := range l.lanes {
			p.printf(`<text class="name lk-%s" data-lane="%s" data-run="%d" x="8" y="%d">%s</text>`+"\n",
				ln.kind, esc(ln.id), i, ln.y+11, esc(clip(ln.name, 24)))
		}
	}
	p.str("</svg>\n")

	entries := 0
	p.printf(`<div id="tl-scroll"><svg id="tl-plot" width="%d" height="%d" data-end="%d" data-pad="%d" data-padr="%d">`+"\n",
		baseWidth+pad+padRight, height, p.end, pad, padRight)
	p.printf(`<rect class="plot" data-plot="" data-t="0" data-d="%d" x="%s" y="0" width="%s" height="%d"/>`+"\n", p.end, p.x(0), p.width(p.end), height)
	for i, l := range lays {
		for j, ln := range l.lanes {
			cls := "lane lk-" + ln.kind
			if j%2 == 1 {
				cls += " odd"
			}
			p.printf(`<rect class="%s" data-lane="%s" data-run="%d" data-t="0" data-d="%d" x="%s" y="%d" width="%s" height="%d"/>`+"\n",
				cls, esc(ln.id), i, p.end, p.x(0), ln.y-laneGap/2, p.width(p.end), ln.rows*rowH+laneGap)
		}
		p.printf(`<line class="runsep" data-t="0" data-t2="%d" x1="%s" x2="%s" y1="%d" y2="%d"/>`+"\n", p.end, p.x(0), p.x(p.end), tops[i], tops[i])
	}
	p.axis(height)
	for i, l := range lays {
		laneY := map[string]int{}
		for _, ln := range l.lanes {
			laneY[ln.id] = ln.y
		}
		for _, m := range l.marks {
			p.mark(i, m, laneY[m.lane], entries)
		}
		for _, v := range l.vlines {
			p.printf(`<line class="v %s %s" data-type="%s" data-rule="%s" data-run="%d" data-t="%d" data-i="%d" x1="%s" x2="%s" y1="%d" y2="%d"/>`+"\n",
				cssName(v.typ), v.class, esc(v.typ), esc(v.rule), i, v.t, v.entry+entries, p.x(v.t), p.x(v.t), tops[i]+runHeadH-4, bottoms[i])
			// The end's label goes left of its line, so an anchor at the
			// same time keeps its label on the right.
			dx := 3
			if v.typ == "session_end" {
				dx = -3
			}
			if v.label != "" {
				p.printf(`<text class="vl %s" data-t="%d" data-dx="%d" data-i="%d" x="%s" y="%d">%s</text>`+"\n",
					cssName(v.typ), v.t, dx, v.entry+entries, px(float64(pad)+float64(v.t)*p.k+float64(dx)), tops[i]+15, esc(v.label))
			}
		}
		entries += len(l.entries)
	}
	p.str("</svg></div>\n</div>\n")
	p.str(`<pre id="tl-detail" class="empty">Hover a mark to see its effect as JSON and where the pack declares its rule.</pre>` + "\n")

	if len(lays) == 2 {
		p.diffList(lays)
	}

	// Every mark's detail, as JSON: Go's encoder escapes <, > and &, so
	// no text of a run can end the script element.
	var all []entry
	for _, l := range lays {
		all = append(all, l.entries...)
	}
	data, err := json.Marshal(all)
	if err != nil && p.err == nil {
		p.err = err
	}
	p.str(`<script type="application/json" id="tl-data">`)
	if p.err == nil {
		_, p.err = p.w.Write(data)
	}
	p.str("</script>\n<script>\n" + pageJS + "</script>\n</body></html>\n")
}

func runName(lays []*layout, i int) string {
	if len(lays) == 2 {
		return [...]string{"baseline", "what-if"}[i] + ": " + lays[i].title
	}
	return lays[i].title
}

// axis draws a tick every 10 s (every minute for sessions over 30
// minutes), labelled at minutes; the script shows the other labels when
// zoomed in.
func (p *page) axis(height int) {
	step := int64(10_000)
	if p.end > 30*60_000 {
		step = 60_000
	}
	for t := int64(0); t <= p.end; t += step {
		major := t%60_000 == 0
		cls := "tick"
		if major {
			cls += " major"
		}
		p.printf(`<line class="%s" data-t="%d" x1="%s" x2="%s" y1="%d" y2="%d"/>`, cls, t, p.x(t), p.x(t), axisH-6, height)
		lcls := "tl"
		if !major {
			lcls += " minor"
		}
		p.printf(`<text class="%s" data-t="%d" data-dx="2" x="%s" y="%d">%s</text>`+"\n", lcls, t, px(float64(pad)+float64(t)*p.k+2), axisH-9, rules.FormatClock(t)[:5])
	}
}

func (p *page) mark(run int, m mark, laneTop, offset int) {
	y := laneTop + m.row*rowH
	attrs := fmt.Sprintf(`data-lane="%s" data-run="%d" data-type="%s" data-t="%d"`, esc(m.lane), run, esc(m.typ), m.t)
	if m.rule != "" {
		attrs += ` data-rule="` + esc(m.rule) + `"`
	}
	if m.entry >= 0 {
		attrs += ` data-i="` + itoa(m.entry+offset) + `"`
	}
	if m.diff != "" {
		attrs += ` data-diff="` + m.diff + `"`
	}
	if m.shift != 0 {
		attrs += ` data-shift="` + strconv.FormatInt(m.shift, 10) + `"`
	}
	switch {
	case m.diff == "from":
		// A moved effect's baseline time, joined to its time in this run.
		p.printf(`<line class="shift" %s data-t2="%d" x1="%s" x2="%s" y1="%d" y2="%d"/>`+"\n",
			attrs, m.t+m.shift, p.x(m.t), p.x(m.t+m.shift), y+rowH/2, y+rowH/2)
		p.printf(`<circle class="shift-from" %s cx="%s" cy="%d" r="3"/>`+"\n", attrs, p.x(m.t), y+rowH/2)
		return
	case m.d > 0:
		p.printf(`<rect class="m %s" %s data-d="%d" x="%s" y="%d" width="%s" height="%d"/>`+"\n",
			m.class, attrs, m.d, p.x(m.t), y+1, p.width(m.d), rowH-2)
		if m.label != "" {
			lbl := "lbl"
			if m.typ == "window" {
				lbl += " always" // few and wide: named at any zoom
			}
			p.printf(`<text class="%s" data-t="%d" data-dx="2" x="%s" y="%d">%s</text>`+"\n", lbl,
				m.t, px(float64(pad)+float64(m.t)*p.k+2), y+rowH-4, esc(clip(m.label, 48)))
		}
	default:
		p.printf(`<circle class="m %s" %s cx="%s" cy="%d" r="4.5"/>`+"\n", m.class, attrs, p.x(m.t), y+rowH/2)
		if m.label != "" {
			lbl, dx := "lbl", 6
			if m.typ == "session_end" {
				lbl, dx = "lbl always end", -6 // left of the end, where the session was
			}
			p.printf(`<text class="%s" data-t="%d" data-dx="%d" x="%s" y="%d">%s</text>`+"\n",
				lbl, m.t, dx, px(float64(pad)+float64(m.t)*p.k+float64(dx)), y+rowH-4, esc(clip(m.label, 32)))
		}
	}
}

func (p *page) legend() {
	items := []struct{ class, text string }{
		{"say k-window", "window turn"}, {"say k-anchor", "anchor turn"}, {"say k-reply", "reply"},
		{"say k-nudge", "silence step"}, {"say", "other speech"}, {"held", "held (deferred)"},
		{"say rewritten", "guardrail rewrite"}, {"say cut", "talked over"}, {"mic", "mic open"}, {"typing", "typing"}, {"said", "message"},
		{"win taken", "window taken"}, {"win deferred", "taken late"}, {"win skipped", "skipped"}, {"win untaken", "not taken"},
		{"job job_result", "job"}, {"routed", "routed"}, {"deferred", "deferral"}, {"defer_cap", "defer cap"},
		{"auto_advance", "auto-advance"}, {"guardrail", "guardrail"}, {"tool_result", "tool"}, {"ctool", "client tool"},
	}
	p.str(`<ul class="legend">`)
	for _, it := range items {
		p.str(`<li><svg width="14" height="10"><rect class="m ` + it.class + `" x="0" y="0" width="14" height="10"/></svg>` + esc(it.text) + `</li>`)
	}
	p.str("</ul>\n")
}

func (p *page) diffList(lays []*layout) {
	n := len(lays[0].diffs) + len(lays[1].diffs)
	p.printf(`<section id="tl-diffs"><h2>%d difference(s)</h2>`+"\n", n)
	p.str(`<p class="compared">Compared: ` + esc(p.opt.String()) + ".</p>\n")
	if n == 0 {
		p.str("<p>Both runs have the same effects at the same times.</p></section>\n")
		return
	}
	// Both runs' differences in one list, by time, the baseline's first
	// at equal times.
	type item struct {
		d   diffLine
		run int
	}
	var all []item
	for i, l := range lays {
		for _, d := range l.diffs {
			if i == 1 {
				d.entry += len(lays[0].entries)
			}
			all = append(all, item{d, i})
		}
	}
	slices.SortStableFunc(all, func(a, b item) int { return cmp.Compare(a.d.t, b.d.t) })
	p.str("<ol>\n")
	for _, it := range all {
		p.printf(`<li data-go="%d" class="%s r%d">%s</li>`+"\n", it.d.entry, it.d.diff, it.run, esc(strings.ReplaceAll(it.d.text, "\n", " ")))
	}
	p.str("</ol></section>\n")
}
