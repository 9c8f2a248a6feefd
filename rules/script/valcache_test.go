package script

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/dop251/goja"
)

// valCache answers as a map would, through puts, overwrites and deletes
// in and past its inline slots.
func TestValCacheIsAMap(t *testing.T) {
	rt := goja.New()
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var c valCache
		want := map[string]goja.Value{}
		for op := range 40 {
			k := fmt.Sprintf("k%d", rng.IntN(9))
			switch rng.IntN(3) {
			case 0, 1:
				v := rt.ToValue(op)
				c.put(k, v)
				want[k] = v
			case 2:
				c.del(k)
				delete(want, k)
			}
			for i := range 9 {
				k := fmt.Sprintf("k%d", i)
				got, ok := c.get(k)
				w, wok := want[k]
				if ok != wok || got != w {
					t.Fatalf("round %d op %d: %s = %v %v, want %v %v", round, op, k, got, ok, w, wok)
				}
			}
		}
	}
}
