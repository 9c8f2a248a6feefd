package service

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/batonhq/baton/runtime/clock/clocktest"
	"github.com/batonhq/baton/scenarios"
)

// memoryServerEnv makes BenchmarkConnectedSessionMemory the server half
// of itself.
const memoryServerEnv = "BATON_MEMORY_SERVER"

// BenchmarkConnectedSessionMemory measures what a server holds for each
// connected, idle DayOne session: b.N real WebSocket clients over
// loopback each start one, and once every session waits for its next
// timer and every connection has sent what it had, the server's memory
// is compared with what it held before.
//
// The server runs in a process of its own (this test binary again, with
// memoryServerEnv set), so its figures hold nothing of the clients': no
// subtraction, and its RSS is its own. It is a real Serve on a loopback
// listener, as baton serve runs it (connection caps, HTTP server),
// without fsync (memory does not depend on it, and 2,000 syncs would make
// the benchmark wait on the disk) and on a fake clock, so every session
// stays at its start for as long as the measurement takes. One session
// is started before the first measurement, so the pack, the HTTP server
// and the runtime's first allocations are not charged to the sessions.
//
// Figures per session come from the server's /debug/stats?gc=1, which
// collects and returns freed memory to the system first; they are taken
// until stacks stop shrinking (a collection halves a stack that is less
// than a quarter used, and a serving process collects now and then, so
// the settled size is what it keeps). heap is HeapAlloc, heap-inuse
// HeapInuse (live objects plus the free room in their spans), stack
// StackInuse, stack-1gc StackInuse after a single collection, rss the
// resident set (Linux only), goroutines the count. B/op and allocs/op are
// the clients', not the server's.
//
//	go test ./runtime/service -run '^$' -bench ConnectedSessionMemory -benchtime 2000x -benchmem
func BenchmarkConnectedSessionMemory(b *testing.B) {
	if os.Getenv(memoryServerEnv) != "" {
		memoryServer(b)
		return
	}
	ms := startMemoryServer(b)
	defer ms.stop()
	ms.connect("warm")
	ms.settle()
	before, _ := ms.settledStats()

	b.ResetTimer()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range b.N {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ms.connect(fmt.Sprintf("m%d", i))
		}()
	}
	wg.Wait()
	ms.settle()
	b.StopTimer()
	after, afterFirst := ms.settledStats()
	if got := after.ConnectedSessions - before.ConnectedSessions; got != b.N {
		b.Fatalf("%d more connected sessions, want %d", got, b.N)
	}
	n := float64(b.N)
	per := func(a, b uint64) float64 { return (float64(a) - float64(b)) / n }
	b.ReportMetric(per(after.HeapAlloc, before.HeapAlloc), "heap-B/session")
	b.ReportMetric(per(after.HeapInuse, before.HeapInuse), "heap-inuse-B/session")
	b.ReportMetric(per(after.StackInuse, before.StackInuse), "stack-B/session")
	b.ReportMetric(per(afterFirst.StackInuse, before.StackInuse), "stack-1gc-B/session")
	b.ReportMetric(float64(after.Goroutines-before.Goroutines)/n, "goroutines/session")
	if after.RSS > 0 && before.RSS > 0 {
		b.ReportMetric(per(after.RSS, before.RSS), "rss-B/session")
	}
}

// memoryServer is the server half: it serves until its standard input
// ends, printing its address, and answers "settle" with "settled" once
// every session and connection is idle.
func memoryServer(b *testing.B) {
	clk := clocktest.NewFake(epoch)
	cfg := Config{DataDir: b.TempDir(), Dev: true, Logger: testLogger(), Clock: clk, Packs: scenarios.FS,
		NoSync: true}
	cfg.Model = SimModel(0, nil)
	srv, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := srv.Recover(context.Background()); err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	fmt.Printf("memory-server %s\n", ln.Addr())
	h := &harness{t: b, srv: srv, clk: clk}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() == "settle" {
			settleServer(h)
			fmt.Println("settled")
		}
	}
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// settleServer waits until every session waits for a timer and every
// connection has written what was queued for it.
func settleServer(h *harness) {
	h.t.Helper()
	h.srv.mu.Lock()
	ids := make([]string, 0, len(h.srv.sessions))
	for id := range h.srv.sessions {
		ids = append(ids, id)
	}
	h.srv.mu.Unlock()
	for _, id := range ids {
		h.quiesce(id)
	}
	for deadline := time.Now().Add(waitLimit); ; time.Sleep(time.Millisecond) {
		busy := 0
		h.srv.mu.Lock()
		for c := range h.srv.conns {
			c.wmu.Lock()
			if len(c.sendq) > 0 || c.writing {
				busy++
			}
			c.wmu.Unlock()
		}
		h.srv.mu.Unlock()
		if busy == 0 {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%d connections still writing", busy)
		}
	}
}

// memoryServerProc is the benchmark's handle on the server process and
// its clients.
type memoryServerProc struct {
	b     *testing.B
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	addr  string

	mu      sync.Mutex
	clients []*websocket.Conn
}

