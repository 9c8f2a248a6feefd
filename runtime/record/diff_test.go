package record

import (
	"slices"
	"strings"
	"testing"

	"github.com/batonhq/baton/engine"
)

func msg(t int64, text string) Record {
	return Record{Effect: engine.Effect{T: t, Type: engine.EffectAgentMessage, Agent: "qa", Kind: "reply", Text: text, Rule: "R"}}
}

func routed(t int64, rule string) Record {
	return Record{Effect: engine.Effect{T: t, Type: engine.EffectRouted, Agent: "qa", Rule: rule}}
}

// changes is the diff as its marks, and the shifts of its pairs.
func changes(base, other []Record, opt DiffOptions) (string, []int64) {
	var b strings.Builder
	var shifts []int64
	for _, p := range Diff(base, other, opt) {
		b.WriteByte(byte(p.Change))
		shifts = append(shifts, p.ShiftMS(base, other))
	}
	return b.String(), shifts
}

// Diff pairs an effect that moved past others with itself and says by how
// much it moved; the same words a window apart or more are two effects;
// bookkeeping takes part only when verbose.
func TestDiff(t *testing.T) {
	rs := func(recs ...Record) []Record { return recs }
	tests := []struct {
		name       string
		base, oth  []Record
		opt        DiffOptions
		want       string
		wantShifts []int64
	}{
		{"same", rs(msg(0, "a"), msg(10, "b")), rs(msg(0, "a"), msg(10, "b")), DiffOptions{}, "  ", []int64{0, 0}},
		{"later", rs(msg(0, "a"), msg(10, "b")), rs(msg(0, "a"), msg(30, "b")), DiffOptions{}, " ~", []int64{0, 20}},
		{"past another", rs(msg(0, "a"), msg(10, "b"), msg(20, "c")), rs(msg(0, "a"), msg(20, "c"), msg(25, "b")), DiffOptions{}, "  ~", []int64{0, 0, 15}},
		{"gone and new", rs(msg(0, "a"), msg(10, "b")), rs(msg(0, "a"), msg(10, "x")), DiffOptions{}, " -+", []int64{0, 0, 0}},
		{"another outcome is another line", rs(msg(0, "a")), rs(func() Record { r := msg(0, "a"); r.Outcome = engine.OutcomeRewritten; return r }()), DiffOptions{}, "-+", []int64{0, 0}},
		{"just inside the window", rs(msg(0, "n")), rs(msg(MoveWindowMS-1, "n")), DiffOptions{}, "~", []int64{MoveWindowMS - 1}},
		{"a window apart", rs(msg(0, "n")), rs(msg(MoveWindowMS, "n")), DiffOptions{}, "-+", []int64{0, 0}},
		// A rotating nudge: the first one dropped, the later one pairs
		// with its like, not with the one dropped.
		{"dropped early", rs(msg(10_000, "n"), msg(50_000, "n")), rs(msg(52_000, "n")), DiffOptions{}, "-~", []int64{0, 2000}},
		{"late effect ids and times aside", rs(func() Record { r := msg(0, "a"); r.ID = "e1"; r.Lateness = &engine.Lateness{LateMS: 900}; return r }()),
			rs(func() Record { r := msg(0, "a"); r.ID = "e7"; return r }()), DiffOptions{}, " ", []int64{0}},
		{"routing left out", rs(routed(0, "R1"), msg(5, "a")), rs(routed(0, "R2"), msg(5, "a")), DiffOptions{}, " ", []int64{0}},
		{"routing compared with verbose", rs(routed(0, "R1"), msg(5, "a")), rs(routed(0, "R2"), msg(5, "a")), DiffOptions{Verbose: true}, "-+ ", []int64{0, 0, 0}},
		{"only the base run", rs(msg(0, "a"), msg(10, "b")), nil, DiffOptions{}, "--", []int64{0, 0}},
		{"only the other run", nil, rs(msg(0, "a")), DiffOptions{}, "+", []int64{0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, shifts := changes(tc.base, tc.oth, tc.opt)
			if got != tc.want || !slices.Equal(shifts, tc.wantShifts) {
				t.Errorf("diff %q shifts %v, want %q %v", got, shifts, tc.want, tc.wantShifts)
			}
		})
	}
}

// Every compared record of both runs is in exactly one pair, each pair's
// indexes point at records of one key, and the pairs read as a timeline.
func TestDiffCoversEveryRecord(t *testing.T) {
	base := []Record{msg(0, "a"), routed(1, "R"), msg(2_000, "n"), msg(9_000, "b"), msg(20_000, "n"), msg(40_000, "c")}
	other := []Record{msg(0, "a"), msg(3_000, "n"), routed(3_500, "R"), msg(9_500, "x"), msg(41_000, "c"), msg(90_000, "n")}
	for _, opt := range []DiffOptions{{}, {Verbose: true}} {
		t.Run(opt.String(), func(t *testing.T) {
			pairs := Diff(base, other, opt)
			seenA, seenB := map[int]int{}, map[int]int{}
			last := int64(-1)
			for _, p := range pairs {
				if p.Base >= 0 {
					seenA[p.Base]++
				}
				if p.Other >= 0 {
					seenB[p.Other]++
				}
				if p.Base >= 0 && p.Other >= 0 && DiffKey(&base[p.Base]) != DiffKey(&other[p.Other]) {
					t.Errorf("pair %+v joins two lines", p)
				}
				at := int64(0)
				if p.Other >= 0 {
					at = other[p.Other].T
				} else {
					at = base[p.Base].T
				}
				if at < last {
					t.Errorf("pair %+v at %d comes after one at %d", p, at, last)
				}
				last = at
			}
			for side, recs := range map[string][]Record{"base": base, "other": other} {
				seen := seenA
				if side == "other" {
					seen = seenB
				}
				for i := range recs {
					if want := boolCount(opt.Compared(&recs[i])); seen[i] != want {
						t.Errorf("%s record %d is in %d pairs, want %d", side, i, seen[i], want)
					}
				}
			}
		})
	}
}

func boolCount(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Many records of one line later in both runs, minutes from the first
// ones, do not change how the first ones pair: stretches the window apart
// align on their own, so the table never grows to the greedy fallback's
// size and the least-moved pairing holds.
func TestDiffStretches(t *testing.T) {
	base := []Record{msg(10_000, "nudge"), msg(50_000, "nudge")}
	other := []Record{msg(52_000, "nudge")}
	for k := range 1100 {
		at := int64(600_000 + k*1000)
		base = append(base, msg(at, "nudge"))
		other = append(other, msg(at, "nudge"))
	}
	pairs := Diff(base, other, DiffOptions{})
	if len(pairs) < 2 || pairs[0].Change != Removed || pairs[0].Base != 0 || pairs[1].Change != Moved || pairs[1].Base != 1 || pairs[1].ShiftMS(base, other) != 2000 {
		t.Fatalf("the first two pairs are %+v %+v; want the 00:10 nudge removed and the 00:50 one moved +2s", pairs[0], pairs[1])
	}
	for _, p := range pairs[2:] {
		if p.Change != Same {
			t.Fatalf("a later nudge is %c, want unchanged", p.Change)
		}
	}
}
