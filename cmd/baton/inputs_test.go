package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const inputsPack = "../../runtime/packtest/testdata/inputs"

// A dry run, a sweep and a refusal with the pack's inputs given on the
// command line and in a file.
func TestInputs(t *testing.T) {
	dir := t.TempDir()
	brief := filepath.Join(dir, "brief.md")
	if err := os.WriteFile(brief, []byte("# Brief\n\nOne order in a thousand is lost.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "inputs.yaml")
	if err := os.WriteFile(file, []byte("DEPTH: 4\nLENGTH: \"00:50\"\nbrief: \"@brief.md\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("CANDIDATE: Ada\nDEPTH: 40\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string // in stdout, or stderr for a failure
	}{
		{"defaults", []string{"dryrun", inputsPack}, 0,
			[]string{"2 tickets", "01:00.0  -          session_end"}},
		{"flags", []string{"dryrun", "--input", "DEPTH=9", "--input", "LENGTH=00:30", "--input", "brief=@" + brief, inputsPack}, 0,
			[]string{"with DEPTH=9 LENGTH=\"00:30\" brief=@brief.md", "9 tickets", "00:30.0  -          session_end"}},
		{"file", []string{"dryrun", "--inputs", file, inputsPack}, 0,
			[]string{"4 tickets", "00:50.0  -          session_end"}},
		{"flag wins over file", []string{"dryrun", "--inputs", file, "--input", "DEPTH=7", inputsPack}, 0,
			[]string{"7 tickets", "00:50.0  -          session_end"}},
		{"out of range", []string{"dryrun", "--input", "DEPTH=50", "--input", "LENGTH=3", inputsPack}, 2,
			[]string{"--input DEPTH: 50 is above the maximum 20", `--input LENGTH: bad duration "3"`}},
		{"not a number", []string{"dryrun", "--input", "DEPTH=deep", inputsPack}, 2,
			[]string{`--input DEPTH: "deep" is not a number`}},
		{"unknown input", []string{"dryrun", "--input", "DEPHT=3", inputsPack}, 2,
			[]string{"--input DEPHT: the pack declares no such input"}},
		{"file out of range", []string{"dryrun", "--inputs", bad, inputsPack}, 2,
			[]string{bad + ":2:1: input DEPTH: 40 is above the maximum 20"}},
		{"missing file", []string{"dryrun", "--input", "brief=@" + filepath.Join(dir, "none.md"), inputsPack}, 2,
			[]string{"--input brief: open", "none.md: no such file"}},
		{"vary", []string{"sweep", "-n", "6", "--vary", "DEPTH=3,9", "--input", "LENGTH=00:40", inputsPack}, 0,
			[]string{"DEPTH in turn 3, 9", "by DEPTH:", "  3              3        0", "  tickets left  ", "baton dryrun -seed ", "--input LENGTH=00:40 --input DEPTH="}},
		{"vary a bad value", []string{"sweep", "-n", "6", "--vary", "DEPTH=3,90", inputsPack}, 2,
			[]string{"--vary DEPTH=90: input DEPTH: 90 is above the maximum 20"}},
		{"vary twice", []string{"sweep", "--vary", "DEPTH=3,9", "--vary", "LENGTH=30s,40s", inputsPack}, 2,
			[]string{"a sweep varies one input"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errs)
			}
			got := out
			if tc.code != 0 {
				got = errs
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("no %q in\n%s", w, got)
				}
			}
		})
	}
}

// A sweep over an input's values: each value's figures are its own, and
// the same seed prints the same bytes whatever the workers.
func TestSweepVary(t *testing.T) {
	args := []string{"sweep", "-n", "12", "-seed", "5", "--vary", "DEPTH=3,6,9", "--input", "LENGTH=00:40", "--format", "json", inputsPack}
	_, first, _ := runCLI(t, append(args, "-parallel", "1")...)
	code, again, errs := runCLI(t, append(args, "-parallel", "4")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if first != again {
		t.Errorf("two sweeps of the same seed differ:\n%s\n---\n%s", first, again)
	}
	// Each value's sessions hold DEPTH tickets and spend none: the tickets
	// left are the value's, three times over.
	for _, want := range []string{`"input": "DEPTH"`, `"value": "3"`, `"value": "9"`,
		`"name": "tickets left",
            "n": 4,
            "sum": 12,`,
		`"name": "tickets left",
            "n": 4,
            "sum": 36,`} {
		if !strings.Contains(first, want) {
			t.Errorf("no %q in\n%s", want, first)
		}
	}
}

// A recorded run keeps its inputs in its log's header, and its replay
// binds them again and reproduces every step.
func TestReplayWithInputs(t *testing.T) {
	rec := t.TempDir()
	if code, _, errs := runCLI(t, "dryrun", "-record", rec, "--input", "DEPTH=6", "--input", "LENGTH=00:30", inputsPack); code != 0 {
		t.Fatalf("recording: exit %d: %s", code, errs)
	}
	logs, _ := filepath.Glob(filepath.Join(rec, "*.done"))
	if len(logs) != 1 {
		t.Fatalf("logs: %v", logs)
	}
	code, out, errs := runCLI(t, "replay", logs[0])
	if code != 0 || !strings.Contains(out, "ended time_up at 00:30.0") || !strings.Contains(out, "0 differ") {
		t.Fatalf("replay: exit %d\n%s\n%s", code, out, errs)
	}
}
