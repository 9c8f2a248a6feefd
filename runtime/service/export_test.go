package service

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// The DayOne contract's tests (dayone_test.go, in package service_test so
// that they can import runtime/service/dayone) run on this package's
// harness through these.

type (
	Harness  = harness
	WSClient = wsClient
)

func NewHarness(t testing.TB, opts ...func(*Config)) *Harness {
	t.Helper()
	return newHarness(t, opts...)
}

func (h *harness) URL() string { return h.ts.URL }

func (h *harness) Post(path string, body any) (int, map[string]any) {
	h.t.Helper()
	return h.post(path, body)
}

// PostAs posts as the holder of a session's secret.
func (h *harness) PostAs(secret, path string, body any) (int, map[string]any) {
	h.t.Helper()
	return h.postWith(path, body, http.Header{SecretHeader: {secret}})
}

func (h *harness) Dial() *WSClient {
	h.t.Helper()
	return h.dial(nil)
}

// DialWith dials with request headers (a token).
func (h *harness) DialWith(hdr http.Header) *WSClient {
	h.t.Helper()
	return h.dial(hdr)
}

// PostRaw posts with request headers and answers the body as it came.
func (h *harness) PostRaw(path string, body any, hdr http.Header) (int, []byte) {
	h.t.Helper()
	return h.postRaw(path, body, hdr)
}

// WSURL is the WebSocket endpoint.
func (h *harness) WSURL() string { return h.wsURL() }

// Restart shuts the server down and starts another on its data
// directory and clock, which recovers its sessions from their logs. A
// contract serves one server: opts mount new ones.
func (h *harness) Restart(opts ...func(*Config)) *Harness {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		h.t.Fatal(err)
	}
	cfg := h.cfg
	cfg.Contracts = nil
	for _, o := range opts {
		o(&cfg)
	}
	return startHarness(h.t, cfg, h.clk, nil)
}

func (h *harness) Quiesce(id string) {
	h.t.Helper()
	h.quiesce(id)
}

func (h *harness) RunUntil(id string, t int64) {
	h.t.Helper()
	h.runUntil(id, t)
}

func (h *harness) WaitArmed(d time.Duration) {
	h.t.Helper()
	h.waitArmed(d)
}

func (h *harness) Advance(d time.Duration) { h.clk.Advance(d) }

// Live reports whether the session is running.
func (h *harness) Live(id string) bool { return h.srv.lookup(id) != nil }

// Metric reads a counter or gauge of the server's registry by its name
// and label pairs.
func (h *harness) Metric(name string, labels ...string) float64 {
	h.t.Helper()
	fams, err := h.srv.m.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, l := range m.GetLabel() {
					found = found || (l.GetName() == labels[i] && l.GetValue() == labels[i+1])
				}
				if !found {
					continue next
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	h.t.Fatalf("no metric %s%v", name, labels)
	return 0
}

func (c *wsClient) Send(v any) {
	c.t.Helper()
	c.send(v)
}

func (c *wsClient) ExpectAck(id string) ServerFrame {
	c.t.Helper()
	return c.expectAck(id)
}

func (c *wsClient) WaitFor(what string, pred func(*ServerFrame) bool) ServerFrame {
	c.t.Helper()
	return c.waitFor(what, pred)
}

// DataDir is where the server keeps its logs.
func (h *harness) DataDir() string { return h.dir }
