package service

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/batonhq/baton/scenarios"
)

// served is a server running Serve on a real loopback listener, with the
// real clock: the caps and timeouts live in Serve, not in Handler, so the
// httptest harness does not see them.
type served struct {
	t    *testing.T
	srv  *Server
	addr string
	stop context.CancelFunc
	done chan error
}

func serveTest(t *testing.T, opts ...func(*Config)) *served {
	t.Helper()
	cfg := Config{DataDir: t.TempDir(), Dev: true, Logger: testLogger(), Packs: scenarios.FS, EventRate: 1000, EventBurst: 1000}
	cfg.Model = SimModel(0, nil)
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{t: t, srv: srv, addr: ln.Addr().String(), stop: cancel, done: make(chan error, 1)}
	go func() { s.done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { s.shutdown() })
	return s
}

// shutdown ends Serve and waits for it; it is safe to call twice.
func (s *served) shutdown() error {
	s.t.Helper()
	s.stop()
	select {
	case err := <-s.done:
		s.done <- err
		return err
	case <-time.After(waitLimit):
		s.t.Fatal("Serve did not return after its context ended")
		return nil
	}
}

func (s *served) wsURL() string { return "ws://" + s.addr + "/ws" }

// httpConn is a raw client connection, to control exactly when requests
// go out and to see when the server closes.
type httpConn struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func (s *served) connect() *httpConn {
	s.t.Helper()
	c, err := net.DialTimeout("tcp", s.addr, waitLimit)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { c.Close() })
	return &httpConn{t: s.t, c: c, r: bufio.NewReader(c)}
}

func (h *httpConn) write(s string) {
	h.t.Helper()
	h.c.SetWriteDeadline(time.Now().Add(waitLimit))
	if _, err := io.WriteString(h.c, s); err != nil {
		h.t.Fatalf("writing request: %v", err)
	}
}

// response reads one answer; its body is returned whole.
func (h *httpConn) response() (*http.Response, []byte) {
	h.t.Helper()
	h.c.SetReadDeadline(time.Now().Add(waitLimit))
	resp, err := http.ReadResponse(h.r, nil)
	if err != nil {
		h.t.Fatalf("reading response: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("reading response body: %v", err)
	}
	return resp, body
}

// get sends a keep-alive GET and reads its answer.
func (h *httpConn) get(path string) (*http.Response, []byte) {
	h.t.Helper()
	h.write("GET " + path + " HTTP/1.1\r\nHost: baton\r\n\r\n")
	return h.response()
}

// waitClosed reads until the server closes the connection; it fails the
// test if the server keeps it open for waitLimit.
func (h *httpConn) waitClosed() {
	h.t.Helper()
	h.c.SetReadDeadline(time.Now().Add(waitLimit))
	_, err := io.Copy(io.Discard, h.r)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		h.t.Fatalf("server kept the connection open for %s", waitLimit)
	}
}

func errorCode(t *testing.T, body []byte) string {
	t.Helper()
	var b httpErrorBody
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	return b.Error.Code
}

// expectRefused checks a connection's answer is the 503 refusal.
func expectRefused(t *testing.T, h *httpConn, wantMsg string) {
	t.Helper()
	resp, body := h.get("/healthz")
	if resp.StatusCode != http.StatusServiceUnavailable || errorCode(t, body) != CodeTooManyConnections {
		t.Fatalf("over the cap: %d %s, want 503 %s", resp.StatusCode, body, CodeTooManyConnections)
	}
	if !strings.Contains(string(body), wantMsg) {
		t.Errorf("refusal %s does not say %q", body, wantMsg)
	}
	h.waitClosed()
}

