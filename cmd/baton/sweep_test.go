package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSweep(t *testing.T) {
	html := filepath.Join(t.TempDir(), "report.html")
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
		{"bad format", []string{"sweep", "dayone", "-format", "csv"}, 2, nil},
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
