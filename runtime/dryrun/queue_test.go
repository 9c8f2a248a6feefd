package dryrun

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/batonhq/baton/engine"
)

// TestQueueOrder drives the queue and a plain sorted list with the same
// random pushes, pops and drops: the queue must hand out the inputs in
// the list's order, by time and, among equal times, by arrival.
func TestQueueOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var q queue
		var want []engine.Input
		n := 0
		for range 300 {
			switch op := r.IntN(10); {
			case op < 5:
				n++
				// Few distinct times, so that ties are common.
				in := engine.Input{T: int64(r.IntN(8)), Scripts: &engine.ScriptFacts{Stopped: []engine.ScriptStop{{Call: n}}}}
				q.push(in)
				i := len(want)
				for i > 0 && want[i-1].T > in.T {
					i--
				}
				want = slices.Insert(want, i, in)
			case op < 9:
				if len(want) == 0 {
					if q.len() != 0 {
						t.Fatalf("round %d: queue holds %d, want none", round, q.len())
					}
					continue
				}
				got := q.pop()
				if got.T != want[0].T || got.Scripts != want[0].Scripts {
					t.Fatalf("round %d: popped t=%d #%d, want t=%d #%d", round, got.T, got.Scripts.Stopped[0].Call, want[0].T, want[0].Scripts.Stopped[0].Call)
				}
				want = want[1:]
			default:
				odd := func(in *engine.Input) bool { return in.Scripts.Stopped[0].Call%2 == 1 }
				q.drop(odd)
				want = slices.DeleteFunc(want, func(in engine.Input) bool { return odd(&in) })
			}
			if q.len() != len(want) {
				t.Fatalf("round %d: queue holds %d, want %d", round, q.len(), len(want))
			}
		}
	}
}
