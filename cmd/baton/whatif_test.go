package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// recordDayone records a dry run of the dayone pack folder, with its
// built-in candidate, into dir.
func recordDayone(t *testing.T, dir string, seed int) {
	t.Helper()
	if code, _, errs := runCLI(t, "dryrun", "--record", dir, "--seed", strconv.Itoa(seed), "--events", "../../scenarios/dayone/candidate.jsonl", "../../scenarios/dayone"); code != 0 {
		t.Fatalf("record: exit %d: %s", code, errs)
	}
}

var (
	nudgesLine  = regexp.MustCompile(`(?m)^# nudges: (\d+) recorded, (\d+) what-if$`)
	answersLine = regexp.MustCompile(`(?m)^# model answers: (\d+) reused from the recording, (\d+) asked anew$`)
)

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// baton replay --pack with a changed copy of the pack plays a what-if:
// exit 0, a diff whose nudges move later or go, the stretch before the
// first silence answered from the recording, the same bytes every time.
// With the pack the log was recorded with, replay verifies as before.
func TestReplayWhatIf(t *testing.T) {
	runs := t.TempDir()
	recordDayone(t, runs, 0)
	tests := []struct {
		name    string
		timeout string // SILENCE_TIMEOUT in the copy; "" leaves the pack as recorded
		fewer   bool
		marker  string // a diff line the output must hold
	}{
		{name: "longer silence", timeout: "20s", fewer: true, marker: "\n~ "},
		{name: "much longer silence", timeout: "40s", fewer: true, marker: "\n- "},
		{name: "same pack", marker: "0 differ"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pack := copyPack(t, "dayone")
			if tc.timeout != "" {
				editFile(t, filepath.Join(pack, "pack.yaml"), "SILENCE_TIMEOUT: 12s", "SILENCE_TIMEOUT: "+tc.timeout)
			}
			code, out, errs := runCLI(t, "replay", "--pack", pack, runs)
			if code != 0 || !strings.Contains(out, tc.marker) {
				t.Fatalf("exit %d, want 0 and %q\n%s\n%s", code, tc.marker, out, errs)
			}
			if tc.timeout == "" {
				if strings.Contains(out, "what-if") {
					t.Errorf("the recorded pack played a what-if:\n%s", out)
				}
				return
			}
			m := nudgesLine.FindStringSubmatch(out)
			a := answersLine.FindStringSubmatch(out)
			if m == nil || a == nil {
				t.Fatalf("no summary:\n%s", out)
			}
			if before, after := atoi(t, m[1]), atoi(t, m[2]); tc.fewer != (after < before) {
				t.Errorf("nudges %d recorded, %d what-if", before, after)
			}
			if reused, asked := atoi(t, a[1]), atoi(t, a[2]); reused == 0 || asked == 0 {
				t.Errorf("%d answers reused, %d asked anew: want some of each", reused, asked)
			}
			_, again, _ := runCLI(t, "replay", "--pack", pack, runs)
			if again != out {
				t.Errorf("a second what-if prints differently:\n%s\n---\n%s", out, again)
			}
			file := filepath.Join(t.TempDir(), "diff.txt")
			if code, _, errs := runCLI(t, "replay", "--pack", pack, "-o", file, runs); code != 0 {
				t.Fatalf("-o: exit %d: %s", code, errs)
			}
			if b, err := os.ReadFile(file); err != nil || string(b) != out {
				t.Errorf("-o wrote other bytes than stdout (%v)", err)
			}
			// The page marks and counts the differences the text diff
			// prints, with -v and without.
			for _, v := range []string{"-v=false", "-v"} {
				_, text, _ := runCLI(t, "replay", "--pack", pack, v, runs)
				e := effectsLine.FindStringSubmatch(text)
				if e == nil {
					t.Fatalf("%s: no effects line:\n%s", v, text)
				}
				differ := atoi(t, e[1]) + atoi(t, e[2]) + atoi(t, e[3])
				page := filepath.Join(t.TempDir(), "diff.html")
				if code, _, errs := runCLI(t, "replay", "--pack", pack, v, "-format", "html", "-o", page, runs); code != 0 {
					t.Fatalf("-format html %s: exit %d: %s", v, code, errs)
				}
				b, err := os.ReadFile(page)
				if err != nil {
					t.Fatal(err)
				}
				html := string(b)
				h := pageDiffs.FindStringSubmatch(html)
				if h == nil || atoi(t, h[1]) != differ {
					t.Errorf("%s: the page heads its differences %q; the text diff has %d (%s)", v, h, differ, e[0])
				}
				if n := strings.Count(html, ` data-diff="only"`) + strings.Count(html, ` data-diff="shifted"`); n != differ {
					t.Errorf("%s: the page marks %d effects; the text diff has %d differences", v, n, differ)
				}
				// Both runs drawn, each named once for what it is.
				for _, want := range []string{`data-run="1"`, "<title>what-if: " + pack + " vs recorded dryrun-", ">what-if: " + pack[:5], ">baseline: recorded "} {
					if !strings.Contains(html, want) {
						t.Errorf("%s: the what-if page has no %s", v, want)
					}
				}
				if strings.Contains(html, "what-if: what-if") {
					t.Errorf("%s: the page says what-if twice", v)
				}
			}
		})
	}
}

