package sweep

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/batonhq/baton/rules"
)

// Report is what a sweep found. Everything in it is a count or an
// integer total over the sessions, so it is the same whatever order they
// finished in.
type Report struct {
	Pack       string `json:"pack"`
	Population string `json:"population,omitempty"`
	// Sessions played to their end; Failed ones the dry run refused.
	Sessions int64     `json:"sessions"`
	Failed   int64     `json:"failed"`
	Failures []Failure `json:"failures,omitempty"`
	// Coverage is every item of the pack's CoverItems, in its order.
	Coverage []CoverStat `json:"coverage"`
	// Never lists the items no session hit.
	Never      []CoverStat `json:"never"`
	EndReasons []Count     `json:"end_reasons"`
	Metrics    []*Hist     `json:"metrics"`
	Extremes   []Extreme   `json:"extremes"`
	// Varied breaks the figures down by the value of the input the sweep
	// varied (baton sweep --vary), when it varied one.
	Varied *Varied `json:"varied,omitempty"`
}

// Varied is the report's figures for each value of one input.
type Varied struct {
	Input  string      `json:"input"`
	Values []ValueStat `json:"values"`
}

// ValueStat is what the sessions given one value of the varied input did.
type ValueStat struct {
	Value    string `json:"value"`
	Sessions int64  `json:"sessions"`
	Failed   int64  `json:"failed"`
	// Covered is how many of the pack's items these sessions hit.
	Covered    int     `json:"covered"`
	EndReasons []Count `json:"end_reasons"`
	Metrics    []*Hist `json:"metrics"`
}

