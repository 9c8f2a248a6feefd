package replay

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
)

// Change is how one effect of a what-if compares with the recording.
type Change byte

// The changes, as the text diff marks them.
const (
	Same    Change = ' ' // in both, at the same time
	Removed Change = '-' // only in the recording
	Added   Change = '+' // only in the what-if
	Moved   Change = '~' // in both, at another time
)

// DiffLine is one effect of the diff; the side it is missing from is nil.
type DiffLine struct {
	Change   Change
	Recorded *dryrun.Record
	WhatIf   *dryrun.Record
}

// ShiftMS is how much later the what-if made a moved effect.
func (d *DiffLine) ShiftMS() int64 {
	if d.Recorded == nil || d.WhatIf == nil {
		return 0
	}
	return d.WhatIf.T - d.Recorded.T
}

// maxCells bounds the table the alignment fills; past it (sessions of tens
// of thousands of effects apart) the middle is compared by content alone.
const maxCells = 1 << 25

// Diff aligns the what-if's timeline with the recording's. Two effects
// are the same when everything a timeline line says of them but the time
// is (an agent's line, kind, text, rule, outcome), so a nudge that came
// later is one moved effect, not one removed and one added. With verbose
// false the bookkeeping a timeline leaves out (model requests, routing and
// defer decisions) is left out here too.
func (w *WhatIf) Diff(verbose bool) []DiffLine {
	a := visible(w.Recorded.Result.Records, verbose)
	b := visible(w.Result.Records, verbose)
	ka, kb := keys(a), keys(b)
	// The common head and tail need no table.
	pre := 0
	for pre < len(ka) && pre < len(kb) && ka[pre] == kb[pre] {
		pre++
	}
	suf := 0
	for suf < len(ka)-pre && suf < len(kb)-pre && ka[len(ka)-1-suf] == kb[len(kb)-1-suf] {
		suf++
	}
	var out []DiffLine
	pair := func(i, j int) {
		c := Same
		if a[i].T != b[j].T {
			c = Moved
		}
		out = append(out, DiffLine{Change: c, Recorded: a[i], WhatIf: b[j]})
	}
	for i := range pre {
		pair(i, i)
	}
	out = append(out, align(a[pre:len(a)-suf], b[pre:len(b)-suf], ka[pre:len(ka)-suf], kb[pre:len(kb)-suf])...)
	for k := suf; k > 0; k-- {
		pair(len(a)-k, len(b)-k)
	}
	return out
}

// align diffs the middle by a longest common subsequence, then pairs what
// is left with equal content in order: an effect that moved past others
// is still one moved effect.
func align(a, b []*dryrun.Record, ka, kb []string) []DiffLine {
	n, m := len(a), len(b)
	var ops []DiffLine
	if n*m <= maxCells {
		// lcs[i][j] is the length of the common subsequence of a[i:], b[j:].
		lcs := make([]int32, (n+1)*(m+1))
		at := func(i, j int) *int32 { return &lcs[i*(m+1)+j] }
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if ka[i] == kb[j] {
					*at(i, j) = *at(i+1, j+1) + 1
				} else {
					*at(i, j) = max(*at(i+1, j), *at(i, j+1))
				}
			}
		}
		i, j := 0, 0
		for i < n || j < m {
			switch {
			case i < n && j < m && ka[i] == kb[j]:
				c := Same
				if a[i].T != b[j].T {
					c = Moved
				}
				ops = append(ops, DiffLine{Change: c, Recorded: a[i], WhatIf: b[j]})
				i++
				j++
			case i < n && (j == m || *at(i+1, j) >= *at(i, j+1)):
				ops = append(ops, DiffLine{Change: Removed, Recorded: a[i]})
				i++
			default:
				ops = append(ops, DiffLine{Change: Added, WhatIf: b[j]})
				j++
			}
		}
	} else {
		for i := range a {
			ops = append(ops, DiffLine{Change: Removed, Recorded: a[i]})
		}
		for j := range b {
			ops = append(ops, DiffLine{Change: Added, WhatIf: b[j]})
		}
	}
	// Pair the leftovers by content, first with first, when they are
	// less than movedWithinMS apart: an effect that moved past its
	// neighbours is one moved effect, but the same words said minutes
	// apart (a rotating nudge line) are two effects.
	removed := map[string][]int{}
	for k := range ops {
		if ops[k].Change == Removed {
			key := key(ops[k].Recorded)
			removed[key] = append(removed[key], k)
		}
	}
	drop := map[int]bool{}
	for k := range ops {
		if ops[k].Change != Added {
			continue
		}
		key := key(ops[k].WhatIf)
		q := removed[key]
		n := slices.IndexFunc(q, func(r int) bool {
			d := ops[k].WhatIf.T - ops[r].Recorded.T
			return d < movedWithinMS && -d < movedWithinMS
		})
		if n < 0 {
			continue
		}
		r := q[n]
		removed[key] = slices.Delete(q, n, n+1)
		drop[r] = true
		c := Moved
		if ops[r].Recorded.T == ops[k].WhatIf.T {
			c = Same // the others moved around it
		}
		ops[k] = DiffLine{Change: c, Recorded: ops[r].Recorded, WhatIf: ops[k].WhatIf}
	}
	out := ops[:0]
	for k := range ops {
		if !drop[k] {
			out = append(out, ops[k])
		}
	}
	return out
}

