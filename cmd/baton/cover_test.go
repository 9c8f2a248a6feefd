package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"regexp"
	"strings"
	"testing"
)

// coverPack is runtime/packtest's coverage pack: a rule that only sets a
// variable when the bell rings (one test rings it), a window every test
// sees, and a route no test takes.
const coverPack = "../../runtime/packtest/testdata/cover"

const coverTable = `
coverage: cover 66.6% of 3 items (2 covered)
  rule 1/1
    covered  ring     ../../runtime/packtest/testdata/cover/pack.yaml:24:5  bell rung
  window 1/1
    covered  OPEN     ../../runtime/packtest/testdata/cover/pack.yaml:31:7  quiet, bell rung
  route 0/1
    MISSED   TO_HOST  ../../runtime/packtest/testdata/cover/pack.yaml:34:5
`

// baton test -cover prints every item after the results; --cover-min
// fails a pack under it, naming the pack, its share and what is missed.
func TestTestCover(t *testing.T) {
	for _, tt := range []struct {
		name     string
		args     []string
		code     int
		stdout   []string // each in stdout
		noStdout []string
		stderr   string // exactly, but for a trailing newline
	}{
		{
			name:   "table",
			args:   []string{"test", "-cover", coverPack},
			stdout: []string{"ok   cover/bell rung\n", "2 passed, 0 failed\n" + coverTable},
		},
		{
			name:     "no cover, no table",
			args:     []string{"test", coverPack},
			noStdout: []string{"coverage"},
		},
		{
			name:   "under the minimum",
			args:   []string{"test", "--cover-min", "90", coverPack},
			code:   1,
			stdout: []string{coverTable},
			stderr: "baton test: pack cover is 66.6% covered, under --cover-min 90%; not covered:\n  route TO_HOST (../../runtime/packtest/testdata/cover/pack.yaml:34:5)",
		},
		{
			// 66.6% reads as 66.6 but 2 of 3 is under 66.7.
			name:   "rounded down, still under",
			args:   []string{"test", "-cover-min=66.7", coverPack},
			code:   1,
			stderr: "baton test: pack cover is 66.6% covered, under --cover-min 66.7%; not covered:\n  route TO_HOST (../../runtime/packtest/testdata/cover/pack.yaml:34:5)",
		},
		{
			name:   "at the minimum",
			args:   []string{"test", "-cover-min", "66.6", coverPack},
			stdout: []string{coverTable},
		},
		{
			// A failing test and a short pack are both said.
			name:   "failed tests and under",
			args:   []string{"test", "-cover-min", "90", "-run", "quiet", coverPack},
			code:   1,
			stdout: []string{"coverage: cover 33.3% of 3 items (1 covered)\n", "    MISSED   ring "},
			stderr: "baton test: pack cover is 33.3% covered, under --cover-min 90%; not covered:\n  rule ring (../../runtime/packtest/testdata/cover/pack.yaml:24:5)\n  route TO_HOST (../../runtime/packtest/testdata/cover/pack.yaml:34:5)",
		},
		{
			name:   "out of range",
			args:   []string{"test", "-cover-min", "101", coverPack},
			code:   2,
			stderr: "baton test: --cover-min must be a percentage from 0 to 100, not 101\nRun \"baton test -h\" for its flags.",
		},
		{
			name:   "not a number",
			args:   []string{"test", "-cover-min", "NaN", coverPack},
			code:   2,
			stderr: "baton test: --cover-min must be a percentage from 0 to 100, not NaN\nRun \"baton test -h\" for its flags.",
		},
		{
			name:   "infinite",
			args:   []string{"test", "-cover-min", "-Inf", coverPack},
			code:   2,
			stderr: "baton test: --cover-min must be a percentage from 0 to 100, not -Inf\nRun \"baton test -h\" for its flags.",
		},
		{
			name:   "bundled packs meet 90",
			args:   []string{"test", "-cover-min", "90", "../../scenarios/dayone", "../../scenarios/hotseat"},
			stdout: []string{"\ncoverage: dayone ", "\ncoverage: hotseat ", "  rule ", "  guardrail ", "  job "},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCLI(t, tt.args...)
			if code != tt.code || strings.TrimSuffix(errs, "\n") != tt.stderr {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit %d, stderr:\n%s\nstdout:\n%s", code, errs, tt.code, tt.stderr, out)
			}
			for _, w := range tt.stdout {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.noStdout {
				if strings.Contains(out, w) {
					t.Errorf("stdout has %q:\n%s", w, out)
				}
			}
		})
	}
}

