package record

// Two runs of a session (a recording and its what-if, say) compare effect
// by effect. This is the one comparison: the what-if's text and JSON
// diff, its summary counts and the what-if page's marks all come from
// Diff, so they cannot disagree.

// Change is how one effect of a run compares with the other run.
type Change byte

// The changes, as a text diff marks them.
const (
	Same    Change = ' ' // in both, at the same time
	Removed Change = '-' // only in the base run
	Added   Change = '+' // only in the other run
	Moved   Change = '~' // in both, at another time
)

// DiffOptions choose which effects Diff compares.
type DiffOptions struct {
	// Verbose compares the bookkeeping a printed timeline leaves out
	// without -v too: model requests, routing and defer decisions.
	Verbose bool
}

// Compared reports whether Diff compares effects of r's type under opt:
// the effects a timeline printed with the same verbosity shows.
func (opt DiffOptions) Compared(r *Record) bool {
	return opt.Verbose || !quiet(r.Type)
}

// String says which effects a diff with opt compares, as the text diff
// and the what-if page both say it.
func (opt DiffOptions) String() string {
	if opt.Verbose {
		return "all effects, model requests, routing and defer decisions included (as with -v)"
	}
	return "all effects but model requests, routing and defer decisions (as without -v)"
}

// Pair is one effect of the diff: its index in each run's records, -1 on
// the side it is missing from.
type Pair struct {
	Change      Change
	Base, Other int
}

// ShiftMS is how much later the other run made a moved effect; base and
// other are the records the pair was made from.
func (p Pair) ShiftMS(base, other []Record) int64 {
	if p.Base < 0 || p.Other < 0 {
		return 0
	}
	return other[p.Other].T - base[p.Base].T
}

// MoveWindowMS is how far apart in time one effect may be in two runs
// and still be one moved effect: a nudge said eight seconds later is the
// same nudge, while the same words said minutes apart (a rotating nudge
// line) are two effects, one in each run.
const MoveWindowMS = 60_000

// maxAlign bounds the table aligning one key's effects; past it (tens of
// thousands of the same line) they pair greedily in order.
const maxAlign = 1 << 20

// Diff pairs the effects of two runs. Two effects are the same effect
// when their timeline lines agree in everything but the time (role, kind,
// text, rule, guardrail outcome; DiffKey). The effects of one key pair in
// order, each within MoveWindowMS of its partner, at the least total time
// moved: a nudge dropped early in one run leaves the same nudge later
// paired with its like, and one that moved past other effects is one
// moved effect. Only the effects opt compares take part.
//
// The pairs come in the other run's order, each effect only the base run
// has placed before the first of the other run's at or after its time, so
// the result reads as a timeline. The same runs give the same pairs.
func Diff(base, other []Record, opt DiffOptions) []Pair {
	var keys []string
	inA, inB := map[string][]int{}, map[string][]int{}
	for i := range base {
		if !opt.Compared(&base[i]) {
			continue
		}
		k := DiffKey(&base[i])
		if _, ok := inA[k]; !ok {
			keys = append(keys, k)
		}
		inA[k] = append(inA[k], i)
	}
	for j := range other {
		if opt.Compared(&other[j]) {
			k := DiffKey(&other[j])
			inB[k] = append(inB[k], j)
		}
	}
	partner := make([]int, len(other)) // the base index other[j] pairs with, or -1
	for j := range partner {
		partner[j] = -1
	}
	paired := make([]bool, len(base))
	for _, k := range keys {
		as, bs := inA[k], inB[k]
		for _, pr := range alignKey(base, other, as, bs) {
			i, j := as[pr[0]], bs[pr[1]]
			partner[j], paired[i] = i, true
		}
	}
	var out []Pair
	i := 0 // the next base record that may be removed
	removedUpTo := func(t int64, all bool) {
		for ; i < len(base); i++ {
			if !all && base[i].T > t {
				return
			}
			if !paired[i] && opt.Compared(&base[i]) {
				out = append(out, Pair{Change: Removed, Base: i, Other: -1})
			}
		}
	}
	for j := range other {
		if !opt.Compared(&other[j]) {
			continue
		}
		removedUpTo(other[j].T, false)
		switch b := partner[j]; {
		case b < 0:
			out = append(out, Pair{Change: Added, Base: -1, Other: j})
		case base[b].T == other[j].T:
			out = append(out, Pair{Change: Same, Base: b, Other: j})
		default:
			out = append(out, Pair{Change: Moved, Base: b, Other: j})
		}
	}
	removedUpTo(0, true)
	return out
}

