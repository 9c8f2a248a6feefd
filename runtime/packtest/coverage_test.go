package packtest_test

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"regexp"
	"slices"
	"testing"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/packtest"
)

// coverPack's rule ring only sets a variable when a client sends
// bell_rung: no effect names it, so a report that read effects could not
// see it run. Its window always opens; its route is never taken.
const coverPack = "testdata/cover"

// itemState is what a report says of one item.
type itemState struct {
	hits  uint64
	tests []string
}

// Coverage comes from what the engine ran: ring is covered exactly when a
// test's candidate rings the bell, by that test alone.
func TestCoverageFromEngine(t *testing.T) {
	p := load(t, coverPack)
	for _, tt := range []struct {
		run      string
		want     map[string]itemState // by item name
		covered  int
		percent  string
		below67  bool
		below666 bool
	}{
		{
			run: "",
			want: map[string]itemState{
				"rule ring":     {1, []string{"bell rung"}},
				"window OPEN":   {2, []string{"quiet", "bell rung"}},
				"route TO_HOST": {},
			},
			covered: 2, percent: "66.6%", below67: true,
		},
		{
			run: "^quiet$",
			want: map[string]itemState{
				"rule ring":     {},
				"window OPEN":   {1, []string{"quiet"}},
				"route TO_HOST": {},
			},
			covered: 1, percent: "33.3%", below67: true, below666: true,
		},
		{
			run: "bell",
			want: map[string]itemState{
				"rule ring":     {1, []string{"bell rung"}},
				"window OPEN":   {1, []string{"bell rung"}},
				"route TO_HOST": {},
			},
			covered: 2, percent: "66.6%", below67: true,
		},
	} {
		t.Run("run="+tt.run, func(t *testing.T) {
			opt := packtest.Options{}
			if tt.run != "" {
				opt.Run = regexp.MustCompile(tt.run)
			}
			results, err := packtest.Run(p, opt)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range results {
				if r.Err != nil {
					t.Fatalf("%s: %v", r.Name, r.Err)
				}
			}
			rep, err := packtest.Coverage(p, results)
			if err != nil {
				t.Fatal(err)
			}
			// Every item the pack declares, in its order, with where.
			if len(rep.Items) != len(p.CoverItems()) {
				t.Fatalf("%d items, pack has %d", len(rep.Items), len(p.CoverItems()))
			}
			for i, it := range rep.Items {
				if it.CoverItem != p.CoverItems()[i] {
					t.Errorf("item %d is %+v, want %+v", i, it.CoverItem, p.CoverItems()[i])
				}
				w, ok := tt.want[it.Name()]
				if !ok {
					t.Errorf("unexpected item %s", it.Name())
					continue
				}
				if it.Hits != w.hits || !slices.Equal(it.Tests, w.tests) || it.Covered() != (w.hits > 0) {
					t.Errorf("%s: %d hits by %q, want %d by %q", it.Name(), it.Hits, it.Tests, w.hits, w.tests)
				}
			}
			if rep.Pack != "cover" || rep.Covered != tt.covered || rep.Total() != 3 || rep.PercentText() != tt.percent {
				t.Errorf("pack %s: %d of %d, %s; want %d of 3, %s", rep.Pack, rep.Covered, rep.Total(), rep.PercentText(), tt.covered, tt.percent)
			}
			if rep.Below(66.7) != tt.below67 || rep.Below(66.6) != tt.below666 {
				t.Errorf("below 66.7: %v, below 66.6: %v; want %v, %v", rep.Below(66.7), rep.Below(66.6), tt.below67, tt.below666)
			}
			var missed []string
			for _, it := range rep.Uncovered() {
				missed = append(missed, it.Name())
			}
			for name, w := range tt.want {
				if (w.hits == 0) != slices.Contains(missed, name) {
					t.Errorf("uncovered %q: %s listed wrongly", missed, name)
				}
			}
		})
	}
}

// A case that does not run adds nothing; one that ran and failed counts,
// as what it ran was exercised all the same.
func TestCoverageOfFailedCases(t *testing.T) {
	p := load(t, pack)
	results, err := packtest.Run(p, packtest.Options{Run: regexp.MustCompile(`^fail_(expect|unknown_keys)$`)})
	if err != nil {
		t.Fatal(err)
	}
	var ran, unread *packtest.Result
	for i := range results {
		switch results[i].File {
		case "tests/fail_expect.yaml":
			ran = &results[i]
		case "tests/fail_unknown_keys.yaml":
			unread = &results[i]
		}
	}
	if ran == nil || unread == nil || ran.Err == nil || unread.Err == nil {
		t.Fatalf("results: %+v", results)
	}
	if unread.Coverage != nil || len(ran.Coverage) != len(p.CoverItems()) {
		t.Fatalf("coverage of the unread case %v, of the failed run %v", unread.Coverage, ran.Coverage)
	}
	rep, err := packtest.Coverage(p, results)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range rep.Items {
		if it.Name() == "window OPEN" && !slices.Equal(it.Tests, []string{ran.Name}) {
			t.Errorf("window OPEN covered by %q, want only %q", it.Tests, ran.Name)
		}
	}
}

