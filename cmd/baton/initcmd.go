package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"

	"github.com/batonhq/baton/runtime/scaffold"
)

var initCommand = &command{
	name: "init", operands: "NAME", min: 1, max: 1,
	summary: "scaffold a working pack to start from",
	about: `Writes a new pack in folder NAME (which must not exist, or be empty): two
roles, an anchor, a window, a silence ladder, a guardrail script, a dry-run
candidate and one timeline test. It passes baton check and baton test as
written; every section says what it does and where docs/packs.md explains it.`,
	flags: func(fl *flag.FlagSet) runFunc {
		name := fl.String("name", "", "the pack's name (default: the folder's name)")
		return func(_ context.Context, c *cli, args []string) error {
			dir := args[0]
			if *name == "" {
				abs, err := filepath.Abs(dir)
				if err != nil {
					return err
				}
				*name = filepath.Base(abs)
				if err := scaffold.CheckName(*name); err != nil {
					return fmt.Errorf("%w; or keep the folder and pass --name", err)
				}
			}
			files, err := scaffold.Write(dir, *name)
			if err != nil {
				return err
			}
			for _, f := range files {
				fmt.Fprintf(c.stdout, "wrote %s\n", filepath.Join(dir, f))
			}
			ref := dir
			if !filepath.IsAbs(ref) && filepath.Dir(ref) == "." {
				ref = "./" + ref // a bare name could be a bundled pack
			}
			fmt.Fprintf(c.stdout, "\nnext:\n  baton dryrun %s\n  baton test %s\n  baton check %s\n", ref, ref, ref)
			return nil
		}
	},
}