// DiffKey is what makes two effects of two runs the same effect: the
// record's timeline line with what may move left out (its time, playback
// time, lateness and id).
func DiffKey(r *Record) string {
	c := Record{Effect: r.Effect}
	c.T, c.ID, c.Lateness = 0, "", nil
	return TextLine(&c)
}

// alignKey pairs the records as of base with bs of other (one key's, in
// order), keeping the order, at the least total time moved plus half of
// MoveWindowMS for each record left without a partner; no pair is
// MoveWindowMS or more apart. So pairing two records is cheaper than
// leaving both alone exactly when they are within the window.
//
// Records the window apart cannot pair, so where the two lists, merged
// in time order, have a gap of the window or more, each stretch between
// gaps aligns on its own: the least cost of the whole is the sum of the
// stretches', and the work grows with the stretches' size, not with the
// whole lists' product.
func alignKey(base, other []Record, as, bs []int) [][2]int {
	var out [][2]int
	i0, j0, i, j := 0, 0, 0, 0
	last := int64(0)
	flush := func() {
		for _, pr := range alignSpan(base, other, as[i0:i], bs[j0:j]) {
			out = append(out, [2]int{pr[0] + i0, pr[1] + j0})
		}
		i0, j0 = i, j
	}
	for i < len(as) || j < len(bs) {
		fromBase := j == len(bs) || (i < len(as) && base[as[i]].T <= other[bs[j]].T)
		t := int64(0)
		if fromBase {
			t = base[as[i]].T
		} else {
			t = other[bs[j]].T
		}
		if (i > i0 || j > j0) && t-last >= MoveWindowMS {
			flush()
		}
		last = t
		if fromBase {
			i++
		} else {
			j++
		}
	}
	flush()
	return out
}

// alignSpan is alignKey within one stretch. A stretch too large for the
// table (more than maxAlign pairs of candidates: a thousand records of
// one line, each within the window of the next) is paired greedily in
// order instead, each record with the first unpaired one of the other run
// within the window.
func alignSpan(base, other []Record, as, bs []int) [][2]int {
	n, m := len(as), len(bs)
	if n == 0 || m == 0 {
		return nil
	}
	dist := func(i, j int) (int64, bool) {
		d := other[bs[j]].T - base[as[i]].T
		d = max(d, -d)
		return d, d < MoveWindowMS
	}
	if n*m > maxAlign {
		var out [][2]int
		for i, j := 0, 0; i < n && j < m; {
			if _, ok := dist(i, j); ok {
				out = append(out, [2]int{i, j})
				i, j = i+1, j+1
			} else if other[bs[j]].T > base[as[i]].T {
				i++
			} else {
				j++
			}
		}
		return out
	}
	const alone = MoveWindowMS / 2
	// cost[i*(m+1)+j]: the least cost of aligning as[i:] with bs[j:].
	cost := make([]int64, (n+1)*(m+1))
	at := func(i, j int) int64 { return cost[i*(m+1)+j] }
	for i := n; i >= 0; i-- {
		for j := m; j >= 0; j-- {
			var c int64
			switch {
			case i == n:
				c = int64(m-j) * alone
			case j == m:
				c = int64(n-i) * alone
			default:
				c = min(at(i+1, j), at(i, j+1)) + alone
				if d, ok := dist(i, j); ok {
					c = min(c, at(i+1, j+1)+d)
				}
			}
			cost[i*(m+1)+j] = c
		}
	}
	var out [][2]int
	for i, j := 0, 0; i < n && j < m; {
		if d, ok := dist(i, j); ok && at(i, j) == at(i+1, j+1)+d {
			out = append(out, [2]int{i, j})
			i, j = i+1, j+1
		} else if at(i, j) == at(i+1, j)+alone {
			i++
		} else {
			j++
		}
	}
	return out
}
