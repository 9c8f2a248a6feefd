package packtest_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"strings"
	"testing"

	"github.com/batonhq/baton/runtime/packtest"
)

// suites are results of every kind: a pass, a golden rewritten, a case
// that did not load, and one that ran and failed, its error holding what
// XML must escape and characters it cannot hold at all.
var suites = []packtest.Suite{
	{Name: "dayone", Results: []packtest.Result{
		{File: "tests/ba_anchor.yaml", Name: "BA anchor"},
		{File: "tests/silent.yaml", Name: "silent candidate", Updated: true},
	}},
	{Name: "packtest", Results: []packtest.Result{
		{File: "tests/bad.yaml", Name: "bad", Err: errors.New(`tests/bad.yaml:3:1: unknown field "evnts": did you mean events?`)},
		{File: "tests/ran.yaml", Name: "ran <&>", Err: errors.New("tests/ran.yaml:\nexpect[0] {text=\"a<b\"}: not found after the start\ntimeline:\n00:00.5  qa  window  ]]> \x1b[31m\x00")},
	}},
	{Name: "empty"},
}

const wantJSON = `{
  "passed": 2,
  "failed": 2,
  "suites": [
    {
      "name": "dayone",
      "passed": 2,
      "failed": 0,
      "cases": [
        {
          "name": "BA anchor",
          "file": "tests/ba_anchor.yaml",
          "status": "pass"
        },
        {
          "name": "silent candidate",
          "file": "tests/silent.yaml",
          "status": "pass",
          "updated": true
        }
      ]
    },
    {
      "name": "packtest",
      "passed": 0,
      "failed": 2,
      "cases": [
        {
          "name": "bad",
          "file": "tests/bad.yaml",
          "status": "fail",
          "error": "tests/bad.yaml:3:1: unknown field \"evnts\": did you mean events?"
        },
        {
          "name": "ran <&>",
          "file": "tests/ran.yaml",
          "status": "fail",
          "error": "tests/ran.yaml:\nexpect[0] {text=\"a<b\"}: not found after the start\ntimeline:\n00:00.5  qa  window  ]]> \u001b[31m\u0000"
        }
      ]
    },
    {
      "name": "empty",
      "passed": 0,
      "failed": 0,
      "cases": []
    }
  ]
}
`

const wantJUnit = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="baton test" tests="4" failures="2" errors="0" time="0">
  <testsuite name="dayone" tests="2" failures="0" errors="0" skipped="0" time="0">
    <testcase name="BA anchor" classname="dayone" file="tests/ba_anchor.yaml" time="0"></testcase>
    <testcase name="silent candidate" classname="dayone" file="tests/silent.yaml" time="0">
      <system-out>golden updated</system-out>
    </testcase>
  </testsuite>
  <testsuite name="packtest" tests="2" failures="2" errors="0" skipped="0" time="0">
    <testcase name="bad" classname="packtest" file="tests/bad.yaml" time="0">
      <failure message="tests/bad.yaml:3:1: unknown field &#34;evnts&#34;: did you mean events?" type="failure">tests/bad.yaml:3:1: unknown field &#34;evnts&#34;: did you mean events?</failure>
    </testcase>
    <testcase name="ran &lt;&amp;&gt;" classname="packtest" file="tests/ran.yaml" time="0">
      <failure message="tests/ran.yaml: expect[0] {text=&#34;a&lt;b&#34;}: not found after the start" type="failure">tests/ran.yaml:&#xA;expect[0] {text=&#34;a&lt;b&#34;}: not found after the start&#xA;timeline:&#xA;00:00.5  qa  window  ]]&gt; ` + "\uFFFD[31m\uFFFD" + `</failure>
    </testcase>
  </testsuite>
  <testsuite name="empty" tests="0" failures="0" errors="0" skipped="0" time="0"></testsuite>
</testsuites>
`

// The reports are byte for byte what the same results give, every time.
func TestReportsExact(t *testing.T) {
	for _, c := range []struct {
		name  string
		write func(*bytes.Buffer) error
		want  string
	}{
		{"json", func(b *bytes.Buffer) error { return packtest.WriteJSON(b, suites) }, wantJSON},
		{"junit", func(b *bytes.Buffer) error { return packtest.WriteJUnit(b, "baton test", suites) }, wantJUnit},
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
}

// junit is the shape CI parsers read: testsuites of testsuite of
// testcase, a failure in a failed case.
type junit struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Suites   []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Cases    []struct {
			Name      string `xml:"name,attr"`
			Classname string `xml:"classname,attr"`
			Time      string `xml:"time,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// A strict XML reader takes the JUnit report back as the results it was
// written from: counts that add up, each case under its pack, each
// failure with its whole error as text.
func TestJUnitReadsBack(t *testing.T) {
	var b bytes.Buffer
	if err := packtest.WriteJUnit(&b, "baton test", suites); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&b)
	dec.Strict = true
	var r junit
	if err := dec.Decode(&r); err != nil {
		t.Fatal(err)
	}
	if r.Tests != 4 || r.Failures != 2 || len(r.Suites) != len(suites) {
		t.Fatalf("%d tests, %d failures, %d suites", r.Tests, r.Failures, len(r.Suites))
	}
	for i, s := range r.Suites {
		in := suites[i]
		if s.Name != in.Name || s.Tests != len(in.Results) || len(s.Cases) != len(in.Results) {
			t.Fatalf("suite %d: %+v", i, s)
		}
		failures := 0
		for j, c := range s.Cases {
			res := in.Results[j]
			if c.Name != res.Name || c.Classname != in.Name || c.Time != "0" {
				t.Errorf("case %+v for %+v", c, res)
			}
			switch {
			case res.Err == nil && c.Failure != nil:
				t.Errorf("%s: a failure for a pass", res.Name)
			case res.Err != nil && c.Failure == nil:
				t.Errorf("%s: no failure", res.Name)
			case res.Err != nil:
				failures++
				// What XML cannot hold reads back as U+FFFD.
				want := strings.Map(func(r rune) rune {
					if r < ' ' && r != '\n' {
						return '\uFFFD'
					}
					return r
				}, res.Err.Error())
				if c.Failure.Text != want {
					t.Errorf("%s: failure text %q", res.Name, c.Failure.Text)
				}
			}
		}
		if s.Failures != failures {
			t.Errorf("suite %s: failures=%d, counted %d", s.Name, s.Failures, failures)
		}
	}
}

// The JSON report reads back as the results it was written from.
func TestJSONReadsBack(t *testing.T) {
	var b bytes.Buffer
	if err := packtest.WriteJSON(&b, suites); err != nil {
		t.Fatal(err)
	}
	var r struct {
		Passed, Failed int
		Suites         []struct {
			Name  string
			Cases []struct{ Name, File, Status, Error string }
		}
	}
	if err := json.Unmarshal(b.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.Passed != 2 || r.Failed != 2 || len(r.Suites) != 3 {
		t.Fatalf("%+v", r)
	}
	for i, s := range r.Suites {
		for j, c := range s.Cases {
			res := suites[i].Results[j]
			wantErr, status := "", "pass"
			if res.Err != nil {
				wantErr, status = res.Err.Error(), "fail"
			}
			if c.Name != res.Name || c.File != res.File || c.Status != status || c.Error != wantErr {
				t.Errorf("case %+v for %+v", c, res)
			}
		}
	}
}
