// Command baton runs interview rule packs: dry runs on a simulated clock,
// pack tests, and (with serve) live sessions.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/packs"
	"github.com/batonhq/baton/scenarios"
)

// usageText is the command's help; %s lists the bundled packs.
const usageText = `baton runs multi-agent interview rule packs.

Usage:
  baton dryrun [flags] PACK     play a whole session on a simulated clock
  baton test [flags] PACK...    run a pack's timeline tests
  baton check PACK...           load and compile packs, listing every problem
  baton schema                  print the JSON Schema of the pack format
  baton serve --data DIR        host live sessions (WebSocket, DayOne HTTP, metrics)
  baton replay LOG              re-run a recorded session and report differences
  baton version                 print the engine version

PACK is the name of a bundled pack (%s), or a folder holding pack.yaml.
A bare name is the bundled pack even where a folder of that name exists;
write ./NAME for the folder. A path never falls back to a bundled pack.
Run "baton COMMAND -h" for a command's flags.
`

// packRefs resolves every PACK argument (docs: runtime/packs).
var packRefs = &packs.Resolver{Bundled: scenarios.FS}

func usage() string { return fmt.Sprintf(usageText, strings.Join(packRefs.Names(), ", ")) }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// errUsage marks errors whose message already explains correct usage;
// errHelp is -h, which is not a failure.
var (
	errUsage = errors.New("usage")
	errHelp  = errors.New("help")
)

func usageErr(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return errHelp
	}
	return errUsage
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return 2
	}
	var err error
	switch args[0] {
	case "dryrun":
		err = cmdDryrun(ctx, args[1:], stdout, stderr)
	case "test":
		err = cmdTest(ctx, args[1:], stdout, stderr)
	case "check":
		err = cmdCheck(args[1:], stdout)
	case "serve":
		err = cmdServe(ctx, args[1:], stdout, stderr)
	case "replay":
		err = cmdReplay(ctx, args[1:], stdout, stderr)
	case "schema":
		var b []byte
		if b, err = rules.JSONSchema(); err == nil {
			_, err = stdout.Write(append(b, '\n'))
		}
	case "version":
		fmt.Fprintln(stdout, version())
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage())
	default:
		fmt.Fprintf(stderr, "baton: unknown command %q\n\n%s", args[0], usage())
		return 2
	}
	if errors.Is(err, errHelp) {
		return 0
	}
	if err != nil {
		if !errors.Is(err, errUsage) {
			fmt.Fprintf(stderr, "baton %s: %v\n", args[0], err)
		}
		return 1
	}
	return 0
}