// Counts of another pack's items are refused, not reported against the
// wrong items.
func TestCoverageOtherPack(t *testing.T) {
	p := load(t, coverPack)
	_, err := packtest.Coverage(p, []packtest.Result{{File: "tests/x.yaml", Name: "x", Coverage: []uint32{1}}})
	if w := "tests/x.yaml: coverage of 1 items, but pack cover has 3"; err == nil || err.Error() != w {
		t.Fatalf("err = %v, want %q", err, w)
	}
}

// The figure is rounded down, so a pack short of a threshold never reads
// as at it; nothing to cover is all covered.
func TestPercentText(t *testing.T) {
	for _, tt := range []struct {
		covered, total int
		want           string
		below90        bool
	}{
		{0, 0, "100.0%", false},
		{0, 3, "0.0%", true},
		{3, 3, "100.0%", false},
		{1999, 2000, "99.9%", false},
		{8999, 10000, "89.9%", true},
		{9, 10, "90.0%", false},
		{2, 3, "66.6%", true},
	} {
		r := packtest.Report{Items: make([]packtest.ItemCoverage, tt.total), Covered: tt.covered}
		if got := r.PercentText(); got != tt.want || r.Below(90) != tt.below90 {
			t.Errorf("%d of %d: %s, below 90 %v; want %s, %v", tt.covered, tt.total, got, r.Below(90), tt.want, tt.below90)
		}
	}
}

func coverSuite(t *testing.T) packtest.Suite {
	t.Helper()
	p := load(t, coverPack)
	results, err := packtest.Run(p, packtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := packtest.Coverage(p, results)
	if err != nil {
		t.Fatal(err)
	}
	return packtest.Suite{Name: p.Name, Results: results, Coverage: &rep}
}

const wantCoverJSON = `{
  "passed": 2,
  "failed": 0,
  "suites": [
    {
      "name": "cover",
      "passed": 2,
      "failed": 0,
      "cases": [
        {
          "name": "quiet",
          "file": "tests/quiet.yaml",
          "status": "pass"
        },
        {
          "name": "bell rung",
          "file": "tests/rung.yaml",
          "status": "pass"
        }
      ],
      "coverage": {
        "percent": 66.6,
        "covered": 2,
        "total": 3,
        "items": [
          {
            "kind": "rule",
            "id": "ring",
            "file": "pack.yaml",
            "line": 24,
            "col": 5,
            "hits": 1,
            "tests": [
              "bell rung"
            ]
          },
          {
            "kind": "window",
            "id": "OPEN",
            "file": "pack.yaml",
            "line": 31,
            "col": 7,
            "hits": 2,
            "tests": [
              "quiet",
              "bell rung"
            ]
          },
          {
            "kind": "route",
            "id": "TO_HOST",
            "file": "pack.yaml",
            "line": 34,
            "col": 5,
            "hits": 0,
            "tests": []
          }
        ]
      }
    }
  ]
}
`

const wantCoverJUnit = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="baton" tests="2" failures="0" errors="0" time="0">
  <testsuite name="cover" tests="2" failures="0" errors="0" skipped="0" time="0">
    <properties>
      <property name="coverage.percent" value="66.6"></property>
      <property name="coverage.covered" value="2"></property>
      <property name="coverage.total" value="3"></property>
    </properties>
    <testcase name="quiet" classname="cover" file="tests/quiet.yaml" time="0"></testcase>
    <testcase name="bell rung" classname="cover" file="tests/rung.yaml" time="0"></testcase>
  </testsuite>
</testsuites>
`

// The reports carry a suite's coverage: the JSON every item, JUnit the
// figures as the suite's properties, before its test cases as the JUnit
// schema orders them.
func TestCoverageReports(t *testing.T) {
	s := coverSuite(t)
	for _, c := range []struct {
		name  string
		write func(*bytes.Buffer) error
		want  string
	}{
		{"json", func(b *bytes.Buffer) error { return packtest.WriteJSON(b, []packtest.Suite{s}) }, wantCoverJSON},
		{"junit", func(b *bytes.Buffer) error { return packtest.WriteJUnit(b, "baton", []packtest.Suite{s}) }, wantCoverJUnit},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := c.write(&b); err != nil {
				t.Fatal(err)
			}
			if b.String() != c.want {
				t.Fatalf("got:\n%s\nwant:\n%s", b.String(), c.want)
			}
		})
	}
	var b bytes.Buffer
	if err := packtest.WriteJUnit(&b, "baton", []packtest.Suite{s}); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&b)
	dec.Strict = true
	var r junit
	if err := dec.Decode(&r); err != nil || r.Tests != 2 || len(r.Suites) != 1 || len(r.Suites[0].Cases) != 2 {
		t.Fatalf("reading back: %v, %+v", err, r)
	}
}

// UncoveredNames names what a failing threshold lists, files as the
// caller shows them.
func TestUncoveredNames(t *testing.T) {
	s := coverSuite(t)
	for _, tt := range []struct {
		where func(rules.Pos) string
		want  []string
	}{
		{nil, []string{"route TO_HOST (pack.yaml:34:5)"}},
		{func(p rules.Pos) string { return fmt.Sprintf("dir/%s:%d", p.File, p.Line) }, []string{"route TO_HOST (dir/pack.yaml:34)"}},
	} {
		if got := s.Coverage.UncoveredNames(tt.where); !slices.Equal(got, tt.want) {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}
