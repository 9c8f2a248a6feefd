package rules_test

import (
	"errors"
	"testing"

	"github.com/batonhq/baton/rules"
)

type doc struct {
	rules.Pos
	Name  string           `yaml:"name"`
	Wait  rules.Duration   `yaml:"wait"`
	Items []rules.At[item] `yaml:"items"`
	Note  rules.At[string] `yaml:"note"`
	Args  map[string]any   `yaml:"args"`
	Tags  []string         `yaml:"tags"`
}

type item struct {
	Text  string `yaml:"text"`
	Count int    `yaml:"count"`
}

// DecodeFile reads any struct as Load reads a pack: every problem at once,
// sorted, merge keys expanded, rules types with their own syntax, and
// positions kept where a field asks for them.
func TestDecodeFile(t *testing.T) {
	src := `name: demo
wait: "02:55.0"
items:
  - &base {text: hi, count: 2}
  - {<<: *base, count: many}
  - {text: [x], txt: y}
note: hello
args: {to: qa, n: 1}
tags: [a, b]
`
	var d doc
	err := rules.DecodeFile("t.yaml", []byte(src), &d)
	var errs rules.ErrorList
	if !errors.As(err, &errs) {
		t.Fatalf("not an ErrorList: %v", err)
	}
	want := `t.yaml:5:24: expected a whole number, found "many"
t.yaml:6:12: expected text, found a list
t.yaml:6:17: unknown field "txt": did you mean text? (known: count, text)`
	if err.Error() != want {
		t.Fatalf("errors:\n%v\nwant:\n%s", err, want)
	}
	if d.Pos != (rules.Pos{File: "t.yaml", Line: 1, Col: 1}) || d.Name != "demo" || d.Wait.MS != 175000 {
		t.Fatalf("decoded %+v", d)
	}
	if len(d.Items) != 3 || d.Items[1].Val.Text != "hi" || d.Items[1].Pos.Line != 5 {
		t.Fatalf("merged item: %+v", d.Items)
	}
	for i, bad := range []bool{false, true, true} {
		if d.Items[i].Bad != bad {
			t.Errorf("items[%d].Bad = %v, want %v", i, d.Items[i].Bad, bad)
		}
	}
	if d.Note.Val != "hello" || d.Note.Pos.String() != "t.yaml:7:7" || d.Note.Key.String() != "t.yaml:7:1" {
		t.Fatalf("note: %+v", d.Note)
	}
	if d.Args["to"] != "qa" || d.Args["n"] != 1 {
		t.Fatalf("args: %v", d.Args)
	}
}

// Load keeps the last of a key given twice; DecodeFile says so.
func TestDecodeFileKeyTwice(t *testing.T) {
	var d doc
	err := rules.DecodeFile("t.yaml", []byte("name: a\ntags: [x]\nname: b\n"), &d)
	if w := `t.yaml:3:1: field "name" given twice`; err == nil || err.Error() != w {
		t.Fatalf("err = %v, want %s", err, w)
	}
	if d.Name != "a" {
		t.Fatalf("name %q, want the first", d.Name)
	}
}

// A syntax error reads as in a pack; an empty document leaves v alone.
func TestDecodeFileSyntaxAndEmpty(t *testing.T) {
	var d doc
	err := rules.DecodeFile("t.yaml", []byte("name: [a\n"), &d)
	if w := "t.yaml:1:8: YAML syntax: did not find expected ',' or ']'"; err == nil || err.Error() != w {
		t.Fatalf("err = %v, want %s", err, w)
	}
	for _, src := range []string{"", "# nothing\n", "~\n"} {
		d := doc{Name: "kept"}
		if err := rules.DecodeFile("t.yaml", []byte(src), &d); err != nil || d.Name != "kept" || d.Line != 0 {
			t.Errorf("%q: %v, %+v", src, err, d)
		}
	}
	if err := rules.DecodeFile("t.yaml", []byte("name: x\n"), doc{}); err == nil {
		t.Fatal("decoded into a struct that is not a pointer")
	}
}
