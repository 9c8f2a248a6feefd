package wal

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
)

// BenchmarkGroupCommit measures synced appends by N sessions at once on a
// real directory: each op is one Append(sync=true) of a candidate message.
// It reports journal fsyncs per append (1 would be a sync per input), the
// checkpointer's session file fsyncs per append (behind everyone's back;
// they grow with sessions per segment), and the p50 and p99 time an
// Append waited. Segments are the default size, so the checkpoint share
// needs runs long enough to fill some.
//
//	go test -run '^$' -bench BenchmarkGroupCommit -cpu 1,2 -benchtime 5s ./runtime/internal/wal/
func BenchmarkGroupCommit(b *testing.B) {
	conf := 0.9
	in := engine.Input{T: 1500, Type: engine.InputCandidate, Candidate: &engine.CandidateEvent{Type: engine.EventMessage,
		Text: "I would roll back first, then read the logs and the dashboards to see what changed in the last deploy", STTConfidence: &conf}}
	for _, n := range []int{1, 32, 1000} {
		var syncs, ckpt atomic.Int64
		d, err := OpenDir(b.TempDir(), Options{OnSync: func(k SyncKind, _ time.Duration) {
			if k == SyncJournal {
				syncs.Add(1)
			}
		},
			OnCheckpoint: func(files int, _ time.Duration) { ckpt.Add(int64(files)) }})
		if err != nil {
			b.Fatal(err)
		}
		logs := make([]*Log, n)
		for i := range logs {
			if logs[i], err = d.Create(testHeader(fmt.Sprint("s", i))); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("appenders=%d", n), func(b *testing.B) {
			lat := make([]time.Duration, b.N)
			var next atomic.Int64
			var wg sync.WaitGroup
			syncs.Store(0)
			ckpt.Store(0)
			b.ReportAllocs()
			b.ResetTimer()
			for _, l := range logs {
				wg.Go(func() {
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						start := time.Now()
						if _, err := l.Append(in, true); err != nil {
							b.Error(err)
							return
						}
						lat[i] = time.Since(start)
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(syncs.Load())/float64(b.N), "fsyncs/append")
			b.ReportMetric(float64(ckpt.Load())/float64(b.N), "ckpt-fsyncs/append")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
		for _, l := range logs {
			l.Close()
		}
		if err := d.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
