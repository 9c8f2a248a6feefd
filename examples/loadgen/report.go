package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// summary is a run's result, as text or (-json) as JSON for tables like
// BENCHMARKS.md's. Times are milliseconds; rates are a second.
type summary struct {
	URL  string `json:"url"`
	Pack string `json:"pack"`
	// Arrival is poisson or ramp; Events model or fixed.
	Arrival         string  `json:"arrival"`
	Events          string  `json:"events"`
	Seed            uint64  `json:"seed"`
	ArrivalRate     float64 `json:"arrival_rate,omitempty"`
	SessionsPlanned int     `json:"sessions_planned,omitempty"`
	Concurrent      int     `json:"concurrent,omitempty"`
	Rate            float64 `json:"rate_per_session,omitempty"`
	// WindowS is how long events were measured: from the first arrival
	// (a ramp: from when every session was up) to the last event sent.
	WindowS float64 `json:"window_s"`
	// DrainS is how long after the last event answers were waited for:
	// until every one had come, or for the generator's bound.
	DrainS float64 `json:"drain_s"`

	Arrivals arrivals `json:"arrivals"`
	// Nodes counts, when there is more than one, the sessions each node
	// took first (every node of -url, and any a node sent sessions to);
	// urls is -url's list, the order they are shown in.
	Nodes map[string]int64 `json:"nodes,omitempty"`
	urls  []string
	Moved moved `json:"moved"`
	Live  live  `json:"live_sessions"`

	EventsSent   int64                 `json:"events_sent"`
	EventsPerS   float64               `json:"events_per_s"`
	Unanswered   int64                 `json:"unanswered"`
	Ack          latency               `json:"ack"`
	FirstEffect  latency               `json:"first_effect"`
	NoEffect     int                   `json:"acked_without_effect"`
	ByType       map[string]*typeCount `json:"by_type"`
	Errors       map[string]int        `json:"errors"`
	ErrorsTotal  int                   `json:"errors_total"`
	SessionsLost int64                 `json:"sessions_failed"`

	Server *server `json:"server,omitempty"`
}

type arrivals struct {
	Attempted int64 `json:"attempted"`
	Started   int64 `json:"started"`
	Failed    int64 `json:"failed_to_start"`
	// SpanS is the time from the first arrival to the last; RatePerS the
	// rate achieved over it.
	SpanS    float64 `json:"span_s"`
	RatePerS float64 `json:"rate_per_s"`
}

// moved counts the sessions a cluster node sent to another (a moved
// error, on start or resume or mid-session) and the moves followed.
type moved struct {
	Sessions int64 `json:"sessions"`
	Hops     int64 `json:"hops"`
}

type live struct {
	Peak int     `json:"peak"`
	Mean float64 `json:"mean"`
	// EndedByPack are sessions the pack ended (their natural length);
	// Lost those whose connection failed.
	EndedByPack int64 `json:"ended_by_pack"`
	Lost        int64 `json:"lost"`
}

