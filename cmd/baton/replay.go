package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/archive"
	"github.com/batonhq/baton/runtime/llm"
	"github.com/batonhq/baton/runtime/record"
	"github.com/batonhq/baton/runtime/replay"
	"github.com/batonhq/baton/runtime/timeline"
)

var replayCommand = &command{
	name: "replay", operands: "LOG", min: 1, max: 1,
	summary: "re-run a recorded session and report differences, or play it through a changed pack",
	about: `Re-runs a recorded session through the engine offline and reports every effect
that differs from what was recorded; exits 1 on any difference. LOG is a
session log (DATA/ID.wal while the session is live or was left unfinished,
DATA/ID.done once it ended) or a folder holding one, such as the folder a dry
run's --record wrote.

What-if: when --pack names other content than the log was recorded with
(its hash differs), the session plays again through that pack on a
simulated clock: the candidate's events at their recorded times, the
recorded model answers where the new run asks exactly the same, the
scripted model (or --llm) for the rest. It prints the two timelines as a
diff (- only recorded, + only in the what-if, ~ moved) and a summary, and
exits 0 unless something fails; --format html draws the same diff on one
page, marking and counting the lines the text marks (-v compares model
requests, routing and defer decisions in both). The session must be of the
pack --pack changes: another pack's is refused. LOG may then be a folder of
many session logs: one line per session (other packs' skipped), then
totals. See docs/whatif.md.`,
	flags: replayFlags,
}

func replayFlags(fl *flag.FlagSet) runFunc {
	packDir := fl.String("pack", "", "pack folder or bundled name to replay with (default: the one the log names); other content than the log's plays a what-if")
	verbose := fl.Bool("v", false, "print the replayed timeline (a what-if: also compare model requests, routing and defer decisions, in the diff, its counts and the html page's marks)")
	format := fl.String("format", "text", "output `FORMAT`: text or jsonl (the timeline with -v, or a what-if's diff), or html for a what-if (both timelines on one page, the differences marked: docs/timeline.md)")
	archiveDir := fl.String("archive", "", "write the ended session's context files as an archive in this folder (as baton serve does at the end)")
	base := fl.String("base", "", "what-if: the pack as the log recorded it (folder or bundled name), when neither the log's own reference nor the bundled copy holds that content any more")
	llmName := fl.String("llm", "", "what-if: what answers the requests the recording has no answer for: a replies `FILE`, \"live\" or a vendor, as for baton dryrun (default: the pack's scripted model)")
	baseURL := fl.String("base-url", "", "with --llm VENDOR: the API base `URL`")
	model := fl.String("model", "", "with --llm VENDOR: the model `NAME`")
	outFile := fl.String("o", "", "write the output to `FILE` instead of stdout")
	return func(ctx context.Context, c *cli, args []string) error {
		if *format != "text" && *format != "jsonl" && *format != "html" {
			return usageError("--format must be text, jsonl or html, not %q", *format)
		}
		if *format == "html" && *packDir == "" {
			return usageError("--format html draws a what-if: name the changed pack with --pack")
		}
		if *packDir == "" {
			if *base != "" || *llmName != "" {
				return usageError("--base and --llm are for a what-if: name the changed pack with --pack")
			}
			logFile, err := findLog(c.stderr, args[0])
			if err != nil {
				return err
			}
			return withOutput(c.stdout, *outFile, func(w io.Writer) error {
				return replayLog(w, logFile, *packDir, *verbose, *format, *archiveDir)
			})
		}
		p, err := packRefs.Open(*packDir)
		if err != nil {
			return err
		}
		printWarnings(c, p)
		logs, err := sessionLogs(args[0])
		if err != nil {
			return err
		}
		if len(logs) == 1 {
			s, err := replay.ReadSession(logs[0])
			if err != nil {
				return err
			}
			if s.Pack != p.Name {
				// A what-if is a changed version of the session's own pack;
				// another pack's rules, roles and events would not meet the
				// recording's, as a folder's what-if skips such sessions.
				return fmt.Errorf("%s: session %s was recorded with pack %s, and --pack %s is pack %s: a what-if plays a session through a changed version of the pack it was recorded with", logs[0], s.ID, s.Pack, *packDir, p.Name)
			}
			if s.PackHash == p.Hash {
				if *format == "html" {
					return usageError("--format html draws a what-if, and %s holds this pack's content: nothing changed to draw", *packDir)
				}
				return withOutput(c.stdout, *outFile, func(w io.Writer) error {
					return replayLog(w, logs[0], *packDir, *verbose, *format, *archiveDir)
				})
			}
		}
		if *archiveDir != "" {
			return usageError("--archive archives a replayed session; a what-if's files are not a session's")
		}
		opt, done, err := whatIfModel(ctx, c, *llmName, *baseURL, *model, p)
		if err != nil {
			return err
		}
		defer done()
		open := recordedPack(*base)
		if len(logs) > 1 {
			if *format != "text" {
				return usageError("a folder of sessions prints one text line each; --format %s is for one session", *format)
			}
			return withOutput(c.stdout, *outFile, func(w io.Writer) error {
				return whatIfFolder(ctx, w, logs, p, open, opt, replay.DiffOptions{Verbose: *verbose})
			})
		}
		rec, err := replay.OpenRecording(logs[0], open)
		if err != nil {
			return err
		}
		wi, err := rec.WhatIf(ctx, p, opt)
		if err != nil {
			return err
		}
		return withOutput(c.stdout, *outFile, func(w io.Writer) error {
			do := replay.DiffOptions{Verbose: *verbose}
			switch *format {
			case "jsonl":
				return replay.WriteDiffJSONL(w, wi, do)
			case "html":
				// The page names the runs baseline and what-if itself.
				return timeline.WriteWhatIf(w,
					timeline.Run{Title: "recorded " + rec.Session.ID, Pack: rec.Pack, Result: rec.Result},
					timeline.Run{Title: *packDir, Pack: p, Result: wi.Result}, do)
			}
			return replay.WriteDiff(w, wi, do)
		})
	}
}

