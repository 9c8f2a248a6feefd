package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
)

// inputArgs are the flags that supply a session's inputs: --input
// name=value, repeated, and --inputs FILE, a YAML mapping; a flag's value
// wins over the file's.
type inputArgs struct {
	args stringList
	file string
}

func (a *inputArgs) register(fl *flag.FlagSet) {
	fl.Var(&a.args, "input", "supply the pack's input `NAME=VALUE` (repeatable): text and enums as written, numbers, durations and booleans parsed, lists comma-separated or JSON, objects JSON; a file input takes @path (comma-separated for several), read from the working directory")
	fl.StringVar(&a.file, "inputs", "", "supply the pack's inputs from a YAML `FILE` mapping names to values; a file input takes @path (relative to FILE), a list of them, or {name, text} / {name, data} objects (--input wins over it)")
}

// supplied reads the inputs for p and checks them as a session would:
// every refusal is in the error, each naming the flag or the file's line.
func (a *inputArgs) supplied(p *rules.Pack) (rules.Supplied, error) {
	sup := rules.Supplied{}
	at := map[string]string{} // where each input was given, for messages
	if a.file != "" {
		data, err := os.ReadFile(a.file)
		if err != nil {
			return nil, fmt.Errorf("--inputs: %w", err)
		}
		dir := filepath.Dir(a.file)
		y, err := dryrun.ReadInputsFile(p, a.file, data, func(name string) ([]byte, error) {
			return os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		})
		if err != nil {
			return nil, err
		}
		for k, v := range y.Supplied {
			sup[k], at[k] = v, y.At[k].String()+": input "+k
		}
	}
	var errs []string
	for _, arg := range a.args {
		name, raw, err := p.ParseInputArg(arg, os.ReadFile)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		sup[name], at[name] = raw, "--input "+name
	}
	if len(errs) > 0 {
		return nil, usageError("%s", strings.Join(errs, "\n  "))
	}
	if len(sup) == 0 {
		return nil, nil
	}
	if _, err := p.Bind(sup, rules.BindOptions{}); err != nil {
		var refused rules.InputErrors
		if !errors.As(err, &refused) {
			return nil, err
		}
		for _, e := range refused {
			where, ok := at[e.Input]
			if !ok {
				where = "input " + e.Input
			}
			errs = append(errs, where+": "+e.Msg)
		}
		return nil, usageError("the pack refuses the inputs:\n  %s", strings.Join(errs, "\n  "))
	}
	return sup, nil
}

// words are the flags as a command line gives them, to play a session
// again with the same inputs.
func (a *inputArgs) words() []string {
	var out []string
	if a.file != "" {
		out = append(out, "--inputs", a.file)
	}
	for _, arg := range a.args {
		out = append(out, "--input", arg)
	}
	return out
}
