package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/archive"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/record"
	"github.com/batonhq/baton/runtime/replay"
	"github.com/batonhq/baton/runtime/service"
	"github.com/batonhq/baton/runtime/timeline"
)

var dryrunCommand = &command{
	name: "dryrun", operands: "PACK", min: 1, max: 1,
	summary: "play a whole session on a simulated clock",
	about: `Plays a whole session of PACK on a simulated clock, with the pack's built-in
candidate (or --events) and its scripted model (or --llm), and prints the
timeline: mm:ss.s  role  kind  text, or with --format html a page that draws
it (docs/timeline.md). The same pack and inputs always print the same bytes;
how long the run took goes to stderr. With --watch it runs again whenever a
file of the pack folder changes, until Ctrl-C.`,
	flags: dryrunFlags,
}

// dryrunArgs are dryrun's flags.
type dryrunArgs struct {
	events, llm, baseURL, model, format, record, out string
	verbose, strict, failFast, watch                 bool
	seed                                             uint64
	// seeded is set when -seed was given: a pack with a candidate model
	// then plays that seed of it (the sessions baton sweep names).
	seeded bool
	step   time.Duration
	inputs inputArgs
}

func dryrunFlags(fl *flag.FlagSet) runFunc {
	a := &dryrunArgs{}
	fl.StringVar(&a.events, "events", "", "candidate events: a `FILE` of JSON lines in the DayOne §5.2 shape (default: the pack's built-in candidate; an empty file is a silent candidate; - reads stdin)")
	fl.StringVar(&a.llm, "llm", "", llmHelp+chaosHelp)
	fl.StringVar(&a.baseURL, "base-url", "", "with --llm VENDOR: the API base `URL` (a local or proxy endpoint)")
	fl.StringVar(&a.model, "model", "", "with --llm VENDOR: the model `NAME` (default: the pack's llm.model, else the vendor's default)")
	fl.StringVar(&a.format, "format", "text", "output `FORMAT`: text (mm:ss.s role kind text), jsonl, or html (a page drawing the timeline: docs/timeline.md)")
	fl.StringVar(&a.out, "o", "", "write the output to `FILE` instead of stdout (replaced whole, never seen half-written)")
	fl.BoolVar(&a.watch, "watch", false, "run again whenever a file of the pack folder changes, redrawing the timeline (or rewriting -o FILE) until Ctrl-C")
	fl.BoolVar(&a.verbose, "v", false, "also show LLM requests, routing and defer decisions")
	fl.Uint64Var(&a.seed, "seed", 0, "seed for Math.random in pack scripts; a pack with a dryrun.candidate_model plays this seed of it instead of its built-in candidate (the sessions baton sweep names), unless --events is given")
	fl.StringVar(&a.record, "record", "", "also write the run as a session log in folder `DIR` (replay it offline with baton replay, e.g. after a run against the real model), and a pack's context files under DIR/archive/")
	fl.DurationVar(&a.step, "step", 0, "advance the clock in fixed steps (e.g. 100ms) instead of jumping to deadlines")
	fl.BoolVar(&a.strict, "strict", false, "exit 1 when the run reports an adapter, job, script or engine error (in CI: a model that failed is a failed run)")
	a.inputs.register(fl)
	fl.BoolVar(&a.failFast, "fail-fast", true, "with a real model, stop when its first calls all fail to connect or are refused (--fail-fast=false plays on with fallback lines)")
	return func(ctx context.Context, c *cli, args []string) error {
		fl.Visit(func(f *flag.Flag) { a.seeded = a.seeded || f.Name == "seed" })
		switch a.format {
		case "text", "jsonl", "html":
		default:
			return usageError("--format must be text, jsonl or html, not %q", a.format)
		}
		if a.watch {
			return watchPack(ctx, c, a, args[0])
		}
		p, loaded, err := openTimed(args[0])
		if err != nil {
			return err
		}
		printWarnings(c, p)
		if a.out == "" {
			return dryrunOnce(ctx, c, a, args[0], p, loaded, c.stdout)
		}
		return writeFileWhole(a.out, func(w io.Writer) error {
			return dryrunOnce(ctx, c, a, args[0], p, loaded, w)
		})
	}
}

// chaosHelp adds dryrun's misbehaving model to -llm's help.
var chaosHelp = "; or \"chaos\": the scripted model misbehaving on purpose, seeded by --seed, with every misbehaviour (" +
	strings.Join(dryrun.MisbehaviourNames, ", ") + "), \"chaos:NAME,NAME\" with some, either with \"@RATE\" for how often each strikes a call (default 0.5, off_role 1): chaos:long,label@0.3 (docs/testing.md)"

