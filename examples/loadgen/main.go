// Command loadgen opens many concurrent DayOne sessions against a running
// baton server over loopback, keeps candidate events flowing, and reports
// the latency from sending an event to receiving its ack and its first
// effect, errors, and the server's heap per session (from /debug/stats).
//
//	ulimit -n 20000
//	baton serve --dev --data /tmp/load --addr 127.0.0.1:8080 &
//	go run ./examples/loadgen -sessions 1000 -duration 30s -rate 0.5
//
// It only talks to the address it is given and stops by itself after
// -duration.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

type config struct {
	url      string
	token    string
	sessions int
	duration time.Duration
	rate     float64
	ramp     float64
	prefix   string
}

func main() {
	var c config
	flag.StringVar(&c.url, "url", "ws://127.0.0.1:8080/ws", "server WebSocket URL (loopback)")
	flag.StringVar(&c.token, "token", os.Getenv("BATON_TOKEN"), "bearer token (default $BATON_TOKEN)")
	flag.IntVar(&c.sessions, "sessions", 100, "concurrent sessions, one connection each")
	flag.DurationVar(&c.duration, "duration", 30*time.Second, "how long events flow once all sessions are up")
	flag.Float64Var(&c.rate, "rate", 0.5, "candidate events per second per session")
	flag.Float64Var(&c.ramp, "ramp", 1000, "new connections per second while ramping up")
	flag.StringVar(&c.prefix, "prefix", fmt.Sprintf("load%d", time.Now().Unix()), "session id prefix")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

// frame is the little of a server frame the generator reads.
type frame struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Code string `json:"code"`
}

type stats struct {
	mu        sync.Mutex
	ackLat    []time.Duration
	effectLat []time.Duration
	errors    map[string]int
	sent      atomic.Int64
	frames    atomic.Int64
	up        atomic.Int64
	stop      atomic.Bool // steady state over: send no more
	unacked   atomic.Int64
}

func (s *stats) err(kind string) {
	s.mu.Lock()
	s.errors[kind]++
	s.mu.Unlock()
}

func run(ctx context.Context, c config) error {
	st := &stats{errors: map[string]int{}}
	base, err := serverStats(c)
	if err != nil {
		return fmt.Errorf("server stats (is the server up, and is this its token?): %w", err)
	}
	fmt.Printf("# %d sessions, %.2f events/s each, %s, against %s\n", c.sessions, c.rate, c.duration, c.url)

	// Ramp up: open connections at a bounded rate so the listen backlog
	// is not overrun, then let every session run until the deadline.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	ready := make(chan struct{})
	rampStart := time.Now()
	tick := time.NewTicker(time.Duration(float64(time.Second) / c.ramp))
	for i := range c.sessions {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			session(runCtx, c, fmt.Sprintf("%s_%d", c.prefix, i), st, ready)
		}()
	}
	tick.Stop()
	for st.up.Load()+int64(sumErrors(st)) < int64(c.sessions) && time.Since(rampStart) < 2*time.Minute {
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Printf("# ramp: %d sessions up in %s\n", st.up.Load(), time.Since(rampStart).Round(time.Millisecond))
	// Measure only the steady state.
	st.mu.Lock()
	st.ackLat, st.effectLat = st.ackLat[:0], st.effectLat[:0]
	st.mu.Unlock()
	st.sent.Store(0)
	close(ready)
	select {
	case <-time.After(c.duration):
	case <-ctx.Done():
	}
	st.stop.Store(true)
	// Let answers to the last events arrive before counting what is missing.
	time.Sleep(2 * time.Second)
	load, err := serverStats(c)
	if err != nil {
		st.err("stats: " + err.Error())
	}
	cancel()
	wg.Wait()
	report(st, c, base, load)
	return nil
}

func sumErrors(st *stats) int {
	st.mu.Lock()
	defer st.mu.Unlock()
	n := 0
	for k, v := range st.errors {
		if strings.HasPrefix(k, "dial") || strings.HasPrefix(k, "start") {
			n += v
		}
	}
	return n
}

var script = []map[string]any{
	{"event_type": "mic_state_changed", "data": map[string]any{"mic_active": true}},
	{"event_type": "mic_state_changed", "data": map[string]any{"mic_active": false}},
	{"event_type": "speech_end"},
	{"event_type": "candidate_message", "data": map[string]any{"source": "voice", "text": "I would replay the failed payment and check the gateway logs.", "stt_confidence": 0.93}},
	{"event_type": "typing_state_changed", "data": map[string]any{"typing": true}},
	{"event_type": "candidate_message", "data": map[string]any{"source": "text", "text": "Hotfix first; the launch waits an hour. The rollback risk is low."}},
}

