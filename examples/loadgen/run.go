package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/packs"
	"github.com/batonhq/baton/scenarios"
)

// stats are what every session adds to, from its own goroutines.
type stats struct {
	mu        sync.Mutex
	ackLat    []time.Duration
	effectLat []time.Duration
	types     map[string]*typeCount
	errors    map[string]int

	sent                   atomic.Int64
	unanswered             atomic.Int64
	arrivals, started      atomic.Int64
	startFailures, lost    atomic.Int64
	endedByPack            atomic.Int64
	firstArrival, lastOnes time.Time // guarded by mu
	// outstanding counts the events sent and neither answered (acked or
	// refused) nor counted unanswered. Once the run has stopped (closed,
	// guarded by mu) no event is sent, so it only falls.
	outstanding atomic.Int64
	closed      bool
	// nodes counts the sessions each node took first (guarded by mu);
	// movedSessions those a node sent elsewhere, and hops every move
	// followed.
	nodes               map[string]int64
	movedSessions, hops atomic.Int64
	// since is when measuring began (guarded by mu): what happens to an
	// event sent before it (during a ramp) is not counted.
	since time.Time
	// takenAcks and takenEffects are how many latencies -every has
	// reported (guarded by mu).
	takenAcks, takenEffects int
}

// typeCount follows one event type from sending to its first effect.
type typeCount struct {
	Sent       int `json:"sent"`
	Acked      int `json:"acked"`
	WithEffect int `json:"with_effect"`
	NoEffect   int `json:"no_effect"`
	Refused    int `json:"refused,omitempty"`
	// AfterEnd were refused because the session ended while they were
	// on their way: not errors.
	AfterEnd int `json:"after_end,omitempty"`
}

func newStats() *stats {
	return &stats{types: map[string]*typeCount{}, errors: map[string]int{}, nodes: map[string]int64{}}
}

// startedOn counts a session that the node at url took first.
func (s *stats) startedOn(url string) {
	s.mu.Lock()
	s.nodes[url]++
	s.mu.Unlock()
}

func (s *stats) typ(t string) *typeCount {
	tc := s.types[t]
	if tc == nil {
		tc = &typeCount{}
		s.types[t] = tc
	}
	return tc
}

func (s *stats) err(kind string) {
	s.mu.Lock()
	s.errors[kind]++
	s.mu.Unlock()
}

func (s *stats) startFailed(kind string) {
	s.startFailures.Add(1)
	s.err(kind)
}

func (s *stats) arrived(now time.Time) {
	s.arrivals.Add(1)
	s.mu.Lock()
	if s.firstArrival.IsZero() {
		s.firstArrival = now
	}
	s.lastOnes = now
	s.mu.Unlock()
}

// open counts an event about to be sent as outstanding, and reports
// false, counting nothing, once the run has stopped sending.
func (s *stats) open() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.outstanding.Add(1)
	return true
}

// close stops the sending of events: from now on outstanding only falls.
func (s *stats) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

func (s *stats) sentEvent(t string) {
	s.sent.Add(1)
	s.mu.Lock()
	s.typ(t).Sent++
	s.mu.Unlock()
}

func (s *stats) ack(sent, now time.Time, t string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sent.Before(s.since) {
		return
	}
	s.ackLat = append(s.ackLat, now.Sub(sent))
	s.typ(t).Acked++
}

func (s *stats) firstEffect(sent, now time.Time, t string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sent.Before(s.since) {
		return
	}
	s.effectLat = append(s.effectLat, now.Sub(sent))
	s.typ(t).WithEffect++
}

func (s *stats) noEffect(sent time.Time, t string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sent.Before(s.since) {
		return
	}
	s.typ(t).NoEffect++
}

// refused counts an event the server refused; atEnd, one it refused
// because the session had ended meanwhile.
func (s *stats) refused(sent time.Time, t string, atEnd bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sent.Before(s.since) {
		return
	}
	if atEnd {
		s.typ(t).AfterEnd++
	} else {
		s.typ(t).Refused++
	}
}

// reset forgets the events measured so far, and the answers still to
// come to events sent before now: a ramp measures only once every
// session is up.
func (s *stats) reset(now time.Time) {
	s.mu.Lock()
	s.since = now
	s.ackLat, s.effectLat = s.ackLat[:0], s.effectLat[:0]
	s.takenAcks, s.takenEffects = 0, 0
	s.types = map[string]*typeCount{}
	s.mu.Unlock()
	s.sent.Store(0)
}

