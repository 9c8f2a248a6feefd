package main

import (
	"context"
	"flag"
	"fmt"
	"regexp"

	"github.com/batonhq/baton/runtime/packtest"
)

var testCommand = &command{
	name: "test", operands: "PACK...", min: 1, max: -1,
	summary: "run packs' timeline tests",
	about: `Runs the timeline tests in each pack's tests/ folder (format: docs/testing.md).
With --update, golden timelines are rewritten in the pack's folder: review
them with git diff. A bundled pack has no folder to rewrite; from a
checkout, its name opens scenarios/NAME, which does.`,
	flags: testFlags,
}

func testFlags(fl *flag.FlagSet) runFunc {
	update := fl.Bool("update", false, "rewrite golden timelines (review them with git diff)")
	runRE := fl.String("run", "", "run only the tests whose name (or file name) matches this regular expression")
	format := fl.String("format", "text", "report: text, json or junit (JUnit XML, for CI systems)")
	return func(_ context.Context, c *cli, args []string) error {
		if *format != "text" && *format != "json" && *format != "junit" {
			return usageError("--format must be text, json or junit, not %q", *format)
		}
		opts := packtest.Options{Update: *update}
		if *runRE != "" {
			re, err := regexp.Compile(*runRE)
			if err != nil {
				return usageError("--run: %v", err)
			}
			opts.Run = re
		}
		var err error
		passed, failed := 0, 0
		var suites []packtest.Suite
		text := *format == "text"
		for _, ref := range args {
			p, err := packRefs.Open(ref)
			if err != nil {
				return err
			}
			if *update && p.Dir == "" {
				return fmt.Errorf("--update: %s is the bundled copy, which has no folder to rewrite; name the pack's folder (./%s or a path)", ref, ref)
			}
			o := opts
			o.WriteDir = p.Dir
			results, err := packtest.Run(p, o)
			if err != nil {
				return err
			}
			suites = append(suites, packtest.Suite{Name: p.Name, Results: results})
			for _, r := range results {
				switch {
				case !text:
					if r.Err != nil {
						failed++
					} else {
						passed++
					}
				case r.Err != nil:
					failed++
					fmt.Fprintf(c.stdout, "%s %s/%s\n%v\n", c.paint(red, "FAIL"), p.Name, r.Name, r.Err)
				case r.Updated:
					passed++
					fmt.Fprintf(c.stdout, "%s   %s/%s (golden updated)\n", c.paint(green, "ok"), p.Name, r.Name)
				default:
					passed++
					fmt.Fprintf(c.stdout, "%s   %s/%s\n", c.paint(green, "ok"), p.Name, r.Name)
				}
			}
		}
		switch *format {
		case "json":
			err = packtest.WriteJSON(c.stdout, suites)
		case "junit":
			err = packtest.WriteJUnit(c.stdout, "baton", suites)
		default:
			fmt.Fprintf(c.stdout, "%d passed, %d failed\n", passed, failed)
		}
		if err != nil {
			return err
		}
		if failed > 0 {
			return fmt.Errorf("%d test(s) failed", failed)
		}
		return nil
	}
}
