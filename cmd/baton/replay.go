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
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/replay"
)

var replayCommand = &command{
	name: "replay", operands: "LOG", min: 1, max: 1,
	summary: "re-run a recorded session and report differences",
	about: `Re-runs a recorded session through the engine offline and reports every effect
that differs from what was recorded; exits 1 on any difference. LOG is a
session log (DATA/ID.wal while the session is live or was left unfinished,
DATA/ID.done once it ended) or a folder holding one, such as the folder a dry
run's --record wrote.`,
	flags: replayFlags,
}

func replayFlags(fl *flag.FlagSet) runFunc {
	packDir := fl.String("pack", "", "pack folder or bundled name to replay with (default: the one the log names)")
	verbose := fl.Bool("v", false, "print the replayed timeline")
	format := fl.String("format", "text", "timeline format with -v: text or jsonl")
	archiveDir := fl.String("archive", "", "write the ended session's context files as an archive in this folder (as baton serve does at the end)")
	return func(ctx context.Context, c *cli, args []string) error {
		if *format != "text" && *format != "jsonl" {
			return usageError("--format must be text or jsonl, not %q", *format)
		}
		logFile, err := findLog(c.stderr, args[0])
		if err != nil {
			return err
		}
		return replayLog(c.stdout, logFile, *packDir, *verbose, *format, *archiveDir)
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
			err = dryrun.WriteJSONL(w, res.Timeline, dryrun.FormatOptions{})
		} else {
			err = dryrun.WriteText(w, res.Timeline, dryrun.FormatOptions{})
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
