package service

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/internal/wal"
)

// gcSession is what one client was told before the server died.
type gcSession struct {
	id      string
	started bool
	acked   map[uint64]string // input seq -> text of each acknowledged event
}

// gcClient runs one session over its own WebSocket: start, then events
// one after another, each sent once its previous one was acknowledged,
// until the connection dies. It records every acknowledgement; it calls
// nothing on t, as it runs on its own goroutine.
func gcClient(addr string, s *gcSession, mu *sync.Mutex, firstAck chan<- struct{}) error {
	d := websocket.Dialer{HandshakeTimeout: waitLimit}
	ws, _, err := d.Dial("ws://"+addr+"/ws", nil)
	if err != nil {
		return fmt.Errorf("%s: dial: %w", s.id, err)
	}
	defer ws.Close()
	reply := func(id string) (ServerFrame, error) {
		for {
			var f ServerFrame
			if err := ws.ReadJSON(&f); err != nil {
				return f, err
			}
			if (f.Type == FrameAck || f.Type == FrameError) && f.ID == id {
				return f, nil
			}
		}
	}
	if err := ws.WriteJSON(startFrame("s", s.id)); err != nil {
		return fmt.Errorf("%s: start: %w", s.id, err)
	}
	f, err := reply("s")
	if err != nil || f.Type != FrameAck {
		return fmt.Errorf("%s: start: %v %s %s", s.id, err, f.Code, f.Message)
	}
	mu.Lock()
	s.started = true
	mu.Unlock()
	for n := 0; ; n++ {
		text := fmt.Sprintf("%s answer %d: roll back first, then read the logs", s.id, n)
		id := fmt.Sprint("e", n)
		if ws.WriteJSON(eventFrame(id, map[string]any{"event_type": "candidate_message", "data": map[string]any{"source": "text", "text": text}})) != nil {
			return nil // the server died
		}
		f, err := reply(id)
		if err != nil {
			return nil
		}
		if f.Type != FrameAck {
			return fmt.Errorf("%s: event %d: %s %s", s.id, n, f.Code, f.Message)
		}
		mu.Lock()
		s.acked[f.InputSeq] = text
		mu.Unlock()
		if n == 0 {
			firstAck <- struct{}{}
		}
	}
}

// TestGroupCommitCrash runs the real binary with hundreds of sessions
// sending events at once, so that their inputs share journal fsyncs,
// SIGKILLs it mid-stream, and restarts it on the same data directory:
// every session must come back, and every event the server acknowledged
// must be in its log where it was acknowledged. A graceful stop then
// leaves no journal behind.
func TestGroupCommitCrash(t *testing.T) {
	const n = 300
	bin := buildBaton(t)
	data := t.TempDir()
	flags := []string{"--rate", "1000", "--burst", "1000"}
	p1 := startBaton(t, bin, data, flags...)

	var mu sync.Mutex
	ss := make([]*gcSession, n)
	firstAck := make(chan struct{}, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range ss {
		ss[i] = &gcSession{id: fmt.Sprintf("gc%03d", i), acked: map[uint64]string{}}
		wg.Go(func() { errs <- gcClient(p1.addr, ss[i], &mu, firstAck) })
	}
	// Every session has an event acknowledged: all of them are writing.
	for range n {
		select {
		case <-firstAck:
		case err := <-errs:
			t.Fatalf("client stopped before the crash: %v", err)
		case <-time.After(waitLimit):
			t.Fatal("sessions did not all start within the wait limit")
		}
	}
	// Let the load run a little more, still mid-stream, then kill.
	total := func() int {
		mu.Lock()
		defer mu.Unlock()
		k := 0
		for _, s := range ss {
			k += len(s.acked)
		}
		return k
	}
	deadline := time.Now().Add(waitLimit)
	for before := total(); total() < before+2*n; {
		if time.Now().After(deadline) {
			t.Fatal("the load stalled before the crash")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := p1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p1.exited
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	acks := total()

	p2 := startBaton(t, bin, data, flags...)
	if want := fmt.Sprintf("ready: %d sessions resumed, 0 closed, 0 failed", n); !strings.HasPrefix(p2.lastLine, want) {
		t.Fatalf("restart: %q, want %q", p2.lastLine, want)
	}
	p2.stopGracefully(t)
	if _, err := os.Stat(filepath.Join(data, wal.JournalDir)); !os.IsNotExist(err) {
		t.Errorf("journal after a graceful stop: %v", err)
	}

	for _, s := range ss {
		rec, err := wal.ReadFile(filepath.Join(data, s.id+".wal"))
		if err != nil {
			t.Fatalf("session %s: %v", s.id, err)
		}
		for seq, text := range s.acked {
			if seq == 0 || seq > uint64(len(rec.Inputs)) {
				t.Fatalf("session %s: acknowledged input %d missing: the log holds %d inputs", s.id, seq, len(rec.Inputs))
			}
			in := rec.Inputs[seq-1]
			if in.Type != engine.InputCandidate || in.Candidate.Text != text {
				t.Fatalf("session %s: acknowledged input %d is %+v, want %q", s.id, seq, in, text)
			}
		}
	}
	t.Logf("%d sessions, %d events acknowledged before the kill, all recovered", n, acks)
}
