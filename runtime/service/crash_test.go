package service

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/runtime/internal/logtest"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/internal/wal"
)

// buildBaton compiles the baton command into a temporary folder.
func buildBaton(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "baton")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/batonhq/baton/cmd/baton")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

type proc struct {
	cmd      *exec.Cmd
	addr     string
	lastLine string
	stderr   *logtest.Buffer
	lines    chan string
	exited   chan error
}

// startBaton runs `baton serve` (with any extra flags) and waits until it
// is listening and has finished recovery.
// stopGracefully sends SIGTERM and waits for a clean exit.
func (p *proc) stopGracefully(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		if err != nil {
			t.Fatalf("graceful stop: %v\n%s", err, p.stderr.String())
		}
	case <-time.After(waitLimit):
		t.Fatal("server did not stop on SIGTERM")
	}
}

func startBaton(t *testing.T, bin, data string, extra ...string) *proc {
	t.Helper()
	p := &proc{stderr: &logtest.Buffer{}, lines: make(chan string, 16), exited: make(chan error, 1)}
	p.cmd = exec.Command(bin, append([]string{"serve", "--dev", "--data", data, "--addr", "127.0.0.1:0"}, extra...)...)
	p.cmd.Stderr = p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		p.exited <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		if t.Failed() {
			t.Logf("server stderr:\n%s", p.stderr.String())
		}
	})
	deadline := time.After(waitLimit)
	for p.addr == "" || !strings.HasPrefix(p.lastLine, "ready") {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("server exited early:\n%s", p.stderr.String())
			}
			if a, ok := strings.CutPrefix(l, "listening on "); ok {
				p.addr = a
			}
			p.lastLine = l
		case <-deadline:
			t.Fatalf("server not ready:\n%s", p.stderr.String())
		}
	}
	return p
}

