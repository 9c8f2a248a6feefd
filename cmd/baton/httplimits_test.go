package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// lineWriter hands each line written to it to a channel, so a test can
// read what a running command prints.
type lineWriter struct {
	lines chan string
	buf   []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := strings.IndexByte(string(w.buf), '\n')
		if i < 0 {
			return len(p), nil
		}
		select {
		case w.lines <- string(w.buf[:i]):
		default:
		}
		w.buf = w.buf[i+1:]
	}
}

// startServe runs baton serve --dev on a free loopback port with args
// added, waits until it has recovered and is ready, and returns its
// address; the test's cleanup stops it and checks it exited 0.
func startServe(t *testing.T, args ...string) (addr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &lineWriter{lines: make(chan string, 16)}
	done := make(chan int, 1)
	go func() {
		done <- (&cli{stdout: out, stderr: io.Discard}).run(ctx, append([]string{"serve", "--dev", "--data", t.TempDir(), "--addr", "127.0.0.1:0"}, args...))
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited %d", code)
			}
		case <-time.After(20 * time.Second):
			t.Error("serve did not stop")
		}
	})
	// Stopping during recovery is an error exit; wait until it is over.
	for _, want := range []string{"listening on ", "ready:"} {
		select {
		case l := <-out.lines:
			if !strings.HasPrefix(l, want) {
				t.Fatalf("line %q, want %q", l, want)
			}
			if want == "listening on " {
				addr = strings.TrimPrefix(l, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("serve did not print %q", want)
		}
	}
	return addr
}

// The connection flags reach the server: with --max-conns 1, a second
// connection is refused with 503 too_many_connections.
func TestServeMaxConnsFlag(t *testing.T) {
	addr := startServe(t, "--max-conns", "1", "--idle-timeout", "1m")
	get := func() (int, string) {
		c, err := net.DialTimeout("tcp", addr, 20*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: baton\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Error struct{ Code string } `json:"error"`
		}
		json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body.Error.Code
	}
	if status, _ := get(); status != http.StatusOK {
		t.Fatalf("first connection: %d", status)
	}
	if status, code := get(); status != http.StatusServiceUnavailable || code != "too_many_connections" {
		t.Fatalf("second connection: %d %q, want 503 too_many_connections", status, code)
	}
}

func TestServeRejectsNegativeLimits(t *testing.T) {
	for _, args := range [][]string{
		{"--max-conns", "-1"},
		{"--read-timeout", "-1s"},
	} {
		code, _, errs := runCLI(t, append([]string{"serve", "--dev", "--data", t.TempDir()}, args...)...)
		if code == 0 || !strings.Contains(errs, "negative") {
			t.Errorf("%v: exit %d, %s", args, code, errs)
		}
	}
}
