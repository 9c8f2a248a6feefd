package main

import (
	"context"
	"flag"
	"fmt"
	"regexp"

	"github.com/batonhq/baton/rules"
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
			results, name := testPack(c, ref, opts, *update)
			if text && len(results) == 1 && results[0].File == "" && results[0].Err != nil {
				return results[0].Err // the pack itself: nothing ran
			}
			suites = append(suites, packtest.Suite{Name: name, Results: results})
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
					fmt.Fprintf(c.stdout, "%s %s/%s\n%v\n", c.paint(red, "FAIL"), name, r.Name, r.Err)
				case r.Updated:
					passed++
					fmt.Fprintf(c.stdout, "%s   %s/%s (golden updated)\n", c.paint(green, "ok"), name, r.Name)
				default:
					passed++
					fmt.Fprintf(c.stdout, "%s   %s/%s\n", c.paint(green, "ok"), name, r.Name)
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
		switch {
		case failed > 0:
			return fmt.Errorf("%d test(s) failed", failed)
		case passed == 0 && opts.Run != nil:
			return fmt.Errorf("no test matches --run %s", opts.Run)
		}
		return nil
	}
}

// testPack runs one pack's tests. A pack that does not open, or whose
// tests cannot run, is one failed result, so a report for CI still lists
// every pack asked for.
func testPack(c *cli, ref string, opts packtest.Options, update bool) ([]packtest.Result, string) {
	fail := func(err error) []packtest.Result { return []packtest.Result{{Name: "(pack)", Err: err}} }
	p, err := packRefs.Open(ref)
	if err != nil {
		return fail(err), ref
	}
	if update && p.Dir == "" {
		return fail(fmt.Errorf("--update: %s is the bundled copy, which has no folder to rewrite; name the pack's folder", ref)), p.Name
	}
	printWarnings(c, p)
	opts.WriteDir = p.Dir
	results, err := packtest.Run(p, opts)
	if err != nil {
		return fail(err), p.Name
	}
	for i := range results {
		// Name files as the reader finds them, from the working directory.
		results[i].Err = inPack(p, results[i].Err)
	}
	return results, p.Name
}

// inPack names the files of a pack's errors from the working directory.
func inPack(p *rules.Pack, err error) error {
	el, ok := err.(rules.ErrorList)
	if !ok || p.Dir == "" {
		return err
	}
	return packFiles(p, el)
}
