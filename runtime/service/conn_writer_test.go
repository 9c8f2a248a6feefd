package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// These tests drive the writer through real WebSocket clients over
// loopback: frames are queued on the server's side of the connection (as
// a session's broadcast queues them) and read by the client.

// serverConn returns the server's side of the only connection open.
func serverConn(t *testing.T, h *harness) *conn {
	t.Helper()
	waitConns(t, h, 1)
	h.srv.mu.Lock()
	defer h.srv.mu.Unlock()
	for c := range h.srv.conns {
		return c
	}
	t.Fatal("no connection")
	return nil
}

// numbered is frame n of producer p, as a notice a client can read.
func numbered(p, n int) []byte {
	return mustJSON(NoticeFrame{Type: FrameNotice, Code: fmt.Sprint(p), Message: fmt.Sprint(n)})
}

// waitIdle waits until the connection has no writer and nothing queued.
func waitIdle(t *testing.T, c *conn) {
	t.Helper()
	for deadline := time.Now().Add(waitLimit); ; time.Sleep(time.Millisecond) {
		c.wmu.Lock()
		idle := !c.writing && len(c.sendq) == 0
		c.wmu.Unlock()
		if idle {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the connection's writer did not end")
		}
	}
}

// readNumbered reads the numbered frames of producers producers, each
// many from each, and checks that each producer's arrive complete and in
// order.
func readNumbered(ws *websocket.Conn, producers, each int) error {
	next := make([]int, producers)
	ws.SetReadDeadline(time.Now().Add(waitLimit))
	for range producers * each {
		_, data, err := ws.ReadMessage()
		if err != nil {
			return fmt.Errorf("after %v: %w", next, err)
		}
		var f ServerFrame
		if err := json.Unmarshal(data, &f); err != nil {
			return err
		}
		var p, n int
		fmt.Sscan(f.Code, &p)
		fmt.Sscan(f.Message, &n)
		if n != next[p] {
			return fmt.Errorf("producer %d: frame %d after %d", p, n, next[p]-1)
		}
		next[p]++
	}
	return nil
}

// TestWriterOrderAcrossIdle: bursts of every size, each queued once the
// writer of the one before has ended, reach the client whole and in
// order, and no writer is left behind.
func TestWriterOrderAcrossIdle(t *testing.T) {
	h := newHarness(t)
	ws := rawDial(t, h)
	c := serverConn(t, h)
	n := 0
	bursts := []int{1, 2, 1, 7, 64, 1, 128, 3}
	for _, size := range bursts {
		waitIdle(t, c)
		for range size {
			if !c.enqueue(numbered(0, n)) {
				t.Fatalf("frame %d refused", n)
			}
			n++
		}
	}
	if err := readNumbered(ws, 1, n); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.sendq != nil {
		t.Fatal("an idle connection holds its send queue")
	}
}

// TestWriterConcurrentBroadcasts: producers queue to every connection at
// once, pausing now and then so writers end and start again; every client
// gets every frame, each producer's in order.
func TestWriterConcurrentBroadcasts(t *testing.T) {
	const clients, producers, each = 8, 4, 300
	h := newHarness(t, func(c *Config) { c.SendQueue = producers * each })
	var wss []*websocket.Conn
	for range clients {
		wss = append(wss, rawDial(t, h))
	}
	waitConns(t, h, clients)
	h.srv.mu.Lock()
	var conns []*conn
	for c := range h.srv.conns {
		conns = append(conns, c)
	}
	h.srv.mu.Unlock()

	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for n := range each {
				for _, c := range conns {
					if !c.enqueue(numbered(p, n)) {
						t.Errorf("producer %d frame %d refused", p, n)
						return
					}
				}
				if n%(7+p) == 0 {
					time.Sleep(time.Duration(p) * 100 * time.Microsecond)
				}
			}
		})
	}
	for _, ws := range wss {
		wg.Go(func() {
			if err := readNumbered(ws, producers, each); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, c := range conns {
		waitIdle(t, c)
	}
}

// stallListener hands out connections whose writes can be stalled: a
// client that stops reading. A stalled write waits until it is released
// or its deadline passes, as a write to a full socket does.
type stallListener struct {
	net.Listener
	mu    sync.Mutex
	conns []*stallConn
}

func (l *stallListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	sc := &stallConn{Conn: c, release: make(chan struct{})}
	l.mu.Lock()
	l.conns = append(l.conns, sc)
	l.mu.Unlock()
	return sc, nil
}

func (l *stallListener) only(t *testing.T) *stallConn {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) != 1 {
		t.Fatalf("%d connections", len(l.conns))
	}
	return l.conns[0]
}

type stallConn struct {
	net.Conn
	mu       sync.Mutex
	stalled  bool
	release  chan struct{}
	deadline time.Time
	// waiting is closed when a write starts waiting.
	waiting chan struct{}
	// writes counts the writes made.
	writes atomic.Int64
}

// stall makes the next writes wait; the returned channel is closed once
// one does.
func (c *stallConn) stall() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stalled, c.release, c.waiting = true, make(chan struct{}), make(chan struct{})
	return c.waiting
}

