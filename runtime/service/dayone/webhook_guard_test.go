package dayone

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/batonhq/baton/runtime/clock/clocktest"
	"github.com/batonhq/baton/runtime/internal/netguard"
	"github.com/batonhq/baton/runtime/service"
	"github.com/batonhq/baton/scenarios"
)

// These run the contract on a real server over loopback, as
// runtime/service's own DayOne tests do, on a fake clock: a session's
// first agent message goes out at once, later ones when the clock is
// advanced.

// waitLimit bounds every wait; it is a failure deadline, never a timing
// assertion.
const waitLimit = 20 * time.Second

type guardServer struct {
	url string
	clk *clocktest.Fake
}

func newGuardServer(t *testing.T, cfg Config) *guardServer {
	t.Helper()
	clk := clocktest.NewFake(time.Date(2026, 2, 20, 23, 0, 0, 0, time.UTC))
	srv, err := service.New(service.Config{DataDir: t.TempDir(), Dev: true, Clock: clk, Logger: slog.New(slog.DiscardHandler),
		Model: service.SimModel(0, nil), Packs: scenarios.FS, EventRate: 1000, EventBurst: 1000, Contracts: []service.Contract{New(cfg)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		srv.Shutdown(ctx)
		ts.Close()
	})
	return &guardServer{url: ts.URL, clk: clk}
}

// start posts a §5.1 start with both webhooks at hook.
func (g *guardServer) start(t *testing.T, id, hook string) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(StartRequest{SessionID: id, CandidateID: "c", StartedAt: "2026-02-20T23:00:00Z",
		ScenarioID: "dayone", FrontendAgentWebhook: hook, EndCallbackWebhook: hook})
	resp, err := http.Post(g.url+"/sim/session/start", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// notice watches session id over the WebSocket (with the secret its start
// answered), moves the session on so
// that it sends more agent messages (a notice for the first may have gone
// out before the watcher arrived), and returns the first webhook_failed
// notice's message.
func (g *guardServer) notice(t *testing.T, id, secret string) string {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(g.url, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(waitLimit))
	if err := ws.WriteJSON(map[string]any{"id": "r", "type": "resume", "session_id": id, "session_secret": secret}); err != nil {
		t.Fatal(err)
	}
	advanced := false
	for {
		var f struct {
			Type, ID, Code, Message string
		}
		if err := ws.ReadJSON(&f); err != nil {
			t.Fatalf("no webhook_failed notice: %v", err)
		}
		switch {
		case f.Type == "ack" && f.ID == "r" && !advanced:
			advanced = true
			g.clk.Advance(time.Minute)
		case f.Type == "error":
			t.Fatalf("error frame %+v", f)
		case f.Type == service.FrameNotice && f.Code == "webhook_failed":
			return f.Message
		}
	}
}

// counter is a webhook receiver that counts connections and requests.
type counter struct {
	srv         *httptest.Server
	conns, hits atomic.Int64
}

func newCounter(t *testing.T, network, addr string, h http.HandlerFunc) *counter {
	t.Helper()
	c := &counter{}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("no %s listener on %s: %v", network, addr, err)
	}
	c.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.hits.Add(1)
		h(w, r)
	}))
	c.srv.Listener.Close()
	c.srv.Listener = ln
	c.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			c.conns.Add(1)
		}
	}
	c.srv.Start()
	t.Cleanup(c.srv.Close)
	return c
}

func ok(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }

func (c *counter) port() string {
	_, p, _ := net.SplitHostPort(c.srv.Listener.Addr().String())
	return p
}

// waitHit waits for the receiver's first request.
func (c *counter) waitHit(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for c.hits.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("webhook never arrived")
		}
		time.Sleep(time.Millisecond)
	}
}

// leaks lists what a client-visible message gives away about the
// network: addresses, ports, names, dial errors.
func leaks(msg string, details ...string) []string {
	rest := strings.Replace(msg, "refused: address not allowed", "", 1)
	var out []string
	for _, d := range append(details, "127.0.0.1", "::1", "localhost", "refused", "dial", "tcp", "lookup", "timeout", "connect:") {
		if strings.Contains(rest, d) {
			out = append(out, d)
		}
	}
	return out
}

