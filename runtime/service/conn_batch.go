package service

import (
	"bufio"
	"net"
	"net/http"
	"sync"
	"time"
)

// Gathering a burst of frames into one write. A client event is answered
// with an ack and, often, effects, queued together by the session; written
// frame by frame each is a system call, and on loopback or a LAN most of
// its cost is the send and the wakeup it causes at the other end, not the
// bytes. The connection's writer holds the socket while it takes what is
// queued (every frame still encoded by the WebSocket library, so framing
// and control frames stay the library's), then releases it with one write.
//
// Only the writer holds. The library also writes from the reader
// goroutine (a pong, the echo of a client's close): such a write waits
// for a release under way and goes out by itself, or joins the held bytes
// in the order it came, whole frames either way. The library sets a
// write deadline before each write, a pong's a second away; so the
// deadline too waits for a release under way, and a release sets the
// writer's own before it writes.

// batchConn is a WebSocket's socket, able to gather writes.
type batchConn struct {
	net.Conn
	mu   sync.Mutex
	held bool
	buf  *[]byte // from batchBufs while held
}

// batchBufs keeps gathered bytes between bursts: an idle connection holds
// none.
var batchBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxBatch bounds the bytes one release writes: a burst larger than this
// goes out in several writes, so a long queue is not copied into one
// ever-larger buffer.
const maxBatch = 64 << 10

func (b *batchConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held {
		*b.buf = append(*b.buf, p...)
		return len(p), nil
	}
	return b.Conn.Write(p)
}

// SetWriteDeadline waits for a release under way, so that a pong's
// deadline does not cut short the writer's write.
func (b *batchConn) SetWriteDeadline(t time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Conn.SetWriteDeadline(t)
}

// hold starts gathering writes.
func (b *batchConn) hold() {
	b.mu.Lock()
	b.held = true
	if b.buf == nil {
		b.buf = batchBufs.Get().(*[]byte)
	}
	b.mu.Unlock()
}

// gathered is how many bytes wait for the release.
func (b *batchConn) gathered() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf == nil {
		return 0
	}
	return len(*b.buf)
}

// release writes what was gathered, by deadline, and stops gathering.
// Its error is the error of every write it gathered.
func (b *batchConn) release(deadline time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held = false
	if b.buf == nil {
		return nil
	}
	buf := b.buf
	b.buf = nil
	var err error
	if len(*buf) > 0 {
		if err = b.Conn.SetWriteDeadline(deadline); err == nil {
			_, err = b.Conn.Write(*buf)
		}
	}
	if cap(*buf) <= 2*maxBatch {
		*buf = (*buf)[:0]
		batchBufs.Put(buf)
	}
	return err
}

// batchWriter hands the WebSocket library a batchConn in place of the
// connection it hijacks at the upgrade.
type batchWriter struct {
	http.ResponseWriter
	conn *batchConn
}

func (w *batchWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, http.ErrNotSupported
	}
	c, rw, err := h.Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.conn = &batchConn{Conn: c}
	return w.conn, rw, nil
}
