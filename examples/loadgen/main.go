// Command loadgen drives many concurrent sessions of a pack against a
// running baton server over loopback and reports the latency from
// sending an event to receiving its ack and the first effect it caused,
// errors, the sessions it kept alive, and the server's memory per session
// (from /debug/stats).
//
// Two ways to start sessions (-arrival):
//
//   - poisson: a user population. Sessions arrive as a Poisson process at
//     -arrival-rate a second (exponential gaps from -seed) until -sessions
//     have arrived; each lives until its pack ends it (DayOne at 10:00) or
//     -duration is over. With -concurrent N the generator instead keeps N
//     alive for the whole -duration, starting a new one whenever one ends,
//     so a run can outlast a session.
//   - ramp: the synchronized worst case, and the default, so the figures
//     published before poisson existed come out of the same commands. All
//     -sessions connect in a burst (-ramp a second) and events flow for
//     -duration once every one is up; their timelines then run in step
//     (every DayOne BA interrupt at 03:00 lands within the same seconds).
//
// Two event mixes (-events):
//
//   - model: session i plays the pack's candidate model (or the built-in
//     candidate, for a pack without one) seeded with
//     sweep.SessionSeed(-seed, i), the candidate `baton dryrun -seed S`
//     plays: messages made of the pack's candidate lines, typing, speech
//     start and end, low-confidence transcripts, answering what the
//     panel says, in real time.
//   - fixed: a canned cycle of six events at -rate a second per session,
//     the default.
//
// Examples (raise the descriptor limit first for thousands of sessions):
//
//	ulimit -n 40000
//	go run ./cmd/baton serve --dev --data $(mktemp -d) --addr 127.0.0.1:8080 &
//	go run ./examples/loadgen -arrival poisson -arrival-rate 200 -sessions 10000 -events model -duration 120s
//	go run ./examples/loadgen -arrival poisson -arrival-rate 50 -concurrent 1000 -events model -duration 15m
//	go run ./examples/loadgen -sessions 1000 -duration 30s -rate 0.5
//	go run ./examples/loadgen -arrival poisson -arrival-rate 100 -sessions 1000 -events model -duration 60s -json > run.json
//
// A cluster (baton serve --nats) is driven through several nodes at
// once: -url takes a comma-separated list and session i dials the
// (i mod n)th, so each node gets its share of the starts. A node that
// does not run a session answers moved with the URL of the one that
// does; the session resumes there from the last effect it saw, sends
// again the events left unanswered, and the report counts the sessions
// redirected and the hops. Redirects are bounded (maxMoves), so nodes
// that send a session round in circles make a session error.
//
//	go run ./examples/loadgen -url ws://10.0.0.1:8080/ws,ws://10.0.0.2:8080/ws,ws://10.0.0.3:8080/ws -sessions 3000 -duration 60s
//
// When the run is over it ends the sessions it started (an end frame)
// unless -leave-running is given, so a second run does not share the
// server with the first one's sessions. It only talks to the addresses
// it is given and the nodes they send it to, and stops by itself after
// -duration.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"
)

// Arrival modes and event mixes.
const (
	arrivalPoisson = "poisson"
	arrivalRamp    = "ramp"
	eventsModel    = "model"
	eventsFixed    = "fixed"
)

type config struct {
	// url is -url as given; urls its nodes.
	url         string
	urls        []string
	token       string
	pack        string
	prefix      string
	arrival     string
	arrivalRate float64
	sessions    int
	concurrent  int
	duration    time.Duration
	events      string
	rate        float64
	ramp        float64
	seed        uint64
	json        bool
	leave       bool
	every       time.Duration
	// drain bounds how long after the last event the generator waits
	// for the answers still to come before it counts what is missing.
	drain time.Duration
	// until, set by tests, ends the run as -duration would as soon as it
	// holds of the run's figures, so that a test waits for what it checks
	// rather than for a time a busy machine may not keep; -duration still
	// bounds the run.
	until func(*stats) bool
}