// TestWebhookRedirectNotFollowed: an allowed host answering 307 with
// another host's URL does not get the body sent there, and the watchers
// hear that the redirect was not followed, without where to.
func TestWebhookRedirectNotFollowed(t *testing.T) {
	other := newCounter(t, "tcp", "127.0.0.1:0", ok)
	allowed := newCounter(t, "tcp", "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.srv.URL+"/stolen", http.StatusTemporaryRedirect)
	})
	host := strings.TrimPrefix(allowed.srv.URL, "http://")
	g := newGuardServer(t, Config{WebhookHosts: []string{host}, WebhookBackoff: []time.Duration{}})
	code, body := g.start(t, "redir", allowed.srv.URL+"/hook")
	if code != http.StatusOK {
		t.Fatalf("start %d %v", code, body)
	}
	msg := g.notice(t, "redir", body["session_secret"].(string))
	if !strings.Contains(msg, "failed after 1 attempt: redirect not followed (HTTP 307)") {
		t.Fatalf("notice %q", msg)
	}
	if l := leaks(msg, other.port(), allowed.port(), "stolen"); l != nil {
		t.Errorf("notice %q gives away %q", msg, l)
	}
	if allowed.hits.Load() == 0 {
		t.Error("the allowed host was never asked")
	}
	if n := other.hits.Load(); n != 0 {
		t.Fatalf("the redirect target got %d requests", n)
	}
}

// TestWebhookPrivateRefusedAtStart: by default a webhook URL whose host
// is a non-public IP address is refused when the session starts, and
// nothing connects to it.
func TestWebhookPrivateRefusedAtStart(t *testing.T) {
	v4 := newCounter(t, "tcp4", "127.0.0.1:0", ok)
	v6 := newCounter(t, "tcp6", "[::1]:0", ok)
	g := newGuardServer(t, Config{})
	for i, u := range []string{
		"http://127.0.0.1:" + v4.port() + "/a",
		"http://[::1]:" + v6.port() + "/a",
		"http://[::ffff:127.0.0.1]:" + v4.port() + "/a",
		"http://0.0.0.0:" + v4.port() + "/a",
		"http://169.254.169.254/latest/meta-data/",
		"http://10.0.0.1/a",
		"https://[fd00::1]/a",
	} {
		code, body := g.start(t, fmt.Sprintf("s%d", i), u)
		e, _ := body["error"].(map[string]any)
		if code != http.StatusBadRequest || e["code"] != service.CodeBadWebhook || !strings.Contains(fmt.Sprint(e["message"]), "address not allowed") {
			t.Errorf("%s: %d %v", u, code, body)
		}
	}
	if n := v4.conns.Load() + v6.conns.Load(); n != 0 {
		t.Fatalf("%d connections to loopback", n)
	}
}

// TestWebhookNameResolvingToLoopbackRefused: a name the URL check cannot
// judge (localhost) is refused when dialled, on the address it resolved
// to; the receiver sees no connection and the watchers no network detail.
func TestWebhookNameResolvingToLoopbackRefused(t *testing.T) {
	recv := newCounter(t, "tcp4", "127.0.0.1:0", ok)
	g := newGuardServer(t, Config{})
	code, body := g.start(t, "lh", "http://localhost:"+recv.port()+"/a")
	if code != http.StatusOK {
		t.Fatalf("start %d %v", code, body)
	}
	msg := g.notice(t, "lh", body["session_secret"].(string))
	if !strings.HasSuffix(msg, " refused: address not allowed") {
		t.Fatalf("notice %q", msg)
	}
	if l := leaks(msg, recv.port()); l != nil {
		t.Errorf("notice %q gives away %q", msg, l)
	}
	if n := recv.conns.Load(); n != 0 {
		t.Fatalf("%d connections to the loopback receiver", n)
	}
}

// TestWebhookFailureHidesNetworkDetail: a connection that fails (nothing
// listening) is reported as "connection failed", not as the dial error.
func TestWebhookFailureHidesNetworkDetail(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	g := newGuardServer(t, Config{AllowPrivateWebhooks: true, WebhookBackoff: []time.Duration{}})
	code, body := g.start(t, "closed", "http://"+addr+"/a")
	if code != http.StatusOK {
		t.Fatalf("start %d %v", code, body)
	}
	msg := g.notice(t, "closed", body["session_secret"].(string))
	if !strings.HasSuffix(msg, " failed after 1 attempt: connection failed") {
		t.Fatalf("notice %q", msg)
	}
	if l := leaks(msg, port); l != nil {
		t.Errorf("notice %q gives away %q", msg, l)
	}
}

// TestWebhookPrivateAllowed: a listed host, or a server that allows
// private webhooks, does deliver to loopback by name.
func TestWebhookPrivateAllowed(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(hostport string) Config
	}{
		{"listed", func(hp string) Config { return Config{WebhookHosts: []string{hp}} }},
		{"allow private", func(string) Config { return Config{AllowPrivateWebhooks: true} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recv := newCounter(t, "tcp4", "127.0.0.1:0", ok)
			hp := "localhost:" + recv.port()
			g := newGuardServer(t, tc.cfg(hp))
			if code, body := g.start(t, "ok", "http://"+hp+"/a"); code != http.StatusOK {
				t.Fatalf("start %d %v", code, body)
			}
			recv.waitHit(t)
		})
	}
}