// waitAccepted retries new connections until one is served: a closed
// connection's slot comes back when the server sees the close.
func (s *served) waitAccepted() *httpConn {
	s.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		h := s.connect()
		resp, body := h.get("/healthz")
		if resp.StatusCode == http.StatusOK {
			return h
		}
		h.c.Close()
		if time.Now().After(deadline) {
			s.t.Fatalf("no slot came back: %d %s", resp.StatusCode, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestConnectionCapRefusesOverTotal(t *testing.T) {
	s := serveTest(t, func(c *Config) { c.MaxConns = 3 })
	// Two idle keep-alive connections and a WebSocket fill the cap.
	var open []*httpConn
	for range 2 {
		h := s.connect()
		if resp, body := h.get("/healthz"); resp.StatusCode != http.StatusOK {
			t.Fatalf("under the cap: %d %s", resp.StatusCode, body)
		}
		open = append(open, h)
	}
	ws := mustDialWS(t, s.wsURL(), nil)
	ws.send(map[string]any{"id": "p", "type": "ping"})
	ws.reply("p")

	expectRefused(t, s.connect(), "maximum of 3 connections")
	// A WebSocket handshake over the cap gets the same answer.
	_, resp, err := dialURL(t, s.wsURL(), nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("WebSocket over the cap: %v %v", resp, err)
	}
	if got := testutil.ToFloat64(s.srv.limits.refused.WithLabelValues("total")); got != 2 {
		t.Errorf("baton_connections_refused_total{limit=total} = %v, want 2", got)
	}

	// Closing the idle connection frees its slot, and the WebSocket
	// still holds one.
	open[0].c.Close()
	s.waitAccepted()
	expectRefused(t, s.connect(), "maximum of 3 connections")
	ws.send(map[string]any{"id": "p2", "type": "ping"})
	ws.reply("p2")
}

func TestConnectionCapPerAddress(t *testing.T) {
	s := serveTest(t, func(c *Config) { c.MaxConns, c.MaxConnsPerIP, c.LimitLoopback = 100, 2, true })
	a, b := s.connect(), s.connect()
	for _, h := range []*httpConn{a, b} {
		if resp, body := h.get("/healthz"); resp.StatusCode != http.StatusOK {
			t.Fatalf("under the cap: %d %s", resp.StatusCode, body)
		}
	}
	expectRefused(t, s.connect(), "2 connections from your address")
	if got := testutil.ToFloat64(s.srv.limits.refused.WithLabelValues("per_ip")); got != 1 {
		t.Errorf("baton_connections_refused_total{limit=per_ip} = %v, want 1", got)
	}
	b.c.Close()
	s.waitAccepted()
	expectRefused(t, s.connect(), "2 connections from your address")
}

// Load tests open thousands of connections over loopback: by default the
// per-address cap leaves loopback alone (the total cap still holds).
func TestConnectionCapExemptsLoopback(t *testing.T) {
	s := serveTest(t, func(c *Config) { c.MaxConns, c.MaxConnsPerIP = 5, 1 })
	for i := range 5 {
		if resp, body := s.connect().get("/healthz"); resp.StatusCode != http.StatusOK {
			t.Fatalf("loopback connection %d: %d %s", i, resp.StatusCode, body)
		}
	}
	expectRefused(t, s.connect(), "maximum of 5 connections")
}

func TestConnectionCapClientKey(t *testing.T) {
	l := &connLimiter{}
	for _, tc := range []struct {
		addr, key string
		exempt    bool
	}{
		{"203.0.113.7:5000", "203.0.113.7", false},
		{"[::ffff:203.0.113.7]:5000", "203.0.113.7", false},
		{"[2001:db8:1:2:aaaa::1]:5000", "2001:db8:1:2::/64", false},
		{"[2001:db8:1:2:bbbb::9]:5000", "2001:db8:1:2::/64", false},
		{"[2001:db8:1:3::1]:5000", "2001:db8:1:3::/64", false},
		{"127.0.0.1:5000", "", true},
		{"[::1]:5000", "", true},
	} {
		addr, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		key, exempt := l.clientKey(addr)
		if key != tc.key || exempt != tc.exempt {
			t.Errorf("%s: key %q exempt %v, want %q %v", tc.addr, key, exempt, tc.key, tc.exempt)
		}
	}
	l.limitLoopback = true
	if key, exempt := l.clientKey(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}); key != "127.0.0.1" || exempt {
		t.Errorf("loopback with LimitLoopback: %q %v", key, exempt)
	}
}

// mustDialWS dials a WebSocket that must be accepted.
func mustDialWS(t *testing.T, url string, hdr http.Header) *wsClient {
	t.Helper()
	c, resp, err := dialURL(t, url, hdr)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatal(fmt.Errorf("dialing %s (HTTP %d): %w", url, status, err))
	}
	return c
}
