package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestSweep(t *testing.T) {
	html := filepath.Join(t.TempDir(), "report.html")
	// Two recorded DayOne sessions, and one of another pack, for -sessions.
	rec := t.TempDir()
	for _, args := range [][]string{{"../../scenarios/dayone"}, {"-events", os.DevNull, "../../scenarios/dayone"}, {"../../scenarios/hotseat"}} {
		if code, _, errs := runCLI(t, append([]string{"dryrun", "-record", rec}, args...)...); code != 0 {
			t.Fatalf("recording %v: exit %d: %s", args, code, errs)
		}
	}
	// A session of a copy of the pack edited since: neither the copy nor
	// the bundled pack holds what it was recorded with.
	edited, gone := filepath.Join(t.TempDir(), "dayone"), t.TempDir()
	if err := os.CopyFS(edited, os.DirFS("../../scenarios/dayone")); err != nil {
		t.Fatal(err)
	}
	edit := func(line string) {
		f, err := os.OpenFile(filepath.Join(edited, "pack.yaml"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.WriteString(line)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	edit("# the copy\n")
	if code, _, errs := runCLI(t, "dryrun", "-record", gone, edited); code != 0 {
		t.Fatalf("recording the copy: exit %d: %s", code, errs)
	}
	edit("# edited since\n")
	goneLog, _ := filepath.Glob(filepath.Join(gone, "*.done"))
	if len(goneLog) != 1 {
		t.Fatalf("the copy's recording: %v", goneLog)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		code  int
		check func(t *testing.T, out, errs string)
	}{
		{"text", []string{"sweep", "../../scenarios/dayone", "-n", "8", "-seed", "3"}, 0, func(t *testing.T, out, errs string) {
			for _, want := range []string{"# sweep of dayone: candidate model, 8 sessions from seed 3", "sessions: 8 played, 0 failed",
				"window W1_QA_OPENER", "turns: qa", "lateness of scheduled turns", "baton dryrun -seed "} {
				if !strings.Contains(out, want) {
					t.Errorf("no %q in\n%s", want, out)
				}
			}
			if !strings.Contains(errs, "8 sessions in") {
				t.Errorf("stderr %q says nothing of the run", errs)
			}
		}},
		{"json and html", []string{"sweep", "../../scenarios/hotseat", "-n", "4", "-parallel", "2", "-format", "json", "-o", html}, 0, func(t *testing.T, out, _ string) {
			var rep struct {
				Pack     string
				Sessions int
				Coverage []struct{ Name string }
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Pack != "hotseat" || rep.Sessions != 4 || len(rep.Coverage) == 0 {
				t.Fatalf("%+v %v", rep, err)
			}
			page, err := os.ReadFile(html)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(page), "<svg") || strings.Contains(string(page), "http") || strings.Contains(string(page), "src=") {
				t.Fatalf("the page is not self-contained:\n%s", page)
			}
		}},
		{"recorded sessions", []string{"sweep", "../../scenarios/dayone", "-sessions", rec}, 0, func(t *testing.T, out, errs string) {
			// The silent candidate is nudged and given up on at every
			// question; the other answers: both silence steps are hit, in
			// both sessions, by the recorded inputs alone.
			for _, want := range []string{"2 recorded sessions", "sessions: 2 played, 0 failed", "ends: session_complete 2 (100.0%)"} {
				if !strings.Contains(out, want) {
					t.Errorf("no %q in\n%s", want, out)
				}
			}
			if !regexp.MustCompile(`silence step 2 +2 +100\.0%`).MatchString(out) || !regexp.MustCompile(`route R2_ADDRESSED +1 +50\.0%`).MatchString(out) {
				t.Errorf("the recorded sessions' steps and routes are not counted:\n%s", out)
			}
			if !strings.Contains(errs, "1 session(s) in "+rec+" are of other packs") {
				t.Errorf("stderr %q does not say the hotseat session was left out", errs)
			}
		}},
		{"recorded sessions, one at a time", []string{"sweep", "../../scenarios/dayone", "-sessions", rec, "-parallel", "1"}, 0, func(t *testing.T, out, _ string) {
			// The same report, however many logs are open at once.
			_, many, _ := runCLI(t, "sweep", "../../scenarios/dayone", "-sessions", rec, "-parallel", "4")
			if out != many {
				t.Errorf("-parallel 1:\n%s\n-parallel 4:\n%s", out, many)
			}
		}},
		{"a recorded session that no longer replays", []string{"sweep", "../../scenarios/dayone", "-sessions", gone}, 1, func(t *testing.T, _, errs string) {
			if !strings.Contains(errs, goneLog[0]+": session ") || !strings.Contains(errs, "pass --base") {
				t.Fatalf("stderr %q does not name the log and what to do", errs)
			}
		}},
		{"recorded sessions and -n", []string{"sweep", "../../scenarios/dayone", "-sessions", rec, "-n", "5"}, 2, func(t *testing.T, _, errs string) {
			if !strings.Contains(errs, "-n and -sessions do not go together") {
				t.Fatalf("stderr %q", errs)
			}
		}},
		{"recorded sessions, -n and -seed", []string{"sweep", "../../scenarios/dayone", "-seed", "0", "-sessions", rec, "-n", "5"}, 2, func(t *testing.T, _, errs string) {
			if !strings.Contains(errs, "-n, -seed and -sessions do not go together: -sessions plays every recorded session") {
				t.Fatalf("stderr %q", errs)
			}
		}},
		{"no recorded session of the pack", []string{"sweep", "../../scenarios/training", "-sessions", rec}, 1, func(t *testing.T, _, errs string) {
			if !strings.Contains(errs, "holds no session of pack training") {
				t.Fatalf("stderr %q", errs)
			}
		}},
		{"bad format", []string{"sweep", "dayone", "-format", "csv"}, 2, nil},
		{"base without sessions", []string{"sweep", "dayone", "-base", "dayone"}, 2, func(t *testing.T, _, errs string) {
			if !strings.Contains(errs, "it goes with -sessions") {
				t.Fatalf("stderr %q", errs)
			}
		}},
		{"no sessions", []string{"sweep", "dayone", "-n", "0"}, 2, nil},
		{"no model", []string{"sweep", "../../scenarios/boardroom", "-n", "1"}, 1, func(t *testing.T, _, errs string) {
			if !strings.Contains(errs, "candidate_model") {
				t.Fatalf("stderr %q", errs)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, errs)
			}
			if tc.check != nil {
				tc.check(t, out, errs)
			}
		})
	}
}

// A sweep's extreme session is played again alone by the command the
// report gives for it: baton dryrun -seed S plays seed S of the pack's
// candidate model, and --events still plays a file instead.
func TestSweepSeedReplaysAlone(t *testing.T) {
	code, out, errs := runCLI(t, "sweep", "../../scenarios/dayone", "-n", "6", "-seed", "9", "-format", "json")
	if code != 0 {
		t.Fatalf("sweep: exit %d: %s", code, errs)
	}
	var rep struct {
		Sessions int
		Extremes []struct {
			What     string
			Sessions []struct{ Seed, Command string }
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	var seed string
	for _, ex := range rep.Extremes {
		if ex.What == "most nudges" && len(ex.Sessions) > 0 {
			seed = ex.Sessions[0].Seed
			if want := "baton dryrun -seed " + seed + " ../../scenarios/dayone"; ex.Sessions[0].Command != want {
				t.Fatalf("command %q, want %q", ex.Sessions[0].Command, want)
			}
		}
	}
	if seed == "" {
		t.Fatalf("no session with most nudges in %s", out)
	}
	play := func(args ...string) (string, string) {
		t.Helper()
		code, out, errs := runCLI(t, append([]string{"dryrun"}, args...)...)
		if code != 0 {
			t.Fatalf("dryrun %v: exit %d: %s", args, code, errs)
		}
		return out, errs
	}
	once, errs := play("-seed", seed, "../../scenarios/dayone")
	again, _ := play("-seed", seed, "../../scenarios/dayone")
	if once != again {
		t.Fatal("the same seed played twice differs")
	}
	if !strings.Contains(errs, "candidate model seed "+seed) {
		t.Errorf("stderr %q does not say the model played", errs)
	}
	builtin, _ := play("../../scenarios/dayone")
	fromFile, ferrs := play("-seed", seed, "--events", "../../scenarios/dayone/candidate.jsonl", "../../scenarios/dayone")
	if once == builtin {
		t.Error("-seed played the built-in candidate, not the model")
	}
	if fromFile != builtin || strings.Contains(ferrs, "candidate model") {
		t.Error("-seed with --events did not play the events file")
	}
}

// TestProgressBarMonotonic: workers report their counts in any order;
// the bar shows the largest so far.
func TestProgressBarMonotonic(t *testing.T) {
	for _, tc := range []struct {
		name string
		sets []int
		want int64
	}{
		{"in order", []int{1, 2, 3}, 3},
		{"a late report", []int{1, 3, 2}, 3},
		{"reports out of order", []int{4, 1, 5, 2, 3}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newProgressBar(&cli{stderr: io.Discard}, 5)
			for _, d := range tc.sets {
				b.set(d)
			}
			b.stop()
			if got := b.done.Load(); got != tc.want {
				t.Errorf("done %d, want %d", got, tc.want)
			}
		})
	}
}
