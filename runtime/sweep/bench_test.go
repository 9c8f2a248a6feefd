package sweep

import (
	"context"
	"testing"

	"github.com/batonhq/baton/runtime/packs"
	"github.com/batonhq/baton/scenarios"
)

// BenchmarkSweep plays DayOne's and Hot Seat's candidate models; b.N
// sessions each, on the workers -cpu gives (GOMAXPROCS).
func BenchmarkSweep(b *testing.B) {
	for _, name := range []string{"dayone", "hotseat"} {
		b.Run(name, func(b *testing.B) {
			p, err := (&packs.Resolver{Bundled: scenarios.FS}).Open(name)
			if err != nil {
				b.Fatal(err)
			}
			pop, err := NewModel(p, name, 1, b.N)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			if _, err := Run(context.Background(), p, pop, Options{}); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "sessions/s")
		})
	}
}
