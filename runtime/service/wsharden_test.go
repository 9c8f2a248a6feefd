package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/clock/clocktest"
)

// TestFutureTimestampDoesNotPoison: an event stamped far ahead of the
// server is applied at the server's time, and the backwards check then
// holds later events to that time, not to the client's far-off clock.
func TestFutureTimestampDoesNotPoison(t *testing.T) {
	h := newHarness(t)
	c := h.dial(nil)
	c.send(startFrame("s", "future"))
	c.expectAck("s")
	h.runUntil("future", 5000)

	c.send(eventFrame("f", map[string]any{"event_type": "speech_end", "ts_sec": 100000}))
	if a := c.expectAck("f"); a.Clamped != "future" || *a.T != 5000 {
		t.Fatalf("ack %+v t=%d, want clamped future at the server's 5000", a, *a.T)
	}
	// Before the time the future event was applied at: still backwards.
	c.send(eventFrame("b", map[string]any{"event_type": "speech_end", "ts_ms": 4000}))
	c.expectError("b", CodeTimeBackwards)

	h.runUntil("future", 6000)
	c.send(eventFrame("n", msgEvent(6000, "back on the server's clock")))
	if a := c.expectAck("n"); a.Clamped != "" || *a.T != 6000 {
		t.Fatalf("ack %+v t=%d, want 6000 unclamped", a, *a.T)
	}
	c.send(eventFrame("b2", map[string]any{"event_type": "speech_end", "ts_ms": 5500}))
	c.expectError("b2", CodeTimeBackwards)
	// Behind the session clock but not behind the client's own previous
	// time: applied at the session clock.
	h.runUntil("future", 8000)
	c.send(eventFrame("k", map[string]any{"event_type": "speech_end"}))
	c.expectAck("k")
	c.send(eventFrame("k2", map[string]any{"event_type": "speech_end", "ts_ms": 7000}))
	if a := c.expectAck("k2"); a.Clamped != "behind" || *a.T != 8000 {
		t.Fatalf("ack %+v t=%d, want clamped behind at 8000", a, *a.T)
	}
	c.send(eventFrame("k3", map[string]any{"event_type": "speech_end", "ts_ms": 7500}))
	if a := c.expectAck("k3"); a.Clamped != "behind" {
		t.Fatalf("ack %+v, want clamped behind", a)
	}
}

// logRecorder is a slog handler that keeps every line (message and
// attributes) and can act on a message as it is logged.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
	on    func(msg string)
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	l.mu.Lock()
	l.lines = append(l.lines, b.String())
	l.mu.Unlock()
	if l.on != nil {
		l.on(r.Message)
	}
	return nil
}

func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

// find returns the first line that starts with msg.
func (l *logRecorder) find(msg string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.lines {
		if strings.HasPrefix(s, msg) {
			return s, true
		}
	}
	return "", false
}

// all returns every line that starts with msg.
func (l *logRecorder) all(msg string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.lines {
		if strings.HasPrefix(s, msg) {
			out = append(out, s)
		}
	}
	return out
}

// waitMetric waits until a counter of the server reaches want.
func waitMetric(t *testing.T, h *harness, want float64, name string, labels ...string) {
	t.Helper()
	for deadline := time.Now().Add(waitLimit); h.Metric(name, labels...) < want; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s%v is %v, want %v", name, labels, h.Metric(name, labels...), want)
		}
	}
}

// rawDial opens a WebSocket that nothing reads until the test does.
func rawDial(t *testing.T, h *harness) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: waitLimit}
	ws, _, err := d.Dial(h.wsURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

// readToClose reads a raw connection until it ends, counting frames by
// type and error code, and returns the close error (nil if the stream
// ended without a close frame, with the error in err).
func readToClose(t *testing.T, ws *websocket.Conn) (counts map[string]int, ce *websocket.CloseError, err error) {
	t.Helper()
	counts = map[string]int{}
	ws.SetReadDeadline(time.Now().Add(waitLimit))
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			if errors.As(err, &ce) {
				return counts, ce, nil
			}
			return counts, nil, err
		}
		var f ServerFrame
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatalf("frame %q: %v", data, err)
		}
		counts[f.Type+f.Code]++
	}
}

