package service

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/batonhq/baton/runtime/clock/clocktest"
	"github.com/batonhq/baton/runtime/internal/wal"
	"github.com/batonhq/baton/runtime/internal/wal/waltest"
	"github.com/batonhq/baton/scenarios"
)

// runTwo runs two sessions, a and b, with acknowledged events on each,
// and returns each one's secret.
func runTwo(t *testing.T, h *harness, a, b string) map[string]string {
	t.Helper()
	conns := map[string]*wsClient{}
	secrets := map[string]string{}
	for _, id := range []string{a, b} {
		c := h.dial(nil)
		c.send(startFrame("s", id))
		secrets[id] = c.expectAck("s").SessionSecret
		conns[id] = c
	}
	for i, at := range []int64{20_000, 40_000, 60_000} {
		for _, id := range []string{a, b} {
			h.runUntil(id, at)
			eid := fmt.Sprint("e", i)
			conns[id].send(eventFrame(eid, msgEvent(at, "I would roll back first, then look at the logs")))
			conns[id].expectAck(eid)
		}
	}
	for _, id := range []string{a, b} {
		h.quiesce(id)
	}
	return secrets
}

// TestCutLogFailsTheSession cuts a live log after a clean shutdown, on a
// record boundary and mid-record. Its acknowledged inputs are gone, so
// the session must fail with the evidence kept, replay must refuse the
// log, and the other session must resume as if nothing happened.
func TestCutLogFailsTheSession(t *testing.T) {
	for _, mid := range []bool{false, true} {
		t.Run(fmt.Sprint("mid-record ", mid), func(t *testing.T) {
			h := newHarness(t)
			secrets := runTwo(t, h, "cut", "kept")
			if err := h.srv.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			path := h.srv.dir.LivePath("cut")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			at := recordStartNear(t, data, int64(len(data)/2))
			if mid {
				at += 5
			}
			if err := os.WriteFile(path, data[:at], 0o600); err != nil {
				t.Fatal(err)
			}
			var dmg *wal.DamageError
			if _, err := wal.ReadFile(path); !errors.As(err, &dmg) {
				t.Fatalf("replay's read of the cut log: %v, want damage", err)
			}

			h.clk.Advance(time.Second)
			srv, err := New(h.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Shutdown(context.Background())
			rep, err := srv.Recover(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			why, failed := rep.Failed["cut"]
			if !failed || !strings.Contains(why, "acknowledged") || len(rep.Resumed) != 1 || rep.Resumed[0] != "kept" {
				t.Fatalf("recovery: %+v", rep)
			}
			if _, err := os.Stat(filepath.Join(h.cfg.DataDir, rep.Damaged["cut"])); err != nil || rep.Damaged["cut"] == "" {
				t.Fatalf("evidence %q: %v", rep.Damaged["cut"], err)
			}
			url := startServing(t, srv)
			c, _, err := dialURL(t, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			c.send(map[string]any{"id": "r", "type": "resume", "session_id": "cut", "last_seq": 1, "session_secret": secrets["cut"]})
			c.expectError("r", CodeSessionFailed)
			c2, _, err := dialURL(t, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			c2.send(map[string]any{"id": "r", "type": "resume", "session_id": "kept", "last_seq": 1, "session_secret": secrets["kept"]})
			c2.expectAck("r")
		})
	}
}

// journalEntries lists where each session's entries with bytes sit in
// a journal segment: the offset of each entry's last byte.
func journalEntries(t *testing.T, seg []byte) map[string][]int {
	t.Helper()
	out := map[string][]int{}
	off := len(wal.JournalMagic) + 8 + 9
	for off+17 <= len(seg) && binary.LittleEndian.Uint32(seg[off:]) == 9 && seg[off+8] == 'B' {
		size := int(binary.LittleEndian.Uint32(seg[off+9:]))
		body := seg[off+17 : off+17+size]
		for p := 0; p < len(body); {
			n := int(binary.LittleEndian.Uint32(body[p:]))
			k := int(body[p+8])
			id := string(body[p+9 : p+9+k])
			if n > 1+k+8 {
				out[id] = append(out[id], off+17+p+8+n-1)
			}
			p += 8 + n
		}
		off += 17 + size
	}
	return out
}

// TestJournalDamageFailsOnlyItsSession flips one byte of one session's
// acknowledged input in the journal, after a process crash. The node
// must start, fail that session with the journal kept as evidence, and
// serve the other one.
func TestJournalDamageFailsOnlyItsSession(t *testing.T) {
	mem := waltest.NewStrictMem()
	clk := clocktest.NewFake(epoch)
	cfg := Config{DataDir: "/data", fs: mem, Dev: true, Clock: clk, Logger: testLogger(), EventRate: 1000, EventBurst: 1000, Model: SimModel(0, nil), Packs: scenarios.FS}
	h := startHarness(t, cfg, clk, nil)
	secrets := runTwo(t, h, "hit", "spared")
	after := mem.Restart() // the process dies; the kernel kept its writes

	segs, err := after.ReadDir("/data/" + wal.JournalDir)
	if err != nil || len(segs) == 0 {
		t.Fatalf("no journal after the crash: %v", err)
	}
	name := "/data/" + wal.JournalDir + "/" + segs[0].Name()
	r, err := after.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	seg, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	hits := journalEntries(t, seg)["hit"]
	if len(hits) == 0 {
		t.Fatalf("no entry of session hit in %s", name)
	}
	seg[hits[len(hits)-1]] ^= 0x20
	f, err := after.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(seg); err != nil {
		t.Fatal(err)
	}
	f.Sync()
	f.Close()

	cfg.fs = after
	srv, err := New(cfg)
	if err != nil {
		t.Fatalf("a damaged journal stopped the node: %v", err)
	}
	defer srv.Shutdown(context.Background())
	rep, err := srv.Recover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, failed := rep.Failed["hit"]; !failed || len(rep.Resumed) != 1 || rep.Resumed[0] != "spared" {
		t.Fatalf("recovery: %+v", rep)
	}
	if n := testutil.ToFloat64(srv.m.journalDamage); n != 1 {
		t.Fatalf("journal damage counted %v times, want 1: %v", n, srv.dir.Redo().Journal)
	}
	ev := srv.dir.Redo().Evidence
	if len(ev) == 0 {
		t.Fatal("the journal was not kept as evidence")
	}
	url := startServing(t, srv)
	c, _, err := dialURL(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.send(map[string]any{"id": "r", "type": "resume", "session_id": "hit", "last_seq": 1, "session_secret": secrets["hit"]})
	c.expectError("r", CodeSessionFailed)
	c2, _, err := dialURL(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	c2.send(map[string]any{"id": "r", "type": "resume", "session_id": "spared", "last_seq": 1, "session_secret": secrets["spared"]})
	c2.expectAck("r")
	c2.send(eventFrame("e9", msgEvent(70_000, "and then I would write the postmortem")))
	c2.expectAck("e9")
}

// TestScrubFindsDamagedFinishedLog flips a byte in a finished log while
// the server is down: the scrub at start must find it, count it and keep
// a copy, before any client asks for it.
func TestScrubFindsDamagedFinishedLog(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.ScrubInterval = -1 })
	c := h.dial(nil)
	c.send(startFrame("s", "fin"))
	c.expectAck("s")
	h.runUntil("fin", 11*60_000)
	h.quiesce("fin")
	if st, err := h.srv.dir.State("fin"); st != wal.StateDone {
		t.Fatalf("session did not finish: state %v, %v", st, err)
	}
	if err := h.srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	path := h.srv.dir.DonePath("fin")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[recordStartNear(t, data, int64(len(data)/2))+12] ^= 1
	os.Chmod(path, 0o600)
	if err := os.WriteFile(path, data, 0o400); err != nil {
		t.Fatal(err)
	}
	srv, err := New(h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	if _, err := srv.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitLimit)
	for testutil.ToFloat64(srv.m.scrubbed.WithLabelValues("damaged")) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the scrub did not find the damaged finished log")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ents, err := os.ReadDir(filepath.Join(h.cfg.DataDir, wal.EvidenceDir))
	if err != nil || len(ents) != 2 {
		t.Fatalf("evidence: %v %v, want a copy and its report", ents, err)
	}
}
