package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/batonhq/baton/runtime/clock/clocktest"
	"github.com/batonhq/baton/scenarios"
)

// waitLimit bounds every wait in these tests. It is a failure deadline,
// never a timing assertion: on a loaded machine things may be slow, but
// nothing here should ever take this long.
const waitLimit = 20 * time.Second

var epoch = time.Date(2026, 2, 20, 23, 0, 0, 0, time.UTC)

type harness struct {
	t   testing.TB
	srv *Server
	ts  *httptest.Server
	clk *clocktest.Fake
	dir string
	cfg Config
}

func testLogger() *slog.Logger {
	if os.Getenv("BATON_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// newHarness starts a dev-mode server on a fake clock with an LLM that
// answers at once, so a whole session can be stepped deterministically.
func newHarness(t testing.TB, opts ...func(*Config)) *harness {
	t.Helper()
	return newHarnessOn(t, nil, opts...)
}

// newHarnessOn is newHarness with the test server's listener wrapped.
func newHarnessOn(t testing.TB, wrap func(net.Listener) net.Listener, opts ...func(*Config)) *harness {
	t.Helper()
	clk := clocktest.NewFake(epoch)
	cfg := Config{DataDir: t.TempDir(), Dev: true, Clock: clk, Logger: testLogger(), EventRate: 1000, EventBurst: 1000}
	cfg.Model = SimModel(0, nil)
	for _, o := range opts {
		o(&cfg)
	}
	return startHarness(t, cfg, clk, wrap)
}

func startHarness(t testing.TB, cfg Config, clk *clocktest.Fake, wrap func(net.Listener) net.Listener) *harness {
	t.Helper()
	h, err := tryStartHarness(t, cfg, clk, wrap)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// tryStartHarness is startHarness for a server that may fail to start:
// one whose file system loses power while it opens its data directory.
func tryStartHarness(t testing.TB, cfg Config, clk *clocktest.Fake, wrap func(net.Listener) net.Listener) (*harness, error) {
	t.Helper()
	if cfg.Packs == nil {
		cfg.Packs = scenarios.FS
	}
	srv, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := srv.Recover(context.Background()); err != nil {
		return nil, err
	}
	h := &harness{t: t, srv: srv, clk: clk, dir: cfg.DataDir, cfg: cfg}
	h.ts = httptest.NewUnstartedServer(srv.Handler())
	if wrap != nil {
		h.ts.Listener = wrap(h.ts.Listener)
	}
	h.ts.Start()
	t.Cleanup(h.stop)
	return h, nil
}

func (h *harness) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	h.srv.Shutdown(ctx)
	h.ts.Close()
}

func (h *harness) wsURL() string { return "ws" + strings.TrimPrefix(h.ts.URL, "http") + "/ws" }

// status asks a session's actor for a snapshot.
func (h *harness) status(id string) (sessionStatus, bool) {
	s := h.srv.lookup(id)
	if s == nil {
		return sessionStatus{}, false
	}
	reply := make(chan sessionStatus, 1)
	if s.post(context.Background(), statusMsg{reply: reply}) != nil {
		return sessionStatus{}, false
	}
	select {
	case st := <-reply:
		return st, true
	case <-s.done:
		return sessionStatus{}, false
	}
}

// quiesce waits until a session has nothing left to do at the current
// fake time: no adapter call out, no queued message, nothing overdue.
func (h *harness) quiesce(id string) (sessionStatus, bool) {
	h.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		st, ok := h.status(id)
		if !ok {
			return st, false
		}
		if st.Inflight == 0 && st.Inbox == 0 && (!st.HasWake || st.Wake > st.Now) {
			return st, true
		}
		time.Sleep(time.Millisecond)
	}
	h.t.Fatalf("session %s did not settle", id)
	return sessionStatus{}, false
}

// runUntil steps the fake clock from wake-up to wake-up until the
// session's clock reaches t (ms) or it ends.
func (h *harness) runUntil(id string, t int64) {
	h.t.Helper()
	for {
		st, ok := h.quiesce(id)
		if !ok || st.Ended || st.Now >= t {
			return
		}
		next := t
		if st.HasWake && st.Wake < t {
			next = st.Wake
		}
		h.clk.Advance(time.Duration(next-st.Now) * time.Millisecond)
	}
}

// wsClient is a test WebSocket client that records every frame.
type wsClient struct {
	t      testing.TB
	ws     *websocket.Conn
	frames chan ServerFrame
	closed chan error

	mu      sync.Mutex
	effects map[uint64]EffectFrame
	dups    int
}

func (h *harness) dial(hdr http.Header) *wsClient {
	h.t.Helper()
	c, _, err := h.tryDial(hdr)
	if err != nil {
		h.t.Fatal(err)
	}
	return c
}

func (h *harness) tryDial(hdr http.Header) (*wsClient, *http.Response, error) {
	return dialURL(h.t, h.wsURL(), hdr)
}

func dialURL(t testing.TB, url string, hdr http.Header) (*wsClient, *http.Response, error) {
	d := websocket.Dialer{HandshakeTimeout: waitLimit}
	ws, resp, err := d.Dial(url, hdr)
	if err != nil {
		return nil, resp, err
	}
	c := &wsClient{t: t, ws: ws, frames: make(chan ServerFrame, 4096), closed: make(chan error, 1), effects: map[uint64]EffectFrame{}}
	go c.read()
	t.Cleanup(func() { ws.Close() })
	return c, resp, nil
}

func (c *wsClient) read() {
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			c.closed <- err
			close(c.frames)
			return
		}
		var f ServerFrame
		if err := json.Unmarshal(data, &f); err != nil {
			c.closed <- err
			close(c.frames)
			return
		}
		c.record(&f)
		c.frames <- f
	}
}

