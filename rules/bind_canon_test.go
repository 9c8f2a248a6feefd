package rules

import (
	"encoding/json"
	"testing"
	"testing/fstest"
)

// What Inputs.Supplied gives is what a log keeps and a replay binds
// again: binding it must give the same values and the same canonical
// form, for every type whose JSON differs from what expressions see.
func TestSuppliedRebinds(t *testing.T) {
	fsys := fstest.MapFS{"pack.yaml": {Data: []byte(`name: canon
schema: 1
duration: "05:00"
inputs:
  LENGTH: {type: duration, default: "01:00"}
  DEPTH: {type: number, whole: true, default: 2}
roles:
  host:
    name: Hal
    persona: You are Hal.
    fallback: {default: "Hello."}
timeline:
  anchors:
    - {id: END, at: LENGTH, action: end, reason: time_up}
`)}}
	p, err := LoadFS(fsys)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, length string
		ms           int64
	}{
		{"minutes", `"00:30"`, 30000},
		{"seconds", `"95s"`, 95000},
		{"millis", `"1500ms"`, 1500},
		{"whole minutes", `"02:00"`, 120000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := p.Bind(Supplied{"LENGTH": json.RawMessage(tc.length), "DEPTH": json.RawMessage(`4`)}, BindOptions{})
			if err != nil {
				t.Fatal(err)
			}
			again, err := p.Bind(in.Supplied(), BindOptions{})
			if err != nil {
				t.Fatalf("binding the canonical %s: %v", FormatSupplied(in.Supplied()), err)
			}
			if v, _ := again.Value("LENGTH"); v != tc.ms {
				t.Errorf("LENGTH %v after a rebind, want %d", v, tc.ms)
			}
			if a, b := FormatSupplied(in.Supplied()), FormatSupplied(again.Supplied()); a != b {
				t.Errorf("canonical form changed on a rebind: %s, then %s", a, b)
			}
		})
	}
}
