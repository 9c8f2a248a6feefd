package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/batonhq/baton/rules"
)

// Flags are declared on a standard flag.FlagSet but parsed here. The
// standard parser stops at the first operand, so `baton test dayone
// -update` took -update for a pack; spf13/pflag parses interspersed flags
// but reads -format as the shorthands -f -o -r..., breaking the Go-style
// single-dash spelling every baton command line and script already uses.
// This parser takes both spellings (-format and --format, with a value as
// the next argument or after '='), flags anywhere among the operands, and
// "--" to end flags; an unknown flag names the nearest one.

// boolFlag is the standard library's marker for flags that take no value.
type boolFlag interface{ IsBoolFlag() bool }

// errHelp is -h or --help: help was asked for, which is not a failure.
var errHelp = errors.New("help requested")

// parseArgs sets fl's flags from args and returns the operands in order.
func parseArgs(fl *flag.FlagSet, args []string) ([]string, error) {
	var operands []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(operands, args[i+1:]...), nil
		}
		if len(a) < 2 || a[0] != '-' {
			operands = append(operands, a) // "-" alone is an operand: stdin
			continue
		}
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		name, value, hasValue := strings.Cut(name, "=")
		if name == "h" || name == "help" {
			return nil, errHelp
		}
		f := fl.Lookup(name)
		if f == nil {
			return nil, unknownFlag(fl, a, name)
		}
		if b, ok := f.Value.(boolFlag); ok && b.IsBoolFlag() {
			if !hasValue {
				value = "true"
			}
		} else if !hasValue {
			if i+1 == len(args) {
				return nil, fmt.Errorf("flag %s needs a value (%s)", flagName(name), firstSentence(f))
			}
			i++
			value = args[i]
		}
		if err := fl.Set(name, value); err != nil {
			return nil, fmt.Errorf("invalid value %q for %s: %w", value, flagName(name), err)
		}
	}
	return operands, nil
}

func unknownFlag(fl *flag.FlagSet, written, name string) error {
	var names []string
	fl.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	msg := fmt.Sprintf("unknown flag %s", written)
	if near, ok := rules.Nearest(name, names); ok {
		msg += fmt.Sprintf(" (did you mean %s?)", flagName(near))
	}
	return errors.New(msg)
}

// firstSentence is a flag's usage up to its first clause, enough to
// remind what the missing value is.
func firstSentence(f *flag.Flag) string {
	_, usage := flag.UnquoteUsage(f)
	for _, sep := range []string{". ", " (", "; ", ": "} {
		if i := strings.Index(usage, sep); i > 0 {
			usage = usage[:i]
		}
	}
	return strings.TrimSpace(usage)
}

// flagName is a flag as help spells it: -v for one letter, --name else.
func flagName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// printFlags lists fl's flags the way authors type them, --name VALUE,
// sorted, with defaults that say something.
func printFlags(w io.Writer, fl *flag.FlagSet) {
	type row struct{ left, usage string }
	var rows []row
	width := 0
	fl.VisitAll(func(f *flag.Flag) {
		left := flagName(f.Name)
		if b, ok := f.Value.(boolFlag); !ok || !b.IsBoolFlag() {
			arg, _ := flag.UnquoteUsage(f)
			if arg == "" {
				arg = "value"
			}
			left += " " + strings.ToUpper(arg)
		}
		_, usage := flag.UnquoteUsage(f)
		if d := f.DefValue; d != "" && d != "false" && d != "0" && d != "0s" && !strings.Contains(usage, "default") {
			usage += fmt.Sprintf(" (default %s)", d)
		}
		rows = append(rows, row{left, usage})
		width = max(width, len(left))
	})
	sort.Slice(rows, func(i, j int) bool { return rows[i].left < rows[j].left })
	for _, r := range rows {
		fmt.Fprintf(w, "  %-*s  %s\n", width, r.left, r.usage)
	}
}