func (c *wsClient) record(f *ServerFrame) {
	c.mu.Lock()
	defer c.mu.Unlock()
	add := func(e EffectFrame) {
		if _, ok := c.effects[e.Seq]; ok {
			c.dups++
		}
		c.effects[e.Seq] = e
	}
	if f.Type == FrameEffect || f.Type == FrameClientToolCall {
		add(EffectFrame{Type: f.Type, SessionID: f.SessionID, Seq: f.Seq, Effect: *f.Effect, ClientToolCall: f.ClientToolCall})
	}
	for _, e := range f.Missed {
		add(e)
	}
}

// effectList returns the recorded effects in seq order.
func (c *wsClient) effectList() []EffectFrame {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]EffectFrame, 0, len(c.effects))
	for i := uint64(1); len(out) < len(c.effects); i++ {
		if e, ok := c.effects[i]; ok {
			out = append(out, e)
		} else if i > 1<<20 {
			break
		}
	}
	return out
}

func (c *wsClient) lastSeq() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var m uint64
	for s := range c.effects {
		m = max(m, s)
	}
	return m
}

func (c *wsClient) send(v any) {
	c.t.Helper()
	if err := c.ws.WriteJSON(v); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

func (c *wsClient) sendRaw(b []byte) {
	c.t.Helper()
	if err := c.ws.WriteMessage(websocket.TextMessage, b); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

// waitFor returns the first frame matching pred, skipping others.
func (c *wsClient) waitFor(what string, pred func(*ServerFrame) bool) ServerFrame {
	c.t.Helper()
	timeout := time.After(waitLimit)
	for {
		select {
		case f, ok := <-c.frames:
			if !ok {
				c.t.Fatalf("connection closed while waiting for %s: %v", what, c.closeErr())
			}
			if pred(&f) {
				return f
			}
		case <-timeout:
			c.t.Fatalf("no %s within %s", what, waitLimit)
		}
	}
}

func (c *wsClient) closeErr() error {
	select {
	case err := <-c.closed:
		c.closed <- err
		return err
	default:
		return nil
	}
}

// reply waits for the ack or error answering frame id.
func (c *wsClient) reply(id string) ServerFrame {
	c.t.Helper()
	return c.waitFor("reply to "+id, func(f *ServerFrame) bool {
		return (f.Type == FrameAck || f.Type == FrameError || f.Type == FramePong) && f.ID == id
	})
}

func (c *wsClient) expectAck(id string) ServerFrame {
	c.t.Helper()
	f := c.reply(id)
	if f.Type == FrameError {
		c.t.Fatalf("frame %s: error %s: %s", id, f.Code, f.Message)
	}
	return f
}

func (c *wsClient) expectError(id, code string) ServerFrame {
	c.t.Helper()
	f := c.reply(id)
	if f.Type != FrameError || f.Code != code {
		c.t.Fatalf("frame %s: got %s %s %q, want error %s", id, f.Type, f.Code, f.Message, code)
	}
	return f
}

// waitClose waits for the server to close the connection.
func (c *wsClient) waitClose() *websocket.CloseError {
	c.t.Helper()
	timeout := time.After(waitLimit)
	for {
		select {
		case _, ok := <-c.frames:
			if ok {
				continue
			}
			var ce *websocket.CloseError
			if err := c.closeErr(); errors.As(err, &ce) {
				return ce
			}
			c.t.Fatalf("connection ended without a close frame: %v", c.closeErr())
		case <-timeout:
			c.t.Fatal("connection not closed")
		}
	}
}

func startFrame(id, session string) map[string]any {
	return map[string]any{"id": id, "type": "start", "pack": "dayone", "session_id": session, "candidate_id": "cand_test"}
}

func eventFrame(id string, ev map[string]any) map[string]any {
	return map[string]any{"id": id, "type": "event", "event": ev}
}

func msgEvent(tsMS int64, text string) map[string]any {
	return map[string]any{"event_type": "candidate_message", "ts_ms": tsMS, "data": map[string]any{"source": "text", "text": text}}
}

// replayFrames re-derives a session's effect frames from its log file.
func (h *harness) replayFrames(id string) []EffectFrame {
	h.t.Helper()
	// Through the directory: a running session's file trails the journal.
	rec, err := h.srv.dir.Read(id)
	if err != nil {
		h.t.Fatal(err)
	}
	p, err := h.srv.packs.open(rec.Header.PackRef)
	if err != nil {
		h.t.Fatal(err)
	}
	frames, err := rederive(h.srv, rec, p, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	return frames
}

// sameFrames compares effect frames by their JSON.
func sameFrames(t testing.TB, got, want []EffectFrame) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d effects, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := mustJSON(got[i]), mustJSON(want[i])
		if string(g) != string(w) {
			t.Fatalf("effect %d differs:\n got %s\nwant %s", i, g, w)
		}
	}
}

// post sends body (a string as is, anything else as JSON) and decodes the
// JSON answer.
func (h *harness) post(path string, body any) (int, map[string]any) {
	h.t.Helper()
	return h.postWith(path, body, nil)
}

// postWith is post with extra request headers.
func (h *harness) postWith(path string, body any, hdr http.Header) (int, map[string]any) {
	h.t.Helper()
	code, data := h.postRaw(path, body, hdr)
	var out map[string]any
	json.Unmarshal(data, &out)
	return code, out
}

// postRaw is postWith answering the body as it came.
func (h *harness) postRaw(path string, body any, hdr http.Header) (int, []byte) {
	h.t.Helper()
	var b []byte
	switch v := body.(type) {
	case string:
		b = []byte(v)
	default:
		b, _ = json.Marshal(v)
	}
	req, err := http.NewRequest(http.MethodPost, h.ts.URL+path, bytes.NewReader(b))
	if err != nil {
		h.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.StatusCode, data
}

// waitArmed waits until a fake timer is armed exactly d from now: the
// webhook sender sleeping before a retry.
func (h *harness) waitArmed(d time.Duration) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	want := h.clk.Now().Add(d)
	err := h.clk.WaitFor(ctx, func(armed []time.Time) bool {
		for _, a := range armed {
			if a.Equal(want) {
				return true
			}
		}
		return false
	})
	if err != nil {
		h.t.Fatalf("no timer armed %s from now: %v", d, err)
	}
}
