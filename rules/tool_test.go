package rules

import (
	"encoding/json"
	"reflect"
	"testing"
	"testing/fstest"
)

// TestToolParamsWith: the schema a model sees carries each choice's values
// as its enum, whatever the values hold, and is the schema as written
// otherwise.
func TestToolParamsWith(t *testing.T) {
	p, err := Load(fstest.MapFS{"pack.yaml": {Data: []byte(`
name: t
duration: 1m
roles: {qa: {persona: x}}
tools:
  pass:
    parameters:
      type: object
      properties:
        to: {type: string, description: who}
        why: {type: string}
        n: {type: integer}
      required: [to]
    choices:
      why: "['a']"
      to: "['b']"
`)}}, ".")
	if err != nil {
		t.Fatal(err)
	}
	tool, _ := p.Tool("pass")
	for _, choices := range [][][]string{
		{{"plain"}, {"qa", "ba"}},
		{{`say "hi"`, `back\slash`}, {"é", "<&>", "tab\there"}},
		{{}, {"x"}},
	} {
		raw := tool.ParamsWith(choices)
		var got map[string]any
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatalf("%v: not JSON: %v\n%s", choices, err, raw)
		}
		var want map[string]any
		_ = json.Unmarshal(tool.Params().JSON(), &want)
		props := want["properties"].(map[string]any)
		for i, name := range []string{"why", "to"} {
			enum := []any{}
			for _, v := range choices[i] {
				enum = append(enum, v)
			}
			props[name].(map[string]any)["enum"] = enum
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%v:\n got %v\nwant %v", choices, got, want)
		}
	}
}
