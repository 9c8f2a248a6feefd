// Command bench drives DayOne's per-event decision over HTTP, the seed §5
// way, from many concurrent clients, against baton (baton serve) or the
// n8n workflow in examples/n8n, and reports requests per second and
// latency.
//
//	go run ./examples/n8n/bench -target baton -url http://127.0.0.1:8080 -clients 32 -duration 30s
//	go run ./examples/n8n/bench -target n8n -url http://127.0.0.1:5678/webhook -clients 32 -duration 30s
//
// Each client starts one session (POST URL/sim/session/start) and then
// posts events to it (POST URL/sim/session/event) one after another, as
// fast as they are answered, cycling through a DayOne mix of speech,
// typing and candidate messages. Both systems get the same bodies at the
// same paths; baton's events also carry the session's secret, from its
// start answer, in the Baton-Session-Secret header. Only events sent after every session has started and a
// warm-up (-warmup) are measured.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Targets the driver knows how to check answers from.
const (
	targetBaton = "baton"
	targetN8n   = "n8n"
)

type config struct {
	url      string
	target   string
	token    string
	clients  int
	duration time.Duration
	// requests, if set, stops each client after this many events instead
	// of after duration.
	requests int
	// warmup is how long events flow, unmeasured, before duration starts:
	// both systems answer their first requests slower (n8n's JavaScript
	// is compiled as it first runs).
	warmup time.Duration
	prefix string
	// hook receives the webhooks the sessions are started with; empty
	// starts a sink on loopback that answers them all.
	hook    string
	timeout time.Duration
}

func main() {
	var c config
	var asJSON bool
	flag.StringVar(&c.url, "url", "http://127.0.0.1:8080", "base URL: the paths /sim/session/start and /sim/session/event are added (n8n: http://127.0.0.1:5678/webhook)")
	flag.StringVar(&c.target, "target", targetBaton, "what answers: baton or n8n")
	flag.StringVar(&c.token, "token", os.Getenv("BATON_TOKEN"), "bearer token for baton (default $BATON_TOKEN; none with --dev)")
	flag.IntVar(&c.clients, "clients", 32, "concurrent clients, one session each")
	flag.DurationVar(&c.duration, "duration", 30*time.Second, "how long events flow once every session has started")
	flag.DurationVar(&c.warmup, "warmup", 3*time.Second, "how long events flow, unmeasured, before -duration starts")
	flag.IntVar(&c.requests, "requests", 0, "events per client, instead of -duration (0: use -duration)")
	flag.StringVar(&c.prefix, "prefix", "bench"+strconv.FormatInt(time.Now().Unix(), 36), "session id prefix (ids must be new to the server)")
	flag.StringVar(&c.hook, "hook", "", "frontend webhook base URL the sessions name (default: a sink this command starts on loopback)")
	flag.DurationVar(&c.timeout, "timeout", 30*time.Second, "bound on one request")
	flag.BoolVar(&asJSON, "json", false, "print the result as one JSON object")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := run(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(res)
	} else {
		res.print(os.Stdout)
	}
	if res.Errors > 0 {
		os.Exit(1)
	}
}

func (c *config) check() error {
	switch {
	case c.target != targetBaton && c.target != targetN8n:
		return fmt.Errorf("-target must be %s or %s, not %q", targetBaton, targetN8n, c.target)
	case c.clients < 1:
		return errors.New("-clients must be at least 1")
	case c.requests < 0:
		return errors.New("-requests must not be negative")
	case c.requests == 0 && c.duration <= 0:
		return errors.New("-duration must be positive")
	// A DayOne session ends at T+10:00; events after it are refused.
	case c.requests == 0 && c.duration > 9*time.Minute:
		return errors.New("-duration must be at most 9m: a DayOne session ends ten minutes after it starts")
	case c.warmup < 0:
		return errors.New("-warmup must not be negative")
	case c.timeout <= 0:
		return errors.New("-timeout must be positive")
	}
	u := strings.TrimSuffix(c.url, "/")
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return fmt.Errorf("-url %q must be an http or https URL", c.url)
	}
	c.url = u
	return nil
}