// TestPolicyCloseIsClean floods a connection well past the rate limit
// with large frames while reading, many times over: every time the client
// must read the replies queued before the decision and then a close frame
// with 1008, never a reset or an end without a close frame.
func TestPolicyCloseIsClean(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.EventRate, c.EventBurst, c.MaxRejected = 1, 5, 10 })
	pad := strings.Repeat("x", 8<<10)
	for run := range 10 {
		ws := rawDial(t, h)
		flooded := make(chan int, 1)
		go func() {
			n := 0
			for ; n < 5; n++ {
				if ws.WriteJSON(map[string]any{"id": fmt.Sprint("p", n), "type": "ping"}) != nil {
					break
				}
			}
			for ; n < 5000; n++ {
				if ws.WriteMessage(websocket.TextMessage, []byte(`{"id":"f`+fmt.Sprint(n)+`","type":"ping","pad":"`+pad+`"}`)) != nil {
					break
				}
			}
			flooded <- n
		}()
		counts, ce, err := readToClose(t, ws)
		if err != nil {
			t.Fatalf("run %d: the connection ended without a close frame: %v (read %v)", run, err, counts)
		}
		if ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, "rate limit") {
			t.Fatalf("run %d: close %d %q, want 1008 rate limit", run, ce.Code, ce.Text)
		}
		if counts[FramePong] != 5 || counts[FrameError+CodeRateLimited] == 0 {
			t.Fatalf("run %d: read %v before the close, want the 5 pongs and rate_limited errors", run, counts)
		}
		ws.Close()
		<-flooded
	}
	if n := h.Metric("baton_slow_consumer_disconnects_total"); n != 0 {
		t.Errorf("slow consumer disconnects %v, want 0", n)
	}
}

// TestPolicyCloseStopsApplying: once a connection is to close, no frame
// it sent after that reaches its session, even when the rate limit would
// let it through again.
func TestPolicyCloseStopsApplying(t *testing.T) {
	var clk *clocktest.Fake
	logs := &logRecorder{}
	h := newHarness(t, func(c *Config) {
		c.EventRate, c.EventBurst, c.MaxRejected = 1, 3, 5
		clk = c.Clock.(*clocktest.Fake)
		// At the decision the bucket fills up again: if the reader went
		// on, the events sent after the flood would be admitted.
		logs.on = func(msg string) {
			if strings.HasPrefix(msg, "rate limit exceeded") {
				clk.Advance(3 * time.Second)
			}
		}
		c.Logger = slog.New(logs)
	})
	c := h.dial(nil)
	c.send(startFrame("s", "stop"))
	c.expectAck("s")
	for i := range 2 {
		id := fmt.Sprint("e", i)
		c.send(eventFrame(id, msgEvent(0, "before the flood")))
		c.expectAck(id)
	}
	var batch [][]byte
	for i := range 6 {
		batch = append(batch, mustJSON(map[string]any{"id": fmt.Sprint("f", i), "type": "ping"}))
	}
	for i := range 3 {
		batch = append(batch, mustJSON(eventFrame(fmt.Sprint("late", i), msgEvent(0, "after the decision"))))
	}
	for _, b := range batch {
		if c.ws.WriteMessage(websocket.TextMessage, b) != nil {
			break
		}
	}
	if ce := c.waitClose(); ce.Code != websocket.ClosePolicyViolation {
		t.Fatalf("close %d %q, want 1008", ce.Code, ce.Text)
	}
	if _, ok := logs.find("rate limit exceeded; connection closed"); !ok {
		t.Fatal("no log line for the rate limit close")
	}
	// Once the server has let go of the connection, its reader has
	// handed the session all it ever will.
	c.ws.Close()
	waitConns(t, h, 0)
	h.quiesce("stop")
	if n := h.Metric("baton_candidate_events_total", "type", "candidate_message"); n != 2 {
		t.Fatalf("%v candidate events applied, want the 2 sent before the flood", n)
	}
}