func startMemoryServer(b *testing.B) *memoryServerProc {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^BenchmarkConnectedSessionMemory$", "-test.benchtime=1x")
	cmd.Env = append(os.Environ(), memoryServerEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	ms := &memoryServerProc{b: b, cmd: cmd, stdin: stdin, lines: make(chan string, 16)}
	go func() {
		defer close(ms.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			ms.lines <- sc.Text()
		}
	}()
	addr, ok := strings.CutPrefix(ms.expect("memory-server "), "memory-server ")
	if !ok {
		b.Fatal("no address from the server process")
	}
	ms.addr = addr
	return ms
}

// expect waits for the server process's next line starting with prefix,
// passing over the test framework's own output.
func (ms *memoryServerProc) expect(prefix string) string {
	ms.b.Helper()
	timeout := time.After(waitLimit)
	for {
		select {
		case l, ok := <-ms.lines:
			if !ok {
				ms.b.Fatalf("the server process ended before %q", prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-timeout:
			ms.b.Fatalf("no %q from the server process within %s", prefix, waitLimit)
		}
	}
}

func (ms *memoryServerProc) settle() {
	ms.b.Helper()
	if _, err := io.WriteString(ms.stdin, "settle\n"); err != nil {
		ms.b.Fatal(err)
	}
	ms.expect("settled")
}

// connect opens a client that starts session id and reads everything the
// server sends from then on (answering its pings), until closed. It
// returns once the start is acknowledged.
func (ms *memoryServerProc) connect(id string) {
	d := websocket.Dialer{HandshakeTimeout: waitLimit}
	ws, _, err := d.Dial("ws://"+ms.addr+"/ws", nil)
	if err != nil {
		ms.b.Error(err)
		return
	}
	ms.mu.Lock()
	ms.clients = append(ms.clients, ws)
	ms.mu.Unlock()
	if err := ws.WriteJSON(startFrame("s", id)); err != nil {
		ms.b.Error(err)
		return
	}
	acked := make(chan error, 1)
	go func() {
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				acked <- err
				return
			}
			var f struct{ Type, ID, Code, Message string }
			if json.Unmarshal(data, &f) == nil && f.ID == "s" {
				if f.Type == FrameAck {
					acked <- nil
				} else {
					acked <- fmt.Errorf("start %s: %s %s: %s", id, f.Type, f.Code, f.Message)
				}
			}
		}
	}()
	select {
	case err := <-acked:
		if err != nil {
			ms.b.Error(err)
		}
	case <-time.After(waitLimit):
		ms.b.Errorf("start %s not acknowledged within %s", id, waitLimit)
	}
}

// stats gets the server's /debug/stats after a collection.
func (ms *memoryServerProc) stats() Stats {
	ms.b.Helper()
	resp, err := http.Get("http://" + ms.addr + "/debug/stats?gc=1")
	if err != nil {
		ms.b.Fatal(err)
	}
	defer resp.Body.Close()
	var st Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		ms.b.Fatal(err)
	}
	return st
}

// settledStats takes stats until stacks stop shrinking, and returns the
// last and the first.
func (ms *memoryServerProc) settledStats() (last, first Stats) {
	first = ms.stats()
	last = first
	for range 8 {
		st := ms.stats()
		if st.StackInuse >= last.StackInuse {
			return st, first
		}
		last = st
	}
	return last, first
}

func (ms *memoryServerProc) stop() {
	ms.mu.Lock()
	for _, ws := range ms.clients {
		ws.Close()
	}
	ms.mu.Unlock()
	ms.stdin.Close()
	for range ms.lines {
	}
	if err := ms.cmd.Wait(); err != nil {
		ms.b.Errorf("server process: %v", err)
	}
}

// TestDebugStatsMemory: /debug/stats counts a session once however many
// connections are bound to it, leaves out connections bound to none and
// sessions that ended, and reports the memory figures a load generator
// divides by them.
func TestDebugStatsMemory(t *testing.T) {
	h := newHarness(t)
	stats := func() Stats {
		t.Helper()
		resp, err := http.Get(h.ts.URL + "/debug/stats?gc=1")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st Stats
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	a, b := h.dial(nil), h.dial(nil)
	a.send(startFrame("s", "one"))
	secret := a.expectAck("s").SessionSecret
	b.send(startFrame("s", "two"))
	b.expectAck("s")
	watcher := h.dial(nil)
	watcher.send(map[string]any{"id": "r", "type": "resume", "session_id": "one", "last_seq": 0, "session_secret": secret})
	watcher.expectAck("r")
	idle := h.dial(nil)
	idle.send(map[string]any{"id": "p", "type": "ping"})
	idle.reply("p")

	st := stats()
	if st.Sessions != 2 || st.Connections != 4 || st.ConnectedSessions != 2 {
		t.Fatalf("%d sessions, %d connections, %d connected sessions; want 2, 4, 2", st.Sessions, st.Connections, st.ConnectedSessions)
	}
	if st.HeapAlloc == 0 || st.HeapInuse == 0 || st.StackInuse == 0 || st.Goroutines == 0 {
		t.Fatalf("memory figures missing: %+v", st)
	}
	if hasStatm := fileExists("/proc/self/statm"); hasStatm != (st.RSS > 0) {
		t.Fatalf("rss %d bytes where /proc/self/statm exists: %v", st.RSS, hasStatm)
	}

	b.send(map[string]any{"id": "e", "type": "end", "reason": "done"})
	b.expectAck("e")
	for deadline := time.Now().Add(waitLimit); h.srv.lookup("two") != nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("session two did not end")
		}
	}
	if st := stats(); st.Sessions != 1 || st.ConnectedSessions != 1 {
		t.Fatalf("after an end: %d sessions, %d connected; want 1, 1", st.Sessions, st.ConnectedSessions)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
