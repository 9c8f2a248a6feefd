package service

import (
	"bytes"
	"context"
	"encoding/binary"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/batonhq/baton/runtime/internal/wal"
)

// runAndStop runs session id for a while with a few client events, then
// shuts the server down, leaving a live log of several records.
func runAndStop(t *testing.T, h *harness, id string) {
	t.Helper()
	c := h.dial(nil)
	c.send(startFrame("s", id))
	c.expectAck("s")
	for i, at := range []int64{20_000, 40_000, 60_000, 80_000} {
		h.runUntil(id, at)
		c.send(eventFrame("e"+string(rune('0'+i)), msgEvent(at, "I would roll back first, then look at the logs")))
		c.expectAck("e" + string(rune('0'+i)))
	}
	h.quiesce(id)
	if err := h.srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestMidLogDamageFailsTheSession: a bit flipped half-way through a live
// log is damage, not a torn tail. The session fails with the offset and
// record named, its log is left byte for byte as it was, a copy is kept
// as evidence, and a resuming client gets session_failed.
func TestMidLogDamageFailsTheSession(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mangle func(b []byte, mid int64)
	}{
		{"bit flip", func(b []byte, mid int64) { b[mid+20] ^= 0x04 }},
		{"length field", func(b []byte, mid int64) { binary.LittleEndian.PutUint32(b[mid:], 0x00ffffff) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			runAndStop(t, h, "dmg")
			path := h.srv.dir.LivePath("dmg")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			mid := recordStartNear(t, data, int64(len(data)/2))
			tc.mangle(data, mid)
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}

			h.clk.Advance(time.Second)
			cfg := h.cfg
			srv, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := srv.Recover(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			why, failed := rep.Failed["dmg"]
			if !failed || !strings.Contains(why, "damaged at offset") || len(rep.Resumed) != 0 || len(rep.Truncated) != 0 {
				t.Fatalf("recovery: %+v", rep)
			}
			if n := testutil.ToFloat64(srv.m.recoveries.WithLabelValues("damaged")); n != 1 {
				t.Fatalf("recoveries damaged = %v", n)
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(after, data) {
				t.Fatal("the damaged log was changed")
			}
			evidence := rep.Damaged["dmg"]
			kept, err := os.ReadFile(filepath.Join(cfg.DataDir, evidence))
			if err != nil || !bytes.Equal(kept, data) {
				t.Fatalf("evidence %q: %v (equal %v)", evidence, err, bytes.Equal(kept, data))
			}
			report, err := os.ReadFile(filepath.Join(cfg.DataDir, strings.TrimSuffix(evidence, ".wal")+".txt"))
			if err != nil || !bytes.Contains(report, []byte("damaged at offset")) {
				t.Fatalf("evidence report: %v\n%s", err, report)
			}

			ts := startServing(t, srv)
			c, _, err := dialURL(t, ts, nil)
			if err != nil {
				t.Fatal(err)
			}
			c.send(map[string]any{"id": "r", "type": "resume", "session_id": "dmg", "last_seq": 1})
			e := c.expectError("r", CodeSessionFailed)
			if !strings.Contains(e.Message, "damaged at offset") || strings.Contains(e.Message, cfg.DataDir) {
				t.Fatalf("session_failed message %q", e.Message)
			}
			c.send(startFrame("s2", "dmg"))
			if e := c.expectError("s2", CodeSessionExists); !strings.Contains(e.Message, "damaged at offset") {
				t.Fatalf("start over a damaged log: %q", e.Message)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
				t.Fatal("the damaged log was changed by a client")
			}

			// A second start recovers the same way and keeps no second copy.
			srv.Shutdown(context.Background())
			srv2, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer srv2.Shutdown(context.Background())
			rep2, err := srv2.Recover(context.Background())
			if err != nil || rep2.Damaged["dmg"] != evidence {
				t.Fatalf("second recovery: %+v %v", rep2, err)
			}
			ents, _ := os.ReadDir(filepath.Join(cfg.DataDir, wal.EvidenceDir))
			if len(ents) != 2 {
				t.Fatalf("%d files kept as evidence, want one copy and its report", len(ents))
			}
		})
	}
}

// TestUnbornLogIsNotAFailure: a crash inside a session's creation leaves a
// log without a whole header. Nothing was acknowledged; recovery removes
// it and the id can be started again.
func TestUnbornLogIsNotAFailure(t *testing.T) {
	h := newHarness(t)
	h.srv.Shutdown(context.Background())
	path := filepath.Join(h.cfg.DataDir, "fresh.wal")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := New(h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	rep, err := srv.Recover(context.Background())
	if err != nil || len(rep.Failed) != 0 || len(rep.Unborn) != 1 {
		t.Fatalf("recovery of a 0-byte log: %+v %v", rep, err)
	}
	ts := startServing(t, srv)
	c, _, err := dialURL(t, ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.send(startFrame("s", "fresh"))
	c.expectAck("s")
}

// recordStartNear returns the offset of the first record at or after off.
func recordStartNear(t *testing.T, data []byte, off int64) int64 {
	t.Helper()
	for p := int64(len(wal.Magic)); p < int64(len(data)); p += 8 + int64(binary.LittleEndian.Uint32(data[p:])) {
		if p >= off {
			return p
		}
	}
	t.Fatal("no record after the middle")
	return 0
}

// startServing serves srv on a loopback test server and returns its
// WebSocket URL.
func startServing(t *testing.T, srv *Server) string {
	t.Helper()
	h := &harness{t: t, srv: srv}
	h.ts = httptest.NewServer(srv.Handler())
	t.Cleanup(h.ts.Close)
	return h.wsURL()
}
