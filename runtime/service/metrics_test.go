package service

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"time"

	"github.com/batonhq/baton/engine"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

// TestMetricsLint scrapes /metrics after some traffic and runs the same
// linter as `promtool check metrics` over it.
func TestMetricsLint(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Dev, c.Token = false, "tok" })
	hdr := http.Header{"Authorization": {"Bearer tok"}}
	c := h.dial(hdr)
	c.send(startFrame("s", "m1"))
	c.expectAck("s")
	h.runUntil("m1", 20_000)
	c.send(eventFrame("e", msgEvent(20_000, "check the logs")))
	c.expectAck("e")
	// The ack goes out when the event is durable; its first effect, which
	// the latency metric times, may follow it.
	c.waitFor("the event's first effect", func(f *ServerFrame) bool {
		return f.Type == FrameEffect && f.Effect.Type == engine.EffectRouted && f.Effect.T >= 20_000
	})
	c.sendRaw([]byte("nope"))
	c.reply("")

	req, _ := http.NewRequest("GET", h.ts.URL+"/metrics", nil)
	req.Header = hdr
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	text := string(body)
	for _, want := range []string{
		"baton_sessions_active 1",
		"baton_websocket_connections 1",
		`baton_candidate_events_total{type="candidate_message"} 1`,
		`baton_engine_effects_total{type="agent_message"}`,
		"baton_engine_step_seconds_count",
		`baton_adapter_seconds_count{adapter="llm"}`,
		`baton_wal_fsync_seconds_count{sync="journal"}`,
		`baton_wal_fsync_seconds_count{sync="create"}`,
		`baton_client_errors_total{code="bad_json"} 1`,
		`baton_recoveries_total{result="ok"} 0`,
		"baton_event_to_first_effect_seconds_count 1",
		// The opener is prepared before the clock starts: on time.
		`baton_turn_lateness_seconds_bucket{kind="window",le="0"} 1`,
		"go_goroutines",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	problems, err := promlint.New(strings.NewReader(text)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}

	req, _ = http.NewRequest("GET", h.ts.URL+"/debug/stats?gc=1", nil)
	req.Header = hdr
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"sessions":1`) || !strings.Contains(string(body), "heap_per_session_bytes") {
		t.Errorf("/debug/stats: %s", body)
	}
}

// TestAdapterInFlightGauge ends a session while its model call is out:
// the gauge counts the call until the adapter returns, once, whichever of
// the session and the call finishes first.
func TestAdapterInFlightGauge(t *testing.T) {
	// The fake clock never reaches the model's latency: the opener's
	// preparation stays out until the session ends.
	h := newHarness(t, func(c *Config) { c.Model = SimModel(5*time.Second, nil) })
	inFlight := func() float64 { return testutil.ToFloat64(h.srv.m.adapterInflight) }
	c := h.dial(nil)
	c.send(startFrame("s", "m1"))
	c.expectAck("s")
	deadline := time.Now().Add(waitLimit)
	for inFlight() < 1 {
		if time.Now().After(deadline) {
			t.Fatal("no model call in flight while the opener is prepared")
		}
		time.Sleep(time.Millisecond)
	}
	c.send(map[string]any{"id": "end", "type": "end", "reason": "candidate_left"})
	c.expectAck("end")
	for inFlight() != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	// A second decrement (the session's and the call's) would come
	// after the first.
	time.Sleep(50 * time.Millisecond)
	if n := inFlight(); n != 0 {
		t.Fatalf("in flight after the session ended: %v, want 0", n)
	}
}
