package packtest

import (
	"encoding/json"
	"encoding/xml"
	"io"
	"strconv"
	"strings"

	"github.com/batonhq/baton/rules"
)

// Reports for machines: a JSON document and JUnit XML, the format CI
// systems (GitHub Actions reporters, GitLab, Jenkins) show test results
// from. Neither carries durations or dates: the same results give the same
// bytes, so a report can be kept as a golden file or diffed between runs.

// Suite is one pack's results, as a report shows them.
type Suite struct {
	// Name is the pack's name.
	Name    string
	Results []Result
	// Coverage, when set, is the pack's coverage by these results; the
	// reports carry it (JSON in full, JUnit as the suite's properties).
	Coverage *Report
}

type jsonReport struct {
	Passed int         `json:"passed"`
	Failed int         `json:"failed"`
	Suites []jsonSuite `json:"suites"`
}

type jsonSuite struct {
	Name     string        `json:"name"`
	Passed   int           `json:"passed"`
	Failed   int           `json:"failed"`
	Cases    []jsonCase    `json:"cases"`
	Coverage *jsonCoverage `json:"coverage,omitempty"`
}

type jsonCoverage struct {
	// Percent is rounded down to a tenth, as the text report prints it.
	Percent float64    `json:"percent"`
	Covered int        `json:"covered"`
	Total   int        `json:"total"`
	Items   []jsonItem `json:"items"`
}

type jsonItem struct {
	Kind rules.CoverKind `json:"kind"`
	ID   string          `json:"id"`
	File string          `json:"file"`
	Line int             `json:"line,omitempty"`
	Col  int             `json:"col,omitempty"`
	Hits uint64          `json:"hits"`
	// Tests is never null, so a reader can take its length.
	Tests []string `json:"tests"`
}

func newJSONCoverage(r *Report) *jsonCoverage {
	jc := &jsonCoverage{Percent: float64(r.tenths()) / 10, Covered: r.Covered, Total: r.Total(), Items: []jsonItem{}}
	for _, it := range r.Items {
		tests := it.Tests
		if tests == nil {
			tests = []string{}
		}
		jc.Items = append(jc.Items, jsonItem{Kind: it.Kind, ID: it.ID, File: it.Pos.File, Line: it.Pos.Line, Col: it.Pos.Col,
			Hits: it.Hits, Tests: tests})
	}
	return jc
}

type jsonCase struct {
	Name string `json:"name"`
	File string `json:"file"`
	// Status is "pass" or "fail".
	Status  string `json:"status"`
	Updated bool   `json:"updated,omitempty"`
	Error   string `json:"error,omitempty"`
}

// WriteJSON writes the suites' results as one indented JSON document:
// {"passed", "failed", "suites": [{"name", "passed", "failed", "cases":
// [{"name", "file", "status" ("pass" or "fail"), "updated" (a golden was
// rewritten), "error"}], "coverage": {"percent", "covered", "total",
// "items": [{"kind", "id", "file", "line", "col", "hits", "tests"}]}}]},
// coverage only for a suite that has it.
func WriteJSON(w io.Writer, suites []Suite) error {
	r := jsonReport{Suites: []jsonSuite{}}
	for _, s := range suites {
		js := jsonSuite{Name: s.Name, Cases: []jsonCase{}}
		if s.Coverage != nil {
			js.Coverage = newJSONCoverage(s.Coverage)
		}
		for _, res := range s.Results {
			c := jsonCase{Name: res.Name, File: res.File, Status: "pass", Updated: res.Updated}
			if res.Err != nil {
				c.Status, c.Error = "fail", res.Err.Error()
				js.Failed++
			} else {
				js.Passed++
			}
			js.Cases = append(js.Cases, c)
		}
		r.Passed += js.Passed
		r.Failed += js.Failed
		r.Suites = append(r.Suites, js)
	}
	enc := json.NewEncoder(w)
	// Errors quote timelines and expectations; "<" is easier read as is.
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string           `xml:"name,attr"`
	Tests      int              `xml:"tests,attr"`
	Failures   int              `xml:"failures,attr"`
	Errors     int              `xml:"errors,attr"`
	Skipped    int              `xml:"skipped,attr"`
	Time       string           `xml:"time,attr"`
	Properties *junitProperties `xml:"properties"`
	Cases      []junitCase      `xml:"testcase"`
}

// junitProperties come before a suite's test cases, as the JUnit schema
// orders them.
type junitProperties struct {
	Props []junitProperty `xml:"property"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// coverageProperties are a suite's coverage figures; the items are left
// to the JSON report, JUnit having no place for them that CI shows.
func coverageProperties(r *Report) *junitProperties {
	return &junitProperties{Props: []junitProperty{
		{"coverage.percent", strings.TrimSuffix(r.PercentText(), "%")},
		{"coverage.covered", strconv.Itoa(r.Covered)},
		{"coverage.total", strconv.Itoa(r.Total())},
	}}
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the suites' results as JUnit XML: a testsuites
// element named name, a testsuite per pack, a testcase per case (its
// classname the pack, its file the case file), and for a failed case a
// failure whose message is the error's first line and whose text is all
// of it. Times are 0. A suite with coverage has the properties
// coverage.percent, coverage.covered and coverage.total. Characters XML
// cannot hold are written as U+FFFD.
func WriteJUnit(w io.Writer, name string, suites []Suite) error {
	out := junitSuites{Name: name, Time: "0"}
	for _, s := range suites {
		js := junitSuite{Name: s.Name, Time: "0"}
		if s.Coverage != nil {
			js.Properties = coverageProperties(s.Coverage)
		}
		for _, res := range s.Results {
			c := junitCase{Name: res.Name, Classname: s.Name, File: res.File, Time: "0"}
			if res.Err != nil {
				msg := res.Err.Error()
				c.Failure = &junitFailure{Message: headline(msg), Type: "failure", Text: msg}
				js.Failures++
			}
			if res.Updated {
				c.SystemOut = "golden updated"
			}
			js.Cases = append(js.Cases, c)
		}
		js.Tests = len(js.Cases)
		out.Tests += js.Tests
		out.Failures += js.Failures
		out.Suites = append(out.Suites, js)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// headline is the line of a case's error a CI summary shows: its first,
// or for a case that ran, whose first line only names its file, that name
// and the first problem.
func headline(msg string) string {
	first, rest, _ := strings.Cut(msg, "\n")
	if strings.HasSuffix(first, ":") && rest != "" {
		second, _, _ := strings.Cut(rest, "\n")
		return first + " " + second
	}
	return first
}
