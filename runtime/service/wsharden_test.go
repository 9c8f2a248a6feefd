package service

import (
	"testing"
)

// TestFutureTimestampDoesNotPoison: an event stamped far ahead of the
// server is applied at the server's time, and the backwards check then
// holds later events to that time, not to the client's far-off clock.
func TestFutureTimestampDoesNotPoison(t *testing.T) {
	h := newHarness(t)
	c := h.dial(nil)
	c.send(startFrame("s", "future"))
	c.expectAck("s")
	h.runUntil("future", 5000)

	c.send(eventFrame("f", map[string]any{"event_type": "speech_end", "ts_sec": 100000}))
	if a := c.expectAck("f"); a.Clamped != "future" || *a.T != 5000 {
		t.Fatalf("ack %+v t=%d, want clamped future at the server's 5000", a, *a.T)
	}
	// Before the time the future event was applied at: still backwards.
	c.send(eventFrame("b", map[string]any{"event_type": "speech_end", "ts_ms": 4000}))
	c.expectError("b", CodeTimeBackwards)

	h.runUntil("future", 6000)
	c.send(eventFrame("n", msgEvent(6000, "back on the server's clock")))
	if a := c.expectAck("n"); a.Clamped != "" || *a.T != 6000 {
		t.Fatalf("ack %+v t=%d, want 6000 unclamped", a, *a.T)
	}
	c.send(eventFrame("b2", map[string]any{"event_type": "speech_end", "ts_ms": 5500}))
	c.expectError("b2", CodeTimeBackwards)
	// Behind the session clock but not behind the client's own previous
	// time: applied at the session clock.
	h.runUntil("future", 8000)
	c.send(eventFrame("k", map[string]any{"event_type": "speech_end"}))
	c.expectAck("k")
	c.send(eventFrame("k2", map[string]any{"event_type": "speech_end", "ts_ms": 7000}))
	if a := c.expectAck("k2"); a.Clamped != "behind" || *a.T != 8000 {
		t.Fatalf("ack %+v t=%d, want clamped behind at 8000", a, *a.T)
	}
	c.send(eventFrame("k3", map[string]any{"event_type": "speech_end", "ts_ms": 7500}))
	if a := c.expectAck("k3"); a.Clamped != "behind" {
		t.Fatalf("ack %+v, want clamped behind", a)
	}
}
