package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/runtime/service"
	"github.com/batonhq/baton/runtime/service/dayone"
	"github.com/batonhq/baton/scenarios"
)

// counting wraps a handler and counts its answers by path and status.
type counting struct {
	h  http.Handler
	mu sync.Mutex
	n  map[string]int
}

type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	w.code, w.wrote = code, true
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(p)
}

func (c *counting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
	c.h.ServeHTTP(sw, r)
	key := r.URL.Path + " " + strconv.Itoa(sw.code)
	if !sw.wrote {
		// The client left before the answer (a run's deadline): the
		// event may be applied a moment later, but it was not answered.
		key = r.URL.Path + " unanswered"
	}
	c.mu.Lock()
	c.n[key]++
	c.mu.Unlock()
}

func (c *counting) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

// batonServer serves the DayOne contract in process over loopback, as
// baton serve --dev does, with every input synced (the default).
func batonServer(t *testing.T, rate float64, burst int) (*httptest.Server, *counting) {
	t.Helper()
	srv, err := service.New(service.Config{
		DataDir: t.TempDir(), Dev: true, Packs: scenarios.FS,
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		EventRate: rate, EventBurst: burst,
		Contracts: []service.Contract{dayone.New(dayone.Config{AllowPrivateWebhooks: true})},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := &counting{h: srv.Handler(), n: map[string]int{}}
	ts := httptest.NewServer(c)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		ts.Close()
	})
	return ts, c
}

