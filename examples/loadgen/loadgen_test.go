package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/service"
	"github.com/batonhq/baton/scenarios"
)

// The arrival process is Poisson: exponential gaps whose mean is
// 1/rate and whose standard deviation equals their mean (evenly spaced
// arrivals would have the right mean and none of the spread), the same
// for the same seed.
func TestPoissonGaps(t *testing.T) {
	const n = 200000
	for _, tc := range []struct {
		rate float64
		seed uint64
	}{{50, 1}, {200, 7}, {0.5, 42}} {
		t.Run("", func(t *testing.T) {
			g := newPoisson(tc.rate, tc.seed)
			var sum, sumSq float64
			first := make([]time.Duration, 100)
			for i := range n {
				d := g.gap()
				if i < len(first) {
					first[i] = d
				}
				if d < 0 {
					t.Fatalf("gap %d is negative: %s", i, d)
				}
				s := d.Seconds()
				sum += s
				sumSq += s * s
			}
			mean := sum / n
			sd := math.Sqrt(sumSq/n - mean*mean)
			want := 1 / tc.rate
			// The mean of n exponential draws has a relative standard
			// error of 1/sqrt(n), 0.22 %: 1 % is over four of them.
			if math.Abs(mean-want)/want > 0.01 {
				t.Errorf("rate %g: mean gap %.6fs, want %.6fs", tc.rate, mean, want)
			}
			if cv := sd / mean; math.Abs(cv-1) > 0.02 {
				t.Errorf("rate %g: gaps' sd/mean = %.3f, want 1 (exponential)", tc.rate, cv)
			}
			again := newPoisson(tc.rate, tc.seed)
			other := newPoisson(tc.rate, tc.seed+1)
			differs := false
			for i, d := range first {
				if a := again.gap(); a != d {
					t.Fatalf("seed %d played twice: gap %d is %s, then %s", tc.seed, i, d, a)
				}
				differs = differs || other.gap() != d
			}
			if !differs {
				t.Errorf("seeds %d and %d make the same arrivals", tc.seed, tc.seed+1)
			}
		})
	}
}

// The concurrency gauge weighs each level by how long it was held,
// inside the window only.
func TestGauge(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	for _, tc := range []struct {
		name     string
		steps    []float64 // at whole seconds: +1 or -1 at steps[i]'s sign, |value| the time
		open     float64
		close    float64
		wantPeak int
		wantMean float64
	}{
		{"levels held for different times", []float64{1, 2, -4}, 0, 5, 2, (1*1 + 2*2 + 1*1) / 5.0},
		{"what came before the window is not measured", []float64{1, 2, 3, -4, -4.5}, 3, 5, 3, (3*1 + 2*0.5 + 1*0.5) / 2.0},
		{"what comes after it neither", []float64{1, -2, 3, 4}, 0, 2, 1, 1 / 2.0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g gauge
			opened, closed := false, false
			for _, s := range tc.steps {
				when := math.Abs(s)
				if !opened && when >= tc.open {
					g.open(at(tc.open))
					opened = true
				}
				if !closed && when > tc.close {
					g.close(at(tc.close))
					closed = true
				}
				d := 1
				if s < 0 {
					d = -1
				}
				g.add(d, at(when))
			}
			if !opened {
				g.open(at(tc.open))
			}
			if !closed {
				g.close(at(tc.close))
			}
			peak, mean := g.stats()
			if peak != tc.wantPeak || math.Abs(mean-tc.wantMean) > 1e-9 {
				t.Fatalf("peak %d, mean %.4f; want %d, %.4f", peak, mean, tc.wantPeak, tc.wantMean)
			}
		})
	}
}

