package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

var completionCommand = &command{
	name: "completion", operands: "bash|zsh", min: 1, max: 1,
	summary: "print a shell completion script",
	about: `Prints a completion script for bash or zsh: commands, each command's flags,
and bundled pack names and folders where a PACK goes. Load it with

  source <(baton completion bash)       # in ~/.bashrc
  source <(baton completion zsh)        # in ~/.zshrc (after compinit)`,
	flags: func(*flag.FlagSet) runFunc {
		return func(_ context.Context, c *cli, args []string) error {
			switch args[0] {
			case "bash":
				return writeBashCompletion(c.stdout)
			case "zsh":
				return writeZshCompletion(c.stdout)
			}
			return usageError("completion is for bash or zsh, not %q", args[0])
		}
	},
}

// commandFlags lists each command's flags as help spells them, and
// apart those that take a value, from the same table that parses them.
func commandFlags() (all, valued map[string][]string) {
	all, valued = map[string][]string{}, map[string][]string{}
	for _, cmd := range commands {
		fl := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
		cmd.flags(fl)
		var names, withValue []string
		fl.VisitAll(func(f *flag.Flag) {
			names = append(names, flagName(f.Name))
			if b, ok := f.Value.(boolFlag); !ok || !b.IsBoolFlag() {
				withValue = append(withValue, flagName(f.Name))
			}
		})
		sort.Strings(names)
		all[cmd.name] = append(names, "--help")
		valued[cmd.name] = withValue
	}
	return all, valued
}

// takesPack says which commands' operands are packs, so completion offers
// bundled names beside folders.
func takesPack(cmd *command) bool { return strings.Contains(cmd.operands, "PACK") }

func writeBashCompletion(w io.Writer) error {
	flags, valued := commandFlags()
	var b strings.Builder
	b.WriteString("# bash completion for baton (baton completion bash)\n_baton() {\n")
	b.WriteString("  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd=${COMP_WORDS[1]}\n")
	fmt.Fprintf(&b, "  if [ \"$COMP_CWORD\" -eq 1 ]; then COMPREPLY=($(compgen -W %q -- \"$cur\")); return; fi\n", strings.Join(commandNames(), " ")+" help --version")
	b.WriteString("  case \"$cmd\" in\n")
	for _, cmd := range commands {
		fmt.Fprintf(&b, "    %s)\n", cmd.name)
		if v := valued[cmd.name]; len(v) > 0 {
			// A flag's value: a file or folder, whatever the flag.
			fmt.Fprintf(&b, "      case \" %s \" in *\" $prev \"*) COMPREPLY=($(compgen -f -- \"$cur\")); return;; esac\n", strings.Join(v, " "))
		}
		fmt.Fprintf(&b, "      if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W %q -- \"$cur\")); return; fi\n", strings.Join(flags[cmd.name], " "))
		switch {
		case takesPack(cmd):
			fmt.Fprintf(&b, "      COMPREPLY=($(compgen -W %q -- \"$cur\") $(compgen -d -- \"$cur\"));;\n", strings.Join(packRefs.Names(), " "))
		case cmd.name == "completion":
			b.WriteString("      COMPREPLY=($(compgen -W \"bash zsh\" -- \"$cur\"));;\n")
		default:
			b.WriteString("      COMPREPLY=($(compgen -f -- \"$cur\"));;\n")
		}
	}
	b.WriteString("  esac\n}\ncomplete -o filenames -F _baton baton\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func writeZshCompletion(w io.Writer) error {
	flags, valued := commandFlags()
	var b strings.Builder
	b.WriteString("#compdef baton\n# zsh completion for baton (baton completion zsh)\n_baton() {\n")
	b.WriteString("  local -a cmds\n  cmds=(\n")
	for _, cmd := range commands {
		fmt.Fprintf(&b, "    %s\n", zshQuote(cmd.name+":"+cmd.summary))
	}
	b.WriteString("  )\n  if (( CURRENT == 2 )); then _describe command cmds; return; fi\n")
	b.WriteString("  case $words[2] in\n")
	for _, cmd := range commands {
		fmt.Fprintf(&b, "    %s)\n", cmd.name)
		if v := valued[cmd.name]; len(v) > 0 {
			fmt.Fprintf(&b, "      case $words[CURRENT-1] in %s) _files; return;; esac\n", strings.Join(v, "|"))
		}
		fmt.Fprintf(&b, "      if [[ $words[CURRENT] == -* ]]; then compadd -- %s; return; fi\n", strings.Join(flags[cmd.name], " "))
		switch {
		case takesPack(cmd):
			fmt.Fprintf(&b, "      compadd -- %s; _files -/;;\n", strings.Join(packRefs.Names(), " "))
		case cmd.name == "completion":
			b.WriteString("      compadd -- bash zsh;;\n")
		default:
			b.WriteString("      _files;;\n")
		}
	}
	b.WriteString("  esac\n}\ncompdef _baton baton\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func zshQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
