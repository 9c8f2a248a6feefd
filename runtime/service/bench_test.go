package service

import (
	"encoding/json"
	"fmt"
	"os"
	goruntime "runtime" // the Go runtime, not baton's runtime/ packages
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/clock/clocktest"
	"github.com/batonhq/baton/runtime/dryrun"
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
	clk := clocktest.NewFake(epoch)
	cfg := Config{DataDir: b.TempDir(), Dev: true, Logger: testLogger(), Clock: clk}
	cfg.Model = SimModel(0, nil)
	h := startHarness(b, cfg, clk, nil)
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	b.ResetTimer()
	for i := range b.N {
		if _, _, pe := h.srv.start(startParams{sessionID: fmt.Sprintf("idle%d", i), packRef: "dayone"}); pe != nil {
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

// BenchmarkClientToolRoundTrip measures baton's share of a client tool
// call over a loopback WebSocket with fsync on: the client answers each
// client_tool_call at once (its own work excluded), and the benchmark
// times, from sending client_tool_result,
//   - result: until the tool_result effect it caused arrives (the
//     result logged, applied, answered), and
//   - loop: until the next client_tool_call arrives (the result and the
//     model's next call, both logged and applied, with a model that
//     answers at once): one turn of the tool loop.
//
// The model calls open_file every time, so each turn ends at
// engine.MaxToolRounds and the client asks again.
func BenchmarkClientToolRoundTrip(b *testing.B) {
	cfg := Config{DataDir: b.TempDir(), Dev: true, Logger: testLogger(), EventRate: 1e9, EventBurst: 1 << 30}
	cfg.NoSync = os.Getenv("BATON_BENCH_NOSYNC") != "" // to see what the syncs cost
	cfg.Model = SimModel(0, []dryrun.Reply{{Repeat: true, ToolCalls: []dryrun.ReplyTool{{Name: "open_file"}}}})
	h := startHarness(b, cfg, nil, nil)
	c := h.dial(nil)
	c.send(map[string]any{"id": "s", "type": "start", "pack": "training", "session_id": "bench", "client_playback": true})
	c.expectAck("s")
	isCall := func(f *ServerFrame) bool { return f.Type == FrameClientToolCall }
	asks := 0
	ask := func() *ClientToolCall {
		asks++
		id := fmt.Sprintf("e%d", asks)
		c.send(eventFrame(id, map[string]any{"event_type": "candidate_message", "data": map[string]any{"text": "Open index.js and fix it."}}))
		c.expectAck(id)
		return c.waitFor("client_tool_call", isCall).ClientToolCall
	}
	call := ask()
	result := json.RawMessage(`{"path":"index.js","content":"L1:const x = 1;","lines":1}`)
	res := make([]time.Duration, 0, b.N)
	loop := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		id := call.ToolCallID
		start := time.Now()
		c.send(map[string]any{"type": "client_tool_result", "tool_call_id": id, "result": result})
		c.waitFor("tool_result", func(f *ServerFrame) bool {
			return f.Type == FrameEffect && f.Effect.Type == engine.EffectToolResult && f.Effect.ID == id
		})
		res = append(res, time.Since(start))
		next := c.waitFor("the next call or the end of the turn", func(f *ServerFrame) bool {
			return isCall(f) || f.Type == FrameEffect && f.Effect.Type == engine.EffectAgentMessage
		})
		if next.Type == FrameClientToolCall {
			loop = append(loop, time.Since(start))
			call = next.ClientToolCall
			continue
		}
		b.StopTimer()
		c.send(map[string]any{"id": "d" + next.Effect.ID, "type": "speech_done", "message_id": next.Effect.ID})
		c.expectAck("d" + next.Effect.ID)
		call = ask()
		b.StartTimer()
	}
	b.StopTimer()
	for _, m := range []struct {
		name string
		lat  []time.Duration
	}{{"result", res}, {"loop", loop}} {
		slices.Sort(m.lat)
		b.ReportMetric(float64(m.lat[len(m.lat)/2].Microseconds()), m.name+"-p50-µs")
		b.ReportMetric(float64(m.lat[len(m.lat)*99/100].Microseconds()), m.name+"-p99-µs")
	}
}
