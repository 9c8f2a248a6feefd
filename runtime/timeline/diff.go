package timeline

import (
	"fmt"

	"github.com/batonhq/baton/runtime/record"
)

// How a record of a what-if page differs from the other run.
const (
	diffOnly    = "only"    // the other run has no such effect
	diffShifted = "shifted" // it has, at another time
)

// diffMark is one record that differs: its index in its run's Records.
type diffMark struct {
	rec   int
	kind  string
	shift int64 // shifted: this run's time less the baseline's
	// base says which run the record is from.
	base bool
}

func (d diffMark) note() string {
	switch {
	case d.kind == diffShifted:
		return fmt.Sprintf("shifted %+.1fs from the baseline", float64(d.shift)/1000)
	case d.base:
		return "only in the baseline"
	}
	return "only in the what-if"
}

// compare marks what differs in each run as record.Diff pairs them, the
// pairing baton replay's text diff prints: unpaired records in both runs,
// and in other the paired ones that moved. So the page marks exactly the
// lines the text diff marks for the same options.
func compare(base, other *record.Result, opt record.DiffOptions) (inBase, inOther []diffMark) {
	for _, p := range record.Diff(base.Records, other.Records, opt) {
		switch p.Change {
		case record.Removed:
			inBase = append(inBase, diffMark{rec: p.Base, kind: diffOnly, base: true})
		case record.Added:
			inOther = append(inOther, diffMark{rec: p.Other, kind: diffOnly})
		case record.Moved:
			inOther = append(inOther, diffMark{rec: p.Other, kind: diffShifted, shift: p.ShiftMS(base.Records, other.Records)})
		}
	}
	return inBase, inOther
}