// withOutput runs write on stdout, or on the file named, which it creates.
func withOutput(stdout io.Writer, name string, write func(io.Writer) error) error {
	if name == "" {
		return write(stdout)
	}
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	return errors.Join(write(f), f.Close())
}

// whatIfModel is what answers a what-if's requests that the recording has
// no answer for: a replies file scripts the pack's model, a vendor or
// "live" is a real model watched as a dry run's is. done ends the watch.
func whatIfModel(ctx context.Context, c *cli, name, baseURL, model string, p *rules.Pack) (replay.WhatIfOptions, func(), error) {
	var opt replay.WhatIfOptions
	real, err := realModel(ctx, name, baseURL, model, p)
	switch {
	case err != nil:
		return opt, nil, err
	case real != nil:
		watch := newModelWatch(llm.ForPack(real, p, nil), c)
		opt.Model = watch
		return opt, watch.done, nil
	case name != "":
		if opt.Replies, err = readReplies(name); err != nil {
			return opt, nil, err
		}
	}
	return opt, func() {}, nil
}

// recordedPack opens the pack a log was recorded with: --base if given,
// else the log's own reference or the bundled copy, whichever still holds
// the recorded content. An edited folder no longer does, and a what-if
// needs the recording's effects, which only that content reproduces.
func recordedPack(base string) func(s *replay.Session) (*rules.Pack, error) {
	return func(s *replay.Session) (*rules.Pack, error) {
		if base != "" {
			return packRefs.Open(base)
		}
		var tried []string
		if s.PackRef != "" {
			if q, err := packRefs.Open(s.PackRef); err == nil && q.Hash == s.PackHash {
				return q, nil
			}
			tried = append(tried, s.PackRef)
		}
		if q, err := packRefs.OpenBundled(s.Pack); err == nil {
			if q.Hash == s.PackHash {
				return q, nil
			}
			tried = append(tried, "the bundled "+s.Pack)
		}
		where := "the log names no pack that holds it"
		if len(tried) > 0 {
			where = "other content is in " + strings.Join(tried, " and ") + " now"
		}
		return nil, fmt.Errorf("session %s was recorded with pack %s %.12s and %s; pass --base with that version of the pack (a folder checked out from version control, say)", s.ID, s.Pack, s.PackHash, where)
	}
}