// CoverStat is how often one item of the pack was exercised.
type CoverStat struct {
	Kind  rules.CoverKind `json:"kind"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Where string          `json:"where"`
	// Sessions is how many sessions hit it; Hits the hits of them all.
	Sessions int64  `json:"sessions"`
	Hits     uint64 `json:"hits"`
}

// Count is how many sessions ended for one reason.
type Count struct {
	Reason   string `json:"reason"`
	Sessions int64  `json:"sessions"`
}

// Extreme names the sessions that went furthest one way.
type Extreme struct {
	What     string `json:"what"`
	Unit     string `json:"unit,omitempty"`
	Sessions []Pick `json:"sessions"`
	// Alike, when every session had the same value, is that value; no
	// session is named then.
	Alike *int64 `json:"alike,omitempty"`
}

// Pick is one session of an extreme and the command that plays it.
type Pick struct {
	Seed    uint64 `json:"seed,string"`
	Value   int64  `json:"value"`
	Command string `json:"command"`
	// Timeline, set by Timelines, is the session's timeline page.
	Timeline string `json:"-"`
	// index is the session's place in its population.
	index int
}

// Failure is a session the dry run refused.
type Failure struct {
	Seed    uint64 `json:"seed,string"`
	Err     string `json:"error"`
	Command string `json:"command"`
}

func (a *agg) report(p *rules.Pack) *Report {
	r := &Report{Pack: p.Name, Sessions: a.sessions, Failed: a.failed, Failures: a.failures}
	for i, it := range a.sh.items {
		c := CoverStat{Kind: it.Kind, ID: it.ID, Name: it.Name(), Where: it.Pos.String(), Sessions: a.sessHit[i], Hits: a.hits[i]}
		r.Coverage = append(r.Coverage, c)
		if c.Sessions == 0 {
			r.Never = append(r.Never, c)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(a.ends)) {
		r.EndReasons = append(r.EndReasons, Count{Reason: k, Sessions: a.ends[k]})
	}
	for _, name := range a.order {
		r.Metrics = append(r.Metrics, a.hists[name])
	}
	units := []string{"ms", "", "", "", "", "ms", "ms", ""}
	for k, c := range criteria {
		e := Extreme{What: c.name, Unit: units[k], Sessions: a.picks[k]}
		if sp := a.spans[k]; sp.n > 1 && sp.n == a.sessions && sp.lo == sp.hi {
			// No session stands out: naming three would say they do.
			// (A criterion some sessions have no value for, such as a
			// scheduled turn's lateness, says so only of all of them.)
			v := sp.lo
			e.Sessions, e.Alike = nil, &v
		}
		r.Extremes = append(r.Extremes, e)
	}
	return r
}

// valueStat is a's sums as the figures of one value.
func (a *agg) valueStat(p *rules.Pack, value string) ValueStat {
	r := a.report(p)
	return ValueStat{Value: value, Sessions: r.Sessions, Failed: r.Failed, Covered: len(r.Coverage) - len(r.Never),
		EndReasons: r.EndReasons, Metrics: r.Metrics}
}

// Hist counts one quantity over the sessions (or over the turns of them
// all, for lateness), in steps of Step.
type Hist struct {
	Name string
	Unit string
	Step int64
	// N values were counted; Sum is their total, Min and Max their range.
	N, Sum, Min, Max int64
	counts           map[int64]int64 // by value / Step
}

func (h *Hist) add(v int64) {
	if h.N == 0 || v < h.Min {
		h.Min = v
	}
	if h.N == 0 || v > h.Max {
		h.Max = v
	}
	h.N++
	h.Sum += v
	h.counts[v/h.Step]++
}

func (h *Hist) merge(o *Hist) {
	if o.N == 0 {
		return
	}
	if h.N == 0 || o.Min < h.Min {
		h.Min = o.Min
	}
	if h.N == 0 || o.Max > h.Max {
		h.Max = o.Max
	}
	h.N += o.N
	h.Sum += o.Sum
	for k, v := range o.counts {
		h.counts[k] += v
	}
}

// Mean is the values' average; 0 with none.
func (h *Hist) Mean() float64 {
	if h.N == 0 {
		return 0
	}
	return float64(h.Sum) / float64(h.N)
}

// Quantile is the value below which a fraction q of the values fall, to
// a step.
func (h *Hist) Quantile(q float64) int64 {
	if h.N == 0 {
		return 0
	}
	want := int64(q*float64(h.N-1)) + 1
	seen := int64(0)
	for _, k := range slices.Sorted(maps.Keys(h.counts)) {
		seen += h.counts[k]
		if seen >= want {
			return min(max(k*h.Step, h.Min), h.Max)
		}
	}
	return h.Max
}

// Bucket is a range of values, Lo included, Hi not, and how many fell in
// it.
type Bucket struct {
	Lo int64 `json:"lo"`
	Hi int64 `json:"hi"`
	N  int64 `json:"n"`
}

// maxBuckets bounds a histogram's bars.
const maxBuckets = 24

// Buckets groups the counts into at most maxBuckets ranges of equal
// width, from the lowest value counted to the highest.
func (h *Hist) Buckets() []Bucket {
	if h.N == 0 {
		return nil
	}
	keys := slices.Sorted(maps.Keys(h.counts))
	lo, hi := keys[0], keys[len(keys)-1]
	width := (hi - lo + maxBuckets) / maxBuckets
	out := make([]Bucket, (hi-lo)/width+1)
	for i := range out {
		out[i] = Bucket{Lo: (lo + int64(i)*width) * h.Step, Hi: (lo + int64(i+1)*width) * h.Step}
	}
	for _, k := range keys {
		out[(k-lo)/width].N += h.counts[k]
	}
	return out
}

// MarshalJSON writes the summary and the buckets.
func (h *Hist) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Name    string   `json:"name"`
		Unit    string   `json:"unit,omitempty"`
		N       int64    `json:"n"`
		Sum     int64    `json:"sum"`
		Min     int64    `json:"min"`
		Max     int64    `json:"max"`
		Mean    float64  `json:"mean"`
		P50     int64    `json:"p50"`
		P90     int64    `json:"p90"`
		P99     int64    `json:"p99"`
		Buckets []Bucket `json:"buckets"`
	}{h.Name, h.Unit, h.N, h.Sum, h.Min, h.Max, round2(h.Mean()), h.Quantile(0.5), h.Quantile(0.9), h.Quantile(0.99), h.Buckets()})
}

func round2(f float64) float64 {
	return float64(int64(f*100+0.5)) / 100
}

// WriteJSON writes the report as one indented JSON document.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// value renders v in unit: ms as seconds, a share as a percentage.
func value(v int64, unit string) string {
	switch unit {
	case "ms":
		return fmt.Sprintf("%.1fs", float64(v)/1000)
	case "%":
		return fmt.Sprintf("%d%%", v)
	}
	return fmt.Sprint(v)
}

func mean(h *Hist) string {
	switch h.Unit {
	case "ms":
		return fmt.Sprintf("%.2fs", h.Mean()/1000)
	case "%":
		return fmt.Sprintf("%.1f%%", h.Mean())
	}
	return fmt.Sprintf("%.2f", h.Mean())
}

func pct(n, of int64) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", float64(n)*100/float64(of))
}

// WriteText writes the report as the summary baton sweep prints.
func WriteText(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# sweep of %s", r.Pack)
	if r.Population != "" {
		fmt.Fprintf(&b, ": %s", r.Population)
	}
	fmt.Fprintf(&b, "\nsessions: %d played, %d failed\n", r.Sessions, r.Failed)
	for _, f := range r.Failures {
		fmt.Fprintf(&b, "  failed: %s\n    %s\n", f.Command, firstLine(f.Err))
	}
	b.WriteString("ends:")
	for _, e := range r.EndReasons {
		fmt.Fprintf(&b, " %s %d (%s)", e.Reason, e.Sessions, pct(e.Sessions, r.Sessions))
	}
	fmt.Fprintf(&b, "\n\ncoverage: %d of %d items hit\n", len(r.Coverage)-len(r.Never), len(r.Coverage))
	width := 4
	for _, c := range r.Coverage {
		width = max(width, len(c.Name))
	}
	fmt.Fprintf(&b, "  %-*s  %9s  %7s  %9s  %s\n", width, "item", "sessions", "share", "hits", "where")
	for _, c := range r.Coverage {
		fmt.Fprintf(&b, "  %-*s  %9d  %7s  %9d  %s\n", width, c.Name, c.Sessions, pct(c.Sessions, r.Sessions), c.Hits, c.Where)
	}
	if len(r.Never) > 0 {
		fmt.Fprintf(&b, "never hit (%d):\n", len(r.Never))
		for _, c := range r.Never {
			fmt.Fprintf(&b, "  %s  %s\n", c.Name, c.Where)
		}
	}
	width = 6
	for _, h := range r.Metrics {
		width = max(width, len(h.Name))
	}
	fmt.Fprintf(&b, "\n  %-*s  %9s  %8s  %8s  %8s  %8s  %8s  %9s\n", width, "metric", "mean", "p50", "p90", "p99", "min", "max", "count")
	for _, h := range r.Metrics {
		if h.N == 0 {
			fmt.Fprintf(&b, "  %-*s  %9s\n", width, h.Name, "-")
			continue
		}
		fmt.Fprintf(&b, "  %-*s  %9s  %8s  %8s  %8s  %8s  %8s  %9d\n", width, h.Name, mean(h),
			value(h.Quantile(0.5), h.Unit), value(h.Quantile(0.9), h.Unit), value(h.Quantile(0.99), h.Unit),
			value(h.Min, h.Unit), value(h.Max, h.Unit), h.N)
	}
	if r.Varied != nil {
		writeVaried(&b, r, width)
	}
	b.WriteString("\nextremes:\n")
	for _, e := range r.Extremes {
		fmt.Fprintf(&b, "  %s:\n", e.What)
		switch {
		case e.Alike != nil:
			fmt.Fprintf(&b, "    every session: %s\n", value(*e.Alike, e.Unit))
		case len(e.Sessions) == 0:
			b.WriteString("    -\n")
		}
		for _, p := range e.Sessions {
			fmt.Fprintf(&b, "    %8s  %s\n", value(p.Value, e.Unit), p.Command)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeVaried writes the figures of each value of the varied input: the
// sessions, their endings and coverage, then each metric's mean.
func writeVaried(b *strings.Builder, r *Report, width int) {
	v := r.Varied
	fmt.Fprintf(b, "\nby %s:\n", v.Input)
	vw := len(v.Input)
	for _, s := range v.Values {
		vw = max(vw, len(s.Value))
	}
	fmt.Fprintf(b, "  %-*s  %9s  %7s  %9s  %s\n", vw, v.Input, "sessions", "failed", "covered", "ends")
	for _, s := range v.Values {
		var ends []string
		for _, e := range s.EndReasons {
			ends = append(ends, fmt.Sprintf("%s %d (%s)", e.Reason, e.Sessions, pct(e.Sessions, s.Sessions)))
		}
		fmt.Fprintf(b, "  %-*s  %9d  %7d  %9s  %s\n", vw, s.Value, s.Sessions, s.Failed,
			fmt.Sprintf("%d/%d", s.Covered, len(r.Coverage)), strings.Join(ends, ", "))
	}
	cols := make([]string, len(v.Values))
	cw := 9
	for i, s := range v.Values {
		cols[i] = v.Input + "=" + s.Value
		cw = max(cw, len(cols[i]))
	}
	fmt.Fprintf(b, "\n  %-*s", width, "mean")
	for _, c := range cols {
		fmt.Fprintf(b, "  %*s", cw, c)
	}
	b.WriteString("\n")
	for m, h := range r.Metrics {
		fmt.Fprintf(b, "  %-*s", width, h.Name)
		for _, s := range v.Values {
			cell := "-"
			if mh := s.Metrics[m]; mh.N > 0 {
				cell = mean(mh)
			}
			fmt.Fprintf(b, "  %*s", cw, cell)
		}
		b.WriteString("\n")
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
