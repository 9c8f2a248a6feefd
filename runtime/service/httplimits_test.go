package service

import (
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/batonhq/baton/runtime/clock/clocktest"
)

// bodyContract mounts a route shaped like the DayOne contract's: origin
// check, then token, then a body read. It counts the requests that got
// past the token.
type bodyContract struct{ reached atomic.Int32 }

func (b *bodyContract) Mount(srv *Server, mux *http.ServeMux) error {
	mux.HandleFunc("POST /test/body", srv.AllowOrigins(srv.RequireToken(func(w http.ResponseWriter, r *http.Request) {
		b.reached.Add(1)
		data, pe := srv.ReadBody(w, r)
		if pe != nil {
			srv.WriteError(w, pe)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "bytes": len(data)})
	})))
	return nil
}

func (b *bodyContract) Watch(*Session) EffectHook { return nil }

// trickle sends the headers of a POST whose body keeps arriving a byte at
// a time and never ends (until stop, or the server closes). It announces
// less than the body limit, so only a refusal or the read timeout can
// answer it before the body is whole.
func (h *httpConn) trickle(headers string) (stop func()) {
	h.t.Helper()
	h.write("POST /test/body HTTP/1.1\r\nHost: baton\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n" + headers + "\r\n")
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if _, err := h.c.Write([]byte("x")); err != nil {
				return
			}
		}
	}()
	return func() { close(done) }
}

// A refusal on a route with a body comes before the body is read, and
// closes the connection: the read timeout here is far beyond the test's
// wait, so only answering unread passes.
func TestRefusalDoesNotWaitForTrickledBody(t *testing.T) {
	bc := &bodyContract{}
	s := serveTest(t, func(c *Config) {
		c.Dev, c.Token, c.Origins = false, "tok", []string{"https://app.example.com"}
		c.HTTPReadTimeout = time.Hour
		c.Contracts = []Contract{bc}
	})
	for _, tc := range []struct {
		name, headers string
		status        int
		code          string
	}{
		{"no token", "", http.StatusUnauthorized, CodeUnauthorized},
		{"wrong token", "Authorization: Bearer nope\r\n", http.StatusUnauthorized, CodeUnauthorized},
		{"other origin", "Authorization: Bearer tok\r\nOrigin: https://evil.example.com\r\n", http.StatusForbidden, CodeForbiddenOrigin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := s.connect()
			stop := h.trickle(tc.headers)
			defer stop()
			resp, body := h.response()
			if resp.StatusCode != tc.status || errorCode(t, body) != tc.code {
				t.Fatalf("%d %s, want %d %s", resp.StatusCode, body, tc.status, tc.code)
			}
			if !resp.Close {
				t.Error("refusal does not close the connection")
			}
			h.waitClosed()
		})
	}
	if n := bc.reached.Load(); n != 0 {
		t.Errorf("%d refused requests reached the handler", n)
	}
}