// An event's first effect is the next effect after its ack at the ack's
// own tick; an event followed by another ack, or by an effect at another
// tick (a later step's), caused none and is left out of the latencies.
func TestFirstEffectAttribution(t *testing.T) {
	type step struct {
		send  string // send an event with this id (its type is "typ_"+id)
		ack   string // ack this id at t
		t     int64
		eff   bool // an effect at t
		close bool // the connection ends
	}
	for _, tc := range []struct {
		name      string
		steps     []step
		with, not []string // event types with an effect, without
	}{
		{"effect at the ack's tick", []step{{send: "a"}, {ack: "a", t: 2027}, {eff: true, t: 2000}}, []string{"typ_a"}, nil},
		{"only the first effect counts", []step{{send: "a"}, {ack: "a", t: 2000}, {eff: true, t: 2000}, {eff: true, t: 2000}}, []string{"typ_a"}, nil},
		{"a later step's effect is not the event's", []step{{send: "a"}, {ack: "a", t: 2027}, {eff: true, t: 2100}}, nil, []string{"typ_a"}},
		{"the next ack ends the wait", []step{{send: "a"}, {send: "b"}, {ack: "a", t: 2000}, {ack: "b", t: 2050}, {eff: true, t: 2000}},
			[]string{"typ_b"}, []string{"typ_a"}},
		{"an effect before the ack is a timer's", []step{{send: "a"}, {eff: true, t: 2000}, {ack: "a", t: 2000}, {close: true}}, nil, []string{"typ_a"}},
		{"the connection ends before any effect", []step{{send: "a"}, {ack: "a", t: 2000}, {close: true}}, nil, []string{"typ_a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &runner{st: newStats(), tickMS: 100}
			c := &client{r: r, pending: map[string]sent{}}
			for _, s := range tc.steps {
				switch {
				case s.send != "":
					c.pending[s.send] = sent{at: time.Now(), typ: "typ_" + s.send}
				case s.ack != "":
					tm := s.t
					c.acked(frame{Type: "ack", ID: s.ack, T: &tm}, time.Now())
				case s.eff:
					c.effect(&wireEffect{Effect: engine.Effect{T: s.t, Type: engine.EffectRouted}}, time.Now())
				case s.close:
					c.settle()
				}
			}
			check := func(what string, types []string, count func(*typeCount) int) {
				for _, typ := range []string{"typ_a", "typ_b"} {
					want := 0
					for _, w := range types {
						if w == typ {
							want = 1
						}
					}
					got := 0
					if tc := r.st.types[typ]; tc != nil {
						got = count(tc)
					}
					if got != want {
						t.Errorf("%s %s: %d, want %d", typ, what, got, want)
					}
				}
			}
			check("with an effect", tc.with, func(tc *typeCount) int { return tc.WithEffect })
			check("without", tc.not, func(tc *typeCount) int { return tc.NoEffect })
			if len(r.st.effectLat) != len(tc.with) {
				t.Errorf("%d first-effect latencies, want %d", len(r.st.effectLat), len(tc.with))
			}
		})
	}
}

// A connection the server drops is a lost session, and the event it
// acked last counts as one that caused no effect rather than waiting for
// one for ever.
func TestLostConnection(t *testing.T) {
	up := websocket.Upgrader{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		// The start, then the first event: each acked, then the
		// connection cut without a close frame.
		for _, ack := range []string{`{"type":"ack","id":"start","t_ms":0}`, `{"type":"ack","id":"e1","t_ms":150}`} {
			if _, _, err := ws.ReadMessage(); err != nil {
				return
			}
			if ws.WriteMessage(websocket.TextMessage, []byte(ack)) != nil {
				return
			}
		}
	}))
	defer ts.Close()
	c, err := parseFlags([]string{"-url", "ws" + strings.TrimPrefix(ts.URL, "http"), "-rate", "1000"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{c: c, st: newStats(), tickMS: 100, stopped: make(chan struct{}), finish: make(chan struct{})}
	r.session(context.Background(), 0)
	first := r.st.types[fixedScript[0].Type]
	if first == nil || first.Acked != 1 || first.NoEffect != 1 {
		t.Errorf("the acked event: %+v, want acked once and counted without an effect", first)
	}
	if r.st.lost.Load() != 1 {
		t.Errorf("%d sessions lost, want 1", r.st.lost.Load())
	}
	readErrors := 0
	for k, n := range r.st.errors {
		if strings.HasPrefix(k, "read: ") {
			readErrors += n
		}
	}
	if readErrors != 1 {
		t.Errorf("errors %v, want one read error", r.st.errors)
	}
}

// Once the run stops sending, no event is sent, and the drain waits for
// the answers still due (here a day's bound) only until they have come.
func TestDrain(t *testing.T) {
	r := &runner{c: config{drain: 24 * time.Hour}, st: newStats(), tickMS: 100}
	c := &client{r: r, pending: map[string]sent{}, answered: make(chan struct{}, 1)}
	if !r.st.open() {
		t.Fatal("the run refused an event before it stopped")
	}
	c.pending["e1"] = sent{at: time.Now(), typ: "typ_e1"}
	r.st.close()
	if err := c.send(fixedScript[0]); !errors.Is(err, errStopped) {
		t.Fatalf("a send after the stop: %v, want errStopped", err)
	}
	if n := r.st.outstanding.Load(); n != 1 || len(c.pending) != 1 {
		t.Fatalf("%d outstanding, %d pending after a send refused; want 1 and 1", n, len(c.pending))
	}
	done := make(chan struct{})
	go func() {
		r.drain(context.Background())
		close(done)
	}()
	t0 := int64(0)
	c.acked(frame{Type: "ack", ID: "e1", T: &t0}, time.Now())
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the drain went on after every event was answered")
	}
}

