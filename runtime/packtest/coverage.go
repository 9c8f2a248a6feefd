package packtest

import (
	"fmt"

	"github.com/batonhq/baton/rules"
)

// Report is a pack's coverage by a run of its tests: every item of the
// pack's CoverItems, in that order, with the tests whose sessions
// exercised it. The engine counts the hits where each feature fires, so a
// rule that only sets a variable is covered when its condition held and
// its actions ran, though no effect names it.
type Report struct {
	// Pack is the pack's name.
	Pack  string
	Items []ItemCoverage
	// Covered counts the items some test exercised, of len(Items).
	Covered int
}

// ItemCoverage is one item of a pack and what exercised it.
type ItemCoverage struct {
	rules.CoverItem
	// Hits is how often the item was exercised, over every test.
	Hits uint64
	// Tests names the tests (Result.Name) that exercised it, in run order.
	Tests []string
}

// Covered says whether any test exercised the item.
func (it *ItemCoverage) Covered() bool { return it.Hits > 0 }

// Coverage merges the coverage of results, a run of p's tests: an item is
// covered when any test's session exercised it. Results that did not run
// (a case that does not read) add nothing; one whose counts are not of
// p's items (another pack's) is an error rather than a report that counts
// the wrong things.
func Coverage(p *rules.Pack, results []Result) (Report, error) {
	items := p.CoverItems()
	r := Report{Pack: p.Name, Items: make([]ItemCoverage, len(items))}
	for i, it := range items {
		r.Items[i].CoverItem = it
	}
	for _, res := range results {
		if res.Coverage == nil {
			continue
		}
		if len(res.Coverage) != len(items) {
			return Report{}, fmt.Errorf("%s: coverage of %d items, but pack %s has %d", res.File, len(res.Coverage), p.Name, len(items))
		}
		for i, n := range res.Coverage {
			if n == 0 {
				continue
			}
			r.Items[i].Hits += uint64(n)
			r.Items[i].Tests = append(r.Items[i].Tests, res.Name)
		}
	}
	for i := range r.Items {
		if r.Items[i].Covered() {
			r.Covered++
		}
	}
	return r, nil
}

// Total is the number of items the pack declares that a session can
// exercise.
func (r *Report) Total() int { return len(r.Items) }

// Uncovered lists the items no test exercised, in pack order.
func (r *Report) Uncovered() []ItemCoverage {
	var out []ItemCoverage
	for _, it := range r.Items {
		if !it.Covered() {
			out = append(out, it)
		}
	}
	return out
}

// PercentText is the share covered as reports print it, to one decimal
// and rounded down, so a pack short of a threshold never reads as at it
// (89.96% is 89.9%, not 90.0%) and only a wholly covered pack reads
// 100.0%.
func (r *Report) PercentText() string {
	t := r.tenths()
	return fmt.Sprintf("%d.%d%%", t/10, t%10)
}

// tenths is the share covered in tenths of a percent, rounded down.
func (r *Report) tenths() int {
	if len(r.Items) == 0 {
		return 1000
	}
	return r.Covered * 1000 / len(r.Items)
}

// Below says whether the share covered is under min percent.
func (r *Report) Below(min float64) bool {
	return float64(r.Covered)*100 < min*float64(len(r.Items))
}

// UncoveredNames names the uncovered items as "rule R1
// (pack.yaml:12:5)", each file named by where (nil keeps the pack's own
// names).
func (r *Report) UncoveredNames(where func(rules.Pos) string) []string {
	var out []string
	for _, it := range r.Uncovered() {
		pos := it.Pos.String()
		if where != nil {
			pos = where(it.Pos)
		}
		out = append(out, fmt.Sprintf("%s (%s)", it.Name(), pos))
	}
	return out
}