// openTimed opens the pack ref names and says how long loading took.
func openTimed(ref string) (*rules.Pack, time.Duration, error) {
	start := time.Now()
	p, err := packRefs.Open(ref)
	return p, time.Since(start), err
}

// writeFileWhole writes name through a temporary file in its folder that
// replaces it once complete: a browser reloading the page, or a watcher of
// the file, never reads half a run.
func writeFileWhole(name string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after a successful rename there is nothing left to remove
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), name)
}

// dryrunOnce plays one run of p and writes it to out in a's format;
// ref is the pack as the command line named it, for --record.
func dryrunOnce(ctx context.Context, c *cli, a *dryrunArgs, ref string, p *rules.Pack, loaded time.Duration, out io.Writer) error {
	if a.step < 0 || a.step.Milliseconds() > p.Tick.MS {
		return usageError("--step must be between 0 and the pack's tick (%dms), not %s", p.Tick.MS, a.step)
	}
	opt := dryrun.Options{StepMS: a.step.Milliseconds(), Seed: a.seed}
	var err error
	if opt.Inputs, err = a.inputs.supplied(p); err != nil {
		return err
	}
	if a.seeded && a.events == "" && p.DryRun.CandidateModel != nil {
		if opt.Candidate, err = dryrun.NewCandidateModel(p); err != nil {
			return err
		}
	} else if opt.Events, err = loadEvents(p, a.events); err != nil {
		return err
	}
	if dryrun.IsChaos(a.llm) {
		mis, err := dryrun.ParseChaos(a.llm)
		if err != nil {
			return usageError("--llm: %v", err)
		}
		mis.Seed = a.seed
		opt.Misbehave = &mis
	}
	real, err := realModel(ctx, a.llm, a.baseURL, a.model, p)
	switch {
	case opt.Misbehave != nil && (a.baseURL != "" || a.model != ""):
		return usageError("--base-url and --model go with a vendor, not --llm %s", a.llm)
	case opt.Misbehave != nil:
	case err != nil:
		return err
	case real != nil:
		watch := newModelWatch(llm.ForPack(real, p, nil), c)
		if a.failFast {
			var cancel context.CancelCauseFunc
			ctx, cancel = context.WithCancelCause(ctx)
			defer cancel(nil)
			watch.giveUp = cancel
		}
		opt.Model = watch
		defer watch.done()
	case a.llm != "":
		if opt.Replies, err = readReplies(a.llm); err != nil {
			return err
		}
	}

	w := bufio.NewWriter(out)
	defer w.Flush()
	fo := record.FormatOptions{Verbose: a.verbose, Color: c.color && out == c.stdout}
	text := record.NewTextStream(w, fo)
	started := false
	if a.format != "html" {
		// The page is drawn from the whole run; text and lines stream.
		opt.OnRecord = func(r *record.Record) error {
			if !started && a.format == "text" {
				// Only once the run starts: refused input prints nothing.
				fmt.Fprintf(w, "# %s (%s)%s\n", p.Name, packSource(p), withInputs(p, opt.Inputs))
			}
			started = true
			if a.format == "jsonl" {
				err = record.WriteJSONL(w, []record.Record{*r}, fo)
			} else {
				err = text.Add(r)
			}
			if real != nil {
				// A real model takes seconds a call: show each line as it
				// happens rather than all of them at the end.
				err = errors.Join(err, w.Flush())
			}
			return err
		}
	}
	start := time.Now()
	res, err := dryrun.RunContext(ctx, p, opt)
	if err != nil {
		if started {
			text.Close() // a record held for the next one, which never came
			w.Flush()
		}
		return err
	}
	elapsed := time.Since(start)
	switch a.format {
	case "text":
		if err := text.Close(); err != nil {
			return err
		}
		if err := record.WriteSummary(w, res.Records); err != nil {
			return err
		}
		if err := record.WriteWorkspace(w, p.Workspace.RootDir(), res.Workspace); err != nil {
			return err
		}
	case "html":
		title := fmt.Sprintf("%s (%s)%s", p.Name, packSource(p), withInputs(p, opt.Inputs))
		if err := timeline.WriteHTML(w, timeline.Run{Title: title, Pack: p, Result: res}); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	played := fmt.Sprintf("%d events", len(opt.Events))
	if opt.Candidate != nil {
		played = fmt.Sprintf("candidate model seed %d (%d messages)", a.seed, res.Candidate.Messages)
	}
	fmt.Fprintf(c.stderr, "# %s: %s, simulated %s in %s (%s real time); the pack loaded in %s\n",
		p.Name, played, rules.FormatClock(res.EndMS), elapsed.Round(10*time.Microsecond),
		speedup(res.EndMS, elapsed), loaded.Round(10*time.Microsecond))
	if a.record != "" {
		if err := saveRecord(c, a.record, ref, p, a.seed, start, res); err != nil {
			return err
		}
	}
	if a.strict {
		if n := countErrors(res.Records); n > 0 {
			return fmt.Errorf("--strict: the run reported %d error(s) (adapter, job, script or engine errors in the timeline)", n)
		}
	}
	return nil
}

// withInputs names the inputs a run was given, for its header line.
// A file input shows as the names of its files.
func withInputs(p *rules.Pack, sup rules.Supplied) string {
	if len(sup) == 0 {
		return ""
	}
	shown := rules.Supplied{}
	for k, v := range sup {
		shown[k] = v
		if decl, ok := p.Input(k); ok && decl.Type == rules.InputFile {
			var files []struct{ Name string }
			if json.Unmarshal(v, &files) == nil {
				names := make([]string, len(files))
				for i, f := range files {
					names[i] = "@" + f.Name
				}
				shown[k] = json.RawMessage(strings.Join(names, ","))
			}
		}
	}
	return " with " + rules.FormatSupplied(shown)
}

func speedup(simMS int64, took time.Duration) string {
	if took <= 0 {
		return "instant"
	}
	x := float64(simMS) / float64(took.Milliseconds()+1)
	if us := took.Microseconds(); us > 0 {
		x = float64(simMS) * 1000 / float64(us)
	}
	return fmt.Sprintf("%.0fx", x)
}

func countErrors(recs []record.Record) int {
	n := 0
	for i := range recs {
		if slices.Contains(record.ErrorTypes, recs[i].Type) {
			n++
		}
	}
	return n
}

// packSource says where a pack came from and which content ran: the
// folder or "bundled", and the first eight hex digits of its hash.
func packSource(p *rules.Pack) string {
	src := "bundled"
	if p.Dir != "" {
		src = p.Dir
	}
	s := fmt.Sprintf("%s, %.8s", src, p.Hash)
	if p.Dir != "" && filepath.Clean(p.Dir) == filepath.Join(packRefs.Workspace, p.Name) {
		if b := packRefs.BundledHash(p.Name); b != "" && b != p.Hash {
			s += fmt.Sprintf("; the bundled copy is %.8s", b)
		}
	}
	return s
}

func saveRecord(c *cli, dir, ref string, p *rules.Pack, seed uint64, start time.Time, res *record.Result) error {
	path, err := replay.SaveDryRun(dir, ref, p, seed, start, res)
	if err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	fmt.Fprintf(c.stderr, "recorded %s\n", path)
	if len(res.Files) == 0 {
		return nil
	}
	id := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	m := archive.Manifest{Session: id, Pack: p.Name, PackHash: p.Hash, Engine: engine.Version, EndedMS: res.EndMS, Reason: res.EndReason()}
	adir, err := archive.Write(filepath.Join(dir, service.ArchiveDir), m, res.Files)
	if err != nil {
		return fmt.Errorf("archiving: %w", err)
	}
	fmt.Fprintf(c.stderr, "archived %s\n", adir)
	return nil
}

func readReplies(name string) ([]dryrun.Reply, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return dryrun.ReadRepliesFile(name, data)
}

// eventsName is how errors name where the events came from.
func eventsName(p *rules.Pack, file string) string {
	switch {
	case file == "-":
		return "stdin"
	case file != "":
		return file
	case p.Dir != "":
		return filepath.Join(p.Dir, p.DryRun.Candidate)
	}
	return p.DryRun.Candidate
}

// loadEvents reads the events file, or the pack's built-in candidate.
func loadEvents(p *rules.Pack, file string) ([]events.Timed, error) {
	var (
		r    io.ReadCloser
		name = eventsName(p, file)
		err  error
	)
	switch {
	case file == "-":
		r = io.NopCloser(os.Stdin)
	case file != "":
		r, err = os.Open(file)
	case p.DryRun.Candidate != "":
		r, err = p.FS.Open(p.DryRun.Candidate)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer r.Close()
	evs, err := events.ReadFile(name, r)
	if err != nil {
		return nil, err // the events read before a problem are not the file's
	}
	return evs, nil
}
