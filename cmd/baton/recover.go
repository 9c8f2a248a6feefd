package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/runtime/service"
)

var recoverCommand = &command{
	name: "recover", operands: "DATA", min: 1, max: 1,
	summary: "check a data directory, and retire damaged sessions",
	about: `Opens the data directory DATA as baton serve does at start (the server must
be stopped): the journal is redone, damage in it is contained to the
sessions it touches, and the journal is kept under DATA/damaged/ when it is
damaged. Then every session log is read back. It prints what it found and
exits 1 while any session is damaged. A damaged session fails at every
start until it is retired: --retire ID keeps a copy of its log under
DATA/damaged/, removes it and frees the id. docs/journal.md ("When the
disk damages a log") says what to do.`,
	flags: recoverFlags,
}

func recoverFlags(fl *flag.FlagSet) runFunc {
	retire := fl.String("retire", "", "comma-separated `IDS` of damaged sessions to retire (a copy of each log is kept)")
	return func(ctx context.Context, c *cli, args []string) error {
		var ids []string
		for id := range strings.SplitSeq(*retire, ",") {
			if id = strings.TrimSpace(id); id != "" {
				ids = append(ids, id)
			}
		}
		rep, err := service.InspectDataDir(args[0], ids, time.Now())
		if rep == nil {
			return err
		}
		r := rep.Redo
		if r.Segments > 0 {
			fmt.Fprintf(c.stdout, "journal: %d segments redone, %d entries applied to %d sessions\n", r.Segments, r.Entries, r.Sessions)
		}
		if r.Tail != nil {
			fmt.Fprintf(c.stdout, "journal: the last batch was torn by a crash and cleared (never acknowledged): %s\n", r.Tail)
		}
		for _, d := range r.Journal {
			fmt.Fprintf(c.stdout, "journal damaged: %s\n", d)
		}
		for _, ev := range r.Evidence {
			fmt.Fprintf(c.stdout, "kept: %s\n", ev)
		}
		if r.LedgerLost != "" {
			fmt.Fprintf(c.stdout, "ledger: neither copy reads back (%s); it is written again at the next checkpoint\n", r.LedgerLost)
		}
		fmt.Fprintf(c.stdout, "%d live sessions, %d finished\n", rep.Live, rep.Finished)
		for _, id := range slices.Sorted(maps.Keys(rep.Retired)) {
			fmt.Fprintf(c.stdout, "retired %s: its log is kept as %s\n", id, rep.Retired[id])
		}
		damaged := slices.Sorted(maps.Keys(rep.Damaged))
		for _, id := range damaged {
			fmt.Fprintf(c.stdout, "damaged %s: %s\n", id, rep.Damaged[id])
		}
		if err != nil {
			return err
		}
		if len(damaged) > 0 {
			fmt.Fprintf(c.stderr, "baton recover: %d damaged sessions fail until retired: baton recover --retire %s %s\n", len(damaged), strings.Join(damaged, ","), args[0])
			return errReported
		}
		return nil
	}
}