// Result is what one run measured, after the warm-up. Latencies are in
// milliseconds, of the events answered successfully while the clock ran.
type Result struct {
	Target   string  `json:"target"`
	URL      string  `json:"url"`
	Clients  int     `json:"clients"`
	Seconds  float64 `json:"seconds"`
	Requests int64   `json:"requests"`
	OK       int64   `json:"ok"`
	Errors   int64   `json:"errors"`
	// ErrorKinds counts failures by the error code the server gave, or
	// "http_NNN" or "transport" when there was none.
	ErrorKinds map[string]int64 `json:"error_kinds,omitempty"`
	PerSecond  float64          `json:"requests_per_second"`
	P50        float64          `json:"p50_ms"`
	P99        float64          `json:"p99_ms"`
	Max        float64          `json:"max_ms"`
	// StateMismatches counts answers whose session state disagreed with
	// what the client had sent: an n8n session whose event count missed
	// one of its earlier events (another execution's save overwrote it),
	// or a baton ack not later in its session's log than the one before.
	StateMismatches int64 `json:"state_mismatches"`
	// Warmup counts the events answered successfully during the warm-up.
	Warmup int64 `json:"warmup_events"`
	// Hooks counts webhook POSTs the driver's own sink received.
	Hooks int64 `json:"webhooks_received"`
}

func (r *Result) print(w io.Writer) {
	fmt.Fprintf(w, "%s %s, %d clients, %.1f s\n", r.Target, r.URL, r.Clients, r.Seconds)
	fmt.Fprintf(w, "  %d events, %d ok, %d errors: %.0f requests/s\n", r.Requests, r.OK, r.Errors, r.PerSecond)
	fmt.Fprintf(w, "  latency p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", r.P50, r.P99, r.Max)
	if len(r.ErrorKinds) > 0 {
		kinds := make([]string, 0, len(r.ErrorKinds))
		for k := range r.ErrorKinds {
			kinds = append(kinds, k)
		}
		slices.Sort(kinds)
		for _, k := range kinds {
			fmt.Fprintf(w, "  error %s: %d\n", k, r.ErrorKinds[k])
		}
	}
	fmt.Fprintf(w, "  state mismatches %d, webhooks received %d, %d events in the warm-up\n", r.StateMismatches, r.Hooks, r.Warmup)
}

// mix is one DayOne candidate turn after another, as the frontend reports
// it (scenarios/dayone/candidate.jsonl): speech start and stop, typing, and
// messages spoken (one too unclear to use), typed, and addressed to a
// panelist.
var mix = []eventBody{
	{Type: "mic_state_changed", Data: &eventData{MicActive: ptr(true)}},
	{Type: "mic_state_changed", Data: &eventData{MicActive: ptr(false)}},
	{Type: "speech_end"},
	{Type: "candidate_message", Data: &eventData{Source: "voice", Text: "I'd replay the failed payment with retries on and check the gateway logs for two captures.", STT: ptr(0.93)}},
	{Type: "typing_state_changed", Data: &eventData{Typing: ptr(true)}},
	{Type: "typing_state_changed", Data: &eventData{Typing: ptr(false)}},
	{Type: "candidate_message", Data: &eventData{Source: "text", Text: "@techlead first I'd switch off automatic retries behind the flag so nobody else gets charged twice.", AddressedTo: "tech_lead"}},
	{Type: "mic_state_changed", Data: &eventData{MicActive: ptr(true)}},
	{Type: "mic_state_changed", Data: &eventData{MicActive: ptr(false)}},
	{Type: "speech_end"},
	{Type: "candidate_message", Data: &eventData{Source: "voice", Text: "mumble the flag thing", STT: ptr(0.52)}},
	{Type: "mic_state_changed", Data: &eventData{MicActive: ptr(true)}},
	{Type: "mic_state_changed", Data: &eventData{MicActive: ptr(false)}},
	{Type: "speech_end"},
	{Type: "candidate_message", Data: &eventData{Source: "voice", Text: "The VIP launch deadline matters, but customers charged twice is the bigger business impact.", STT: ptr(0.91)}},
}