// An authorized body that trickles is cut off at the read timeout.
func TestTrickledBodyCutAtReadTimeout(t *testing.T) {
	bc := &bodyContract{}
	s := serveTest(t, func(c *Config) {
		c.Dev, c.Token = false, "tok"
		// Equal timeouts: the answer must not be cut by the write deadline
		// that started with the read.
		c.HTTPReadTimeout, c.HTTPWriteTimeout = 300*time.Millisecond, 300*time.Millisecond
		c.Contracts = []Contract{bc}
	})
	h := s.connect()
	stop := h.trickle("Authorization: Bearer tok\r\n")
	defer stop()
	h.c.SetReadDeadline(time.Now().Add(waitLimit))
	resp, err := http.ReadResponse(h.r, nil)
	if err != nil {
		t.Fatalf("no answer to a trickled body: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), CodeBodyTimeout) {
		t.Fatalf("trickled body answered %d %s, want 408 %s", resp.StatusCode, body, CodeBodyTimeout)
	}
	h.waitClosed()
	if n := bc.reached.Load(); n != 1 {
		t.Errorf("handler reached %d times, want 1", n)
	}
}

func TestIdleKeepAliveClosed(t *testing.T) {
	s := serveTest(t, func(c *Config) { c.HTTPIdleTimeout = 200 * time.Millisecond })
	h := s.connect()
	if resp, body := h.get("/healthz"); resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	h.waitClosed()
}

// A WebSocket is hijacked from the HTTP server, which clears the HTTP
// deadlines: it lives on many times the HTTP timeouts. The client is
// quiet for longer than PongWait at a time, so the connection also needs
// the server's pings and the client's pongs to keep going. PongWait is
// forty pings long, so that a busy machine's stalls do not end it.
func TestWebSocketOutlivesHTTPTimeouts(t *testing.T) {
	const httpTimeout, pongWait = 100 * time.Millisecond, 2 * time.Second
	s := serveTest(t, func(c *Config) {
		c.HTTPReadTimeout, c.HTTPWriteTimeout, c.HTTPIdleTimeout = httpTimeout, httpTimeout, httpTimeout
		c.PingInterval, c.PongWait = 50*time.Millisecond, pongWait
	})
	ws := mustDialWS(t, s.wsURL(), nil)
	for _, id := range []string{"p1", "p2"} {
		time.Sleep(pongWait + pongWait/2)
		ws.send(map[string]any{"id": id, "type": "ping"})
		if f := ws.reply(id); f.Type != FramePong {
			t.Fatalf("ping %s answered %s", id, f.Type)
		}
	}
}

func TestRefusedOriginCode(t *testing.T) {
	s := serveTest(t, func(c *Config) {
		c.Dev, c.Token, c.Origins = false, "tok", []string{"https://app.example.com"}
	})
	_, resp, err := dialURL(t, s.wsURL(), http.Header{"Authorization": {"Bearer tok"}, "Origin": {"https://evil.example.com"}})
	if err == nil || resp == nil {
		t.Fatalf("handshake from another origin: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusForbidden || errorCode(t, body) != CodeForbiddenOrigin {
		t.Fatalf("%d %s, want 403 %s", resp.StatusCode, body, CodeForbiddenOrigin)
	}
}

// Serve's shutdown closes WebSockets with 1001 and idle keep-alive
// connections, and returns.
func TestServeShutdownWithLimits(t *testing.T) {
	s := serveTest(t)
	ws := mustDialWS(t, s.wsURL(), nil)
	ws.send(map[string]any{"id": "p", "type": "ping"})
	ws.reply("p")
	h := s.connect()
	if resp, body := h.get("/healthz"); resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if err := s.shutdown(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if ce := ws.waitClose(); ce.Code != websocket.CloseGoingAway {
		t.Errorf("WebSocket closed with %d, want %d", ce.Code, websocket.CloseGoingAway)
	}
	h.waitClosed()
}

// Errors about session logs name files, never the directories the
// server runs in.
func TestLogErrorsHideDirectories(t *testing.T) {
	// The damaged log is there before the server starts, and its scrub
	// at start (once only) has kept its evidence before the test goes
	// on: a scrub still writing into damaged/ when the data directory is
	// removed below would make the removal fail.
	h := newHarness(t, func(c *Config) {
		c.ScrubInterval = -1
		if err := os.WriteFile(filepath.Join(c.DataDir, "gone.done"), []byte("not a log"), 0o600); err != nil {
			t.Fatal(err)
		}
	})
	deadline := time.Now().Add(waitLimit)
	for testutil.ToFloat64(h.srv.m.scrubbed.WithLabelValues("damaged")) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the scrub at start did not find the damaged log")
		}
		time.Sleep(5 * time.Millisecond)
	}
	abs, err := filepath.Abs(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	hidden := func(f ServerFrame, file string) {
		t.Helper()
		if strings.Contains(f.Message, abs) || strings.Contains(f.Message, wd) {
			t.Errorf("error shows a server directory: %s", f.Message)
		}
		if !strings.Contains(f.Message, file) {
			t.Errorf("error does not name %s: %s", file, f.Message)
		}
	}
	c := h.dial(nil)
	c.send(map[string]any{"id": "r", "type": "resume", "session_id": "gone"})
	hidden(c.expectError("r", CodeSessionFailed), "gone.done")

	// With the data directory gone, creating a log fails.
	if err := os.RemoveAll(h.dir); err != nil {
		t.Fatal(err)
	}
	c.send(startFrame("s", "fresh"))
	hidden(c.expectError("s", CodeStorage), "fresh.wal")
}

// closesAfter reads one answer on h and then insists on the end of the
// stream: the server closed the connection, it did not keep it alive.
func (h *httpConn) closesAfter(status int, code string) {
	h.t.Helper()
	resp, body := h.response()
	if resp.StatusCode != status || errorCode(h.t, body) != code {
		h.t.Fatalf("%d %s, want %d %s", resp.StatusCode, body, status, code)
	}
	if !resp.Close {
		h.t.Error("answer does not say Connection: close")
	}
	h.c.SetReadDeadline(time.Now().Add(waitLimit))
	n, err := io.Copy(io.Discard, h.r)
	if err != nil || n != 0 {
		h.t.Fatalf("after the answer: %d more bytes, %v; want the end of the stream", n, err)
	}
}

// A request refused for its token or its origin closes its connection
// even when it has no body: a client that got it wrong has no business
// keeping the connection for another try.
func TestRefusalWithoutBodyCloses(t *testing.T) {
	s := serveTest(t, func(c *Config) {
		c.Dev, c.Token, c.Origins = false, "tok", []string{"https://app.example.com"}
		c.HTTPIdleTimeout = time.Hour
	})
	const upgrade = "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	for _, tc := range []struct {
		name, req string
		status    int
		code      string
	}{
		{"no token", "GET /debug/stats HTTP/1.1\r\nHost: baton\r\n\r\n", http.StatusUnauthorized, CodeUnauthorized},
		{"wrong token, empty body", "POST /v1/uploads HTTP/1.1\r\nHost: baton\r\nAuthorization: Bearer nope\r\nContent-Length: 0\r\n\r\n", http.StatusUnauthorized, CodeUnauthorized},
		{"handshake without token", "GET /ws HTTP/1.1\r\nHost: baton\r\n" + upgrade + "\r\n", http.StatusUnauthorized, CodeUnauthorized},
		{"other origin", "POST /v1/uploads HTTP/1.1\r\nHost: baton\r\nAuthorization: Bearer tok\r\nOrigin: https://evil.example.com\r\nContent-Length: 0\r\n\r\n", http.StatusForbidden, CodeForbiddenOrigin},
		{"handshake from other origin", "GET /ws HTTP/1.1\r\nHost: baton\r\nAuthorization: Bearer tok\r\nOrigin: https://evil.example.com\r\n" + upgrade + "\r\n", http.StatusForbidden, CodeForbiddenOrigin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := s.connect()
			h.t = t
			h.write(tc.req)
			h.closesAfter(tc.status, tc.code)
		})
	}
}