// session runs one connection: start, then events at the configured rate.
func session(ctx context.Context, c config, id string, st *stats, ready <-chan struct{}) {
	hdr := http.Header{}
	if c.token != "" {
		hdr.Set("Authorization", "Bearer "+c.token)
	}
	d := websocket.Dialer{HandshakeTimeout: 30 * time.Second, ReadBufferSize: 1024, WriteBufferSize: 1024}
	ws, _, err := d.DialContext(ctx, c.url, hdr)
	if err != nil {
		st.err("dial: " + short(err))
		return
	}
	defer ws.Close()

	// Every event's send time is kept until its ack, so slow answers are
	// measured too rather than overwritten by the next event.
	var mu sync.Mutex
	sent := map[string]time.Time{}
	wantEffect := map[string]bool{}
	var awaitFrom time.Time // set after the ack of a message: the next effect is its first
	started := make(chan error, 1)
	go func() {
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				if ctx.Err() == nil {
					st.err("read: " + short(err))
				}
				select {
				case started <- err:
				default:
				}
				return
			}
			st.frames.Add(1)
			var f frame
			if json.Unmarshal(data, &f) != nil {
				st.err("bad frame")
				continue
			}
			now := time.Now()
			switch f.Type {
			case "ack":
				if f.ID == "start" {
					started <- nil
					continue
				}
				mu.Lock()
				if t0, ok := sent[f.ID]; ok {
					delete(sent, f.ID)
					st.mu.Lock()
					st.ackLat = append(st.ackLat, now.Sub(t0))
					st.mu.Unlock()
					// The server sends an input's ack right before its
					// effects, so the next effect frame is this event's.
					if wantEffect[f.ID] {
						awaitFrom = t0
					}
					delete(wantEffect, f.ID)
				}
				mu.Unlock()
			case "effect":
				mu.Lock()
				if !awaitFrom.IsZero() {
					st.mu.Lock()
					st.effectLat = append(st.effectLat, now.Sub(awaitFrom))
					st.mu.Unlock()
					awaitFrom = time.Time{}
				}
				mu.Unlock()
			case "error":
				st.err("error frame: " + f.Code)
				if f.ID == "start" {
					started <- fmt.Errorf("start: %s", f.Code)
				}
			}
		}
	}()
	if err := ws.WriteJSON(map[string]any{"id": "start", "type": "start", "pack": "dayone", "session_id": id, "candidate_id": "load"}); err != nil {
		st.err("start: " + short(err))
		return
	}
	select {
	case err := <-started:
		if err != nil {
			st.err("start: " + short(err))
			return
		}
	case <-ctx.Done():
		return
	}
	st.up.Add(1)
	select {
	case <-ready:
	case <-ctx.Done():
		return
	}
	// Spread sessions over the interval so events do not arrive in waves.
	interval := time.Duration(float64(time.Second) / c.rate)
	timer := time.NewTimer(time.Duration(rand.Int64N(int64(interval))))
	defer timer.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			mu.Lock()
			st.unacked.Add(int64(len(sent)))
			mu.Unlock()
			ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "done"), time.Now().Add(time.Second))
			return
		case <-timer.C:
		}
		if st.stop.Load() {
			timer.Reset(time.Hour)
			continue
		}
		ev := script[n%len(script)]
		fid := fmt.Sprintf("e%d", n)
		mu.Lock()
		sent[fid] = time.Now()
		if ev["event_type"] == "candidate_message" {
			wantEffect[fid] = true
		}
		mu.Unlock()
		if err := ws.WriteJSON(map[string]any{"id": fid, "type": "event", "event": ev}); err != nil {
			if ctx.Err() == nil {
				st.err("write: " + short(err))
			}
			return
		}
		st.sent.Add(1)
		timer.Reset(interval)
	}
}

func short(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && len(s) > 60 {
		s = s[i+2:]
	}
	return s
}

// Stats is what /debug/stats returns (runtime/service.Stats).
type serverStatsBody struct {
	Sessions    int    `json:"sessions"`
	Connections int    `json:"connections"`
	Goroutines  int    `json:"goroutines"`
	HeapAlloc   uint64 `json:"heap_alloc_bytes"`
	HeapInuse   uint64 `json:"heap_inuse_bytes"`
	Sys         uint64 `json:"sys_bytes"`
}

func serverStats(c config) (serverStatsBody, error) {
	var out serverStatsBody
	u, err := url.Parse(c.url)
	if err != nil {
		return out, err
	}
	u.Scheme = strings.Replace(u.Scheme, "ws", "http", 1)
	u.Path, u.RawQuery = "/debug/stats", "gc=1"
	req, _ := http.NewRequest(http.MethodGet, u.String(), nil)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return out, fmt.Errorf("%s: HTTP %d", u, resp.StatusCode)
	}
	return out, json.NewDecoder(resp.Body).Decode(&out)
}

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

func report(st *stats, c config, base, load serverStatsBody) {
	st.mu.Lock()
	defer st.mu.Unlock()
	slices.Sort(st.ackLat)
	slices.Sort(st.effectLat)
	fmt.Printf("sessions up        %d / %d\n", st.up.Load(), c.sessions)
	fmt.Printf("events sent        %d in %s (%.0f/s), %d unanswered 2 s after the last\n", st.sent.Load(), c.duration, float64(st.sent.Load())/c.duration.Seconds(), st.unacked.Load())
	for _, l := range []struct {
		name string
		d    []time.Duration
	}{{"event -> ack", st.ackLat}, {"event -> 1st effect", st.effectLat}} {
		fmt.Printf("%-18s n=%d p50=%s p90=%s p99=%s max=%s\n", l.name, len(l.d),
			pct(l.d, .50).Round(time.Microsecond), pct(l.d, .90).Round(time.Microsecond),
			pct(l.d, .99).Round(time.Microsecond), pct(l.d, 1).Round(time.Microsecond))
	}
	if load.Sessions > 0 {
		per := (int64(load.HeapAlloc) - int64(base.HeapAlloc)) / int64(load.Sessions)
		fmt.Printf("server             %d sessions, %d connections, %d goroutines, heap %.1f MiB (+%.1f KiB per session incl. its connection), sys %.1f MiB\n",
			load.Sessions, load.Connections, load.Goroutines, float64(load.HeapAlloc)/(1<<20), float64(per)/1024, float64(load.Sys)/(1<<20))
	}
	keys := make([]string, 0, len(st.errors))
	for k := range st.errors {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	total := 0
	for _, k := range keys {
		total += st.errors[k]
	}
	fmt.Printf("errors             %d\n", total)
	for _, k := range keys {
		fmt.Printf("  %6d  %s\n", st.errors[k], k)
	}
}