var (
	effectsLine = regexp.MustCompile(`(?m)^# effects: \d+ unchanged, (\d+) moved, (\d+) only recorded, (\d+) only what-if`)
	pageDiffs   = regexp.MustCompile(`<h2>(\d+) difference\(s\)</h2>`)
)

// A single log of another pack is refused, as a folder's what-if skips
// such sessions: a what-if is a changed version of the session's own
// pack. The error names both packs.
func TestReplayWhatIfRefusesAnotherPack(t *testing.T) {
	runs := t.TempDir()
	recordDayone(t, runs, 0)
	for _, format := range []string{"text", "html"} {
		t.Run(format, func(t *testing.T) {
			code, out, errs := runCLI(t, "replay", "--pack", "hotseat", "-format", format, "-o", filepath.Join(t.TempDir(), "out"), runs)
			if code == 0 || !strings.Contains(errs, "recorded with pack dayone") || !strings.Contains(errs, "is pack hotseat") {
				t.Errorf("exit %d, want an error naming dayone and hotseat\n%s\n%s", code, out, errs)
			}
		})
	}
}

// A folder of logs gets a line per session and totals; a session of
// another pack is skipped, one recorded with the pack's own content
// verified.
func TestReplayWhatIfFolder(t *testing.T) {
	runs := t.TempDir()
	recordDayone(t, runs, 1)
	recordDayone(t, runs, 2)
	if code, _, errs := runCLI(t, "dryrun", "--record", runs, "../../scenarios/hotseat"); code != 0 {
		t.Fatalf("record hotseat: exit %d: %s", code, errs)
	}
	tests := []struct {
		name    string
		timeout string
		want    []string
	}{
		{"changed", "40s", []string{"# 2 of 2 sessions now get nudged (2 did); 2 get fewer nudges, 0 more\n", "# 2 played through the pack, 0 verified, 1 of other packs skipped, 0 failed\n"}},
		{"recorded", "", []string{"steps verified\n", "# 0 played through the pack, 2 verified, 1 of other packs skipped, 0 failed\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pack := copyPack(t, "dayone")
			if tc.timeout != "" {
				editFile(t, filepath.Join(pack, "pack.yaml"), "SILENCE_TIMEOUT: 12s", "SILENCE_TIMEOUT: "+tc.timeout)
			}
			code, out, errs := runCLI(t, "replay", "--pack", pack, runs)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("no %q in\n%s", w, out)
				}
			}
			if n := strings.Count(out, "\ndryrun-"); n != 3 {
				t.Errorf("%d session lines, want 3:\n%s", n, out)
			}
		})
	}
}

// A what-if needs the recording's own pack for its baseline: a log whose
// recorded content no folder holds any more is an error that says to
// pass --base, and --base with that content runs it.
func TestReplayWhatIfNeedsTheRecordedPack(t *testing.T) {
	runs := t.TempDir()
	recorded := copyPack(t, "dayone")
	// Content of its own: the bundled copy does not hold it either.
	editFile(t, filepath.Join(recorded, "pack.yaml"), "SILENCE_TIMEOUT: 12s", "SILENCE_TIMEOUT: 12s # as recorded")
	if code, _, errs := runCLI(t, "dryrun", "--record", runs, recorded); code != 0 {
		t.Fatalf("record: exit %d: %s", code, errs)
	}
	kept := filepath.Join(t.TempDir(), "dayone")
	copyDir(t, recorded, kept)
	editFile(t, filepath.Join(recorded, "pack.yaml"), "SILENCE_TIMEOUT: 12s # as recorded", "SILENCE_TIMEOUT: 20s")
	code, out, errs := runCLI(t, "replay", "--pack", recorded, runs)
	if code == 0 || !strings.Contains(errs, "--base") {
		t.Fatalf("exit %d, want an error naming --base\n%s\n%s", code, out, errs)
	}
	code, out, errs = runCLI(t, "replay", "--pack", recorded, "--base", kept, runs)
	if code != 0 || !strings.Contains(out, "# nudges: ") {
		t.Fatalf("with --base: exit %d\n%s\n%s", code, out, errs)
	}
}
