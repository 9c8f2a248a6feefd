package main

import (
	"flag"
	"os"
	"strings"
	"testing"
)

// README's sample of the first command's output is what the command
// prints: the header and every line shown (a "..." line stands for lines
// left out, a line ending in " ..." for its own end).
func TestReadmeFirstCommand(t *testing.T) {
	readme := readREADME(t)
	_, rest, ok := strings.Cut(readme, "The first prints")
	if !ok {
		t.Fatal("README has no sample of the first command's output")
	}
	_, rest, _ = strings.Cut(rest, "```\n")
	sample, _, _ := strings.Cut(rest, "```")
	t.Chdir("../..") // README's commands run from the repository's root
	code, out, errs := runCLI(t, "dryrun", "scenarios/dayone")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, line := range strings.Split(strings.TrimSpace(sample), "\n") {
		if line == "..." {
			continue
		}
		want := line + "\n"
		if cut, ok := strings.CutSuffix(line, " ..."); ok { // a line shown in part
			want = cut
		}
		if !strings.Contains(out, want) {
			t.Errorf("README shows a line the dry run does not print:\n%s", line)
		}
	}
}

// Every baton command line README shows names a command and flags that
// exist, with the operands the command takes.
func TestReadmeCommandLines(t *testing.T) {
	n := 0
	for _, line := range strings.Split(readREADME(t), "\n") {
		line, _, _ = strings.Cut(line, "   #") // the comment column
		fields := strings.Fields(line)
		for len(fields) > 0 && strings.Contains(fields[0], "=") { // VAR=value prefixes
			fields = fields[1:]
		}
		if len(fields) < 2 || (fields[0] != "./baton" && fields[0] != "baton") {
			continue
		}
		if strings.HasPrefix(line, "source <(") {
			continue
		}
		n++
		args := fields[1:]
		for i, a := range args {
			if a == ">" || a == "|" {
				args = args[:i]
				break
			}
		}
		cmd := lookupCommand(args[0])
		if cmd == nil {
			t.Errorf("README: %q: no command %q", line, args[0])
			continue
		}
		fl := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
		cmd.flags(fl)
		operands, err := parseArgs(fl, args[1:])
		if err != nil {
			t.Errorf("README: %q: %v", line, err)
			continue
		}
		if len(operands) < cmd.min || (cmd.max >= 0 && len(operands) > cmd.max) {
			t.Errorf("README: %q: %s", line, operandError(cmd, operands))
		}
	}
	if n < 20 {
		t.Errorf("found only %d baton command lines in README", n)
	}
}

func readREADME(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
