package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDryrunHTML(t *testing.T) {
	code, page, errs := runCLI(t, "dryrun", "-format", "html", "../../scenarios/dayone")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"<!DOCTYPE html>",
		`data-lane="qa"`, `data-lane="tech_lead"`, `data-lane="ba"`, `data-lane="candidate"`,
		`data-type="anchor" data-rule="A1_BA_INTERRUPT"`,
		`<script type="application/json" id="tl-data">`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page has no %q", want)
		}
	}
	if _, again, _ := runCLI(t, "dryrun", "-format", "html", "../../scenarios/dayone"); again != page {
		t.Errorf("two pages of the same pack differ")
	}

	out := filepath.Join(t.TempDir(), "run.html")
	code, stdout, errs := runCLI(t, "dryrun", "-format", "html", "-o", out, "../../scenarios/dayone")
	if code != 0 || stdout != "" {
		t.Fatalf("-o: exit %d, stdout %q, stderr %s", code, stdout, errs)
	}
	if data, err := os.ReadFile(out); err != nil || string(data) != page {
		t.Errorf("-o %s holds another page than stdout (%v)", out, err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".run.html.*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestDryrunFormats(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"dryrun", "-format", "xml", "dayone"}, 2, `--format must be text, jsonl or html, not "xml"`},
		{[]string{"dryrun", "-format", "html", "-o", "/nonexistent/dir/run.html", "dayone"}, 1, "/nonexistent/dir"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, errs := runCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(errs, tc.err) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errs, tc.code, tc.err)
			}
		})
	}
}
