package service

import (
	"io/fs"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/internal/wal"
)

// stallFS is the real file system whose file syncs wait, while stalled,
// until released: a disk that stops answering.
type stallFS struct {
	wal.FS
	gate    atomic.Pointer[chan struct{}]
	stalled chan struct{} // a sync is waiting at the gate
}

func (s *stallFS) OpenFile(name string, flag int, perm fs.FileMode) (wal.File, error) {
	f, err := s.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return stallFile{f, s}, nil
}

// stall holds every sync from now until the returned release, which
// also runs at the test's end so that a failed test does not hang.
func (s *stallFS) stall(t *testing.T) (release func()) {
	gate := make(chan struct{})
	s.gate.Store(&gate)
	var once sync.Once
	release = func() {
		once.Do(func() {
			s.gate.Store(nil)
			close(gate)
		})
	}
	t.Cleanup(release)
	return release
}

type stallFile struct {
	wal.File
	fs *stallFS
}

func (f stallFile) Sync() error {
	if g := f.fs.gate.Load(); g != nil {
		select {
		case f.fs.stalled <- struct{}{}:
		default:
		}
		<-*g
	}
	return f.File.Sync()
}

// TestAckDeadline stalls the log's syncs: an input whose write began is
// answered unavailable with the outcome unknown at its deadline, one
// queued behind it unavailable and not applied, neither is ever
// acknowledged once the disk answers again, and a resume and the log
// agree on what became of each.
func TestAckDeadline(t *testing.T) {
	const deadline = time.Second
	sfs := &stallFS{FS: wal.OS, stalled: make(chan struct{}, 1)}
	h := newHarness(t, func(c *Config) { c.AckDeadline = deadline; c.fs = sfs })
	c := h.dial(nil)
	c.send(startFrame("s", "ad1"))
	ack := c.expectAck("s")
	if st := ack.State; st == nil || st.AckDeadlineMS != deadline.Milliseconds() {
		t.Fatalf("start ack state %+v, want ack_deadline_ms %d", st, deadline.Milliseconds())
	}
	texts := map[string]string{"e1": "first", "e2": "second, stalled", "e3": "third, queued behind", "e4": "fourth"}
	// At the server's (fake, still) clock: nothing falls due before an
	// event, so the write that stalls is e2's own.
	event := func(id string) map[string]any {
		return eventFrame(id, map[string]any{"event_type": "candidate_message", "data": map[string]any{"source": "text", "text": texts[id]}})
	}
	c.send(event("e1"))
	a1 := c.expectAck("e1")
	h.quiesce("ad1")

	release := sfs.stall(t)
	c.send(event("e2"))
	<-sfs.stalled
	f2 := c.expectError("e2", CodeUnavailable)
	c.send(event("e3"))
	f3 := c.expectError("e3", CodeUnavailable)
	if f3.Outcome != OutcomeNotApplied {
		t.Fatalf("e3, queued behind a stalled write: outcome %q, want %q", f3.Outcome, OutcomeNotApplied)
	}
	// e2's write began before its deadline unless the machine is slow
	// enough that it did not: either answer is right, and the log must
	// agree with it.
	switch f2.Outcome {
	case OutcomeUnknown:
		if f2.InputSeq <= a1.InputSeq {
			t.Fatalf("e2: outcome unknown at input_seq %d, after e1 at %d", f2.InputSeq, a1.InputSeq)
		}
	case OutcomeNotApplied:
	default:
		t.Fatalf("e2: outcome %q", f2.Outcome)
	}
	release()

	// The resume is answered after the session is done with e2 and e3,
	// and a pong on the old connection after anything queued on it then.
	c2 := h.dial(nil)
	c2.send(map[string]any{"id": "r", "type": "resume", "session_id": "ad1", "last_seq": c.lastSeq(), "session_secret": ack.SessionSecret})
	st := c2.expectAck("r").State
	c.send(map[string]any{"id": "p", "type": "ping"})
	c.waitFor("pong", func(f *ServerFrame) bool {
		if f.Type == FrameAck && (f.ID == "e2" || f.ID == "e3") {
			t.Fatalf("%s acknowledged (input %d) after its deadline was answered", f.ID, f.InputSeq)
		}
		return f.Type == FramePong
	})
	applied2 := f2.Outcome == OutcomeUnknown && st.LastInputSeq == f2.InputSeq
	if f2.Outcome == OutcomeUnknown && !applied2 && st.LastInputSeq != a1.InputSeq {
		t.Fatalf("resume: last_input_seq %d, want e2's %d or e1's %d", st.LastInputSeq, f2.InputSeq, a1.InputSeq)
	}
	c2.send(event("e4"))
	a4 := c2.expectAck("e4")

	h.stop()
	d, err := wal.OpenDir(h.dir, wal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rec, err := d.Read("ad1")
	if err != nil {
		t.Fatal(err)
	}
	logged := map[string]uint64{}
	for i, in := range rec.Inputs {
		if in.Type == engine.InputCandidate {
			logged[in.Candidate.Text] = uint64(i + 1)
		}
	}
	for id, want := range map[string]uint64{"e1": a1.InputSeq, "e4": a4.InputSeq} {
		if got := logged[texts[id]]; got != want {
			t.Errorf("%s acknowledged as input %d, logged as %d", id, want, got)
		}
	}
	if seq, ok := logged[texts["e3"]]; ok {
		t.Errorf("e3, answered not applied, is input %d of the log", seq)
	}
	switch seq, ok := logged[texts["e2"]]; {
	case applied2 && seq != f2.InputSeq:
		t.Errorf("e2: the resume said it was applied as input %d, the log has it as %d", f2.InputSeq, seq)
	case !applied2 && ok:
		t.Errorf("e2: the resume said it was not applied, the log has it as input %d", seq)
	}
	t.Logf("e2 %s (applied: %v), e3 %s", f2.Outcome, applied2, f3.Outcome)
}
