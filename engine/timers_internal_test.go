package engine

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTimerOrder fills the table at random, cancels one kind, and pops
// everything: timers must come out by time, kind, priority (higher
// first), rule and arrival, and the cancelled kind not at all.
func TestTimerOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 100 {
		var tt timerTable
		var want []timer
		for range 60 {
			tm := timer{at: int64(r.IntN(10)), kind: timerKind(r.IntN(4)), prio: r.IntN(3), rule: string(rune('a' + r.IntN(3)))}
			tt.add(tm)
			tm.seq = tt.seq
			want = append(want, tm)
		}
		tt.cancelKind(2)
		want = slices.DeleteFunc(want, func(x timer) bool { return x.kind == 2 })
		slices.SortFunc(want, func(a, b timer) int {
			if a.less(&b) {
				return -1
			}
			return 1
		})
		for i, w := range want {
			if at, _ := tt.next(); at != w.at {
				t.Fatalf("round %d, timer %d: next() = %d, want %d", round, i, at, w.at)
			}
			got, ok := tt.popDue(w.at)
			if !ok || got != w {
				t.Fatalf("round %d, timer %d: popped %+v, want %+v", round, i, got, w)
			}
		}
		if _, ok := tt.popDue(1 << 40); ok {
			t.Fatalf("round %d: a timer left over", round)
		}
	}
}