// TestCrashRecoveryRealProcess runs the real binary, SIGKILLs it in the
// middle of a session, restarts it on the same data directory and checks
// that the session carries on to its end with no acknowledged event lost
// and exactly the effects an offline replay of its log produces.
//
// It builds the binary and runs a twelve-second session on the real clock,
// so -short (the inner loop) skips it; CI runs it in full.
func TestCrashRecoveryRealProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the baton binary and runs a 12-second session; CI runs it without -short")
	}
	bin := buildBaton(t)
	data := t.TempDir()

	// Without a token or --dev the server refuses to start.
	cmd := exec.Command(bin, "serve", "--data", data, "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "BATON_TOKEN=")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "no token") {
		t.Fatalf("serve without a token: %v\n%s", err, out)
	}

	pack, err := filepath.Abs("testdata/mini")
	if err != nil {
		t.Fatal(err)
	}
	p1 := startBaton(t, bin, data)
	dialAt := func(addr string) *wsClient {
		c, _, err := dialURL(t, "ws://"+addr+"/ws", nil)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c1 := dialAt(p1.addr)
	c1.send(map[string]any{"id": "s", "type": "start", "pack": pack, "session_id": "crash1", "candidate_id": "cand"})
	secret := c1.expectAck("s").SessionSecret
	c1.waitFor("opener", func(f *ServerFrame) bool { return f.Type == FrameEffect && f.Effect.Type == engine.EffectAgentMessage })

	acked := map[uint64]string{} // input seq -> text
	say := func(c *wsClient, n int) {
		text := fmt.Sprintf("answer %d: I would replay the test logs", n)
		id := fmt.Sprintf("e%d", n)
		c.send(eventFrame(id, map[string]any{"event_type": "candidate_message", "data": map[string]any{"source": "text", "text": text}}))
		a := c.expectAck(id)
		acked[a.InputSeq] = text
	}
	say(c1, 1)
	time.Sleep(300 * time.Millisecond)
	say(c1, 2)
	c1.waitFor("reply", func(f *ServerFrame) bool {
		return f.Type == FrameEffect && f.Effect.Type == engine.EffectAgentMessage && f.Effect.Kind == "reply"
	})
	seen := c1.lastSeq()

	if err := p1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p1.exited
	c1.waitClose()

	p2 := startBaton(t, bin, data)
	if !strings.HasPrefix(p2.lastLine, "ready: 1 sessions resumed") {
		t.Fatalf("restart: %q", p2.lastLine)
	}
	c2 := dialAt(p2.addr)
	c2.send(map[string]any{"id": "r", "type": "resume", "session_id": "crash1", "last_seq": seen, "session_secret": secret})
	if a := c2.expectAck("r"); a.State == nil || a.State.Ended {
		t.Fatalf("resume after crash: %+v", a.State)
	}
	say(c2, 3)
	time.Sleep(300 * time.Millisecond)
	say(c2, 4)
	c2.waitFor("end", func(f *ServerFrame) bool { return f.Type == FrameEffect && f.Effect.Type == engine.EffectSessionEnd })

	p2.stopGracefully(t)

	// Every acknowledged event is in the finished log, where it was acked.
	done := filepath.Join(data, "crash1.done")
	rec, err := wal.ReadFile(done)
	if err != nil {
		t.Fatal(err)
	}
	if rec.End == nil || rec.Tail != nil {
		t.Fatalf("finished log: end %+v tail %v", rec.End, rec.Tail)
	}
	// The session ran live, and the one recovered from its log (built
	// with the header's options) went on holding its scripts to their
	// budget on the wall clock.
	if !rec.Header.Options.LiveBudgets {
		t.Errorf("log header options %+v, want live budgets", rec.Header.Options)
	}
	for seq, text := range acked {
		in := rec.Inputs[seq-1]
		if in.Type != engine.InputCandidate || in.Candidate.Text != text {
			t.Fatalf("acked input %d is %+v, want %q", seq, in, text)
		}
	}
	if len(acked) != 4 {
		t.Fatalf("%d acked events", len(acked))
	}

	// What the clients saw, before and after the crash, is exactly the
	// offline replay of the log.
	srv, err := New(Config{DataDir: t.TempDir(), Dev: true, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	p, err := srv.packs.open(rec.Header.PackRef)
	if err != nil {
		t.Fatal(err)
	}
	want, err := rederive(srv, rec, p, 0)
	if err != nil {
		t.Fatal(err)
	}
	merged := map[uint64]EffectFrame{}
	for _, c := range []*wsClient{c1, c2} {
		for _, f := range c.effectList() {
			if prev, ok := merged[f.Seq]; ok && string(mustJSON(prev)) != string(mustJSON(f)) {
				t.Fatalf("effect %d seen twice, differently", f.Seq)
			}
			merged[f.Seq] = f
		}
	}
	var got []EffectFrame
	for i := uint64(1); i <= uint64(len(want)); i++ {
		f, ok := merged[i]
		if !ok {
			t.Fatalf("client never saw effect %d of %d", i, len(want))
		}
		got = append(got, f)
	}
	sameFrames(t, got, want)

	// And `baton replay` agrees, exiting 0.
	out, err := exec.Command(bin, "replay", done).CombinedOutput()
	if err != nil || !strings.Contains(string(out), " 0 differ") {
		t.Fatalf("baton replay: %v\n%s", err, out)
	}
	// A tampered copy is caught, exiting non-zero.
	tampered := filepath.Join(t.TempDir(), "tampered.done")
	raw, _ := os.ReadFile(done)
	raw = bytes.Replace(raw, []byte("answer 3: I would replay the test logs"), []byte("answer 3: I would replay the TEST logs"), 1)
	// Re-frame the changed record so only the meaning differs, not the CRC.
	tamp, err := wal.Parse(raw)
	if err == nil && tamp.Tail == nil {
		t.Fatal("tampering did not break the CRC; the test is not testing anything")
	}
	if err := os.WriteFile(tampered, reframe(t, rec, "answer 3: I would replay the test logs", "Rollback first: what is the risk?"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(bin, "replay", tampered).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "DIFF") {
		t.Fatalf("baton replay of a tampered log: %v\n%s", err, out)
	}
}

// reframe writes rec anew (valid framing) with one candidate text changed.
func reframe(t *testing.T, rec *wal.Recovered, from, to string) []byte {
	t.Helper()
	dir, err := wal.OpenDir(t.TempDir(), wal.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	l, err := dir.Create(rec.Header)
	if err != nil {
		t.Fatal(err)
	}
	for i, in := range rec.Inputs {
		if in.Type == engine.InputCandidate && in.Candidate.Text == from {
			c := *in.Candidate
			c.Text = to
			in.Candidate = &c
		}
		seq, err := l.AppendInput(in)
		if err != nil {
			t.Fatal(err)
		}
		if st := rec.Steps[i]; st != nil {
			l.AppendStep(seq, *st)
		}
	}
	if err := l.Finish(*rec.End); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	return b
}
