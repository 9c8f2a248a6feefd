package packtest_test

import (
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/packtest"
)

// inputsPack takes a name, a depth, a length and a brief file; its tests/
// supply them as cases do.
const inputsPack = "testdata/inputs"

// inputsFS is the inputs pack in memory with its tests replaced by cases.
func inputsFS(t *testing.T, cases map[string]string) *rules.Pack {
	t.Helper()
	fsys := fstest.MapFS{}
	for _, name := range []string{"pack.yaml", "tests/brief.md"} {
		data, err := os.ReadFile(inputsPack + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		fsys[name] = &fstest.MapFile{Data: data}
	}
	for name, text := range cases {
		fsys["tests/"+name] = &fstest.MapFile{Data: []byte(text)}
	}
	p, err := rules.LoadFS(fsys)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The pack's own cases pass: with the defaults, with values and an @file,
// and with a file given inline.
func TestInputsPackPasses(t *testing.T) {
	p, err := rules.Load(os.DirFS(inputsPack), ".")
	if err != nil {
		t.Fatal(err)
	}
	res, err := packtest.Run(p, packtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 {
		t.Errorf("%d cases ran, want 3", len(res))
	}
	for _, r := range res {
		if r.Err != nil {
			t.Errorf("%s: %v", r.File, r.Err)
		}
	}
}

// A case's inputs reach the run, and a bad one is reported where it is
// written, as the rest of a case is.
func TestCaseInputs(t *testing.T) {
	const expect = `
expect:
  - {at: "00:00", type: tickets, data_contains: '{"host":7}'}
  - {at: "00:40", type: session_end}
`
	for _, tc := range []struct {
		name, text, want string
	}{
		// Without the inputs the session holds 2 tickets and ends at
		// 01:00: a harness that dropped them fails here.
		{"applied", "inputs: {DEPTH: 7, LENGTH: \"00:40\"}" + expect, ""},
		{"ignored", "name: ignored" + expect, "not found"},
		{"out of range", "inputs:\n  DEPTH: 70\n" + expect,
			"tests/case.yaml:2:3: input DEPTH: 70 is above the maximum 20"},
		{"not a number", "inputs:\n  LENGTH: 40s\n  DEPTH: deep\n" + expect,
			`tests/case.yaml:3:10: input DEPTH: "deep" is not a number`},
		{"unknown", "inputs:\n  DEPHT: 7\n" + expect,
			"tests/case.yaml:2:3: input DEPHT: the pack declares no such input (it takes CANDIDATE, DEPTH, LENGTH, brief)"},
		{"missing file", "inputs:\n  brief: \"@nowhere.md\"\n" + expect,
			"tests/case.yaml:2:10: input brief: open tests/nowhere.md: file does not exist"},
		{"not a file", "inputs:\n  brief: [3]\n" + expect,
			"tests/case.yaml:2:10: input brief: a file input takes @path"},
		{"bad file object", "inputs:\n  brief: {name: b.md, body: x}\n" + expect,
			`tests/case.yaml:2:3: input brief: want a file {name, media_type, data | text | sha256} or a list of them: json: unknown field "body"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := inputsFS(t, map[string]string{"case.yaml": tc.text})
			res, err := packtest.Run(p, packtest.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := res[0].Err
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("failed: %v", got)
			case tc.want != "" && got == nil:
				t.Errorf("passed, want %q", tc.want)
			case tc.want != "" && !strings.Contains(got.Error(), tc.want):
				t.Errorf("error\n%v\nwant it to hold %q", got, tc.want)
			}
			// Check reports the same problems without running anything.
			if cerr := packtest.Check(p); tc.want != "" && tc.want != "not found" && (cerr == nil || !strings.Contains(cerr.Error(), tc.want)) {
				t.Errorf("Check: %v, want %q", cerr, tc.want)
			}
		})
	}
}
