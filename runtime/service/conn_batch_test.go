package service

import (
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

// TestWriterGathersBesidePongs: the reader answers a client's pings while
// the writer gathers bursts; every pong and every frame arrives whole.
func TestWriterGathersBesidePongs(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.SendQueue = 512 })
	ws := rawDial(t, h)
	c := serverConn(t, h)
	var pongs atomic.Int64
	ws.SetPongHandler(func(string) error { pongs.Add(1); return nil })
	const bursts, each, pings = 40, 25, 200
	var wg sync.WaitGroup
	wg.Go(func() {
		for range pings {
			if err := ws.WriteControl(websocket.PingMessage, []byte("p"), time.Now().Add(waitLimit)); err != nil {
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
	// Pongs are read by the reads above; the last may still be on the way.
	ws.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	for pongs.Load() < pings {
		if _, _, err := ws.NextReader(); err != nil {
			break
		}
	}
	if got := pongs.Load(); got != pings {
		t.Fatalf("%d pongs for %d pings", got, pings)
	}
}

// TestWriterDeadlineSurvivesAPong: a client that stops reading while a
// gathered burst is being written, and pings meanwhile, is still given
// the whole WriteTimeout: the pong's own one-second deadline does not cut
// the writer's write short.
func TestWriterDeadlineSurvivesAPong(t *testing.T) {
	const frames, size = 600, 60 << 10
	h := newHarness(t, func(c *Config) { c.SendQueue, c.WriteTimeout, c.MaxMessageBytes = 2*frames, 6*time.Second, 2*size })
	ws := rawDial(t, h)
	c := serverConn(t, h)
	big := numbered(0, 0)
	big = append(big[:len(big)-1], []byte(`,"pad":"`+strings.Repeat("x", size)+`"}`)...)
	for n := range frames {
		if !c.enqueue(big) {
			t.Fatalf("frame %d refused", n)
		}
	}
	// The client reads nothing: once the socket's buffers are full, the
	// writer waits on its write.
	for deadline := time.Now().Add(waitLimit); !c.inWrite.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the writer never waited on the socket")
		}
	}
	time.Sleep(200 * time.Millisecond)
	if err := ws.WriteControl(websocket.PingMessage, []byte("p"), time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	// A pong's deadline would have closed it a second after the ping.
	time.Sleep(2500 * time.Millisecond)
	if c.stopped() {
		t.Fatalf("closed within 2.7 s of a stalled write with a 6 s write timeout: %d %s", c.code, c.reason)
	}
}
