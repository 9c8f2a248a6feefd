package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/replay"
	"github.com/batonhq/baton/runtime/sweep"
)

var sweepCommand = &command{
	name: "sweep", operands: "PACK", min: 1, max: 1,
	// A sweep's live heap is a few megabytes however many sessions it
	// plays (lean sessions, bounded figures), and its garbage is every
	// session's: collecting at ten times the live heap rather than four
	// took a tenth off a 10,000-session sweep for about 45 MB more.
	gcPercent: 1000,
	summary:   "play many seeded sessions of a pack's candidate model and sum them",
	about: `Plays -n sessions of PACK on a simulated clock, each with its own seed of
the pack's dryrun.candidate_model, and prints what they did: how many sessions
hit each rule, anchor, window, route and step of the pack, the items none hit,
the spread of turns, talk time, deferrals, nudges, lateness and endings, and
the most extreme sessions, each with the "baton dryrun -seed N PACK" command
that plays it again alone. The same -seed and -n print the same bytes whatever
-parallel is; how long it took goes to stderr (docs/sweep.md).

--input and --inputs give every session the pack's inputs; --vary
NAME=V1,V2,... plays input NAME at each value in turn (session i takes
value i mod the count), and the report breaks its figures down by value.`,
	flags: sweepFlags,
}

func sweepFlags(fl *flag.FlagSet) runFunc {
	n := fl.Int("n", 1000, "how many `SESSIONS` to play")
	seed := fl.Uint64("seed", 0, "the sweep's `SEED`: session i plays a seed derived from it and i")
	parallel := fl.Int("parallel", 0, "play `N` sessions at once (default: GOMAXPROCS)")
	out := fl.String("o", "", "also write the report as a self-contained HTML page to `FILE`")
	format := fl.String("format", "text", "stdout `FORMAT`: text (a summary) or json (the whole report)")
	sessions := fl.String("sessions", "", "play the recorded sessions in `DIR` (session logs, as baton replay reads them) through PACK instead of its candidate model: a what-if of each")
	var inputs inputArgs
	inputs.register(fl)
	var vary stringList
	fl.Var(&vary, "vary", "sweep input `NAME=V1,V2,...`: session i takes the values in turn, and the report gives each value's figures (values as --input writes them; a list or object input's as a JSON list)")
	base := fl.String("base", "", "with -sessions: the `PACK` the sessions were recorded with, when neither their log's reference nor the bundled copy still holds it")
	return func(ctx context.Context, c *cli, args []string) error {
		if *format != "text" && *format != "json" {
			return usageError("--format must be text or json, not %q", *format)
		}
		if *sessions != "" {
			// The recorded sessions are the population: there is no
			// model to seed and no count to choose.
			var given []string
			fl.Visit(func(f *flag.Flag) {
				if f.Name == "n" || f.Name == "seed" {
					given = append(given, "-"+f.Name)
				}
			})
			if len(given) > 0 {
				return usageError("%s and -sessions do not go together: -sessions plays every recorded session of the pack once, each with the seed it was recorded with", strings.Join(given, ", "))
			}
		}
		if *sessions != "" && (len(vary) > 0 || len(inputs.args) > 0 || inputs.file != "") {
			return usageError("--vary, --input and --inputs go with the candidate model: -sessions plays each recorded session with the inputs it was recorded with")
		}
		if len(vary) > 1 {
			return usageError("--vary is given %d times: a sweep varies one input (give the others with --input)", len(vary))
		}
		if *base != "" && *sessions == "" {
			return usageError("-base names the pack recorded sessions were made with: it goes with -sessions")
		}
		if *n < 1 {
			return usageError("-n must be 1 or more, not %d", *n)
		}
		if *parallel < 0 {
			return usageError("-parallel must be 0 (GOMAXPROCS) or more, not %d", *parallel)
		}
		p, err := packRefs.Open(args[0])
		if err != nil {
			return err
		}
		printWarnings(c, p)
		var pop sweep.Population
		if *sessions != "" {
			var skipped int
			if pop, skipped, err = recordings(p, args[0], *sessions, *base); err != nil {
				return err
			}
			if skipped > 0 {
				fmt.Fprintf(c.stderr, "# %d session(s) in %s are of other packs: left out\n", skipped, *sessions)
			}
			*n = pop.Len()
		} else {
			m, err := sweep.NewModel(p, args[0], *seed, *n)
			if err != nil {
				return err
			}
			sup, err := inputs.supplied(p)
			if err != nil {
				return err
			}
			var v *sweep.Vary
			if len(vary) == 1 {
				if v, err = sweep.ParseVary(p, sup, vary[0], os.ReadFile); err != nil {
					return usageError("%v", err)
				}
			}
			pop = m.Vary(sup, inputs.words(), v)
		}
		workers := *parallel
		if workers == 0 {
			workers = runtime.GOMAXPROCS(0)
		}
		bar := newProgressBar(c, *n)
		start := time.Now()
		rep, err := sweep.Run(ctx, p, pop, sweep.Options{Parallel: workers, Progress: bar.set})
		bar.stop()
		if err != nil {
			return err
		}
		took := time.Since(start)
		w := bufio.NewWriter(c.stdout)
		if *format == "json" {
			err = sweep.WriteJSON(w, rep)
		} else {
			err = sweep.WriteText(w, rep)
		}
		if err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
		if *out != "" {
			// The page shows the extreme sessions' timelines: a click
			// from a figure to the session behind it.
			if err := sweep.Timelines(ctx, p, pop, rep); err != nil {
				return err
			}
			if err := writeHTMLReport(*out, rep); err != nil {
				return err
			}
		}
		fmt.Fprintf(c.stderr, "# %s: %d sessions in %s (%.0f sessions/s, %d workers)\n", p.Name, *n,
			took.Round(time.Millisecond), float64(*n)/max(took.Seconds(), 1e-9), workers)
		if *out != "" {
			fmt.Fprintf(c.stderr, "wrote %s\n", *out)
		}
		return nil
	}
}

