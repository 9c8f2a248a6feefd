package service

import (
	"fmt"
	goruntime "runtime" // the Go runtime, not baton's runtime/ packages
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/runtime/clock"
)

// BenchmarkEventToFirstEffect measures, over a loopback WebSocket with
// fsync on, the time from sending a candidate message to receiving the
// first effect it caused (its routing decision). Real clock, simulated
// model.
func BenchmarkEventToFirstEffect(b *testing.B) {
	cfg := Config{DataDir: b.TempDir(), Dev: true, Logger: testLogger(), EventRate: 1e9, EventBurst: 1 << 30}
	h := startHarness(b, cfg, nil, nil)
	c := h.dial(nil)
	c.send(startFrame("s", "bench"))
	c.expectAck("s")
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprintf("e%d", i)
		start := time.Now()
		c.send(eventFrame(id, map[string]any{"event_type": "candidate_message", "data": map[string]any{"text": "what is the risk of the rollback?"}}))
		c.expectAck(id)
		c.waitFor("first effect", func(f *ServerFrame) bool { return f.Type == FrameEffect })
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkIdleSessionMemory starts b.N DayOne sessions (logs synced, no
// connections), lets each settle into waiting, and reports the live heap
// per session.
func BenchmarkIdleSessionMemory(b *testing.B) {
	clk := clock.NewFake(epoch)
	cfg := Config{DataDir: b.TempDir(), Dev: true, Logger: testLogger(), Clock: clk, MaxOpenLogs: DefaultMaxOpenLogs()}
	cfg.Model = SimModel(0, nil)
	h := startHarness(b, cfg, clk, nil)
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	b.ResetTimer()
	for i := range b.N {
		if _, pe := h.srv.start(startParams{sessionID: fmt.Sprintf("idle%d", i), packRef: "dayone"}); pe != nil {
			b.Fatal(pe)
		}
	}
	for i := range b.N {
		h.quiesce(fmt.Sprintf("idle%d", i))
	}
	b.StopTimer()
	goruntime.GC()
	goruntime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(b.N), "heap-bytes/session")
	b.ReportMetric(float64(after.NumGC-before.NumGC), "gcs")
}