// movedWithinMS is how far apart the same effect may be, across other
// effects, and still be one moved effect.
const movedWithinMS = 60_000

// visible are the records a timeline shows.
func visible(recs []dryrun.Record, verbose bool) []*dryrun.Record {
	var out []*dryrun.Record
	for i := range recs {
		r := &recs[i]
		if !verbose && (r.Type == engine.EffectLLMRequest || r.Type == engine.EffectRouted || r.Type == engine.EffectDeferred) {
			continue
		}
		out = append(out, r)
	}
	return out
}

func keys(recs []*dryrun.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = key(r)
	}
	return out
}

// key is a record's timeline line with what may move left out: its time,
// playback time, lateness and id.
func key(r *dryrun.Record) string {
	c := dryrun.Record{Effect: r.Effect}
	c.T, c.ID, c.Lateness = 0, "", nil
	return dryrun.TextLine(&c)
}

// line is a record's timeline line. Lateness within the pack's tick is not
// lateness, as the dry run's timeline says; a recording's records, made
// outside a dry run, do not carry the tick, so it is applied here.
func line(r *dryrun.Record, tickMS int64) string {
	c := *r
	if c.Lateness != nil && c.Lateness.LateMS <= tickMS {
		c.Lateness = nil
	}
	return dryrun.TextLine(&c)
}

// Summary compares a what-if with its recording in the numbers a designer
// asks about; each pair is recorded, then what-if.
type Summary struct {
	// Nudges counts the lines the silence rules said.
	Nudges [2]int `json:"nudges"`
	// AnchorLateMS is the latest an anchor's line came after its due time.
	AnchorLateMS [2]int64 `json:"anchor_late_ms"`
	// End is how each run ended ("" when it did not), at EndMS.
	End   [2]string `json:"end"`
	EndMS [2]int64  `json:"end_ms"`
	// Reused and Asked count the model answers taken from the recording
	// and asked anew.
	Reused int `json:"reused"`
	Asked  int `json:"asked"`
	// Same, Moved, Removed and Added count the diff's lines.
	Same    int `json:"same"`
	Moved   int `json:"moved"`
	Removed int `json:"removed"`
	Added   int `json:"added"`
}

// Summary counts the what-if against its recording (the diff without
// bookkeeping effects, as the text diff shows it).
func (w *WhatIf) Summary() Summary {
	s := Summary{Reused: w.Reused, Asked: w.Asked}
	for k, side := range [2]struct {
		p   *rules.Pack
		res *dryrun.Result
	}{{w.Recorded.Pack, w.Recorded.Result}, {w.Pack, w.Result}} {
		for i := range side.res.Records {
			r := &side.res.Records[i]
			switch r.Type {
			case engine.EffectAgentMessage:
				if r.Rule == silenceRule {
					s.Nudges[k]++
				}
				if it, ok := side.p.Where(r.Rule); ok && it.Kind == rules.CoverAnchor && r.Lateness != nil && r.Lateness.LateMS > side.p.Tick.MS {
					s.AnchorLateMS[k] = max(s.AnchorLateMS[k], r.Lateness.LateMS)
				}
			case engine.EffectSessionEnd:
				s.End[k] = r.Reason
			}
		}
		s.EndMS[k] = side.res.EndMS
	}
	for _, d := range w.Diff(false) {
		switch d.Change {
		case Same:
			s.Same++
		case Moved:
			s.Moved++
		case Removed:
			s.Removed++
		case Added:
			s.Added++
		}
	}
	return s
}

// silenceRule is the rule stamp of the lines the silence steps say.
const silenceRule = "silence"

func endString(reason string, t int64) string {
	if reason == "" {
		return "not ended by " + rules.FormatClock(t)
	}
	return reason + " at " + rules.FormatClock(t)
}