func (c *stallConn) unstall() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stalled = false
	close(c.release)
}

func (c *stallConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

func (c *stallConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	c.mu.Lock()
	stalled, release, waiting, deadline := c.stalled, c.release, c.waiting, c.deadline
	if stalled {
		select {
		case <-waiting:
		default:
			close(waiting)
		}
	}
	c.mu.Unlock()
	if stalled {
		var timeout <-chan time.Time
		if !deadline.IsZero() {
			timeout = time.After(time.Until(deadline))
		}
		select {
		case <-release:
		case <-timeout:
			return 0, os.ErrDeadlineExceeded
		}
	}
	return c.Conn.Write(b)
}

// TestWriterSlowClientAfterIdle: a client that took bursts while its
// writer came and went, then stops reading, is still closed as a slow
// consumer, for a full queue or for a write that timed out.
func TestWriterSlowClientAfterIdle(t *testing.T) {
	for _, tc := range []struct {
		name         string
		writeTimeout time.Duration
		cause, close string
	}{
		{"queue full", waitLimit, "queue_full", "slow consumer: 4 frames waiting"},
		{"write timeout", 100 * time.Millisecond, "write_timeout", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &logRecorder{}
			ln := &stallListener{}
			h := newHarnessOn(t, func(l net.Listener) net.Listener { ln.Listener = l; return ln }, func(c *Config) {
				c.SendQueue = 4
				c.WriteTimeout = tc.writeTimeout
				c.Logger = slog.New(logs)
			})
			ws := rawDial(t, h)
			c := serverConn(t, h)
			n := 0
			for range 3 {
				waitIdle(t, c)
				for range 3 {
					c.enqueue(numbered(0, n))
					n++
				}
			}
			if err := readNumbered(ws, 1, n); err != nil {
				t.Fatal(err)
			}
			waitIdle(t, c)

			stalled := ln.only(t).stall()
			c.enqueue(numbered(0, n)) // taken by the writer, which waits on the socket
			<-stalled
			if tc.cause == "queue_full" {
				for i := range 4 {
					if !c.enqueue(numbered(0, n+1+i)) {
						t.Fatalf("frame %d of 4 refused while one write waits", i+1)
					}
				}
				if c.enqueue(numbered(0, n+5)) {
					t.Fatal("a fifth frame queued behind a waiting write")
				}
			}
			waitMetric(t, h, 1, "baton_slow_consumer_disconnects_total")
			line, ok := logs.find("slow consumer disconnected")
			if !ok || !strings.Contains(line, "cause="+tc.cause) || !strings.Contains(line, "remote=127.0.0.1:") {
				t.Fatalf("log line %q", line)
			}
			ln.only(t).unstall()
			if tc.close == "" {
				waitConns(t, h, 0) // the socket is closed: no close frame can follow a timed-out write
				return
			}
			ws.SetReadDeadline(time.Now().Add(waitLimit))
			for {
				_, _, err := ws.ReadMessage()
				var ce *websocket.CloseError
				if errors.As(err, &ce) {
					if ce.Code != websocket.CloseTryAgainLater || !strings.Contains(ce.Text, tc.close) {
						t.Fatalf("close %d %q", ce.Code, ce.Text)
					}
					break
				}
				if err != nil {
					t.Fatalf("no close frame: %v", err)
				}
			}
			waitConns(t, h, 0)
		})
	}
}

// TestWriterCloseWhileWritePending: the decision to close, taken while a
// write waits on the client, is carried out once it can be: with a
// flush, the frames queued before it and then the close frame; without,
// the close frame after the write under way.
func TestWriterCloseWhileWritePending(t *testing.T) {
	for _, tc := range []struct {
		name  string
		code  int
		flush bool
		want  int // frames the client reads before the close frame
	}{
		{"flush", websocket.CloseGoingAway, true, 3},
		{"no flush", websocket.CloseTryAgainLater, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln := &stallListener{}
			h := newHarnessOn(t, func(l net.Listener) net.Listener { ln.Listener = l; return ln })
			ws := rawDial(t, h)
			c := serverConn(t, h)
			stalled := ln.only(t).stall()
			c.enqueue(numbered(0, 0))
			<-stalled
			c.enqueue(numbered(0, 1))
			c.enqueue(numbered(0, 2))
			if !c.kill(tc.code, "closing under test", tc.flush) {
				t.Fatal("the connection was already closing")
			}
			if c.enqueue(numbered(0, 3)) {
				t.Fatal("a frame queued after the decision to close")
			}
			ln.only(t).unstall()
			if err := readNumbered(ws, 1, tc.want); err != nil {
				t.Fatal(err)
			}
			_, data, err := ws.ReadMessage()
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != tc.code || ce.Text != "closing under test" {
				t.Fatalf("got %q %v, want close %d", data, err, tc.code)
			}
			waitConns(t, h, 0)
		})
	}
}

