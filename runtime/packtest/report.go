package packtest

import (
	"encoding/json"
	"encoding/xml"
	"io"
	"strings"
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
}

type jsonReport struct {
	Passed int         `json:"passed"`
	Failed int         `json:"failed"`
	Suites []jsonSuite `json:"suites"`
}

type jsonSuite struct {
	Name   string     `json:"name"`
	Passed int        `json:"passed"`
	Failed int        `json:"failed"`
	Cases  []jsonCase `json:"cases"`
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
// rewritten), "error"}]}]}.
func WriteJSON(w io.Writer, suites []Suite) error {
	r := jsonReport{Suites: []jsonSuite{}}
	for _, s := range suites {
		js := jsonSuite{Name: s.Name, Cases: []jsonCase{}}
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
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
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
// of it. Times are 0. Characters XML cannot hold are written as U+FFFD.
func WriteJUnit(w io.Writer, name string, suites []Suite) error {
	out := junitSuites{Name: name, Time: "0"}
	for _, s := range suites {
		js := junitSuite{Name: s.Name, Time: "0"}
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