// TestWebhookClientRefusesAtDial goes under the start check, as a session
// recovered from a log does: the guarded client itself refuses
// non-public addresses, literal or resolved, without connecting, and
// fast (the metadata and private addresses would otherwise hang).
func TestWebhookClientRefusesAtDial(t *testing.T) {
	v4 := newCounter(t, "tcp4", "127.0.0.1:0", ok)
	v6 := newCounter(t, "tcp6", "[::1]:0", ok)
	d := New(Config{WebhookTimeout: waitLimit})
	for _, u := range []string{
		v4.srv.URL, v6.srv.URL, "http://localhost:" + v4.port(),
		"http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/", "http://[fe80::1]/",
	} {
		resp, err := d.client.Post(u, "application/json", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
			t.Errorf("%s: delivered", u)
			continue
		}
		if !errors.Is(err, netguard.ErrRefused) || publicReason(err) != "address not allowed" {
			t.Errorf("%s: %v (%q)", u, err, publicReason(err))
		}
	}
	if n := v4.conns.Load() + v6.conns.Load(); n != 0 {
		t.Fatalf("%d connections to loopback", n)
	}
	// The counters count: the same URL through a permissive client
	// arrives.
	resp, err := New(Config{AllowPrivateWebhooks: true}).client.Post(v4.srv.URL, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if v4.conns.Load() != 1 {
		t.Fatalf("%d connections, want 1", v4.conns.Load())
	}
}

// TestWebhookNoProxy: the webhook client takes no proxy from the
// environment (through one, the dial-time check would see only the
// proxy's address), and follows no redirect.
func TestWebhookNoProxy(t *testing.T) {
	for _, cfg := range []Config{{}, {AllowPrivateWebhooks: true}, {WebhookHosts: []string{"hooks.example"}}} {
		hc := New(cfg).client
		tr, ok := hc.Transport.(*http.Transport)
		if !ok || tr.Proxy != nil || hc.CheckRedirect == nil {
			t.Errorf("%+v: transport %T, proxy set %v, redirect policy %v", cfg, hc.Transport, ok && tr.Proxy != nil, hc.CheckRedirect != nil)
		}
	}
}

func TestCheckTarget(t *testing.T) {
	listed := New(Config{WebhookHosts: []string{"hooks.example:8443", "10.1.2.3"}})
	for _, tc := range []struct {
		d    *Contract
		url  string
		want error
	}{
		{listed, "https://hooks.example:8443/a", nil},
		{listed, "http://10.1.2.3/a", nil}, // listed, so private is fine
		{listed, "https://hooks.example/a", errNotListed},
		{listed, "https://hooks.example:443/a", errNotListed},
		{listed, "https://other.example:8443/a", errNotListed},
		{New(Config{}), "https://hooks.example/a", nil},
		{New(Config{}), "http://10.1.2.3/a", netguard.ErrRefused},
		{New(Config{}), "http://[::ffff:a9fe:a9fe]/a", netguard.ErrRefused},
		{New(Config{AllowPrivateWebhooks: true}), "http://10.1.2.3/a", nil},
	} {
		if err := tc.d.checkTarget(tc.url); !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
			t.Errorf("%s (hosts %v): %v, want %v", tc.url, tc.d.cfg.WebhookHosts, err, tc.want)
		}
	}
}

func TestPublicReason(t *testing.T) {
	opErr := &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 6379}, Err: syscall.ECONNREFUSED}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&statusError{500}, "HTTP 500"},
		{&statusError{404}, "HTTP 404"},
		{&statusError{307}, "redirect not followed (HTTP 307)"},
		{&url.Error{Op: "Post", URL: "http://10.0.0.7:6379/", Err: opErr}, "connection failed"},
		{&url.Error{Op: "Post", URL: "http://db.internal/", Err: &net.DNSError{Err: "no such host", Name: "db.internal", IsNotFound: true}}, "connection failed"},
		{fmt.Errorf("post: %w", context.DeadlineExceeded), "connection failed"},
		{&url.Error{Op: "Post", URL: "http://x/", Err: &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("netguard: 127.0.0.1 is loopback: %w", netguard.ErrRefused)}}, "address not allowed"},
		{fmt.Errorf("%q: %w", "x:1", errNotListed), "host not in the webhook allowlist"},
	} {
		if got := publicReason(tc.err); got != tc.want {
			t.Errorf("publicReason(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