func ptr[T any](v T) *T { return &v }

// eventBody is the §5.2 body.
type eventBody struct {
	SessionID string     `json:"session_id"`
	Type      string     `json:"event_type"`
	TsSec     float64    `json:"ts_sec"`
	Data      *eventData `json:"data,omitempty"`
}

type eventData struct {
	Source      string   `json:"source,omitempty"`
	Text        string   `json:"text,omitempty"`
	STT         *float64 `json:"stt_confidence,omitempty"`
	AddressedTo string   `json:"addressed_to,omitempty"`
	MicActive   *bool    `json:"mic_active,omitempty"`
	Typing      *bool    `json:"typing,omitempty"`
}

// startBody is the §5.1 body.
type startBody struct {
	SessionID    string `json:"session_id"`
	CandidateID  string `json:"candidate_id"`
	StartedAt    string `json:"started_at"`
	ScenarioID   string `json:"scenario_id"`
	AgentWebhook string `json:"frontend_agent_webhook"`
	EndWebhook   string `json:"end_callback_webhook"`
}

// answer is what the driver reads of any answer: baton's ack
// (input_seq) or the n8n workflow's decision (events, the session's
// event count), and either's error.
type answer struct {
	OK       bool   `json:"ok"`
	InputSeq uint64 `json:"input_seq"`
	// SessionSecret, from baton's start, goes with every event.
	SessionSecret string `json:"session_secret"`
	Events        int64  `json:"events"`
	Error         *struct {
		Code string `json:"code"`
	} `json:"error"`
}

// client is one simulated frontend with its session.
type client struct {
	c       *config
	http    *http.Client
	id      string
	secret  string // the session's, from baton's start answer
	started time.Time
	next    int // index into mix
	sent    int64
	lastSeq uint64
	warm    int64 // events answered during the warm-up
	// measured
	lat        []time.Duration
	kinds      map[string]int64
	mismatches int64
}

// post sends one JSON body and decodes the answer. kind is empty on
// success, else why it failed.
func (cl *client) post(ctx context.Context, path string, body any) (answer, string) {
	var a answer
	data, err := json.Marshal(body)
	if err != nil {
		return a, "internal"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cl.c.url+path, bytes.NewReader(data))
	if err != nil {
		return a, "internal"
	}
	req.Header.Set("Content-Type", "application/json")
	if cl.c.token != "" && cl.c.target == targetBaton {
		req.Header.Set("Authorization", "Bearer "+cl.c.token)
	}
	if cl.secret != "" {
		req.Header.Set("Baton-Session-Secret", cl.secret)
	}
	resp, err := cl.http.Do(req)
	if err != nil {
		return a, "transport"
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return a, "transport"
	}
	derr := json.Unmarshal(raw, &a)
	switch {
	case a.Error != nil && a.Error.Code != "":
		return a, a.Error.Code
	case resp.StatusCode != http.StatusOK:
		return a, fmt.Sprintf("http_%d", resp.StatusCode)
	case derr != nil:
		return a, "bad_answer"
	case !a.OK:
		return a, "not_ok"
	}
	return a, ""
}

func (cl *client) start(ctx context.Context, hook string) error {
	b := startBody{
		SessionID: cl.id, CandidateID: "cand_" + cl.id, StartedAt: time.Now().UTC().Format(time.RFC3339),
		ScenarioID:   "payment_double_charge_vip_discount_v1",
		AgentWebhook: hook + "/sim/session/agent-message", EndWebhook: hook + "/sim/session/end",
	}
	cl.started = time.Now()
	a, kind := cl.post(ctx, "/sim/session/start", b)
	if kind != "" {
		return fmt.Errorf("starting session %s at %s/sim/session/start: %s", cl.id, cl.c.url, kind)
	}
	cl.secret = a.SessionSecret
	return nil
}

