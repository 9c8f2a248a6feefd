package main

import (
	"testing"
	"time"
)

// TestStatsCountOnlyWhatWasSentWhileMeasuring: a ramp resets the figures
// once every session is up, while events sent before are still on their
// way. Their answers must not be counted against events sent after, or
// a type shows more acks than sends.
func TestStatsCountOnlyWhatWasSentWhileMeasuring(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := newStats()
	early := t0
	st.sentEvent("candidate_message")
	st.reset(t0.Add(time.Second))
	late := t0.Add(2 * time.Second)
	st.sentEvent("candidate_message")
	for _, sent := range []time.Time{early, late} {
		st.ack(sent, sent.Add(3*time.Millisecond), "candidate_message")
		st.firstEffect(sent, sent.Add(4*time.Millisecond), "candidate_message")
		st.noEffect(sent, "candidate_message")
		st.refused(sent, "candidate_message", true)
	}
	tc := st.types["candidate_message"]
	if got := st.sent.Load(); got != 1 || tc.Sent != 1 {
		t.Fatalf("sent %d (type %d), want 1", got, tc.Sent)
	}
	if tc.Acked != 1 || tc.WithEffect != 1 || tc.NoEffect != 1 || tc.AfterEnd != 1 || len(st.ackLat) != 1 || len(st.effectLat) != 1 {
		t.Fatalf("counted %+v, %d ack and %d effect latencies; want one of each, the late event's", *tc, len(st.ackLat), len(st.effectLat))
	}
	if st.ackLat[0] != 3*time.Millisecond {
		t.Fatalf("ack latency %v, want 3ms", st.ackLat[0])
	}
}
