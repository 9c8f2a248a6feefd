package service

import (
	"fmt"
	"net"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestWriterGathersABurst: a burst queued before its writer runs leaves
// in far fewer socket writes than frames, and arrives whole and in order.
func TestWriterGathersABurst(t *testing.T) {
	var ln *stallListener
	h := newHarnessOn(t, func(l net.Listener) net.Listener {
		ln = &stallListener{Listener: l}
		return ln
	}, func(c *Config) { c.SendQueue = 64 })
	ws := rawDial(t, h)
	c := serverConn(t, h)
	sock := ln.only(t)
	before := sock.writes.Load()
	const burst = 32
	func() {
		// One P: the writer the first frame starts cannot run before the
		// whole burst is queued.
		defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(1))
		for n := range burst {
			if !c.enqueue(numbered(0, n)) {
				t.Errorf("frame %d refused", n)
				return
			}
		}
	}()
	if err := readNumbered(ws, 1, burst); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	if n := sock.writes.Load() - before; n > burst/4 {
		t.Fatalf("%d frames took %d socket writes: the burst was not gathered", burst, n)
	}
}

// TestWriterGathersBesidePongs: the client pings while the writer gathers
// bursts; every frame arrives whole and in order, and the latest ping is
// answered (a pong may answer only the most recent, RFC 6455 5.5.3).
func TestWriterGathersBesidePongs(t *testing.T) {
	const bursts, each, pings = 40, 25, 200
	// Room for every frame: the producer outruns the writer under the
	// race detector, and a slow consumer is not what this tests.
	h := newHarness(t, func(c *Config) { c.SendQueue = bursts * each })
	ws := rawDial(t, h)
	c := serverConn(t, h)
	var pongs atomic.Int64
	var last atomic.Value
	ws.SetPongHandler(func(p string) error { pongs.Add(1); last.Store(p); return nil })
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range pings {
			if err := ws.WriteControl(websocket.PingMessage, []byte(fmt.Sprint(i)), time.Now().Add(waitLimit)); err != nil {
				t.Errorf("ping: %v", err)
				return
			}
		}
	})
	wg.Go(func() {
		n := 0
		for range bursts {
			for range each {
				if !c.enqueue(numbered(0, n)) {
					t.Errorf("frame %d refused", n)
					return
				}
				n++
			}
			goruntime.Gosched()
		}
	})
	if err := readNumbered(ws, 1, bursts*each); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	// Pongs are read by the reads above; the last may still be on the
	// way. A read returns at a data frame, so one is sent to read up to.
	for i := 0; last.Load() != fmt.Sprint(pings-1); i++ {
		if i == 500 {
			t.Fatalf("the last ping was not answered (%d pongs, the last for %v)", pongs.Load(), last.Load())
		}
		time.Sleep(10 * time.Millisecond)
		if !c.enqueue(numbered(0, 0)) {
			t.Fatal("frame refused")
		}
		if _, _, err := ws.ReadMessage(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWriterDeadlineSurvivesAPong: a client that stops reading while a
// burst is being written, and pings meanwhile, is given the whole
// WriteTimeout, and once it catches up the connection carries on: the
// pong neither cuts the writer's write short nor fails for a deadline
// that passed while it waited. One frame larger than the socket's
// buffers makes the stalled write the writer's last.
func TestWriterDeadlineSurvivesAPong(t *testing.T) {
	const size = 32 << 20
	// A write timeout far past the 2.7 s the test stalls for: a busy
	// machine stretches the stall, never shortens it.
	h := newHarness(t, func(c *Config) { c.WriteTimeout = time.Minute })
	ws := rawDial(t, h)
	c := serverConn(t, h)
	big := numbered(0, 0)
	big = append(big[:len(big)-1], []byte(`,"pad":"`+strings.Repeat("x", size)+`"}`)...)
	if !c.enqueue(big) {
		t.Fatal("frame refused")
	}
	// The client reads nothing: the socket's buffers fill and the writer
	// waits on its write.
	for deadline := time.Now().Add(waitLimit); !c.inWrite.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the writer never waited on the socket")
		}
	}
	time.Sleep(200 * time.Millisecond)
	if err := ws.WriteControl(websocket.PingMessage, []byte("p"), time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	// A pong's one-second deadline would have closed it by now.
	time.Sleep(2500 * time.Millisecond)
	if c.stopped() {
		t.Fatalf("closed 2.7 s into a stalled write with a one-minute write timeout: %d %s", c.code, c.reason)
	}
	// The client catches up: it gets the frame and the pong, and the
	// connection carries the next frame as before.
	var pongs atomic.Int64
	ws.SetPongHandler(func(string) error { pongs.Add(1); return nil })
	ws.SetReadDeadline(time.Now().Add(waitLimit))
	if _, _, err := ws.ReadMessage(); err != nil {
		t.Fatalf("the large frame: %v", err)
	}
	if !c.enqueue(numbered(0, 1)) {
		t.Fatal("the frame after the stall was refused")
	}
	if _, _, err := ws.ReadMessage(); err != nil {
		t.Fatalf("the frame after the stall: %v", err)
	}
	if pongs.Load() != 1 {
		t.Fatalf("%d pongs for one ping", pongs.Load())
	}
	if c.stopped() {
		t.Fatalf("closed after the client caught up: %d %s", c.code, c.reason)
	}
}
