package service

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/cluster/natstest"
	"github.com/batonhq/baton/runtime/internal/wal"
)

// errSilent is a node that has not answered within the deadline it
// advertised, plus the margin: the client takes it for dead.
var errSilent = errors.New("no answer within the advertised ack deadline")

// awaitWithin is await bounded by the node's own promise.
func (c *ccConn) awaitWithin(id string, d time.Duration) (ccFrame, error) {
	bound := time.NewTimer(d)
	defer bound.Stop()
	for {
		select {
		case f := <-c.replies:
			if f.ID == id {
				return f, nil
			}
		case <-c.done:
			return ccFrame{}, errConnClosed
		case <-bound.C:
			return ccFrame{}, errSilent
		}
	}
}

// TestClusterFrozenNodeClient freezes (SIGSTOP) the node a client is
// connected to with an input in flight. The client has no answer past the
// ack deadline the node advertised, takes the node for dead, and resumes
// the session on the other node once that one has taken it over. Nothing
// it had acknowledged is lost, the resume says whether the unanswered
// input was applied, and the log agrees.
func TestClusterFrozenNodeClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the baton binary and waits out a node lease")
	}
	const deadline = 500 * time.Millisecond
	// What a client adds to the advertised deadline for the network; the
	// test's machine may be slow, so generously.
	const margin = 2 * time.Second
	bin := buildBaton(t)
	ns, err := natstest.Start(t.TempDir(), "s1", -1, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)
	natsURLs := ns.ClientURL()
	names := []string{"f1", "f2"}
	procs := make([]*proc, len(names))
	fleet := &ccFleet{urls: make([]string, len(names))}
	for i, name := range names {
		procs[i] = startBaton(t, bin, t.TempDir(), "--nats", natsURLs, "--lease-ttl", ccLease.String(),
			"--node", name, "--ack-deadline", deadline.String(), "--rate", "1000", "--burst", "1000")
		fleet.set(i, "ws://"+procs[i].addr+"/ws")
	}

	s := newCCSession(0) // home: f1
	c, err := s.dial(fleet.pick(0))
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.request(startFrame("s", s.id), true)
	if err != nil || f.Type != FrameAck {
		t.Fatalf("start: %v %s %s", err, f.Code, f.Message)
	}
	if f.State == nil || f.State.AckDeadlineMS != deadline.Milliseconds() {
		t.Fatalf("start ack state %+v, want ack_deadline_ms %d", f.State, deadline.Milliseconds())
	}
	wait := time.Duration(f.State.AckDeadlineMS)*time.Millisecond + margin
	s.conn, s.secret = c, f.SessionSecret

	n := 0
	send := func() (string, ccFrame, error) {
		n++
		text := fmt.Sprintf("%s answer %d", s.id, n)
		id := fmt.Sprint("e", n)
		if err := s.conn.ws.WriteJSON(eventFrame(id, map[string]any{"event_type": "candidate_message",
			"data": map[string]any{"source": "text", "text": text}})); err != nil {
			return text, ccFrame{}, errConnClosed
		}
		f, err := s.conn.awaitWithin(id, wait)
		if err == nil && f.Type == FrameAck {
			s.mu.Lock()
			s.acked[f.InputSeq] = text
			s.mu.Unlock()
		}
		return text, f, err
	}
	var lastAcked uint64
	for range 3 {
		_, f, err := send()
		if err != nil || f.Type != FrameAck {
			t.Fatalf("event before the freeze: %v %s %s", err, f.Code, f.Message)
		}
		lastAcked = f.InputSeq
	}

	if err := procs[0].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer procs[0].cmd.Process.Signal(syscall.SIGCONT)
	// The signal stops the process a moment after kill returns: an event
	// it still answers is acknowledged as any other.
	var frozenText string
	for tries := 0; frozenText == ""; tries++ {
		text, f, err := send()
		switch {
		case errors.Is(err, errSilent):
			frozenText = text
		case err != nil || f.Type != FrameAck:
			t.Fatalf("event to the node being frozen: %v %s %s %s; want an ack or no answer", err, f.Type, f.Code, f.Message)
		case tries >= 20:
			t.Fatalf("%d events acknowledged after SIGSTOP", tries+1)
		default:
			lastAcked = f.InputSeq
		}
	}
	// The client's rule for a node silent past its deadline: drop it and
	// resume, from the last effect seen, wherever the session runs now.
	s.drop()
	ctx, cancel := context.WithTimeout(context.Background(), ccBound)
	defer cancel()
	resumed := time.Now()
	if err := s.reconnect(ctx, fleet); err != nil {
		t.Fatal(err)
	}
	r, ok := s.resumedAfter(resumed)
	if !ok || r.url != fleet.pick(1) {
		t.Fatalf("resumed at %+v, want the other node %s", r, fleet.pick(1))
	}
	// The resume's own ack carried the state; a second client asks for
	// it again.
	probe := newCCSession(0)
	probe.id = s.id
	pc, err := probe.dial(r.url)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := pc.request(map[string]any{"id": "r", "type": "resume", "session_id": s.id, "last_seq": 0, "session_secret": s.secret}, true)
	pc.close()
	if err != nil || pf.Type != FrameAck || pf.State == nil {
		t.Fatalf("resume at %s: %v %s %s", r.url, err, pf.Code, pf.Message)
	}
	frozenApplied := pf.State.LastInputSeq > lastAcked
	for range 3 {
		_, f, err := send()
		if err != nil || f.Type != FrameAck {
			t.Fatalf("event after the resume: %v %s %s", err, f.Code, f.Message)
		}
	}
	s.drop()
	if err := procs[0].cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}

	nc, err := nats.Connect(natsURLs)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	for _, m := range ccLog(t, js, s.id) {
		raw = append(raw, m.data...)
	}
	rec, err := wal.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	for seq, text := range s.acked {
		if seq == 0 || seq > uint64(len(rec.Inputs)) {
			t.Fatalf("acknowledged input %d missing: the log holds %d inputs", seq, len(rec.Inputs))
		}
		if in := rec.Inputs[seq-1]; in.Type != engine.InputCandidate || in.Candidate.Text != text {
			t.Fatalf("acknowledged input %d is %+v, want %q", seq, in, text)
		}
	}
	logged := 0
	for _, in := range rec.Inputs {
		if in.Type == engine.InputCandidate && in.Candidate.Text == frozenText {
			logged++
		}
	}
	if want := map[bool]int{true: 1, false: 0}[frozenApplied]; logged != want {
		t.Fatalf("the input sent to the frozen node is in the log %d times; the resume said applied: %v", logged, frozenApplied)
	}
	t.Logf("resumed on %s %s after the freeze; the unanswered input applied: %v; %d inputs acknowledged, all in the log",
		r.url, r.at.Sub(resumed).Round(time.Millisecond), frozenApplied, len(s.acked))
}