// runner is one run: its configuration, the pack and candidate model its
// sessions play, and what they report.
type runner struct {
	c      config
	pack   *rules.Pack
	model  *dryrun.CandidateModel // nil for -events fixed
	tickMS int64
	st     *stats
	live   gauge
	// ready, for a ramp of fixed events, opens when every session is
	// up; stopped closes when no more events may be sent; finish when
	// the sessions are to be ended.
	ready   chan struct{}
	stopped chan struct{}
	finish  chan struct{}
}

// run makes the load c describes and returns its summary; progress gets
// a line as each phase starts.
func run(ctx context.Context, c config, progress io.Writer) (*summary, error) {
	p, err := (&packs.Resolver{Bundled: scenarios.FS}).Open(c.pack)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", c.pack, err)
	}
	r := &runner{c: c, pack: p, tickMS: max(p.Tick.MS, 1), st: newStats(),
		stopped: make(chan struct{}), finish: make(chan struct{})}
	if c.events == eventsModel {
		if r.model, err = dryrun.CandidateModelFor(p); err != nil {
			return nil, fmt.Errorf("pack %s: candidate model: %w", c.pack, err)
		}
	}
	base, err := serverStats(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("server stats (is the server up, and is this its token?): %w", err)
	}
	fmt.Fprintf(progress, "# %s; %s; %s against %s\n", r.describeArrival(), r.describeEvents(), c.duration, c.url)

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	// slots, when set, hold one token per live session (-concurrent).
	launch := func(i int, slots chan struct{}) {
		r.st.arrived(time.Now())
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.session(runCtx, i)
			if slots != nil {
				<-slots
			}
		}()
	}
	var from time.Time
	arriving := make(chan struct{})
	switch c.arrival {
	case arrivalRamp:
		if c.events == eventsFixed {
			r.ready = make(chan struct{})
		}
		if err := r.rampUp(ctx, launch, progress); err != nil {
			close(r.stopped)
			close(r.finish)
			cancel()
			wg.Wait()
			return nil, err
		}
		close(arriving)
		from = time.Now()
		r.st.reset(from)
		r.live.open(from)
		if r.ready != nil {
			close(r.ready)
		}
	case arrivalPoisson:
		from = time.Now()
		r.live.open(from)
		go func() {
			defer close(arriving)
			r.arrive(launch)
		}()
	}
	enough := r.watch(runCtx)
	reportCtx, stopReport := context.WithCancel(ctx)
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		if c.every > 0 {
			r.report(reportCtx, c.every, from, progress)
		}
	}()
	select {
	case <-time.After(c.duration):
	case <-enough:
	case <-ctx.Done():
	}
	stopReport()
	<-reported
	until := time.Now()
	r.st.close()
	close(r.stopped)
	r.live.close(until)
	<-arriving
	// Let answers to the last events arrive before counting what is
	// missing, and take the server's figures while the sessions are
	// still connected.
	drained := r.drain(ctx)
	load, err := serverStats(ctx, c)
	if err != nil {
		r.st.err("stats: " + short(err))
	}
	close(r.finish)
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		// Sessions that cannot even be ended are cut off.
		cancel()
		<-done
	case <-ctx.Done():
		<-done
	}
	return r.summarize(from, until, drained, base, load), nil
}

// watch returns a channel closed once c.until holds (never, without
// one), looking every 10 ms until ctx ends.
func (r *runner) watch(ctx context.Context) <-chan struct{} {
	if r.c.until == nil {
		return nil
	}
	ch := make(chan struct{})
	go func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for !r.c.until(r.st) {
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
		close(ch)
	}()
	return ch
}

// drain waits, once no more events are sent, until every event sent has
// been answered, for up to -drain, and returns how long it waited.
func (r *runner) drain(ctx context.Context) time.Duration {
	start := time.Now()
	limit := time.NewTimer(r.c.drain)
	defer limit.Stop()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for r.st.outstanding.Load() > 0 {
		select {
		case <-t.C:
		case <-limit.C:
			return time.Since(start)
		case <-ctx.Done():
			return time.Since(start)
		}
	}
	return time.Since(start)
}

