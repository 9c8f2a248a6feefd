package main

import (
	"context"
	"fmt"
	"io"

	"github.com/batonhq/baton/runtime/packtest"
)

func cmdTest(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fl := newFlags("test", "Usage: baton test [-update] PACK...\n\nRuns the timeline tests in each pack's tests/ folder.", stderr)
	update := fl.Bool("update", false, "rewrite golden timelines (review them with git diff)")
	if err := parseFlags(fl, args, -1); err != nil {
		return err
	}
	passed, failed := 0, 0
	for _, dir := range fl.Args() {
		p, err := packRefs.Open(dir)
		if err != nil {
			return err
		}
		results, err := packtest.Run(p, packtest.Options{Update: *update, WriteDir: p.Dir})
		if err != nil {
			return err
		}
		for _, r := range results {
			switch {
			case r.Err != nil:
				failed++
				fmt.Fprintf(stdout, "FAIL %s/%s\n%v\n", p.Name, r.Name, r.Err)
			case r.Updated:
				passed++
				fmt.Fprintf(stdout, "ok   %s/%s (golden updated)\n", p.Name, r.Name)
			default:
				passed++
				fmt.Fprintf(stdout, "ok   %s/%s\n", p.Name, r.Name)
			}
		}
	}
	fmt.Fprintf(stdout, "%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		return fmt.Errorf("%d test(s) failed", failed)
	}
	return nil
}