// event posts the next event of the mix and, if it was sent from
// onwards, records how it went.
func (cl *client) event(ctx context.Context, from time.Time) {
	ev := mix[cl.next%len(mix)]
	cl.next++
	ev.SessionID = cl.id
	// Session time, in whole milliseconds: never backwards, never ahead
	// of the server's own clock for the session.
	ev.TsSec = float64(time.Since(cl.started).Milliseconds()) / 1000
	t0 := time.Now()
	a, kind := cl.post(ctx, "/sim/session/event", ev)
	d := time.Since(t0)
	measured := !t0.Before(from)
	if kind != "" {
		if measured && ctx.Err() == nil {
			cl.kinds[kind]++
		}
		return
	}
	cl.sent++
	if measured {
		cl.lat = append(cl.lat, d)
	} else {
		cl.warm++
	}
	switch cl.c.target {
	case targetN8n:
		if a.Events != cl.sent {
			cl.mismatches++
			cl.sent = a.Events // count on from what the session holds
		}
	case targetBaton:
		if a.InputSeq <= cl.lastSeq {
			cl.mismatches++
		}
		cl.lastSeq = a.InputSeq
	}
}

// hookSink answers every webhook, as a frontend would, and counts them.
type hookSink struct {
	mu sync.Mutex
	n  int64
}

func (h *hookSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	h.mu.Lock()
	h.n++
	h.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (h *hookSink) count() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

func run(ctx context.Context, c config) (*Result, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	sink := &hookSink{}
	hook := strings.TrimSuffix(c.hook, "/")
	if hook == "" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("webhook sink: %w", err)
		}
		hs := &http.Server{Handler: sink, ReadHeaderTimeout: 10 * time.Second}
		go hs.Serve(ln)
		defer hs.Close()
		hook = "http://" + ln.Addr().String()
	}
	// One keep-alive connection per client, as a frontend server would
	// hold to its backend.
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxIdleConns:        c.clients,
		MaxIdleConnsPerHost: c.clients,
		IdleConnTimeout:     90 * time.Second,
	}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: c.timeout}
	clients := make([]*client, c.clients)
	for i := range clients {
		clients[i] = &client{c: &c, http: hc, id: fmt.Sprintf("%s-%03d", c.prefix, i), kinds: map[string]int64{}}
	}
	// Sessions start one after another, before the clock starts: starting
	// is not what is measured.
	for _, cl := range clients {
		if err := cl.start(ctx, hook); err != nil {
			return nil, err
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	begin := time.Now()
	if c.requests == 0 {
		begin = begin.Add(c.warmup)
		runCtx, cancel = context.WithDeadline(ctx, begin.Add(c.duration))
		defer cancel()
	}
	var wg sync.WaitGroup
	for _, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; runCtx.Err() == nil && (c.requests == 0 || n < c.requests); n++ {
				cl.event(runCtx, begin)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(begin)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	res := &Result{Target: c.target, URL: c.url, Clients: c.clients, Seconds: elapsed.Seconds(), ErrorKinds: map[string]int64{}}
	var lat []time.Duration
	for _, cl := range clients {
		lat = append(lat, cl.lat...)
		for k, n := range cl.kinds {
			res.ErrorKinds[k] += n
			res.Errors += n
		}
		res.StateMismatches += cl.mismatches
		res.Warmup += cl.warm
	}
	res.OK = int64(len(lat))
	res.Requests = res.OK + res.Errors
	res.PerSecond = float64(res.OK) / elapsed.Seconds()
	if len(lat) > 0 {
		slices.Sort(lat)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		res.P50 = ms(lat[len(lat)/2])
		res.P99 = ms(lat[min(len(lat)-1, len(lat)*99/100)])
		res.Max = ms(lat[len(lat)-1])
	}
	res.Hooks = sink.count()
	return res, nil
}