// writeHTMLReport writes the page whole (writeFileWhole): a browser
// reloading it never reads half a report.
func writeHTMLReport(name string, rep *sweep.Report) error {
	return writeFileWhole(name, func(f io.Writer) error {
		w := bufio.NewWriter(f)
		if err := sweep.WriteHTML(w, rep); err != nil {
			return err
		}
		return w.Flush()
	})
}

// progressBar draws how many sessions are done on stderr, a few times a
// second, when stderr is a terminal; elsewhere it draws nothing.
type progressBar struct {
	c     *cli
	total int
	done  atomic.Int64
	quit  chan struct{}
	wg    sync.WaitGroup
}

func newProgressBar(c *cli, total int) *progressBar {
	b := &progressBar{c: c, total: total, quit: make(chan struct{})}
	if !c.tty {
		return b
	}
	start := time.Now()
	b.wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-b.quit:
				fmt.Fprint(c.stderr, "\r\033[K")
				return
			case <-tick.C:
				b.draw(time.Since(start))
			}
		}
	})
	return b
}

// set records that done sessions are done. The sweep calls it from
// whichever worker finished one, so a call may arrive after a later
// count: the bar keeps the largest, and never goes back.
func (b *progressBar) set(done int) {
	for {
		cur := b.done.Load()
		if int64(done) <= cur || b.done.CompareAndSwap(cur, int64(done)) {
			return
		}
	}
}

func (b *progressBar) draw(elapsed time.Duration) {
	const width = 30
	done := int(b.done.Load())
	fill := width * done / max(b.total, 1)
	rate := float64(done) / max(elapsed.Seconds(), 1e-9)
	fmt.Fprintf(b.c.stderr, "\r\033[K[%s%s] %d/%d  %.0f sessions/s", strings.Repeat("#", fill), strings.Repeat(".", width-fill), done, b.total, rate)
}

func (b *progressBar) stop() {
	close(b.quit)
	b.wg.Wait()
}

// recordings is the population of the session logs in dir recorded with
// p's pack (by name), each to be played through p; skipped counts the
// logs of other packs. Only the logs' paths are kept: each is replayed
// when the sweep plays its session, so a folder of any size sweeps in
// the memory of the sessions being played.
func recordings(p *rules.Pack, ref, dir, base string) (_ sweep.Population, skipped int, err error) {
	logs, err := sessionLogs(dir)
	if err != nil {
		return nil, 0, err
	}
	var paths []string
	for _, l := range logs {
		s, err := replay.ReadSession(l)
		if err != nil {
			return nil, 0, err
		}
		if s.Pack != p.Name {
			skipped++
			continue
		}
		paths = append(paths, l)
	}
	if len(paths) == 0 {
		return nil, skipped, fmt.Errorf("%s holds no session of pack %s", dir, p.Name)
	}
	return replay.OpenRecordings(p, ref, paths, recordedPack(base), replay.WhatIfOptions{}), skipped, nil
}