func replayLog(stdout io.Writer, logFile, packDir string, verbose bool, format, archiveDir string) error {
	open := func(ref string) (*rules.Pack, error) {
		if packDir != "" {
			ref = packDir
		}
		if ref == "" {
			return nil, errors.New("the log names no pack; pass -pack")
		}
		return packRefs.Open(ref)
	}
	res, err := replay.File(logFile, open)
	if errors.Is(err, replay.ErrPackChanged) && packDir == "" {
		// In a checkout a bundled name opens the edited folder; a log
		// recorded with the binary's copy replays with that copy.
		bundled, berr := replay.File(logFile, func(ref string) (*rules.Pack, error) { return packRefs.OpenBundled(ref) })
		if berr == nil {
			fmt.Fprintln(stdout, "# replayed with the bundled copy of the pack, which the log was written with (not the folder under scenarios/)")
			res, err = bundled, nil
		}
	}
	if err != nil {
		return err
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	s := &res.Session
	fmt.Fprintf(w, "# session %s (candidate %q) pack %s %.12s, engine %s, seed %d, started %s\n",
		s.ID, s.CandidateID, s.Pack, s.PackHash, s.Engine, s.Seed, s.Start.Format("2006-01-02T15:04:05.000Z07:00"))
	if s.Tail != "" {
		fmt.Fprintf(w, "# ignored %s\n", s.Tail)
	}
	if verbose {
		if format == "jsonl" {
			err = record.WriteJSONL(w, res.Timeline, record.FormatOptions{})
		} else {
			err = record.WriteText(w, res.Timeline, record.FormatOptions{})
		}
		if err != nil {
			return err
		}
	}
	state := "live (unfinished)"
	if s.Ended {
		state = fmt.Sprintf("ended %s at %s", s.EndReason, rules.FormatClock(s.EndT))
	}
	fmt.Fprintf(w, "# %d inputs, %d effects, %s; replay ended=%v at %s; %d steps verified, %d unverified, %d differ\n",
		s.Inputs, res.Effects, state, res.Ended, rules.FormatClock(res.T), res.Verified, res.Unverified, len(res.Diffs))
	for _, d := range res.Diffs {
		fmt.Fprintf(w, "DIFF %s\n", d)
	}
	if s.Ended && !res.Ended {
		fmt.Fprintln(w, "DIFF the log says the session ended but the replay did not end it")
		w.Flush()
		return errors.New("the replay did not end a session the log says ended")
	}
	if len(res.Diffs) > 0 {
		w.Flush()
		return fmt.Errorf("%d step(s) replay differently: nondeterminism or a changed engine", len(res.Diffs))
	}
	if archiveDir != "" {
		switch {
		case !res.Ended:
			return errors.New("-archive: the session has not ended, so its files are not final")
		case len(res.Files) == 0:
			return errors.New("-archive: the session's pack declares no context files")
		}
		reason := s.EndReason
		if n := len(res.Timeline); n > 0 && res.Timeline[n-1].Type == engine.EffectSessionEnd {
			reason = res.Timeline[n-1].Reason // the engine's, as the server archives it
		}
		m := archive.Manifest{Session: s.ID, Pack: s.Pack, PackHash: s.PackHash, Engine: s.Engine, EndedMS: res.T, Reason: reason}
		dir, err := archive.Write(archiveDir, m, res.Files)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "# archived %s\n", dir)
	}
	return nil
}

// findLog is the session log arg names: the file itself, or in a folder
// (a data folder, or one a dry run's --record wrote) its newest log. The
// folder's lock file and archive are not logs.
func findLog(stderr io.Writer, arg string) (string, error) {
	st, err := os.Stat(arg)
	if errors.Is(err, fs.ErrNotExist) && filepath.Ext(arg) == ".done" {
		wal := strings.TrimSuffix(arg, ".done") + ".wal"
		if _, werr := os.Stat(wal); werr == nil {
			return "", fmt.Errorf("%s does not exist: the session has not ended (a client that leaves does not end it); its log is %s", arg, wal)
		}
	}
	if err != nil || !st.IsDir() {
		return arg, nil // replay.File says what is wrong with it
	}
	ents, err := os.ReadDir(arg)
	if err != nil {
		return "", err
	}
	var newest string
	var newestT time.Time
	n := 0
	for _, e := range ents {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || (ext != ".done" && ext != ".wal") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		n++
		if newest == "" || info.ModTime().After(newestT) || (info.ModTime().Equal(newestT) && e.Name() > filepath.Base(newest)) {
			newest, newestT = filepath.Join(arg, e.Name()), info.ModTime()
		}
	}
	switch n {
	case 0:
		return "", fmt.Errorf("%s holds no session log (ID.wal or ID.done)", arg)
	case 1:
	default:
		fmt.Fprintf(stderr, "# %s holds %d session logs; replaying the newest, %s\n", arg, n, filepath.Base(newest))
	}
	return newest, nil
}