type latency struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50_ms"`
	P90 float64 `json:"p90_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

// server is the server's side from /debug/stats after the run, per
// session the growth since before it divided by the sessions added.
type server struct {
	Sessions          int    `json:"sessions"`
	SessionsAdded     int    `json:"sessions_added"`
	ConnectedSessions int    `json:"connected_sessions,omitempty"`
	Connections       int    `json:"connections"`
	Goroutines        int    `json:"goroutines"`
	HeapBytes         uint64 `json:"heap_bytes"`
	HeapPerSession    int64  `json:"heap_per_session_bytes,omitempty"`
	StackBytes        uint64 `json:"stack_bytes,omitempty"`
	SysBytes          uint64 `json:"sys_bytes"`
	// RSSBytes is 0 when the server does not report its resident memory.
	RSSBytes               uint64 `json:"rss_bytes,omitempty"`
	RSSPerConnectedSession int64  `json:"rss_per_connected_session_bytes,omitempty"`
}

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func latencyOf(d []time.Duration) latency {
	slices.Sort(d)
	return latency{N: len(d), P50: ms(pct(d, .50)), P90: ms(pct(d, .90)), P99: ms(pct(d, .99)), Max: ms(pct(d, 1))}
}

func (r *runner) summarize(from, until time.Time, drained time.Duration, base, load serverStatsBody) *summary {
	c, st := r.c, r.st
	s := &summary{URL: c.url, Pack: r.pack.Name, Arrival: c.arrival, Events: c.events, Seed: c.seed,
		WindowS: until.Sub(from).Seconds(), DrainS: drained.Round(time.Millisecond).Seconds()}
	if c.arrival == arrivalPoisson {
		s.ArrivalRate, s.Concurrent = c.arrivalRate, c.concurrent
	}
	if c.concurrent == 0 {
		s.SessionsPlanned = c.sessions
	}
	if c.events == eventsFixed {
		s.Rate = c.rate
	}
	st.mu.Lock()
	s.Arrivals = arrivals{Attempted: st.arrivals.Load(), Started: st.started.Load(), Failed: st.startFailures.Load(),
		SpanS: st.lastOnes.Sub(st.firstArrival).Seconds()}
	if n := s.Arrivals.Attempted; n > 1 && s.Arrivals.SpanS > 0 {
		// n arrivals span n-1 gaps.
		s.Arrivals.RatePerS = float64(n-1) / s.Arrivals.SpanS
	}
	if len(c.urls) > 1 || len(st.nodes) > 1 {
		s.Nodes, s.urls = map[string]int64{}, c.urls
		for _, u := range c.urls {
			s.Nodes[u] = 0
		}
		maps.Copy(s.Nodes, st.nodes)
	}
	s.Ack, s.FirstEffect = latencyOf(st.ackLat), latencyOf(st.effectLat)
	s.ByType = maps.Clone(st.types)
	for _, tc := range st.types {
		s.NoEffect += tc.NoEffect
	}
	s.Errors = maps.Clone(st.errors)
	for _, n := range st.errors {
		s.ErrorsTotal += n
	}
	st.mu.Unlock()
	s.Moved = moved{Sessions: st.movedSessions.Load(), Hops: st.hops.Load()}
	s.Live.Peak, s.Live.Mean = r.live.stats()
	s.Live.EndedByPack, s.Live.Lost = st.endedByPack.Load(), st.lost.Load()
	s.SessionsLost = s.Arrivals.Failed + s.Live.Lost
	s.EventsSent, s.Unanswered = st.sent.Load(), st.unanswered.Load()
	if s.WindowS > 0 {
		s.EventsPerS = float64(s.EventsSent) / s.WindowS
	}
	if load.ok {
		sv := &server{Sessions: load.Sessions, SessionsAdded: load.Sessions - base.Sessions, ConnectedSessions: load.ConnectedSessions,
			Connections: load.Connections, Goroutines: load.Goroutines, HeapBytes: load.HeapAlloc, StackBytes: load.StackInuse,
			SysBytes: load.Sys, RSSBytes: load.RSS}
		if sv.SessionsAdded > 0 {
			sv.HeapPerSession = (int64(load.HeapAlloc) - int64(base.HeapAlloc)) / int64(sv.SessionsAdded)
		}
		// A server that counts connected sessions says how many of the
		// added sessions hold a connection; one that does not is taken
		// to have every added session connected, as during the run.
		added := sv.SessionsAdded
		if load.ConnectedSessions > 0 || base.ConnectedSessions > 0 {
			added = load.ConnectedSessions - base.ConnectedSessions
		}
		if load.RSS > 0 && base.RSS > 0 && added > 0 {
			sv.RSSPerConnectedSession = (int64(load.RSS) - int64(base.RSS)) / int64(added)
		}
		s.Server = sv
	}
	return s
}

// nodeList is "url: sessions" for each node, those of -url first in
// its order, then any other a node sent sessions to.
func (s *summary) nodeList() string {
	order := slices.Clone(s.urls)
	for _, u := range slices.Sorted(maps.Keys(s.Nodes)) {
		if !slices.Contains(s.urls, u) {
			order = append(order, u)
		}
	}
	parts := make([]string, len(order))
	for i, u := range order {
		parts[i] = fmt.Sprintf("%s: %d", u, s.Nodes[u])
	}
	return strings.Join(parts, ", ")
}

func (s *summary) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

func round(v float64) time.Duration {
	return time.Duration(v * float64(time.Millisecond)).Round(time.Microsecond)
}

// shrank stands for a per-session figure that came out negative: the
// memory the server freed meanwhile (sessions of an earlier run ending,
// caches let go) outweighed what this run's sessions hold, so the run is
// too small to say what one costs.
const shrank = " (per session: not measurable, the server freed more meanwhile than the added sessions hold)"

func (s *summary) writeText(w io.Writer) error {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	a := s.Arrivals
	planned := ""
	if s.SessionsPlanned > 0 {
		planned = fmt.Sprintf(" of %d", s.SessionsPlanned)
	}
	p("arrivals           %d%s (%d started, %d failed to start) over %.1f s: %.1f/s achieved\n",
		a.Attempted, planned, a.Started, a.Failed, a.SpanS, a.RatePerS)
	if len(s.Nodes) > 0 {
		p("%-18s %s\n", "nodes", s.nodeList())
	}
	if s.Moved.Sessions > 0 {
		p("%-18s %d sessions redirected (%d hops)\n", "moved", s.Moved.Sessions, s.Moved.Hops)
	}
	p("live sessions      peak %d, mean %.0f over %.1f s; %d ended by the pack, %d lost\n",
		s.Live.Peak, s.Live.Mean, s.WindowS, s.Live.EndedByPack, s.Live.Lost)
	p("events sent        %d in %.1f s (%.1f/s), %d unanswered %g s after the last\n",
		s.EventsSent, s.WindowS, s.EventsPerS, s.Unanswered, s.DrainS)
	for _, l := range []struct {
		name string
		l    latency
	}{{"event -> ack", s.Ack}, {"event -> 1st effect", s.FirstEffect}} {
		p("%-18s n=%d p50=%s p90=%s p99=%s max=%s\n", l.name, l.l.N, round(l.l.P50), round(l.l.P90), round(l.l.P99), round(l.l.Max))
	}
	p("acked, no effect   %d (not in the first-effect figures)\n", s.NoEffect)
	for _, t := range slices.Sorted(maps.Keys(s.ByType)) {
		tc := s.ByType[t]
		p("  %-22s sent %d, acked %d, with an effect %d, without %d", t, tc.Sent, tc.Acked, tc.WithEffect, tc.NoEffect)
		if tc.Refused > 0 {
			p(", refused %d", tc.Refused)
		}
		if tc.AfterEnd > 0 {
			p(", %d arrived after the session ended", tc.AfterEnd)
		}
		p("\n")
	}
	if sv := s.Server; sv != nil {
		per := ""
		switch {
		case sv.SessionsAdded > 0 && sv.HeapPerSession < 0:
			per = shrank
		case sv.SessionsAdded > 0:
			per = fmt.Sprintf(" (%+.1f KiB per added session incl. its connection)", float64(sv.HeapPerSession)/1024)
		}
		p("server             %d sessions (%+d), %d connections, %d goroutines, heap %.1f MiB%s, sys %.1f MiB\n",
			sv.Sessions, sv.SessionsAdded, sv.Connections, sv.Goroutines, float64(sv.HeapBytes)/(1<<20), per, float64(sv.SysBytes)/(1<<20))
		switch {
		case sv.RSSBytes == 0:
			p("server RSS         not reported by this server's /debug/stats\n")
		case sv.RSSPerConnectedSession < 0:
			p("server RSS         %.1f MiB%s\n", float64(sv.RSSBytes)/(1<<20), shrank)
		case sv.RSSPerConnectedSession != 0:
			p("server RSS         %.1f MiB (%+.1f KiB per connected session added)\n", float64(sv.RSSBytes)/(1<<20), float64(sv.RSSPerConnectedSession)/1024)
		default:
			p("server RSS         %.1f MiB\n", float64(sv.RSSBytes)/(1<<20))
		}
	}
	p("sessions failed    %d\n", s.SessionsLost)
	p("errors             %d\n", s.ErrorsTotal)
	for _, k := range slices.Sorted(maps.Keys(s.Errors)) {
		p("  %6d  %s\n", s.Errors[k], k)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
