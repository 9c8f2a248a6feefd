package replay

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/record"
)

// DiffOptions choose what a what-if's diff compares: the one rule of
// record.Diff, which the what-if page follows too.
type DiffOptions = record.DiffOptions

// Diff pairs the what-if's effects with the recording's (record.Diff:
// the recording is the base run, the what-if the other).
func (w *WhatIf) Diff(opt DiffOptions) []record.Pair {
	return record.Diff(w.Recorded.Result.Records, w.Result.Records, opt)
}

// line is a record's timeline line. Lateness within the pack's tick is not
// lateness, as the dry run's timeline says; a recording's records, made
// outside a dry run, do not carry the tick, so it is applied here.
func line(r *record.Record, tickMS int64) string {
	c := *r
	if c.Lateness != nil && c.Lateness.LateMS <= tickMS {
		c.Lateness = nil
	}
	return record.TextLine(&c)
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
	// Same, Moved, Removed and Added count the diff's lines, of the
	// effects it compared: with Verbose, model requests, routing and
	// defer decisions too (DiffOptions).
	Verbose bool `json:"verbose"`
	Same    int  `json:"same"`
	Moved   int  `json:"moved"`
	Removed int  `json:"removed"`
	Added   int  `json:"added"`
}

// Summary counts the what-if against its recording, the diff's lines as
// Diff(opt) pairs them.
func (w *WhatIf) Summary(opt DiffOptions) Summary {
	return w.summary(w.Diff(opt), opt)
}

// Differences counts the diff's lines that are not Same: the number the
// what-if page heads its list of differences with, for the same options.
func (s *Summary) Differences() int { return s.Moved + s.Removed + s.Added }

func (w *WhatIf) summary(pairs []record.Pair, opt DiffOptions) Summary {
	s := Summary{Reused: w.Reused, Asked: w.Asked, Verbose: opt.Verbose}
	for k, side := range [2]struct {
		p   *rules.Pack
		res *record.Result
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
	for _, d := range pairs {
		switch d.Change {
		case record.Same:
			s.Same++
		case record.Moved:
			s.Moved++
		case record.Removed:
			s.Removed++
		case record.Added:
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
	recA, recB := wi.Recorded.Result.Records, wi.Result.Records
	pairs := wi.Diff(opt)
	for _, d := range pairs {
		switch d.Change {
		case record.Removed:
			fmt.Fprintf(bw, "- %s\n", line(&recA[d.Base], tickA))
		case record.Added, record.Same:
			fmt.Fprintf(bw, "%c %s\n", d.Change, line(&recB[d.Other], tickB))
		case record.Moved:
			fmt.Fprintf(bw, "~ %s  [moved %+.1fs from %s]\n", line(&recB[d.Other], tickB), float64(d.ShiftMS(recA, recB))/1000, rules.FormatClock(recA[d.Base].T))
		}
	}
	sum := wi.summary(pairs, opt)
	fmt.Fprintf(bw, "# nudges: %d recorded, %d what-if\n", sum.Nudges[0], sum.Nudges[1])
	fmt.Fprintf(bw, "# anchors' worst lateness: %.1fs recorded, %.1fs what-if\n", float64(sum.AnchorLateMS[0])/1000, float64(sum.AnchorLateMS[1])/1000)
	fmt.Fprintf(bw, "# end: %s recorded, %s what-if\n", endString(sum.End[0], sum.EndMS[0]), endString(sum.End[1], sum.EndMS[1]))
	fmt.Fprintf(bw, "# model answers: %d reused from the recording, %d asked anew\n", sum.Reused, sum.Asked)
	fmt.Fprintf(bw, "# effects: %d unchanged, %d moved, %d only recorded, %d only what-if: %d difference(s)\n", sum.Same, sum.Moved, sum.Removed, sum.Added, sum.Differences())
	fmt.Fprintf(bw, "# compared: %s\n", opt)
	return bw.Flush()
}

// WriteDiffJSONL prints the diff as JSON lines, one per pair of the diff
// ({"change", "shift_ms", "recorded", "what_if"}, the side an effect is
// missing from left out), then {"summary": Summary}.
func WriteDiffJSONL(w io.Writer, wi *WhatIf, opt DiffOptions) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	type jsonLine struct {
		Change   string         `json:"change"`
		ShiftMS  int64          `json:"shift_ms,omitempty"`
		Recorded *record.Record `json:"recorded,omitempty"`
		WhatIf   *record.Record `json:"what_if,omitempty"`
	}
	recA, recB := wi.Recorded.Result.Records, wi.Result.Records
	pairs := wi.Diff(opt)
	for _, d := range pairs {
		l := jsonLine{Change: string(d.Change), ShiftMS: d.ShiftMS(recA, recB)}
		if d.Base >= 0 {
			l.Recorded = &recA[d.Base]
		}
		if d.Other >= 0 {
			l.WhatIf = &recB[d.Other]
		}
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	if err := enc.Encode(struct {
		Summary Summary `json:"summary"`
	}{wi.summary(pairs, opt)}); err != nil {
		return err
	}
	return bw.Flush()
}

// Changed reports whether the what-if's timeline differs from the
// recording's at all (bookkeeping effects included).
func (w *WhatIf) Changed() bool {
	return slices.ContainsFunc(w.Diff(DiffOptions{Verbose: true}), func(d record.Pair) bool { return d.Change != record.Same })
}