// Line is the summary on one line, for a folder of sessions.
func (s *Summary) Line() string {
	return fmt.Sprintf("nudges %d->%d, anchors late %.1fs->%.1fs, end %s -> %s, answers %d reused %d asked, effects %d same %d moved %d removed %d added",
		s.Nudges[0], s.Nudges[1], float64(s.AnchorLateMS[0])/1000, float64(s.AnchorLateMS[1])/1000,
		endString(s.End[0], s.EndMS[0]), endString(s.End[1], s.EndMS[1]), s.Reused, s.Asked, s.Same, s.Moved, s.Removed, s.Added)
}

// DiffOptions configure WriteDiff.
type DiffOptions struct {
	// Verbose adds the bookkeeping effects a timeline leaves out.
	Verbose bool
}

// WriteDiff prints the what-if as a diff of timelines: each line is a
// timeline line marked ' ' (unchanged), '-' (only recorded), '+' (only in
// the what-if) or '~' (moved, with its shift), then the summary as
// comment lines.
func WriteDiff(w io.Writer, wi *WhatIf, opt DiffOptions) error {
	bw := bufio.NewWriter(w)
	s := &wi.Recorded.Session
	fmt.Fprintf(bw, "# what-if of session %s (candidate %q): recorded with pack %s %.12s, played through %s %.12s; engine %s, seed %d\n",
		s.ID, s.CandidateID, s.Pack, s.PackHash, wi.Pack.Name, wi.Pack.Hash, s.Engine, s.Seed)
	for _, n := range wi.Notes {
		fmt.Fprintf(bw, "# note: %s\n", n)
	}
	tickA, tickB := wi.Recorded.Pack.Tick.MS, wi.Pack.Tick.MS
	for _, d := range wi.Diff(opt.Verbose) {
		switch d.Change {
		case Removed:
			fmt.Fprintf(bw, "- %s\n", line(d.Recorded, tickA))
		case Added, Same:
			fmt.Fprintf(bw, "%c %s\n", d.Change, line(d.WhatIf, tickB))
		case Moved:
			fmt.Fprintf(bw, "~ %s  [moved %+.1fs from %s]\n", line(d.WhatIf, tickB), float64(d.ShiftMS())/1000, rules.FormatClock(d.Recorded.T))
		}
	}
	sum := wi.Summary()
	fmt.Fprintf(bw, "# nudges: %d recorded, %d what-if\n", sum.Nudges[0], sum.Nudges[1])
	fmt.Fprintf(bw, "# anchors' worst lateness: %.1fs recorded, %.1fs what-if\n", float64(sum.AnchorLateMS[0])/1000, float64(sum.AnchorLateMS[1])/1000)
	fmt.Fprintf(bw, "# end: %s recorded, %s what-if\n", endString(sum.End[0], sum.EndMS[0]), endString(sum.End[1], sum.EndMS[1]))
	fmt.Fprintf(bw, "# model answers: %d reused from the recording, %d asked anew\n", sum.Reused, sum.Asked)
	fmt.Fprintf(bw, "# effects: %d unchanged, %d moved, %d only recorded, %d only what-if\n", sum.Same, sum.Moved, sum.Removed, sum.Added)
	return bw.Flush()
}

// WriteDiffJSONL prints the diff as JSON lines, one per DiffLine
// ({"change", "shift_ms", "recorded", "what_if"}, the side an effect is
// missing from left out), then {"summary": Summary}.
func WriteDiffJSONL(w io.Writer, wi *WhatIf, opt DiffOptions) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	type jsonLine struct {
		Change   string         `json:"change"`
		ShiftMS  int64          `json:"shift_ms,omitempty"`
		Recorded *dryrun.Record `json:"recorded,omitempty"`
		WhatIf   *dryrun.Record `json:"what_if,omitempty"`
	}
	for _, d := range wi.Diff(opt.Verbose) {
		if err := enc.Encode(jsonLine{Change: string(d.Change), ShiftMS: d.ShiftMS(), Recorded: d.Recorded, WhatIf: d.WhatIf}); err != nil {
			return err
		}
	}
	if err := enc.Encode(struct {
		Summary Summary `json:"summary"`
	}{wi.Summary()}); err != nil {
		return err
	}
	return bw.Flush()
}

// Changed reports whether the what-if's timeline differs from the
// recording's at all (bookkeeping effects included).
func (w *WhatIf) Changed() bool {
	return slices.ContainsFunc(w.Diff(true), func(d DiffLine) bool { return d.Change != Same })
}
