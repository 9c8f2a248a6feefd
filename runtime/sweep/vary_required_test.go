package sweep_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/rules/rulestest"
	"github.com/batonhq/baton/runtime/sweep"
)

// The values --vary tries are checked with the inputs every session
// supplies, so a pack that requires another input can be swept.
func TestVaryBindsWithTheOtherInputs(t *testing.T) {
	p, err := rulestest.LoadBytes([]byte(`
name: req
duration: 10m
inputs:
  who: {type: text, required: true}
  depth: {type: number, whole: true, min: 1, max: 9, default: 3}
roles: [{id: qa, persona: p}]
tickets: {roles: [qa], total: depth}
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sweep.ParseVary(p, nil, "depth=2,4", nil); err == nil || !strings.Contains(err.Error(), "input who: required") {
		t.Fatalf("without who: %v", err)
	}
	v, err := sweep.ParseVary(p, rules.Supplied{"who": json.RawMessage(`"Ada"`)}, "depth=2,4", nil)
	if err != nil || strings.Join(v.Values, ",") != "2,4" {
		t.Fatalf("with who: %v %v", v, err)
	}
	if _, err := sweep.ParseVary(p, rules.Supplied{"who": json.RawMessage(`"Ada"`)}, "depth=2,40", nil); err == nil || !strings.Contains(err.Error(), "depth=40") {
		t.Fatalf("a value out of range: %v", err)
	}
}
