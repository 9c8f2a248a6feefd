package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/fake"
	"github.com/batonhq/baton/runtime/wal"
)

func cmdReplay(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fl := newFlags("replay", "Usage: baton replay [flags] LOG\n\nRe-runs a recorded session (DIR/ID.wal or DIR/ID.done) through the engine offline and\nreports every effect that differs from what was recorded. Exits 1 on any difference.", stderr)
	packDir := fl.String("pack", "", "pack folder or bundled name to replay with (default: the one the log names)")
	verbose := fl.Bool("v", false, "print the replayed timeline")
	format := fl.String("format", "text", "timeline format with -v: text or jsonl")
	if err := parseFlags(fl, args, 1); err != nil {
		return err
	}
	if err := checkFormat(*format); err != nil {
		return err
	}
	rec, err := wal.ReadFile(fl.Arg(0))
	if err != nil {
		return err
	}
	ref := rec.Header.PackRef
	if *packDir != "" {
		ref = *packDir
	}
	p, err := openReplayPack(ref)
	if err != nil {
		return err
	}
	if err := wal.CheckHeader(&rec.Header, p); err != nil {
		return err
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	h := &rec.Header
	fmt.Fprintf(w, "# session %s (candidate %q) pack %s %.12s, engine %s, seed %d, started %s\n",
		h.SessionID, h.CandidateID, h.Pack, h.PackHash, h.Engine, h.Options.Seed, h.StartWall.Format("2006-01-02T15:04:05.000Z07:00"))
	if rec.Tail != nil {
		fmt.Fprintf(w, "# ignored %v\n", rec.Tail)
	}
	voice := fake.NewVoice(p)
	var recs []dryrun.Record
	res, err := wal.Replay(p, rec, func(_ uint64, _ *engine.Input, effects []engine.Effect, _ error) {
		if !*verbose {
			return
		}
		for _, e := range effects {
			r := dryrun.Record{Effect: e}
			if e.Type == engine.EffectAgentMessage {
				r.SpeechMS = voice.Duration(e.Agent, e.Text)
			}
			recs = append(recs, r)
		}
	})
	if err != nil {
		return err
	}
	if *verbose {
		if *format == "jsonl" {
			err = dryrun.WriteJSONL(w, recs, dryrun.FormatOptions{})
		} else {
			err = dryrun.WriteText(w, recs, dryrun.FormatOptions{})
		}
		if err != nil {
			return err
		}
	}
	state := "live (unfinished)"
	if rec.End != nil {
		state = fmt.Sprintf("ended %s at %s", rec.End.Reason, rules.FormatClock(rec.End.T))
	}
	fmt.Fprintf(w, "# %d inputs, %d effects, %s; replay ended=%v at %s; %d steps verified, %d unverified, %d differ\n",
		len(rec.Inputs), res.Effects, state, res.Session.Ended(), rules.FormatClock(res.Session.Now()),
		len(rec.Inputs)-res.Unverified, res.Unverified, len(res.Mismatches))
	for i := range res.Mismatches {
		fmt.Fprintf(w, "DIFF %s\n", res.Mismatches[i].String())
	}
	if rec.End != nil && !res.Session.Ended() {
		fmt.Fprintln(w, "DIFF the log says the session ended but the replay did not end it")
		w.Flush()
		return errors.New("the replay did not end a session the log says ended")
	}
	if len(res.Mismatches) > 0 {
		w.Flush()
		return fmt.Errorf("%d step(s) replay differently: nondeterminism or a changed engine", len(res.Mismatches))
	}
	return nil
}

func openReplayPack(ref string) (*rules.Pack, error) {
	if ref == "" {
		return nil, errors.New("the log names no pack; pass -pack")
	}
	return packRefs.Open(ref)
}