// appliedEvents sums baton_candidate_events_total from the server's
// /metrics: the events the sessions applied, whoever sent them.
func appliedEvents(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "baton_candidate_events_total{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		n += int(v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestBaton(t *testing.T) {
	for _, tc := range []struct {
		name              string
		clients, requests int
		rate              float64
		burst             int
		wantOK            int64
		wantKinds         map[string]int64
	}{
		{name: "all answered", clients: 4, requests: 2 * len(mix), rate: 1e6, burst: 1e6, wantOK: 4 * 2 * int64(len(mix))},
		{name: "one client", clients: 1, requests: 7, rate: 1e6, burst: 1e6, wantOK: 7},
		// Five events per session pass the bucket; its next token is
		// 1000 s away, so every later one is refused and counted by code.
		{name: "rate limited", clients: 3, requests: 12, rate: 0.001, burst: 5, wantOK: 3 * 5, wantKinds: map[string]int64{"rate_limited": 3 * 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts, count := batonServer(t, tc.rate, tc.burst)
			res, err := run(context.Background(), config{url: ts.URL, target: targetBaton, clients: tc.clients,
				requests: tc.requests, prefix: "t", timeout: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			want := int64(tc.clients * tc.requests)
			if res.Requests != want || res.OK != tc.wantOK || res.Errors != want-tc.wantOK {
				t.Errorf("requests %d ok %d errors %d, want %d %d %d", res.Requests, res.OK, res.Errors, want, tc.wantOK, want-tc.wantOK)
			}
			for k, n := range tc.wantKinds {
				if res.ErrorKinds[k] != n {
					t.Errorf("error %s: %d, want %d (all: %v)", k, res.ErrorKinds[k], n, res.ErrorKinds)
				}
			}
			if len(res.ErrorKinds) != len(tc.wantKinds) {
				t.Errorf("errors %v, want %v", res.ErrorKinds, tc.wantKinds)
			}
			if got := count.get("/sim/session/start 200"); got != tc.clients {
				t.Errorf("server started %d sessions, want %d", got, tc.clients)
			}
			if got := count.get("/sim/session/event 200"); int64(got) != res.OK {
				t.Errorf("server answered %d events ok, driver counted %d", got, res.OK)
			}
			if got := appliedEvents(t, ts.URL); int64(got) != res.OK {
				t.Errorf("server applied %d events, driver counted %d ok", got, res.OK)
			}
			if res.StateMismatches != 0 {
				t.Errorf("%d acks not later in their session's log than the one before", res.StateMismatches)
			}
			if res.OK > 0 && (res.P50 <= 0 || res.P99 < res.P50 || res.Max < res.P99 || res.PerSecond <= 0) {
				t.Errorf("figures out of order: %+v", res)
			}
		})
	}
}

// TestBatonDuration runs by the clock, with a warm-up: the events the
// server applied are the measured ones, the warm-up's, and at most one
// per client cut off at the deadline (applied, but never answered).
func TestBatonDuration(t *testing.T) {
	ts, count := batonServer(t, 1e6, 1e6)
	const clients = 3
	res, err := run(context.Background(), config{url: ts.URL, target: targetBaton, clients: clients,
		duration: 300 * time.Millisecond, warmup: 200 * time.Millisecond, prefix: "t", timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 || res.OK == 0 || res.Requests != res.OK {
		t.Fatalf("requests %d ok %d errors %d (%v)", res.Requests, res.OK, res.Errors, res.ErrorKinds)
	}
	answered := int64(count.get("/sim/session/event 200"))
	applied := int64(appliedEvents(t, ts.URL))
	if answered < res.OK+res.Warmup || answered > res.OK+res.Warmup+clients || applied < answered || applied > res.OK+res.Warmup+clients {
		t.Errorf("server answered %d and applied %d events; driver counted %d measured and %d in the warm-up", answered, applied, res.OK, res.Warmup)
	}
}

// fakeN8n answers like examples/n8n/workflow.json: ok, the decision, and
// the session's event count, except that it forgets the events named in
// lose, as a workflow whose static data another execution overwrote.
func fakeN8n(t *testing.T, lose map[int]bool) *httptest.Server {
	var mu sync.Mutex
	seen := map[string]int64{}
	calls := 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b struct {
			SessionID string `json:"session_id"`
			EventType string `json:"event_type"`
		}
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil || b.SessionID == "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/webhook/sim/session/start":
			seen[b.SessionID] = 0
			json.NewEncoder(w).Encode(map[string]any{"ok": true, "session_id": b.SessionID})
		case "/webhook/sim/session/event":
			calls++
			if !lose[calls] {
				seen[b.SessionID]++
			}
			json.NewEncoder(w).Encode(map[string]any{"ok": true, "session_id": b.SessionID, "events": seen[b.SessionID],
				"decision": map[string]any{"action": "wait"}})
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestN8nStateCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose map[int]bool
	}{
		{name: "state kept", lose: nil},
		{name: "two updates lost", lose: map[int]bool{3: true, 9: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := fakeN8n(t, tc.lose)
			res, err := run(context.Background(), config{url: ts.URL + "/webhook", target: targetN8n, clients: 1, requests: 20, prefix: "t", timeout: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if res.OK != 20 || res.Errors != 0 {
				t.Errorf("ok %d errors %d (%v), want 20 0", res.OK, res.Errors, res.ErrorKinds)
			}
			if res.StateMismatches != int64(len(tc.lose)) {
				t.Errorf("state mismatches %d, want %d", res.StateMismatches, len(tc.lose))
			}
		})
	}
}

func TestConfigRefused(t *testing.T) {
	ok := config{url: "http://127.0.0.1:1", target: targetBaton, clients: 1, duration: time.Second, timeout: time.Second}
	for _, tc := range []struct {
		change func(*config)
		want   string
	}{
		{func(c *config) { c.target = "zapier" }, "-target"},
		{func(c *config) { c.clients = 0 }, "-clients"},
		{func(c *config) { c.url = "127.0.0.1:8080" }, "-url"},
		{func(c *config) { c.duration = 10 * time.Minute }, "-duration"},
		{func(c *config) { c.requests = -1 }, "-requests"},
		{func(c *config) { c.warmup = -time.Second }, "-warmup"},
	} {
		c := ok
		tc.change(&c)
		_, err := run(context.Background(), c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one about %s", c, err, tc.want)
		}
	}
}

// TestBatonSeqCheck runs against a server whose acks go back in their
// session's log, which baton never does: each must be counted.
func TestBatonSeqCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		seqs []uint64
		want int64
	}{
		{name: "increasing", seqs: []uint64{1, 3, 4, 9}, want: 0},
		{name: "repeated and backwards", seqs: []uint64{1, 2, 2, 5, 4}, want: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			n := 0
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				mu.Lock()
				defer mu.Unlock()
				if r.URL.Path == "/sim/session/event" {
					fmt.Fprintf(w, `{"ok":true,"session_id":"t-000","t_ms":1,"input_seq":%d}`, tc.seqs[n])
					n++
					return
				}
				fmt.Fprint(w, `{"ok":true,"session_id":"t-000","pack":"dayone"}`)
			}))
			defer ts.Close()
			res, err := run(context.Background(), config{url: ts.URL, target: targetBaton, clients: 1, requests: len(tc.seqs), prefix: "t", timeout: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if res.OK != int64(len(tc.seqs)) || res.StateMismatches != tc.want {
				t.Errorf("ok %d mismatches %d, want %d %d", res.OK, res.StateMismatches, len(tc.seqs), tc.want)
			}
		})
	}
}

// TestWarmupSplit checks that events sent before the measured window
// count as warm-up only, and those after it as measured.
func TestWarmupSplit(t *testing.T) {
	ts := fakeN8n(t, nil)
	c := config{url: ts.URL + "/webhook", target: targetN8n, clients: 1, requests: 1, timeout: 20 * time.Second}
	cl := &client{c: &c, http: ts.Client(), id: "w", kinds: map[string]int64{}}
	if err := cl.start(context.Background(), "http://127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		from           time.Time
		wantWarm, want int
	}{
		{from: time.Now().Add(time.Hour), wantWarm: 1, want: 0},
		{from: time.Now().Add(time.Hour), wantWarm: 2, want: 0},
		{from: time.Now().Add(-time.Hour), wantWarm: 2, want: 1},
	} {
		cl.event(context.Background(), tc.from)
		if int(cl.warm) != tc.wantWarm || len(cl.lat) != tc.want || cl.mismatches != 0 {
			t.Errorf("after an event with the window from %v: %d warm-up, %d measured, %d mismatches; want %d %d 0",
				tc.from, cl.warm, len(cl.lat), cl.mismatches, tc.wantWarm, tc.want)
		}
	}
}
