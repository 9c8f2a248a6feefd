package main

import (
	"context"
	"flag"

	"github.com/batonhq/baton/runtime/describe"
)

var describeCommand = &command{
	name: "describe", operands: "PACK", min: 1, max: 1,
	summary: "print what a pack accepts and produces: inputs, events, tools, effects, roles",
	about: `Derives from the compiled pack what a client needs to drive it: the session
inputs it declares with their limits, the candidate event types it accepts and
the data fields their handling reads, the tools its client runs (with their
parameter schemas and the workspace's answers), the tools its rules answer, the
effects it can produce and its roles. --format json prints the stable JSON form
that baton serve also answers at GET /v1/packs/{name}/describe.`,
	flags: describeFlags,
}

func describeFlags(fl *flag.FlagSet) runFunc {
	format := fl.String("format", "text", "output format: text or json")
	return func(_ context.Context, c *cli, args []string) error {
		if *format != "text" && *format != "json" {
			return usageError("--format is text or json, not %q", *format)
		}
		p, err := packRefs.Open(args[0])
		if err != nil {
			return err
		}
		d := describe.Describe(p)
		if *format == "json" {
			return describe.WriteJSON(c.stdout, d)
		}
		return describe.WriteText(c.stdout, d)
	}
}