// Covered is green and missed red, padded before painting so the columns
// line up; the share is red under --cover-min, green otherwise.
func TestTestCoverColour(t *testing.T) {
	for _, tt := range []struct {
		min  string
		want []string
	}{
		{"0", []string{"cover \033[32m66.6%\033[0m of 3", "    \033[32mcovered\033[0m  ring  ", "    \033[31mMISSED \033[0m  TO_HOST", "  \033[1mroute\033[0m 0/1"}},
		{"90", []string{"cover \033[31m66.6%\033[0m of 3"}},
	} {
		var out, errb bytes.Buffer
		(&cli{stdout: &out, stderr: &errb, color: true}).run(context.Background(), []string{"test", "-cover", "-cover-min", tt.min, coverPack})
		for _, w := range tt.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("-cover-min %s: stdout lacks %q:\n%s", tt.min, w, out.String())
			}
		}
	}
}

// With --format json the coverage is in the report, every item with its
// tests; JUnit stays valid and carries the figures as properties. Neither
// prints the table.
func TestTestCoverReports(t *testing.T) {
	code, out, errs := runCLI(t, "test", "-cover-min", "90", "-format", "json", coverPack)
	if code != 1 || !strings.Contains(errs, "pack cover is 66.6% covered") {
		t.Fatalf("json: exit %d, stderr %s", code, errs)
	}
	var rep struct {
		Suites []struct {
			Name     string
			Coverage *struct {
				Percent        float64
				Covered, Total int
				Items          []struct {
					Kind, ID, File string
					Line           int
					Hits           int
					Tests          []string
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(rep.Suites) != 1 || rep.Suites[0].Coverage == nil {
		t.Fatalf("no coverage in:\n%s", out)
	}
	cv := rep.Suites[0].Coverage
	if cv.Percent != 66.6 || cv.Covered != 2 || cv.Total != 3 || len(cv.Items) != 3 {
		t.Fatalf("coverage %+v", cv)
	}
	if it := cv.Items[0]; it.Kind != "rule" || it.ID != "ring" || it.File != "pack.yaml" || it.Line != 24 || it.Hits != 1 || len(it.Tests) != 1 || it.Tests[0] != "bell rung" {
		t.Errorf("item %+v", it)
	}

	_, out, _ = runCLI(t, "test", "-format", "json", coverPack)
	if strings.Contains(out, `"coverage"`) {
		t.Errorf("coverage without -cover:\n%s", out)
	}

	code, out, _ = runCLI(t, "test", "-cover", "-format", "junit", coverPack)
	if code != 0 || strings.Contains(out, "MISSED") {
		t.Fatalf("junit: exit %d:\n%s", code, out)
	}
	dec := xml.NewDecoder(strings.NewReader(out))
	dec.Strict = true
	var ju struct {
		Suites []struct {
			Props []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
			Cases []struct{} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := dec.Decode(&ju); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(ju.Suites) != 1 || len(ju.Suites[0].Cases) != 2 || len(ju.Suites[0].Props) != 3 ||
		ju.Suites[0].Props[0].Name != "coverage.percent" || ju.Suites[0].Props[0].Value != "66.6" {
		t.Errorf("junit: %+v", ju)
	}
}

// docs/testing.md's example table is what baton test -cover prints for
// DayOne, the rows it shows in its order. Numbers (positions, counts,
// the share) move as the pack and its tests are edited, so they are not
// compared; the shape, the items and what is missed are.
func TestTestCoverDocs(t *testing.T) {
	data, err := os.ReadFile("../../docs/testing.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "$ baton test -cover scenarios/dayone\n")
	if !ok {
		t.Fatal("docs/testing.md has no example of baton test -cover scenarios/dayone")
	}
	sample, _, _ := strings.Cut(rest, "```")
	t.Chdir("../..")
	code, out, errs := runCLI(t, "test", "-cover", "scenarios/dayone")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	num := regexp.MustCompile(`\d+(\.\d+)?`)
	norm := func(s string) string { return strings.Join(strings.Fields(num.ReplaceAllString(s, "N")), " ") }
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		lines = append(lines, norm(l))
	}
	at := 0
	for _, l := range strings.Split(strings.TrimSpace(sample), "\n") {
		if l == "..." {
			continue
		}
		found := false
		for ; at < len(lines); at++ {
			if lines[at] == norm(l) {
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("docs/testing.md shows a line baton test -cover does not print (or not in this order):\n%s\noutput:\n%s", l, out)
		}
	}
}