// An end frame refused because the pack ended the session as the run
// ended it is no error: the session is over either way. Any other
// refusal of it is.
func TestEndCrossesPackEnd(t *testing.T) {
	for _, tc := range []struct {
		code string
		errs int
	}{{"session_ended", 0}, {"storage", 1}} {
		t.Run(tc.code, func(t *testing.T) {
			r := &runner{st: newStats()}
			c := &client{r: r, pending: map[string]sent{}, answered: make(chan struct{}, 1)}
			c.refused(frame{Type: "error", ID: "end", Code: tc.code})
			if n := len(r.st.errors); n != tc.errs {
				t.Fatalf("errors %v, want %d", r.st.errors, tc.errs)
			}
		})
	}
}

// A flag that does not apply to the mode chosen is refused, so no
// command line reads as a load it did not make.
func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{nil, ""},
		{[]string{"-sessions", "1000", "-duration", "30s", "-rate", "0.5"}, ""},
		{[]string{"-arrival", "poisson", "-arrival-rate", "200", "-sessions", "10000", "-events", "model", "-duration", "120s"}, ""},
		{[]string{"-arrival", "poisson", "-concurrent", "1000", "-events", "model"}, ""},
		{[]string{"-arrival", "poisson", "-concurrent", "10", "-sessions", "10"}, "not both"},
		{[]string{"-arrival", "poisson", "-ramp", "10"}, "-ramp applies to -arrival ramp only"},
		{[]string{"-arrival-rate", "10"}, "-arrival-rate applies to -arrival poisson only"},
		{[]string{"-concurrent", "10"}, "-concurrent applies to -arrival poisson only"},
		{[]string{"-events", "model", "-rate", "2"}, "-rate applies to -events fixed only"},
		{[]string{"-arrival", "burst"}, `-arrival "burst": poisson or ramp`},
		{[]string{"-events", "canned"}, `-events "canned": model or fixed`},
		{[]string{"-arrival", "poisson", "-arrival-rate", "0"}, "-arrival-rate must be above 0"},
		{[]string{"-sessions", "0"}, "-sessions must be above 0"},
		{[]string{"-duration", "0s"}, "-duration must be above 0"},
		{[]string{"stray"}, `unexpected argument "stray"`},
		{[]string{"-every", "5s"}, ""},
		{[]string{"-every", "-1s"}, "-every must not be negative"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := parseFlags(tc.args, io.Discard)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}

// startServer runs a dev-mode baton server on the real clock, with the
// simulated model and a fresh data directory, over loopback.
func startServer(t *testing.T) (*service.Server, string) {
	t.Helper()
	srv, err := service.New(service.Config{DataDir: t.TempDir(), Dev: true, Packs: scenarios.FS,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		ts.Close()
	})
	return srv, "ws" + strings.TrimPrefix(ts.URL, "http") + "/ws"
}

