package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"regexp"
	"strings"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/packtest"
)

var testCommand = &command{
	name: "test", operands: "PACK...", min: 1, max: -1,
	summary: "run packs' timeline tests",
	about: `Runs the timeline tests in each pack's tests/ folder (format: docs/testing.md).
With --update, golden timelines are rewritten in the pack's folder: review
them with git diff. A bundled pack has no folder to rewrite; from a
checkout, its name opens scenarios/NAME, which does.
With --cover, each pack's coverage follows the results: every rule,
anchor, window, routing branch, silence and confidence step, guardrail,
tool, job and end rule the pack declares, with where it is written and
the tests that exercised it. --cover-min N fails a pack covered under N%.`,
	flags: testFlags,
}

func testFlags(fl *flag.FlagSet) runFunc {
	update := fl.Bool("update", false, "rewrite golden timelines (review them with git diff)")
	runRE := fl.String("run", "", "run only the tests whose name (or file name) matches this regular expression")
	format := fl.String("format", "text", "report: text, json or junit (JUnit XML, for CI systems)")
	cover := fl.Bool("cover", false, "report which of each pack's rules, anchors, windows, routes, steps, guardrails, tools, jobs and end rules the tests exercised")
	coverMin := fl.Float64("cover-min", 0, "fail a pack whose tests cover less than this percentage (implies --cover)")
	return func(_ context.Context, c *cli, args []string) error {
		if *format != "text" && *format != "json" && *format != "junit" {
			return usageError("--format must be text, json or junit, not %q", *format)
		}
		// Written so NaN, which compares false with everything, fails
		// too: it would otherwise pass and turn coverage off.
		if !(*coverMin >= 0 && *coverMin <= 100) {
			return usageError("--cover-min must be a percentage from 0 to 100, not %g", *coverMin)
		}
		withCover := *cover || *coverMin > 0
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
		var packs []*rules.Pack // each suite's, nil for one that did not open
		for _, ref := range args {
			results, name, p := testPack(c, ref, opts, *update)
			if text && len(results) == 1 && results[0].File == "" && results[0].Err != nil {
				return results[0].Err // the pack itself: nothing ran
			}
			suite := packtest.Suite{Name: name, Results: results}
			if withCover && p != nil {
				rep, err := packtest.Coverage(p, results)
				if err != nil {
					return err
				}
				suite.Coverage = &rep
			}
			suites = append(suites, suite)
			packs = append(packs, p)
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
			for i := range suites {
				if suites[i].Coverage != nil {
					writeCoverage(c, packs[i], suites[i].Coverage, *coverMin)
				}
			}
		}
		if err != nil {
			return err
		}
		var errs []error
		switch {
		case failed > 0:
			errs = append(errs, fmt.Errorf("%d test(s) failed", failed))
		case passed == 0 && opts.Run != nil:
			errs = append(errs, fmt.Errorf("no test matches --run %s", opts.Run))
		}
		for i := range suites {
			if r := suites[i].Coverage; r != nil && r.Below(*coverMin) {
				missed := r.UncoveredNames(func(pos rules.Pos) string { return packPos(packs[i], pos) })
				errs = append(errs, fmt.Errorf("pack %s is %s covered, under --cover-min %g%%; not covered:\n  %s",
					r.Pack, r.PercentText(), *coverMin, strings.Join(missed, "\n  ")))
			}
		}
		return errors.Join(errs...)
	}
}

// writeCoverage prints a pack's coverage table: the share covered, then
// every item by kind, each with where the pack declares it and the tests
// that exercised it. The share is red when it is under min.
func writeCoverage(c *cli, p *rules.Pack, r *packtest.Report, min float64) {
	pc := c.paint(green, r.PercentText())
	if r.Below(min) {
		pc = c.paint(red, r.PercentText())
	}
	fmt.Fprintf(c.stdout, "\ncoverage: %s %s of %d items (%d covered)\n", r.Pack, pc, r.Total(), r.Covered)
	nameW, posW := 0, 0
	for _, it := range r.Items {
		nameW = max(nameW, len(itemLabel(it.CoverItem)))
		posW = max(posW, len(packPos(p, it.Pos)))
	}
	for _, kind := range rules.CoverKinds {
		var items []packtest.ItemCoverage
		covered := 0
		for _, it := range r.Items {
			if it.Kind == kind {
				items = append(items, it)
				if it.Covered() {
					covered++
				}
			}
		}
		if len(items) == 0 {
			continue
		}
		fmt.Fprintf(c.stdout, "  %s %d/%d\n", c.paint(bold, string(kind)), covered, len(items))
		for _, it := range items {
			// Padded before painting, so the escapes never skew the columns.
			mark, tests := c.paint(red, fmt.Sprintf("%-7s", "MISSED")), ""
			if it.Covered() {
				mark, tests = c.paint(green, fmt.Sprintf("%-7s", "covered")), testNames(it.Tests)
			}
			line := fmt.Sprintf("    %s  %-*s  %-*s  %s", mark, nameW, itemLabel(it.CoverItem), posW, packPos(p, it.Pos), tests)
			fmt.Fprintln(c.stdout, strings.TrimRight(line, " "))
		}
	}
}

// itemLabel is an item as its kind's heading lists it: its id, or "step
// 2" for a numbered step.
func itemLabel(it rules.CoverItem) string {
	return strings.TrimPrefix(it.Name(), string(it.Kind)+" ")
}

// testNames says which tests exercised an item: their names when one or
// two did (an item only one test reaches is the one to watch), else how
// many, so a row stays one line; the JSON report lists them all.
func testNames(tests []string) string {
	if len(tests) <= 2 {
		return strings.Join(tests, ", ")
	}
	return fmt.Sprintf("%d tests", len(tests))
}

// packPos names where a pack declares something from the working
// directory, as the pack's errors are named.
func packPos(p *rules.Pack, pos rules.Pos) string {
	el := packFiles(p, rules.ErrorList{{Pos: pos}})
	return el[0].Pos.String()
}

// testPack runs one pack's tests. A pack that does not open, or whose
// tests cannot run, is one failed result, so a report for CI still lists
// every pack asked for.
func testPack(c *cli, ref string, opts packtest.Options, update bool) ([]packtest.Result, string, *rules.Pack) {
	fail := func(err error) []packtest.Result { return []packtest.Result{{Name: "(pack)", Err: err}} }
	p, err := packRefs.Open(ref)
	if err != nil {
		return fail(err), ref, nil
	}
	if update && p.Dir == "" {
		return fail(fmt.Errorf("--update: %s is the bundled copy, which has no folder to rewrite; name the pack's folder", ref)), p.Name, nil
	}
	printWarnings(c, p)
	opts.WriteDir = p.Dir
	results, err := packtest.Run(p, opts)
	if err != nil {
		// Nothing ran, so a coverage of 0% would only repeat the failure.
		return fail(err), p.Name, nil
	}
	for i := range results {
		// Name files as the reader finds them, from the working directory.
		results[i].Err = inPack(p, results[i].Err)
	}
	return results, p.Name, p
}

// inPack names the files of a pack's errors from the working directory.
func inPack(p *rules.Pack, err error) error {
	el, ok := err.(rules.ErrorList)
	if !ok || p.Dir == "" {
		return err
	}
	return packFiles(p, el)
}