// TestWriterPingsIdleConnection: a connection with nothing to send is
// still pinged every PingInterval, by a writer started for each ping, so
// a client that answers stays connected well past PongWait. PongWait is a
// hundred pings long, so that a busy machine's stalls do not end it.
func TestWriterPingsIdleConnection(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.PingInterval, c.PongWait = 10*time.Millisecond, time.Second })
	ws := rawDial(t, h)
	pings := make(chan struct{}, 1000)
	ws.SetPingHandler(func(data string) error {
		pings <- struct{}{}
		return ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(waitLimit))
	})
	replies := make(chan ServerFrame, 1)
	go func() {
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				close(replies)
				return
			}
			var f ServerFrame
			json.Unmarshal(data, &f)
			replies <- f
		}
	}()
	// Three hundred pings span three pong waits: without them the server
	// would have closed the connection.
	timeout := time.After(waitLimit)
	for i := range 300 {
		select {
		case <-pings:
		case <-timeout:
			t.Fatalf("%d pings within %s", i, waitLimit)
		}
	}
	if err := ws.WriteJSON(map[string]any{"id": "p", "type": "ping"}); err != nil {
		t.Fatal(err)
	}
	select {
	case f, ok := <-replies:
		if !ok || f.Type != FramePong || f.ID != "p" {
			t.Fatalf("got %+v (open %v), want the pong", f, ok)
		}
	case <-timeout:
		t.Fatal("no pong")
	}
}

// TestWriterCloseIdleConnection: a connection whose writer has ended is
// closed as soon as that is decided, with its close frame, not at its next
// ping.
func TestWriterCloseIdleConnection(t *testing.T) {
	for _, tc := range []struct {
		name  string
		close func(h *harness, c *conn)
		code  int
		text  string
	}{
		{"shutdown", func(h *harness, c *conn) { go h.srv.Shutdown(context.Background()) }, websocket.CloseGoingAway, "server shutting down; reconnect and resume"},
		{"kill", func(h *harness, c *conn) { c.kill(websocket.ClosePolicyViolation, "closing under test", true) }, websocket.ClosePolicyViolation, "closing under test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.PingInterval = time.Hour })
			ws := rawDial(t, h)
			c := serverConn(t, h)
			c.enqueue(numbered(0, 0))
			if err := readNumbered(ws, 1, 1); err != nil {
				t.Fatal(err)
			}
			waitIdle(t, c)
			tc.close(h, c)
			_, data, err := ws.ReadMessage()
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != tc.code || ce.Text != tc.text {
				t.Fatalf("got %q %v, want close %d %q", data, err, tc.code, tc.text)
			}
			waitConns(t, h, 0)
		})
	}
}

// TestConnLogNamesRemote: every line of a connection's log names its
// client first, as Logger.With did, however the logger is derived.
func TestConnLogNamesRemote(t *testing.T) {
	for _, tc := range []struct {
		name string
		log  func(*slog.Logger)
		want string
	}{
		{"line", func(l *slog.Logger) { l.Warn("m", "k", 1) }, "level=WARN msg=m remote=1.2.3.4:5 k=1\n"},
		{"with", func(l *slog.Logger) { l.With("a", 2).Info("m", "k", 1) }, "level=INFO msg=m remote=1.2.3.4:5 a=2 k=1\n"},
		{"group", func(l *slog.Logger) { l.WithGroup("g").Info("m", "k", 1) }, "level=INFO msg=m remote=1.2.3.4:5 g.k=1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			base := slog.NewTextHandler(&out, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			}})
			tc.log(slog.New(remoteHandler{base, "1.2.3.4:5"}))
			if out.String() != tc.want {
				t.Fatalf("got %q, want %q", out.String(), tc.want)
			}
		})
	}
}

// TestWriterBurstBeforeWriterRuns: a burst larger than SendQueue, queued
// before the writer started for it has had a chance to run, is not held
// against the client: it is all delivered, in order. With one P and no
// blocking between frames, the writer cannot run until the burst is in.
func TestWriterBurstBeforeWriterRuns(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.SendQueue = 8 })
	ws := rawDial(t, h)
	c := serverConn(t, h)
	const burst = 2 * 8
	func() {
		defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(1))
		for n := range burst {
			if !c.enqueue(numbered(0, n)) {
				t.Errorf("frame %d of a burst of %d refused", n, burst)
				return
			}
		}
	}()
	if err := readNumbered(ws, 1, burst); err != nil {
		t.Fatal(err)
	}
}