// lockedWriter is a progress writer a test may read while the run
// writes to it.
type lockedWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// intervalLines counts the -every lines in progress, and those of them
// with answers.
func intervalLines(progress string) (lines, answered int) {
	for l := range strings.Lines(progress) {
		var at float64
		var live, acks int
		if _, err := fmt.Sscanf(l, "# %fs live %d acks %d", &at, &live, &acks); err == nil {
			lines++
			if acks > 0 {
				answered++
			}
		}
	}
	return lines, answered
}

// runBound is the -duration of the runs against a server: each ends
// once what it checks has happened (config.until), and the bound only
// catches a run where it never does.
const runBound = "2m"

// Whole runs against a real server over loopback, on the real clock:
// each lasts until what it checks has happened, a few seconds on an idle
// machine, and however long a busy one takes.
func TestRunAgainstServer(t *testing.T) {
	brisk, err := filepath.Abs(filepath.Join("testdata", "brisk"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		until func(st *stats, progress string) bool
		check func(t *testing.T, s *summary)
	}{
		{
			name: "poisson arrivals of the candidate model, sessions the pack ends",
			args: []string{"-pack", brisk, "-arrival", "poisson", "-arrival-rate", "50", "-sessions", "20", "-events", "model"},
			until: func(st *stats, _ string) bool {
				return st.endedByPack.Load()+st.lost.Load()+st.startFailures.Load() == 20
			},
			check: func(t *testing.T, s *summary) {
				if s.Arrivals.Started != 20 {
					t.Errorf("%d of 20 sessions started", s.Arrivals.Started)
				}
				if s.Live.EndedByPack != 20 {
					t.Errorf("%d of 20 two-second sessions ended by the pack", s.Live.EndedByPack)
				}
				msg := s.ByType[engine.EventMessage]
				if msg == nil || msg.WithEffect == 0 {
					t.Errorf("no candidate message caused an effect: %+v", msg)
				}
				if s.ByType[engine.EventMicState] == nil {
					t.Error("the model spoke no answer (no mic_state_changed)")
				}
			},
		},
		{
			name: "poisson arrivals keeping five sessions alive",
			args: []string{"-pack", brisk, "-arrival", "poisson", "-arrival-rate", "50", "-concurrent", "5", "-events", "model"},
			until: func(st *stats, _ string) bool {
				return st.started.Load() >= 10 && st.endedByPack.Load() >= 5 || st.lost.Load()+st.startFailures.Load() > 0
			},
			check: func(t *testing.T, s *summary) {
				if s.Live.Peak != 5 {
					t.Errorf("peak %d sessions alive, want 5", s.Live.Peak)
				}
				// Sessions replaced as they end: with five of the
				// two-second sessions ended, each slot was refilled
				// (on average) at least once.
				if s.Arrivals.Started < 10 || s.Live.EndedByPack < 5 {
					t.Errorf("%d sessions started, %d ended by the pack: the ended ones were not replaced", s.Arrivals.Started, s.Live.EndedByPack)
				}
			},
		},
		{
			name: "DayOne's candidate model: every session starts and runs",
			args: []string{"-pack", "dayone", "-arrival", "poisson", "-arrival-rate", "50", "-sessions", "20", "-events", "model"},
			until: func(st *stats, _ string) bool {
				return st.started.Load()+st.startFailures.Load() == 20
			},
			check: func(t *testing.T, s *summary) {
				if s.Arrivals.Started != 20 || s.Live.Peak != 20 {
					t.Errorf("%d of 20 sessions started, peak %d alive", s.Arrivals.Started, s.Live.Peak)
				}
				if s.Server == nil || s.Server.SessionsAdded != 20 {
					t.Errorf("server figures %+v, want 20 sessions added", s.Server)
				}
			},
		},
		{
			name: "the ramp of fixed events, as before",
			args: []string{"-pack", "dayone", "-sessions", "10", "-rate", "4", "-every", "500ms"},
			until: func(st *stats, progress string) bool {
				st.mu.Lock()
				effects := len(st.effectLat)
				st.mu.Unlock()
				lines, answered := intervalLines(progress)
				return effects > 0 && lines >= 3 && answered >= 2
			},
			check: func(t *testing.T, s *summary) {
				if s.Arrivals.Started != 10 || s.EventsSent == 0 {
					t.Errorf("%d of 10 sessions started, %d events sent", s.Arrivals.Started, s.EventsSent)
				}
				if s.FirstEffect.N == 0 {
					t.Error("no event's first effect was timed")
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, url := startServer(t)
			c, err := parseFlags(append(tc.args, "-url", url, "-prefix", "t", "-duration", runBound), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			c.drain = 30 * time.Second // a bound: the run waits only for answers still due
			progress := &lockedWriter{}
			c.until = func(st *stats) bool { return tc.until(st, progress.String()) }
			s, err := run(context.Background(), c, progress)
			if err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			if err := s.writeText(&text); err != nil {
				t.Fatal(err)
			}
			t.Logf("\n%s%s", progress.String(), text.String())
			if s.ErrorsTotal != 0 || s.SessionsLost != 0 {
				t.Errorf("%d errors %v, %d sessions failed", s.ErrorsTotal, s.Errors, s.SessionsLost)
			}
			if s.Arrivals.Attempted == 0 || s.Arrivals.Started != s.Arrivals.Attempted {
				t.Errorf("arrivals %+v", s.Arrivals)
			}
			// Every event is answered: acked, or refused because the
			// pack ended its session while it was on its way.
			afterEnd := 0
			for _, tc := range s.ByType {
				afterEnd += tc.AfterEnd
			}
			if s.Ack.N+afterEnd != int(s.EventsSent) || s.Unanswered != 0 {
				t.Errorf("%d events sent, %d acked, %d refused after the end, %d unanswered", s.EventsSent, s.Ack.N, afterEnd, s.Unanswered)
			}
			if c.arrival == arrivalPoisson {
				// Every acked event either caused an effect or did not;
				// only the first are timed.
				with := 0
				for typ, tc := range s.ByType {
					if tc.Acked != tc.WithEffect+tc.NoEffect {
						t.Errorf("%s: %d acked, %d with an effect, %d without", typ, tc.Acked, tc.WithEffect, tc.NoEffect)
					}
					with += tc.WithEffect
				}
				if with != s.FirstEffect.N {
					t.Errorf("%d events with an effect, %d first-effect latencies", with, s.FirstEffect.N)
				}
			}
			if c.every > 0 {
				// One line an interval, each with its answers: the run's
				// events arrive in them, not all in the last.
				if lines, answered := intervalLines(progress.String()); lines < 3 || answered < 2 {
					t.Errorf("%d interval lines, %d with answers, every %s", lines, answered, c.every)
				}
			}
			tc.check(t, s)
			// The run ends what it started: the server is not left
			// running sessions into the next run. The wait is a
			// failure deadline, not a timing assertion.
			for deadline := time.Now().Add(60 * time.Second); srv.Stats(false).Sessions > 0; {
				if time.Now().After(deadline) {
					t.Fatalf("%d sessions still running on the server after the run", srv.Stats(false).Sessions)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// The text summary says what the server's figures cannot tell rather
// than print a number that means nothing.
func TestServerLines(t *testing.T) {
	for _, tc := range []struct {
		name string
		sv   server
		want []string
	}{
		{"per session", server{Sessions: 10, SessionsAdded: 10, HeapPerSession: 20 << 10, RSSBytes: 50 << 20, RSSPerConnectedSession: 40 << 10},
			[]string{"+20.0 KiB per added session", "+40.0 KiB per connected session added"}},
		{"no RSS", server{Sessions: 10, SessionsAdded: 10, HeapPerSession: 20 << 10},
			[]string{"+20.0 KiB per added session", "RSS         not reported"}},
		{"memory freed meanwhile", server{Sessions: 10, SessionsAdded: 10, HeapPerSession: -1, RSSBytes: 50 << 20, RSSPerConnectedSession: -1},
			[]string{"heap 0.0 MiB (per session: not measurable", "50.0 MiB (per session: not measurable"}},
		{"no session added", server{RSSBytes: 50 << 20}, []string{"heap 0.0 MiB, sys", "server RSS         50.0 MiB\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sv := tc.sv
			var b strings.Builder
			if err := (&summary{Server: &sv}).writeText(&b); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("no %q in\n%s", w, b.String())
				}
			}
		})
	}
}