// TestPacedFloodIsClosed: a client over the rate gets a token back every
// 50 ms, which would reset a count of refusals in a row; refusals counted
// over a window close it all the same, at 10x the rate and at 5 frames a
// second over it.
func TestPacedFloodIsClosed(t *testing.T) {
	// 200 frames a second, and 25: five over the rate of 20, paced evenly.
	for _, every := range []time.Duration{5 * time.Millisecond, 40 * time.Millisecond} {
		t.Run(every.String(), func(t *testing.T) { pacedFlood(t, every) })
	}
}

func pacedFlood(t *testing.T, every time.Duration) {
	h := newHarness(t, func(c *Config) { c.EventRate, c.EventBurst, c.MaxRejected = 20, 40, 100 })
	c := h.dial(nil)
	pongs := 0
	for i := range 3000 {
		h.clk.Advance(every)
		if c.ws.WriteJSON(map[string]any{"id": fmt.Sprint("p", i), "type": "ping"}) != nil {
			break
		}
		// Wait until the server has taken the frame, so that it reads
		// each one at its own time.
		for deadline := time.Now().Add(waitLimit); ; {
			select {
			case f, ok := <-c.frames:
				if !ok {
					goto closed
				}
				if f.Type == FramePong {
					pongs++
				}
				continue
			default:
			}
			if pongs+int(h.Metric("baton_websocket_frames_rate_limited_total")) == i+1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("frame %d never accounted for", i)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
closed:
	ce := c.waitClose()
	if ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, "rate limit") {
		t.Fatalf("close %d %q, want 1008 rate limit", ce.Code, ce.Text)
	}
	refused := h.Metric("baton_websocket_frames_rate_limited_total")
	if refused != 101 {
		t.Errorf("closed after %v refused frames, want the 101st", refused)
	}
	t.Logf("%d frames accepted, %v refused before the close", pongs, refused)
}

// TestFloodingReaderIsPolicyNotSlow: a client that reads but floods past
// its send queue is closed for the flood (1008) after the answers to the
// frames it was allowed, not as a slow consumer.
func TestFloodingReaderIsPolicyNotSlow(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.EventRate, c.EventBurst, c.MaxRejected, c.SendQueue = 1, 10, 100, 32 })
	for run := range 5 {
		ws := rawDial(t, h)
		var counts map[string]int
		var ce *websocket.CloseError
		var rerr error
		read := make(chan struct{})
		go func() {
			defer close(read)
			counts, ce, rerr = readToClose(t, ws)
		}()
		for i := range 300 {
			if ws.WriteJSON(map[string]any{"id": fmt.Sprint("p", i), "type": "ping"}) != nil {
				break
			}
		}
		<-read
		if rerr != nil {
			t.Fatalf("run %d: no close frame: %v", run, rerr)
		}
		if ce.Code != websocket.ClosePolicyViolation {
			t.Fatalf("run %d: close %d %q, want 1008", run, ce.Code, ce.Text)
		}
		if counts[FramePong] != 10 {
			t.Fatalf("run %d: %d pongs, want the 10 the burst allowed", run, counts[FramePong])
		}
		ws.Close()
	}
	if n := h.Metric("baton_slow_consumer_disconnects_total"); n != 0 {
		t.Fatalf("slow consumer disconnects %v, want 0", n)
	}
}

