package service

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/clock/clocktest"
	"github.com/batonhq/baton/runtime/internal/wal/waltest"
)

// plAcked is what a client was told before the power went.
type plAcked struct {
	started bool
	secret  string
	events  map[uint64]string // input seq -> text of each acknowledged event
}

// powerLossRun runs one DayOne session over a real WebSocket on a server
// whose data directory is mem, sending candidate events as the fake
// clock moves, until the session or the power fails.
func powerLossRun(t *testing.T, mem *waltest.StrictMem, clk *clocktest.Fake) plAcked {
	t.Helper()
	cfg := Config{DataDir: "/data", fs: mem, Dev: true, Clock: clk, Logger: testLogger(), EventRate: 1000, EventBurst: 1000, Model: SimModel(0, nil)}
	got := plAcked{events: map[uint64]string{}}
	h, err := tryStartHarness(t, cfg, clk, nil)
	if err != nil {
		if mem.Crashed() {
			return got // the power failed while the server opened its data directory
		}
		t.Fatal(err)
	}
	defer h.stop()
	c := h.dial(nil)
	c.send(startFrame("s", "pl"))
	f := c.reply("s")
	if f.Type != FrameAck {
		return got
	}
	got.started, got.secret = true, f.SessionSecret
	for i := range 6 {
		at := int64(10_000 * (i + 1))
		h.runUntil("pl", at)
		text := fmt.Sprintf("answer %d: roll back first, then read the logs", i)
		id := fmt.Sprint("e", i)
		c.send(eventFrame(id, msgEvent(at, text)))
		f := c.reply(id)
		if f.Type != FrameAck {
			return got
		}
		got.events[f.InputSeq] = text
	}
	h.runUntil("pl", 70_000)
	return got
}

// TestServicePowerLoss cuts the power at many points of a live session on
// a file system that keeps only synced data, then starts a new server on
// what survived. Every acknowledged start and event must be in the
// recovered log, the session must recover (never as damage), and a client
// must be able to resume it.
func TestServicePowerLoss(t *testing.T) {
	probe := waltest.NewStrictMem()
	powerLossRun(t, probe, clocktest.NewFake(epoch))
	total := probe.Ops()
	if total < 50 {
		t.Fatalf("the session made only %d file operations", total)
	}
	step := 1
	if testing.Short() {
		step = 4
	}
	points := 0
	for cut := 0; cut <= total; cut += step {
		run := cut
		mem := waltest.NewStrictMem()
		mem.CrashAfter(cut)
		clk := clocktest.NewFake(epoch)
		acked := powerLossRun(t, mem, clk)
		if !mem.Crashed() {
			continue // the cut fell after the run's last operation
		}
		points++
		after := mem.Recover(rand.New(rand.NewPCG(uint64(run), 7)))
		if err := checkServiceRecovered(t, after, clk, acked); err != nil {
			t.Fatalf("power cut after %d of %d file operations: %v", cut, total, err)
		}
	}
	t.Logf("%d power cuts over %d file operations", points, total)
}

func checkServiceRecovered(t *testing.T, mem *waltest.StrictMem, clk *clocktest.Fake, acked plAcked) error {
	clk.Advance(5 * time.Second)
	cfg := Config{DataDir: "/data", fs: mem, Dev: true, Clock: clk, Logger: testLogger(), Model: SimModel(0, nil), Packs: nil}
	h := startHarness(t, cfg, clk, nil)
	defer h.stop()
	if !acked.started {
		// Whatever is left must not be a failed session: a start that was
		// never acknowledged leaves nothing or an unborn log.
		if _, failed := h.srv.failedReason("pl"); failed {
			return fmt.Errorf("an unacknowledged start left a failed session")
		}
		return nil
	}
	if why, failed := h.srv.failedReason("pl"); failed {
		return fmt.Errorf("session failed to recover: %s", why)
	}
	rec, err := h.srv.dir.Read("pl")
	if err != nil {
		return fmt.Errorf("reading the recovered log: %w", err)
	}
	for seq, text := range acked.events {
		if seq == 0 || seq > uint64(len(rec.Inputs)) {
			return fmt.Errorf("acknowledged event %d (%q) lost: the log has %d inputs", seq, text, len(rec.Inputs))
		}
		in := rec.Inputs[seq-1]
		if in.Type != engine.InputCandidate || in.Candidate.Text != text {
			return fmt.Errorf("input %d is %s, want the acknowledged %q", seq, in.Type, text)
		}
	}
	c := h.dial(nil)
	c.send(map[string]any{"id": "r", "type": "resume", "session_id": "pl", "last_seq": 0, "session_secret": acked.secret})
	if f := c.reply("r"); f.Type != FrameAck {
		return fmt.Errorf("resume after recovery: %s %s", f.Code, f.Message)
	}
	return nil
}
