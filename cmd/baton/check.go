package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"path"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/packtest"
)

var checkCommand = &command{
	name: "check", operands: "PACK...", min: 1, max: -1,
	summary: "load and compile packs, their tests and fixtures, listing every problem",
	about: `Loads and compiles each pack, then reads its tests/ and every fixture the pack
or its tests name (candidate events, scripted replies), and lists every problem
as file:line:col with a suggested fix. Warnings are things that load but are
probably mistakes; --strict makes them fail too.`,
	flags: checkFlags,
}

func checkFlags(fl *flag.FlagSet) runFunc {
	strict := fl.Bool("strict", false, "fail on warnings as well as errors")
	return func(_ context.Context, c *cli, args []string) error {
		failed := 0
		for _, ref := range args {
			if !checkOne(c, ref, *strict) {
				failed++
			}
		}
		if failed > 0 {
			fmt.Fprintf(c.stderr, "baton check: %d of %d pack(s) failed\n", failed, len(args))
			return errReported
		}
		return nil
	}
}

// checkOne checks one pack and prints what it found; it reports whether
// the pack passed.
func checkOne(c *cli, ref string, strict bool) bool {
	p, err := packRefs.Open(ref)
	if err != nil {
		fmt.Fprintln(c.stdout, err)
		return false
	}
	for _, w := range p.Warnings {
		fmt.Fprintf(c.stdout, "%s %s\n", c.paint(yellow, "warning:"), packFiles(p, rules.ErrorList{w}))
	}
	if err := packtest.Check(p); err != nil {
		var el rules.ErrorList
		if errors.As(err, &el) {
			fmt.Fprintf(c.stdout, "pack %s: its tests and fixtures have %d problem(s):\n%v\n", ref, len(el), packFiles(p, el))
		} else {
			fmt.Fprintf(c.stdout, "pack %s: %v\n", ref, err)
		}
		return false
	}
	if strict && len(p.Warnings) > 0 {
		fmt.Fprintf(c.stdout, "%s: %d warning(s), failed under --strict\n", ref, len(p.Warnings))
		return false
	}
	fmt.Fprintf(c.stdout, "%s: %s (%s; %d roles, %d anchors, %d windows, %d rules, %d tests)\n", ref, c.paint(green, "ok"),
		packSource(p), len(p.Roles), len(p.Timeline.Anchors), len(p.Timeline.Windows), len(p.Rules), countTests(p))
	return true
}

// packFiles names the files of el as a reader finds them: under the
// pack's folder, or under the bundled pack's name.
func packFiles(p *rules.Pack, el rules.ErrorList) rules.ErrorList {
	dir := p.Dir
	if dir == "" {
		dir = p.Name + " (bundled)"
	}
	out := make(rules.ErrorList, len(el))
	for i, e := range el {
		c := *e
		if c.Pos.File != "" {
			c.Pos.File = path.Join(dir, c.Pos.File)
		}
		out[i] = &c
	}
	return out
}

func countTests(p *rules.Pack) int {
	ents, err := fs.ReadDir(p.FS, packtest.Dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if !e.IsDir() && (path.Ext(e.Name()) == ".yaml" || path.Ext(e.Name()) == ".yml") {
			n++
		}
	}
	return n
}

// printWarnings shows a pack's warnings on stderr, for the commands that
// run a pack: a misspelt trigger should not be silent there either.
func printWarnings(c *cli, p *rules.Pack) {
	for _, w := range p.Warnings {
		fmt.Fprintf(c.stderr, "%s %s\n", c.paint(yellow, "warning:"), packFiles(p, rules.ErrorList{w}))
	}
}