// TestMalformedFloodIsRateLimited: malformed, oversized, binary and
// unknown frames are charged to the rate limit like good ones, so a flood
// of them from a client that does not read is closed for the flood
// (1008), not as a slow consumer.
func TestMalformedFloodIsRateLimited(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.EventRate, c.EventBurst, c.MaxRejected, c.SendQueue, c.MaxMessageBytes = 1, 5, 10, 16, 1024
	})
	ws := rawDial(t, h)
	bad := []struct {
		typ  int
		data string
	}{
		{websocket.TextMessage, "nope"},
		{websocket.TextMessage, `{"id":"u","type":"fly"}`},
		{websocket.BinaryMessage, "{}"},
		{websocket.TextMessage, `{"id":"big","type":"ping","pad":"` + strings.Repeat("x", 2000) + `"}`},
	}
	for i := range 200 {
		b := bad[i%len(bad)]
		if ws.WriteMessage(b.typ, []byte(b.data)) != nil {
			break
		}
	}
	counts, ce, err := readToClose(t, ws)
	if err != nil {
		t.Fatalf("no close frame: %v (read %v)", err, counts)
	}
	if ce.Code != websocket.ClosePolicyViolation {
		t.Fatalf("close %d %q, want 1008", ce.Code, ce.Text)
	}
	answered := counts[FrameError+CodeBadJSON] + counts[FrameError+CodeUnknownType] + counts[FrameError+CodeBadFrame] + counts[FrameError+CodeTooLarge]
	if answered != 5 || counts[FrameError+CodeRateLimited] == 0 {
		t.Fatalf("read %v, want 5 frames answered (the burst) and rate_limited errors", counts)
	}
	if n := h.Metric("baton_slow_consumer_disconnects_total"); n != 0 {
		t.Fatalf("slow consumer disconnects %v, want 0", n)
	}
	if n := h.Metric("baton_websocket_frames_rate_limited_total"); n != 11 {
		t.Fatalf("%v frames refused, want 11 (the 11th closes)", n)
	}
}

// TestNonReadingClientIsSlowConsumer: a client that never reads answers
// no ping, though every ping fits in its buffers. It is closed as a slow
// consumer (1013, a log line, the metric) and reads the close frame when
// it reads at last. A client that went away is not counted.
func TestNonReadingClientIsSlowConsumer(t *testing.T) {
	logs := &logRecorder{}
	h := newHarness(t, func(c *Config) {
		c.PingInterval, c.PongWait = 20*time.Millisecond, 200*time.Millisecond
		c.Logger = slog.New(logs)
	})
	ws := rawDial(t, h)
	waitMetric(t, h, 1, "baton_slow_consumer_disconnects_total")
	_, ce, err := readToClose(t, ws)
	if err != nil {
		t.Fatalf("no close frame: %v", err)
	}
	if ce.Code != websocket.CloseTryAgainLater || !strings.Contains(ce.Text, "slow consumer") {
		t.Fatalf("close %d %q, want 1013 slow consumer", ce.Code, ce.Text)
	}
	line, ok := logs.find("slow consumer disconnected")
	if !ok || !strings.Contains(line, "cause=no_pong") {
		t.Fatalf("log line %q", line)
	}

	ws.Close()

	// Gone: the client's socket is closed under it, well before the pong
	// wait.
	h2 := newHarness(t)
	gone := rawDial(t, h2)
	waitConns(t, h2, 1)
	gone.UnderlyingConn().Close()
	waitConns(t, h2, 0)
	if n := h2.Metric("baton_slow_consumer_disconnects_total"); n != 0 {
		t.Fatalf("slow consumer disconnects %v after a client left, want 0", n)
	}
}

func waitConns(t *testing.T, h *harness, n int) {
	t.Helper()
	for deadline := time.Now().Add(waitLimit); h.srv.Stats(false).Connections != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections, want %d", h.srv.Stats(false).Connections, n)
		}
	}
}

