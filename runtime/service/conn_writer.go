package service

import (
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Writing to a connection. Most connections are idle most of the time (a
// DayOne session sends a burst of frames every few seconds at most), so
// an idle connection holds neither a writer goroutine nor a send queue.
// The first frame of a burst starts a writer and is handed to it; frames
// queued while it writes go to a queue taken from a pool; once the queue
// is empty the writer returns it and ends. The keepalive ping is a timer
// that starts a writer the same way, and so does the decision to close.
//
// One writer at most runs at a time: it is started, and decides to end,
// under c.wmu, and every frame is handed over or queued under c.wmu, so a
// frame queued as a writer ends starts the next one, and frames leave in
// the order they were queued.
//
// A client is too slow when SendQueue frames wait while a write to it is
// under way: those wait for the client. Frames that pile up while no
// write is under way wait for the writer to be scheduled, which a client
// cannot help (a writer started for a burst may not run before the
// session has queued the whole burst); they are bounded by the queue's
// capacity, twice SendQueue.

// sendQueues holds empty send queues for the next connection that has
// more than one frame to send. A queue is a buffered channel: its
// capacity bounds what may wait, and the frame fuzzer (fuzz_ws_test.go)
// reads a socketless connection's queue as one.
var sendQueues sync.Pool

func getSendQueue(n int) chan []byte {
	if q, ok := sendQueues.Get().(chan []byte); ok && cap(q) == n {
		return q
	}
	return make(chan []byte, n)
}

// enqueue queues a frame for sending; it never blocks. It reports false
// when the connection is closing or was just closed for being too slow.
func (c *conn) enqueue(b []byte) bool {
	c.wmu.Lock()
	if c.stopped() {
		c.wmu.Unlock()
		return false
	}
	if c.startWriterLocked() {
		c.wmu.Unlock()
		go c.writeLoop(b)
		return true
	}
	if c.sendq == nil {
		c.sendq = getSendQueue(2 * c.srv.cfg.SendQueue)
	}
	if n := len(c.sendq); n == cap(c.sendq) || n >= c.srv.cfg.SendQueue && c.inWrite.Load() {
		c.wmu.Unlock()
		c.slowConsumer("queue_full", fmt.Sprintf("slow consumer: %d frames waiting; reconnect and resume", n))
		return false
	}
	c.sendq <- b
	c.wmu.Unlock()
	return true
}

// queued is how many frames wait to be written.
func (c *conn) queued() int {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return len(c.sendq)
}

// startWriterLocked reports whether the caller must start a writer, and
// marks one as running if so. A connection not yet served (serveWS) has
// no writer: its frames wait in the queue, where the frame fuzzer reads
// them.
func (c *conn) startWriterLocked() bool {
	if !c.serving || c.writing || c.writerDone {
		return false
	}
	c.writing = true
	return true
}

// wake starts a writer if none runs, for a ping or a close decided while
// the connection is idle.
func (c *conn) wake() {
	c.wmu.Lock()
	start := c.startWriterLocked()
	c.wmu.Unlock()
	if start {
		go c.writeLoop(nil)
	}
}

// pingDue runs on the ping timer: the writer sends a ping before its
// next frame.
func (c *conn) pingDue() {
	c.ping.Store(true)
	c.wake()
}

// writeLoop writes b (when not nil), then what is queued and a ping when
// one is due, and the close handshake once the connection is to close.
// It ends when there is nothing left to do, or for good after the close
// or a failed write. Only the writer takes from the queue, so it does so
// without c.wmu; it takes c.wmu to see which queue is current (enqueue
// makes one when a frame comes while it writes) and to decide to end.
func (c *conn) writeLoop(b []byte) {
	defer func() {
		if r := recover(); r != nil {
			c.srv.m.panics.WithLabelValues("connection").Inc()
			c.log.Error("connection writer panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			c.kill(websocket.CloseInternalServerErr, "internal error", false)
			c.ws.Close()
			c.writerFinished()
		}
	}()
	var q chan []byte
	for {
		if c.stopped() {
			c.wmu.Lock()
			q = c.sendq
			c.wmu.Unlock()
			c.closeHandshake(b, q)
			c.writerFinished()
			return
		}
		if p := c.pong.Swap(nil); p != nil {
			c.inWrite.Store(true)
			err := c.ws.WriteControl(websocket.PongMessage, *p, time.Now().Add(c.srv.cfg.WriteTimeout))
			c.inWrite.Store(false)
			if err != nil {
				c.writeFailed("pong", err)
				return
			}
			continue
		}
		if c.ping.Swap(false) {
			c.inWrite.Store(true)
			err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.srv.cfg.WriteTimeout))
			c.inWrite.Store(false)
			if err != nil {
				c.writeFailed("ping", err)
				return
			}
			c.pinger.Reset(c.srv.cfg.PingInterval)
			continue
		}
		if b == nil {
			select {
			case b = <-q: // never ready while q is nil
			default:
			}
		}
		if b == nil {
			c.wmu.Lock()
			if q = c.sendq; len(q) > 0 || c.stopped() || c.ping.Load() || c.pong.Load() != nil {
				c.wmu.Unlock()
				continue
			}
			// Nothing left: the queue goes back to the pool and the
			// writer ends. The next frame starts the next one.
			if q != nil {
				c.sendq = nil
				sendQueues.Put(q)
			}
			c.writing = false
			c.wmu.Unlock()
			return
		}
		if err := c.writeBurst(b); err != nil {
			c.writeFailed("write", err)
			return
		}
		b = nil
	}
}

// writeBurst writes b and, on a socket that can gather them, the frames
// already queued behind it, in as few writes as maxBatch allows.
func (c *conn) writeBurst(b []byte) error {
	deadline := time.Now().Add(c.srv.cfg.WriteTimeout)
	if c.batch == nil {
		return c.write(b, deadline)
	}
	c.wmu.Lock()
	q := c.sendq // made by enqueue once a frame waits behind b
	c.wmu.Unlock()
	c.batch.hold()
	// Gathered frames go to memory: no client can hold them up, so they
	// do not count as a write under way (inWrite) until the release.
	err := c.writeFrame(b, deadline)
	for err == nil && c.batch.gathered() < maxBatch && !c.stopped() {
		select {
		case b = <-q: // never ready while q is nil
			err = c.writeFrame(b, deadline)
			continue
		default:
		}
		break
	}
	if c.stopped() && !c.flush {
		// Closing without a flush: the client is gone or too slow, and
		// only a short wait is owed to it.
		deadline = time.Now().Add(closeWrite)
	}
	c.inWrite.Store(true)
	defer c.inWrite.Store(false)
	if rerr := c.batch.release(deadline); err == nil {
		err = rerr
	}
	return err
}

// writerFinished records that no writer will run again, and gives up the
// reader's place in the server's wait group if the reader has ended.
func (c *conn) writerFinished() {
	c.wmu.Lock()
	if c.writerDone {
		c.wmu.Unlock()
		return
	}
	c.writerDone, c.writing = true, false
	if c.pinger != nil {
		c.pinger.Stop()
	}
	last := c.readerGone
	c.wmu.Unlock()
	if last {
		c.srv.wg.Done()
	}
}

func (c *conn) write(b []byte, deadline time.Time) error {
	c.inWrite.Store(true)
	defer c.inWrite.Store(false)
	return c.writeFrame(b, deadline)
}

// writeFrame hands b to the WebSocket library as one text message.
func (c *conn) writeFrame(b []byte, deadline time.Time) error {
	c.ws.SetWriteDeadline(deadline)
	return c.ws.WriteMessage(websocket.TextMessage, b)
}

// writeFailed closes a connection the writer cannot write to. A write
// that timed out means the client stopped taking data: a slow consumer.
// Any other failure means it is gone. Either way the socket can carry no
// close frame any more.
func (c *conn) writeFailed(what string, err error) {
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		c.slowConsumer("write_timeout", fmt.Sprintf("slow consumer: a %s waited %s to be written; reconnect and resume", what, c.srv.cfg.WriteTimeout))
	} else {
		c.kill(websocket.CloseAbnormalClosure, what+" failed", false)
	}
	c.ws.Close()
	c.writerFinished()
}

// closeHandshake runs on the writer once the connection is to close: b
// and the frames queued in q (when asked to flush), the close frame, then
// a wait for the reader to take the client's answer, and the socket is
// closed.
func (c *conn) closeHandshake(b []byte, q chan []byte) {
	defer c.ws.Close()
	if c.code == websocket.CloseAbnormalClosure {
		return
	}
	if c.flush {
		deadline := time.Now().Add(closeFlush)
		if b != nil && c.write(b, deadline) != nil {
			return
		}
		for len(q) > 0 {
			if c.write(<-q, deadline) != nil {
				return
			}
		}
	}
	err := c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(c.code, c.reason), time.Now().Add(closeWrite))
	if err != nil && !errors.Is(err, websocket.ErrCloseSent) {
		return // nobody will read an answer to a close frame that was not sent
	}
	// The reader, which stopped applying frames at the decision, reads
	// and discards until the client's close frame or this deadline.
	c.ws.SetReadDeadline(time.Now().Add(closeDrain))
	t := time.NewTimer(closeDrain + closeDrain/4)
	defer t.Stop()
	select {
	case <-c.readDone:
	case <-t.C:
	}
	c.log.Debug("connection closed", "code", c.code, "reason", c.reason)
}