// rampUp opens every session at -ramp a second, bounded so the listen
// backlog is not overrun, and waits until each is up or has failed.
func (r *runner) rampUp(ctx context.Context, launch func(int, chan struct{}), progress io.Writer) error {
	start := time.Now()
	tick := time.NewTicker(time.Duration(float64(time.Second) / r.c.ramp))
	defer tick.Stop()
	for i := range r.c.sessions {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		launch(i, nil)
	}
	for r.st.started.Load()+r.st.startFailures.Load() < int64(r.c.sessions) && time.Since(start) < 2*time.Minute {
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	fmt.Fprintf(progress, "# ramp: %d sessions up in %s\n", r.st.started.Load(), time.Since(start).Round(time.Millisecond))
	return nil
}

// arrive starts sessions as a Poisson process until -sessions have
// arrived or the run stops. With -concurrent it keeps that many alive
// instead: an arrival that finds them all alive waits for one to end and
// starts at once, and the process goes on from there.
func (r *runner) arrive(launch func(int, chan struct{})) {
	gen := newPoisson(r.c.arrivalRate, r.c.seed)
	var slots chan struct{}
	if r.c.concurrent > 0 {
		slots = make(chan struct{}, r.c.concurrent)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	next := time.Now()
	for i := 0; slots != nil || i < r.c.sessions; i++ {
		if i > 0 {
			next = next.Add(gen.gap())
			timer.Reset(time.Until(next))
			select {
			case <-timer.C:
			case <-r.stopped:
				return
			}
		}
		if slots != nil {
			select {
			case slots <- struct{}{}:
			default:
				select {
				case slots <- struct{}{}:
					next = time.Now()
				case <-r.stopped:
					return
				}
			}
		}
		launch(i, slots)
	}
}

func (r *runner) describeArrival() string {
	c := r.c
	if c.arrival == arrivalRamp {
		return fmt.Sprintf("ramp, the synchronized worst case (every session starts within %s and their timelines run in step): %d sessions at %g/s",
			time.Duration(float64(c.sessions)/c.ramp*float64(time.Second)).Round(time.Millisecond), c.sessions, c.ramp)
	}
	if c.concurrent > 0 {
		return fmt.Sprintf("poisson arrivals at %g/s (seed %d) keeping %d sessions alive", c.arrivalRate, c.seed, c.concurrent)
	}
	return fmt.Sprintf("poisson arrivals at %g/s (seed %d) until %d sessions have started", c.arrivalRate, c.seed, c.sessions)
}

func (r *runner) describeEvents() string {
	if r.c.events == eventsModel {
		what := "candidate model"
		if r.pack.DryRun.CandidateModel == nil {
			what = "built-in candidate (the pack has no candidate model)"
		}
		return fmt.Sprintf("events: pack %s, its %s, seed %d", r.pack.Name, what, r.c.seed)
	}
	return fmt.Sprintf("events: pack %s, a fixed cycle at %g/s per session", r.pack.Name, r.c.rate)
}

// serverStatsBody is what /debug/stats returns (runtime/service.Stats).
// Fields a server does not report stay zero and are left out of the
// summary.
type serverStatsBody struct {
	Sessions          int    `json:"sessions"`
	Connections       int    `json:"connections"`
	ConnectedSessions int    `json:"connected_sessions"`
	Goroutines        int    `json:"goroutines"`
	HeapAlloc         uint64 `json:"heap_alloc_bytes"`
	StackInuse        uint64 `json:"stack_inuse_bytes"`
	Sys               uint64 `json:"sys_bytes"`
	RSS               uint64 `json:"rss_bytes"`
	ok                bool
}

// serverStats sums /debug/stats over the nodes of -url: a cluster's
// sessions and memory are all of its nodes'.
func serverStats(ctx context.Context, c config) (serverStatsBody, error) {
	var sum serverStatsBody
	for _, u := range c.urls {
		one, err := nodeStats(ctx, u, c.token)
		if err != nil {
			return sum, err
		}
		sum.Sessions += one.Sessions
		sum.Connections += one.Connections
		sum.ConnectedSessions += one.ConnectedSessions
		sum.Goroutines += one.Goroutines
		sum.HeapAlloc += one.HeapAlloc
		sum.StackInuse += one.StackInuse
		sum.Sys += one.Sys
		sum.RSS += one.RSS
	}
	sum.ok = true
	return sum, nil
}

func nodeStats(ctx context.Context, wsURL, token string) (serverStatsBody, error) {
	var out serverStatsBody
	u, err := url.Parse(wsURL)
	if err != nil {
		return out, err
	}
	u.Scheme = strings.Replace(u.Scheme, "ws", "http", 1)
	u.Path, u.RawQuery = "/debug/stats", "gc=1"
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return out, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return out, fmt.Errorf("%s: HTTP %d", u, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return out, fmt.Errorf("%s: %w", u, err)
	}
	return out, nil
}