// TestErrorsEchoLittle: an error quotes what the client sent only in
// part, whatever its size: an unknown field name, a role, a type.
func TestErrorsEchoLittle(t *testing.T) {
	h := newHarness(t)
	c := h.dial(nil)
	long := strings.Repeat("k", 16<<10)
	c.sendRaw([]byte(`{"id":"u","type":"ping","` + long + `":1}`))
	if f := c.expectError("u", CodeBadFrame); len(f.Message) > 200 || !strings.Contains(f.Message, "kkk…") {
		t.Fatalf("%d-byte message %.200q", len(f.Message), f.Message)
	}
	c.sendRaw([]byte(`{"id":"n","type":"ping","seed":` + strings.Repeat("9", 16<<10) + `}`))
	if f := c.reply("n"); f.Type != FrameError || len(f.Message) > 200 {
		t.Fatalf("%s %d-byte message %.200q", f.Type, len(f.Message), f.Message)
	}
	c.sendRaw([]byte(`{"id":"s","type":"start","pack":"dayone","session_id":"s","candidate_id":1}`))
	c.expectError("s", CodeBadFrame)

	c.send(startFrame("s", "echo"))
	c.expectAck("s")
	c.send(map[string]any{"id": "a", "type": "agent_transcript", "agent": map[string]any{"role": long, "text": "hi"}})
	if f := c.expectError("a", CodeBadEvent); len(f.Message) > 300 || !strings.Contains(f.Message, "kkk…") {
		t.Fatalf("%d-byte message %.300q", len(f.Message), f.Message)
	}
	c.send(map[string]any{"id": "t", "type": long})
	if f := c.expectError("t", CodeUnknownType); len(f.Message) > 300 {
		t.Fatalf("%d-byte message %.300q", len(f.Message), f.Message)
	}
	// The reason for an early end is capped like other text.
	c.send(map[string]any{"id": "e", "type": "end", "reason": strings.Repeat("r", engine.MaxReason+1)})
	c.expectError("e", CodeBadFrame)
	c.send(map[string]any{"id": "e2", "type": "end", "reason": strings.Repeat("r", engine.MaxReason)})
	c.expectAck("e2")
	end := c.waitFor("session end", func(f *ServerFrame) bool { return f.Type == FrameEffect && f.Effect.Type == engine.EffectSessionEnd })
	if len(end.Effect.Reason) != engine.MaxReason {
		t.Fatalf("end reason of %d bytes", len(end.Effect.Reason))
	}
}

// TestWriteTimeoutIsSlowConsumer: a client whose window stays shut (every
// write to it waits out its deadline) is counted and logged as a slow
// consumer, not dropped silently.
func TestWriteTimeoutIsSlowConsumer(t *testing.T) {
	logs := &logRecorder{}
	h := newHarnessOn(t, func(ln net.Listener) net.Listener { return &stuckListener{Listener: ln} }, func(c *Config) {
		c.WriteTimeout = 100 * time.Millisecond
		c.Logger = slog.New(logs)
	})
	c := h.dial(nil)
	c.send(map[string]any{"id": "p", "type": "ping"})
	waitMetric(t, h, 1, "baton_slow_consumer_disconnects_total")
	if line, ok := logs.find("slow consumer disconnected"); !ok || !strings.Contains(line, "cause=write_timeout") {
		t.Fatalf("log line %q", line)
	}
	waitConns(t, h, 0)
}

// stuckListener hands out connections whose writes after the handshake
// wait until their deadline and fail, as writes to a peer that has
// stopped reading do once the buffers are full.
type stuckListener struct{ net.Listener }

func (l *stuckListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &stuckConn{Conn: c}, nil
}

type stuckConn struct {
	net.Conn
	mu       sync.Mutex
	deadline time.Time
	writes   int
}

func (c *stuckConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

func (c *stuckConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	c.writes++
	first, deadline := c.writes == 1, c.deadline
	c.mu.Unlock()
	if first || deadline.IsZero() {
		return c.Conn.Write(b) // the handshake's answer
	}
	time.Sleep(time.Until(deadline))
	return 0, os.ErrDeadlineExceeded
}
