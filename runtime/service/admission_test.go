package service

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestAdmission(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type step struct {
		at          time.Duration // since t0
		onTime      int
		late        int
		wantRefused bool // at this step's time, after its answers
	}
	for _, tc := range []struct {
		name  string
		limit time.Duration
		steps []step
	}{
		{"an idle node admits", time.Second, []step{{0, 0, 0, false}}},
		{"one in a hundred late admits", time.Second, []step{{0, 99, 1, false}}},
		{"two in a hundred late refuses", time.Second, []step{{0, 98, 2, true}}},
		{"a few answers, all late, are not evidence", time.Second, []step{{0, 0, admitMinEvents - 1, false}}},
		{"late answers spread over the window add up", time.Second, []step{
			{0, 40, 1, false}, {500 * time.Millisecond, 40, 1, true}}},
		{"answers older than the window are forgotten", time.Second, []step{
			{0, 90, 10, true}, {admitWindow + admitSlot, 0, 0, false}}},
		{"reopening needs a window with no late answer", time.Second, []step{
			{0, 90, 10, true}, {time.Second, admitMinEvents, 0, true}, {admitWindow + admitSlot, admitMinEvents, 0, false}}},
		{"a trickle of on-time answers reopens", time.Second, []step{
			{0, 90, 10, true}, {admitWindow + admitSlot, admitMinEvents - 1, 0, false}}},
		{"a few late answers keep it closed until they leave the window", time.Second, []step{
			{0, 90, 10, true}, {time.Second, 8, 2, true}, {time.Second + admitWindow, 0, 0, false}}},
		{"one late answer in a thousand reopens", time.Second, []step{
			{0, 90, 10, true}, {admitWindow + admitSlot, 1000, 1, false}}},
		{"one late answer in two hundred keeps it closed", time.Second, []step{
			{0, 90, 10, true}, {admitWindow + admitSlot, 200, 1, true}}},
		{"off", -1, []step{{0, 0, 1000, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			a := newAdmission(&Config{AdmitLatency: tc.limit, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, reg)
			refusals := 0
			for i, s := range tc.steps {
				now := t0.Add(s.at)
				for range s.onTime {
					a.answered(now, tc.limit/2)
				}
				for range s.late {
					a.answered(now, tc.limit+time.Millisecond)
				}
				pe := a.admit(now)
				if (pe != nil) != s.wantRefused {
					t.Fatalf("step %d: refusal %v, want refused %v", i, pe, s.wantRefused)
				}
				if pe != nil {
					refusals++
					if pe.Code != CodeOverloaded || !strings.Contains(pe.Message, "try again") {
						t.Fatalf("step %d: refusal %+v", i, pe)
					}
				}
			}
			if n := testutil.ToFloat64(a.refused); n != float64(refusals) {
				t.Fatalf("baton_sessions_refused_total %v, want %d", n, refusals)
			}
		})
	}
}

// TestAdmissionRefusesStartsOnly: while the running sessions are answered
// late a start is refused with overloaded, and the running sessions go on
// (events and resumes); once the window has passed, starts are taken.
func TestAdmissionRefusesStartsOnly(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.AdmitLatency = 100 * time.Millisecond })
	c := h.dial(nil)
	c.send(startFrame("s", "run1"))
	secret := c.expectAck("s").SessionSecret
	h.runUntil("run1", 20_000)
	c.send(eventFrame("e1", msgEvent(20_000, "check the logs")))
	c.expectAck("e1")
	if n, _ := h.srv.admission.window(h.clk.Now()); n == 0 {
		t.Fatal("an acknowledged event was not counted")
	}
	for range 2 * admitMinEvents {
		h.srv.admission.answered(h.clk.Now(), time.Second)
	}

	c2 := h.dial(nil)
	c2.send(startFrame("s2", "new1"))
	c2.expectError("s2", CodeOverloaded)
	c.send(eventFrame("e2", msgEvent(20_500, "and the metrics")))
	c.expectAck("e2")
	c3 := h.dial(nil)
	c3.send(map[string]any{"id": "r", "type": "resume", "session_id": "run1", "session_secret": secret})
	c3.expectAck("r")

	h.clk.Advance(admitWindow + admitSlot)
	c2.send(startFrame("s3", "new1"))
	c2.expectAck("s3")
}

// TestOverloadedOverHTTP: an HTTP start refused as overloaded is a 503
// that says when to ask again.
func TestOverloadedOverHTTP(t *testing.T) {
	h := newHarness(t)
	w := httptest.NewRecorder()
	h.srv.WriteError(w, perr(CodeOverloaded, "server overloaded"))
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" || !strings.Contains(w.Body.String(), `"overloaded"`) {
		t.Fatalf("status %d, Retry-After %q, body %s", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
}