// A body announced over the endpoint's limit is refused on its header:
// 413 before a byte of it is sent, and the connection closed. The read
// timeout is far beyond the test's wait, so only an answer that does not
// wait for the body passes.
func TestOversizedBodyRefusedOnItsHeader(t *testing.T) {
	bc := &bodyContract{}
	s := serveTest(t, func(c *Config) {
		c.Dev, c.Token = false, "tok"
		c.HTTPReadTimeout = time.Hour
		c.Contracts = []Contract{bc}
	})
	for _, path := range []string{"/test/body", "/v1/uploads"} {
		t.Run(path, func(t *testing.T) {
			h := s.connect()
			h.t = t
			h.write("POST " + path + " HTTP/1.1\r\nHost: baton\r\nAuthorization: Bearer tok\r\nContent-Type: application/octet-stream\r\nContent-Length: 100000000\r\n\r\n")
			h.closesAfter(http.StatusRequestEntityTooLarge, CodeTooLarge)
		})
	}
	// Under the limit, the same route reads the body.
	h := s.connect()
	h.write("POST /test/body HTTP/1.1\r\nHost: baton\r\nAuthorization: Bearer tok\r\nContent-Length: 2\r\n\r\n{}")
	if resp, body := h.response(); resp.StatusCode != http.StatusOK {
		t.Fatalf("a small body: %d %s", resp.StatusCode, body)
	}
}

// Every 401 is counted, and logged with the client's address and the
// path, at most once a second: the next line says how many it left out.
func TestUnauthorizedLoggedAndCounted(t *testing.T) {
	rec := &logRecorder{}
	clk := clocktest.NewFake(epoch)
	s := serveTest(t, func(c *Config) {
		c.Dev, c.Token = false, "tok"
		c.Logger, c.Clock = slog.New(rec), clk
	})
	const msg = "request refused: missing or wrong bearer token"
	refused := func(path string, hdr string) {
		t.Helper()
		h := s.connect()
		h.write("GET " + path + " HTTP/1.1\r\nHost: baton\r\n" + hdr + "\r\n")
		h.closesAfter(http.StatusUnauthorized, CodeUnauthorized)
	}
	refused("/debug/stats", "")
	refused("/metrics", "Authorization: Bearer nope\r\n")
	refused("/ws?access_token=nope", "")
	if n := testutil.ToFloat64(s.srv.m.unauthorized); n != 3 {
		t.Fatalf("baton_http_unauthorized_total %v, want 3", n)
	}
	lines := rec.all(msg)
	if len(lines) != 1 || !strings.Contains(lines[0], "remote=127.0.0.1:") || !strings.Contains(lines[0], "path=/debug/stats") || !strings.Contains(lines[0], "suppressed=0") {
		t.Fatalf("log lines %q: want one, naming the remote address and the path", lines)
	}
	clk.Advance(unauthorizedLogEvery)
	refused("/debug/pprof/", "")
	lines = rec.all(msg)
	if len(lines) != 2 || !strings.Contains(lines[1], "path=/debug/pprof/") || !strings.Contains(lines[1], "suppressed=2") {
		t.Fatalf("log lines %q: want a second, counting the two left out", lines)
	}
	for _, l := range lines {
		if strings.Contains(l, "nope") {
			t.Errorf("a log line shows the token: %s", l)
		}
	}
	if n := testutil.ToFloat64(s.srv.m.unauthorized); n != 4 {
		t.Fatalf("baton_http_unauthorized_total %v, want 4", n)
	}
}