// sessionLogs are the session logs arg names: the file itself, or every
// log in a folder, by name so the output is the same on every run.
func sessionLogs(arg string) ([]string, error) {
	st, err := os.Stat(arg)
	if err != nil || !st.IsDir() {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return []string{arg}, nil // replay says what is wrong with it
	}
	ents, err := os.ReadDir(arg)
	if err != nil {
		return nil, err
	}
	var logs []string
	for _, e := range ents {
		if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".done" || ext == ".wal") {
			logs = append(logs, filepath.Join(arg, e.Name()))
		}
	}
	if len(logs) == 0 {
		return nil, fmt.Errorf("%s holds no session log (ID.wal or ID.done)", arg)
	}
	return logs, nil
}

// whatIfFolder plays every session of p's pack in logs through p: one
// line per session, its effects counted as do compares them, then totals. A session recorded with p's content is
// verified instead, and one of another pack is skipped. A log that cannot
// be replayed is reported on its line and fails the command at the end.
func whatIfFolder(ctx context.Context, w io.Writer, logs []string, p *rules.Pack, open func(*replay.Session) (*rules.Pack, error), opt replay.WhatIfOptions, do replay.DiffOptions) error {
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	fmt.Fprintf(bw, "# what-if of %d session log(s) through pack %s %.12s\n", len(logs), p.Name, p.Hash)
	var (
		ran, verified, skipped, failed         int
		nudgedBefore, nudgedAfter, fewer, more int
		ended, later, reused, asked            int
	)
	for _, path := range logs {
		name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		s, err := replay.ReadSession(path)
		if err != nil {
			failed++
			fmt.Fprintf(bw, "%s  error: %v\n", name, err)
			continue
		}
		switch {
		case s.Pack != p.Name:
			skipped++
			fmt.Fprintf(bw, "%s  skipped: pack %s\n", name, s.Pack)
			continue
		case s.PackHash == p.Hash:
			res, err := replay.File(path, func(string) (*rules.Pack, error) { return p, nil })
			if err == nil && !res.OK() {
				err = fmt.Errorf("%d step(s) replay differently", len(res.Diffs))
			}
			if err != nil {
				failed++
				fmt.Fprintf(bw, "%s  error: %v\n", name, err)
				continue
			}
			verified++
			fmt.Fprintf(bw, "%s  recorded with this content: %d steps verified\n", name, res.Verified)
			continue
		}
		rec, err := replay.OpenRecording(path, open)
		var wi *replay.WhatIf
		if err == nil {
			wi, err = rec.WhatIf(ctx, p, opt)
		}
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			failed++
			fmt.Fprintf(bw, "%s  error: %v\n", name, err)
			continue
		}
		ran++
		sum := wi.Summary(do)
		fmt.Fprintf(bw, "%s  %s\n", name, sum.Line())
		for _, n := range wi.Notes {
			fmt.Fprintf(bw, "%s  note: %s\n", name, n)
		}
		if sum.Nudges[0] > 0 {
			nudgedBefore++
		}
		if sum.Nudges[1] > 0 {
			nudgedAfter++
		}
		switch {
		case sum.Nudges[1] < sum.Nudges[0]:
			fewer++
		case sum.Nudges[1] > sum.Nudges[0]:
			more++
		}
		if sum.End[0] != sum.End[1] {
			ended++
		}
		if sum.AnchorLateMS[1] > sum.AnchorLateMS[0] {
			later++
		}
		reused += sum.Reused
		asked += sum.Asked
	}
	fmt.Fprintf(bw, "# %d of %d sessions now get nudged (%d did); %d get fewer nudges, %d more\n", nudgedAfter, ran, nudgedBefore, fewer, more)
	fmt.Fprintf(bw, "# %d end another way; %d have an anchor later than before\n", ended, later)
	fmt.Fprintf(bw, "# model answers: %d reused from the recordings, %d asked anew\n", reused, asked)
	fmt.Fprintf(bw, "# %d played through the pack, %d verified, %d of other packs skipped, %d failed\n", ran, verified, skipped, failed)
	if failed > 0 {
		bw.Flush()
		return fmt.Errorf("%d of %d session log(s) could not be replayed", failed, len(logs))
	}
	return nil
}
