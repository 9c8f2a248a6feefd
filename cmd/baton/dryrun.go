package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/archive"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/replay"
	"github.com/batonhq/baton/runtime/service"
)

func version() string { return engine.Version }

// newFlags makes a subcommand's flag set; usage is its synopsis and
// description, printed above the flags.
func newFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fl := flag.NewFlagSet("baton "+name, flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() {
		fmt.Fprintf(stderr, "%s\n\n", usage)
		fl.PrintDefaults()
	}
	return fl
}

// parseFlags parses args and checks the number of operands: exactly n, or
// at least one when n is -1.
func parseFlags(fl *flag.FlagSet, args []string, n int) error {
	if err := fl.Parse(args); err != nil {
		return usageErr(err)
	}
	if (n >= 0 && fl.NArg() != n) || (n < 0 && fl.NArg() == 0) {
		fl.Usage()
		return errUsage
	}
	return nil
}

func checkFormat(format string) error {
	if format != "text" && format != "jsonl" {
		return fmt.Errorf("-format must be text or jsonl, not %q", format)
	}
	return nil
}

func cmdDryrun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := newFlags("dryrun", "Usage: baton dryrun [flags] PACK\n\nPlays a whole session on a simulated clock with a scripted LLM and a simulated voice.", stderr)
	eventsFile := fl.String("events", "", "candidate events, JSON lines in the DayOne §5.2 shape (default: the pack's built-in candidate; an empty file is a silent candidate)")
	llmFile := fl.String("llm", "", llmHelp)
	baseURL := fl.String("base-url", "", "with -llm VENDOR: the API base URL (a local or proxy endpoint)")
	model := fl.String("model", "", "with -llm VENDOR: the model (default: the pack's llm.model, else the vendor's default)")
	format := fl.String("format", "text", "output: text (mm:ss.s role kind text) or jsonl")
	verbose := fl.Bool("v", false, "also show LLM requests, routing and defer decisions")
	seed := fl.Uint64("seed", 0, "seed for Math.random in pack scripts")
	record := fl.String("record", "", "also write the run as a session log in this folder (replay it offline with baton replay, e.g. after a run against the real model), and a pack's context files under FOLDER/archive/")
	step := fl.Duration("step", 0, "advance the clock in fixed steps (e.g. 100ms) instead of jumping to deadlines")
	if err := parseFlags(fl, args, 1); err != nil {
		return err
	}
	if err := checkFormat(*format); err != nil {
		return err
	}
	p, err := packRefs.Open(fl.Arg(0))
	if err != nil {
		return err
	}
	opt := dryrun.Options{StepMS: step.Milliseconds(), Seed: *seed}
	if opt.Events, err = loadEvents(p, *eventsFile); err != nil {
		return err
	}
	real, err := realModel(ctx, *llmFile, *baseURL, *model, p)
	switch {
	case err != nil:
		return err
	case real != nil:
		opt.Model = llm.ForPack(real, p, nil)
	case *llmFile != "":
		f, err := os.Open(*llmFile)
		if err != nil {
			return err
		}
		opt.Replies, err = dryrun.ReadReplies(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", *llmFile, err)
		}
	}
	start := time.Now()
	res, err := dryrun.RunContext(ctx, p, opt)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	if *record != "" {
		path, err := replay.SaveDryRun(*record, fl.Arg(0), p, *seed, start, res)
		if err != nil {
			return fmt.Errorf("recording: %w", err)
		}
		fmt.Fprintf(stderr, "recorded %s\n", path)
		if len(res.Files) > 0 {
			id := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
			m := archive.Manifest{Session: id, Pack: p.Name, PackHash: p.Hash, Engine: engine.Version, EndedMS: res.EndMS, Reason: res.EndReason()}
			dir, err := archive.Write(filepath.Join(*record, service.ArchiveDir), m, res.Files)
			if err != nil {
				return fmt.Errorf("archiving: %w", err)
			}
			fmt.Fprintf(stderr, "archived %s\n", dir)
		}
	}
	w := bufio.NewWriter(stdout)
	fo := dryrun.FormatOptions{Verbose: *verbose}
	if *format == "jsonl" {
		err = dryrun.WriteJSONL(w, res.Records, fo)
	} else {
		fmt.Fprintf(w, "# %s: %d events, simulated %s in %s\n", p.Name, len(opt.Events), rules.FormatClock(res.EndMS), elapsed.Round(time.Microsecond))
		if err = dryrun.WriteText(w, res.Records, fo); err == nil {
			err = dryrun.WriteSummary(w, res.Records)
		}
	}
	if err != nil {
		return err
	}
	return w.Flush()
}

// loadEvents reads the events file, or the pack's built-in candidate.
func loadEvents(p *rules.Pack, file string) ([]events.Timed, error) {
	var (
		r    io.ReadCloser
		name = file
		err  error
	)
	switch {
	case file == "-":
		r, name = io.NopCloser(os.Stdin), "stdin"
	case file != "":
		r, err = os.Open(file)
	case p.DryRun.Candidate != "":
		name = p.DryRun.Candidate
		r, err = p.FS.Open(p.DryRun.Candidate)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer r.Close()
	evs, err := events.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return evs, nil
}

func cmdCheck(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("name at least one pack")
	}
	var failed error
	for _, a := range args {
		p, err := packRefs.Open(a)
		if err != nil {
			fmt.Fprintln(stdout, err)
			failed = fmt.Errorf("%d pack(s) failed", 1)
			continue
		}
		fmt.Fprintf(stdout, "%s: ok (%d roles, %d anchors, %d windows, %d rules, hash %.12s)\n", a, len(p.Roles), len(p.Timeline.Anchors), len(p.Timeline.Windows), len(p.Rules), p.Hash)
	}
	return failed
}
