// Command baton runs interview rule packs: dry runs on a simulated clock,
// pack tests, and (with serve) live sessions.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/packs"
	"github.com/batonhq/baton/scenarios"
	"golang.org/x/term"
)

// packRefs resolves every PACK argument (docs: runtime/packs). From a
// checkout of the packs, a bundled name opens the folder being edited.
var packRefs = &packs.Resolver{Bundled: scenarios.FS, Workspace: "scenarios"}

// A command is one subcommand: how it is written, what it says about
// itself, and its flags. Help, completion and dispatch all read this one
// list, so a command or flag added here is documented and completed
// everywhere.
type command struct {
	name     string
	operands string // as the synopsis writes them: "PACK", "[PACK...]"
	summary  string // one line for the command list
	about    string // the paragraph -h prints above the flags
	// min and max bound the number of operands; max -1 is any number.
	min, max int
	// serves marks a command that runs until stopped; every other one is
	// a short process that holds a few megabytes at most.
	serves bool
	// gcPercent, when set, is the command's GOGC unless the environment
	// sets one; a short command's is 400 (main).
	gcPercent int
	// flags declares the command's flags on fl and returns what runs it.
	flags func(fl *flag.FlagSet) runFunc
}

type runFunc func(ctx context.Context, c *cli, args []string) error

// cli is where a command's output goes and what the terminal can do.
type cli struct {
	stdout, stderr io.Writer
	// tty says stderr is a terminal: progress may be drawn there.
	tty bool
	// color says stdout may carry ANSI colour (a terminal, NO_COLOR unset).
	color bool
}

// commands is every subcommand, in the order help lists them.
var commands []*command

func init() {
	commands = []*command{
		dryrunCommand, testCommand, checkCommand, describeCommand, initCommand, schemaCommand,
		serveCommand, replayCommand, recoverCommand, versionCommand, completionCommand, sweepCommand,
	}
}

func lookupCommand(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

func commandNames() []string {
	out := make([]string, len(commands))
	for i, c := range commands {
		out[i] = c.name
	}
	return out
}

func usage(w io.Writer) {
	fmt.Fprint(w, "baton runs multi-agent interview rule packs.\n\nUsage:\n")
	width := 0
	for _, c := range commands {
		width = max(width, len(c.name)+len(c.operands)+1)
	}
	for _, c := range commands {
		fmt.Fprintf(w, "  baton %-*s  %s\n", width, c.name+" "+c.operands, c.summary)
	}
	fmt.Fprintf(w, `
PACK is a bundled pack (%s) or a folder holding pack.yaml.
A path (with a slash, or . or ..) is always that folder. A bare name is the
bundled pack, except that from a checkout holding scenarios/NAME/pack.yaml it
is that folder, the copy being edited; the header says which was run. Any
other bare name is a folder in the working directory.

Flags go before or after operands, as -name or --name.
Run "baton COMMAND -h" for a command's flags, "baton --version" for versions.
`, strings.Join(packRefs.Names(), ", "))
}

func commandHelp(w io.Writer, c *command, fl *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: baton %s [flags] %s\n\n%s\n", c.name, c.operands, c.about)
	has := false
	fl.VisitAll(func(*flag.Flag) { has = true })
	if has {
		fmt.Fprint(w, "\nFlags:\n")
		printFlags(w, fl)
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := &cli{stdout: os.Stdout, stderr: os.Stderr, tty: isTerminal(os.Stderr)}
	c.color = isTerminal(os.Stdout) && os.Getenv("NO_COLOR") == ""
	if len(os.Args) > 1 {
		if cmd := lookupCommand(os.Args[1]); cmd != nil && !cmd.serves && os.Getenv("GOGC") == "" {
			// A short command's heap starts at 4 MiB, so loading a pack ran
			// the collector several times over for garbage it never needed
			// to reclaim; a server keeps Go's default.
			debug.SetGCPercent(cmp.Or(cmd.gcPercent, 400))
		}
	}
	os.Exit(c.run(ctx, os.Args[1:]))
}

// errUsage marks errors that come with the command's synopsis.
var errUsage = errors.New("usage")

// run runs one command line and returns the exit status: 0 done, 1 the
// command failed, 2 the command line was wrong. Help that was asked for
// goes to stdout; help that explains a mistake goes to stderr.
func (c *cli) run(ctx context.Context, args []string) int {
	if len(args) == 0 {
		usage(c.stderr)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "help":
		if len(args) > 1 {
			cmd := lookupCommand(args[1])
			if cmd == nil {
				fmt.Fprintf(c.stderr, "baton help: no command %q%s\n\n", args[1], rules.DidYouMean(args[1], commandNames()))
				usage(c.stderr)
				return 2
			}
			fl := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
			cmd.flags(fl)
			commandHelp(c.stdout, cmd, fl)
			return 0
		}
		usage(c.stdout)
		return 0
	case "--version", "-version":
		args = []string{"version"}
	}
	cmd := lookupCommand(args[0])
	if cmd == nil {
		fmt.Fprintf(c.stderr, "baton: unknown command %q%s\nRun \"baton help\" for the commands.\n", args[0], rules.DidYouMean(args[0], commandNames()))
		return 2
	}
	fl := flag.NewFlagSet("baton "+cmd.name, flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	runCmd := cmd.flags(fl)
	operands, err := parseArgs(fl, args[1:])
	switch {
	case errors.Is(err, errHelp):
		commandHelp(c.stdout, cmd, fl)
		return 0
	case err != nil:
		fmt.Fprintf(c.stderr, "baton %s: %v\nRun \"baton %s -h\" for its flags.\n", cmd.name, err, cmd.name)
		return 2
	case len(operands) < cmd.min || (cmd.max >= 0 && len(operands) > cmd.max):
		fmt.Fprintf(c.stderr, "baton %s: %s\n\n", cmd.name, operandError(cmd, operands))
		commandHelp(c.stderr, cmd, fl)
		return 2
	}
	err = runCmd(ctx, c, operands)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(c.stderr, "baton %s: %v\nRun \"baton %s -h\" for its flags.\n", cmd.name, strings.TrimSuffix(err.Error(), ": "+errUsage.Error()), cmd.name)
		return 2
	case errors.Is(err, errReported):
		return 1
	}
	fmt.Fprintf(c.stderr, "baton %s: %v\n", cmd.name, err)
	return 1
}

// errReported is a failure whose details the command already printed.
var errReported = errors.New("failed")

func operandError(cmd *command, got []string) string {
	switch {
	case cmd.max == 0:
		return fmt.Sprintf("takes no operands, but was given %s", strings.Join(got, " "))
	case len(got) < cmd.min:
		return fmt.Sprintf("needs %s", cmd.operands)
	}
	return fmt.Sprintf("takes %s, but was given %d: %s", cmd.operands, len(got), strings.Join(got, " "))
}

// usageError is a wrong command line found after parsing (a flag's value
// out of range, two flags that do not go together): exit status 2.
func usageError(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, errUsage)...)
}

// isTerminal reports whether f is a terminal: not a pipe, a file, or a
// character device such as /dev/null; a dumb terminal draws no progress
// and no colour.
func isTerminal(f *os.File) bool {
	return term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb"
}
