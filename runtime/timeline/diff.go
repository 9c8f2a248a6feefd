package timeline

import (
	"fmt"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/dryrun"
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

// diffKey is what makes two effects the same effect in two runs; the
// time is left out so an effect that moved is matched and shown moved.
type diffKey struct {
	typ                     engine.EffectType
	agent, kind, rule, text string
}

func keyOf(r *dryrun.Record) diffKey {
	return diffKey{r.Type, r.Agent, r.Kind, r.Rule, r.Text}
}

// unpairedCost is what leaving an effect without a partner costs when
// pairing: two effects of one key further apart than twice this are
// taken for one run's effect and another's, not one that moved.
const unpairedCost = 90_000

// maxAlign bounds the table aligning one key's effects; past it they
// pair in order.
const maxAlign = 1 << 22

// compare pairs the records of base and other with equal keys and
// returns what differs in each run: unpaired records in both, and in
// other the paired ones that moved. A key's records pair in order, each
// with the one nearest in time that keeps the order: a nudge dropped
// early in one run leaves the same nudge later paired with its like,
// not with the one dropped.
func compare(base, other *dryrun.Result) (inBase, inOther []diffMark) {
	var keys []diffKey
	inA, inB := map[diffKey][]int{}, map[diffKey][]int{}
	for i := range base.Records {
		k := keyOf(&base.Records[i])
		if _, ok := inA[k]; !ok {
			keys = append(keys, k)
		}
		inA[k] = append(inA[k], i)
	}
	for j := range other.Records {
		k := keyOf(&other.Records[j])
		inB[k] = append(inB[k], j)
	}
	pairedA := make([]bool, len(base.Records))
	pairedB := make([]bool, len(other.Records))
	for _, k := range keys {
		as, bs := inA[k], inB[k]
		for _, pr := range align(base, other, as, bs) {
			i, j := as[pr[0]], bs[pr[1]]
			pairedA[i], pairedB[j] = true, true
			if s := other.Records[j].T - base.Records[i].T; s != 0 {
				inOther = append(inOther, diffMark{rec: j, kind: diffShifted, shift: s})
			}
		}
	}
	for i := range base.Records {
		if !pairedA[i] {
			inBase = append(inBase, diffMark{rec: i, kind: diffOnly, base: true})
		}
	}
	for j := range other.Records {
		if !pairedB[j] {
			inOther = append(inOther, diffMark{rec: j, kind: diffOnly})
		}
	}
	return inBase, inOther
}

// align pairs records as of base with bs of other, in order, at the
// least total time moved plus unpairedCost for each record left alone.
func align(base, other *dryrun.Result, as, bs []int) [][2]int {
	n, m := len(as), len(bs)
	if n == 0 || m == 0 {
		return nil
	}
	if n*m > maxAlign {
		out := make([][2]int, min(n, m))
		for i := range out {
			out[i] = [2]int{i, i}
		}
		return out
	}
	// cost[i][j]: the best alignment of as[i:] with bs[j:].
	cost := make([][]int64, n+1)
	for i := range cost {
		cost[i] = make([]int64, m+1)
	}
	for i := n; i >= 0; i-- {
		for j := m; j >= 0; j-- {
			switch {
			case i == n:
				cost[i][j] = int64(m-j) * unpairedCost
			case j == m:
				cost[i][j] = int64(n-i) * unpairedCost
			default:
				d := other.Records[bs[j]].T - base.Records[as[i]].T
				cost[i][j] = min(cost[i+1][j+1]+max(d, -d), cost[i+1][j]+unpairedCost, cost[i][j+1]+unpairedCost)
			}
		}
	}
	var out [][2]int
	for i, j := 0, 0; i < n && j < m; {
		d := other.Records[bs[j]].T - base.Records[as[i]].T
		switch cost[i][j] {
		case cost[i+1][j+1] + max(d, -d):
			out = append(out, [2]int{i, j})
			i, j = i+1, j+1
		case cost[i+1][j] + unpairedCost:
			i++
		default:
			j++
		}
	}
	return out
}