// parseFlags reads the command line. A flag that does not apply to the
// chosen mode is refused rather than ignored, so a command never reads
// as a load it did not make.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.url, "url", "ws://127.0.0.1:8080/ws", "server WebSocket URL, or a comma-separated list of a cluster's nodes (session i dials the (i mod n)th)")
	fs.StringVar(&c.token, "token", os.Getenv("BATON_TOKEN"), "bearer token (default $BATON_TOKEN)")
	fs.StringVar(&c.pack, "pack", "dayone", "pack to start: a bundled name or a folder (the server must accept it)")
	fs.StringVar(&c.prefix, "prefix", fmt.Sprintf("load%d", time.Now().Unix()), "session id prefix")
	fs.StringVar(&c.arrival, "arrival", arrivalRamp, "how sessions start: poisson (a population: exponential gaps at -arrival-rate) or ramp (the synchronized worst case: all at once, timelines in step)")
	fs.Float64Var(&c.arrivalRate, "arrival-rate", 50, "poisson: mean new sessions a second")
	fs.IntVar(&c.sessions, "sessions", 100, "ramp: concurrent sessions; poisson: sessions to start in all (one connection each)")
	fs.IntVar(&c.concurrent, "concurrent", 0, "poisson: keep this many sessions alive for all of -duration, replacing each that ends (instead of -sessions)")
	fs.DurationVar(&c.duration, "duration", 30*time.Second, "ramp: how long events flow once all sessions are up; poisson: how long the run lasts from the first arrival")
	fs.StringVar(&c.events, "events", eventsFixed, "event mix: model (the pack's seeded candidate model, in real time) or fixed (a canned cycle at -rate)")
	fs.Float64Var(&c.rate, "rate", 0.5, "fixed: candidate events a second per session")
	fs.Float64Var(&c.ramp, "ramp", 1000, "ramp: new connections a second while ramping up")
	fs.Uint64Var(&c.seed, "seed", 1, "seeds the arrivals and each session's candidate (session i: sweep.SessionSeed(seed, i))")
	fs.BoolVar(&c.json, "json", false, "write the summary as JSON on stdout (progress goes to stderr)")
	fs.DurationVar(&c.every, "every", 0, "also write a line every this often (e.g. 5s) with the live sessions and the answers of that interval, to place a tail in time (0: only the summary)")
	fs.BoolVar(&c.leave, "leave-running", false, "leave the sessions running on the server when the run ends instead of ending them")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	c.drain = 2 * time.Second
	return c, c.check(set)
}

// check refuses values and combinations that make no load; set holds
// the flags given on the command line.
func (c *config) check(set map[string]bool) error {
	only := func(flag, mode string) error {
		return fmt.Errorf("-%s applies to %s only", flag, mode)
	}
	c.urls = nil
	for u := range strings.SplitSeq(c.url, ",") {
		u = strings.TrimSpace(u)
		if u == "" {
			return fmt.Errorf("-url %q: an empty entry in the list", c.url)
		}
		c.urls = append(c.urls, u)
	}
	switch c.arrival {
	case arrivalPoisson:
		if set["ramp"] {
			return only("ramp", "-arrival ramp")
		}
		if !(c.arrivalRate > 0) {
			return fmt.Errorf("-arrival-rate must be above 0, not %v", c.arrivalRate)
		}
		if c.concurrent < 0 {
			return fmt.Errorf("-concurrent must not be negative")
		}
		if c.concurrent > 0 && set["sessions"] {
			return errors.New("give -sessions (start that many) or -concurrent (keep that many alive), not both")
		}
	case arrivalRamp:
		for _, f := range []string{"arrival-rate", "concurrent"} {
			if set[f] {
				return only(f, "-arrival poisson")
			}
		}
		if !(c.ramp > 0) {
			return fmt.Errorf("-ramp must be above 0, not %v", c.ramp)
		}
	default:
		return fmt.Errorf("-arrival %q: poisson or ramp", c.arrival)
	}
	switch c.events {
	case eventsModel:
		if set["rate"] {
			return errors.New("-rate applies to -events fixed only: the model sets its own pace")
		}
	case eventsFixed:
		if !(c.rate > 0) {
			return fmt.Errorf("-rate must be above 0, not %v", c.rate)
		}
	default:
		return fmt.Errorf("-events %q: model or fixed", c.events)
	}
	if c.concurrent == 0 && c.sessions <= 0 {
		return fmt.Errorf("-sessions must be above 0, not %d", c.sessions)
	}
	if c.every < 0 {
		return fmt.Errorf("-every must not be negative, not %s", c.every)
	}
	if c.duration <= 0 {
		return fmt.Errorf("-duration must be above 0, not %s", c.duration)
	}
	return nil
}

func main() {
	c, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	progress := io.Writer(os.Stdout)
	if c.json {
		progress = os.Stderr
	}
	sum, err := run(ctx, c, progress)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
	if c.json {
		err = sum.writeJSON(os.Stdout)
	} else {
		err = sum.writeText(os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}
