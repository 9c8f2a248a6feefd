package engine_test

import (
	"os"
	"strings"
	"testing"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
)

// A rule's actions read role as "", however its condition was answered:
// a clock-only condition (now() >= 0) skips expr's machine, and the role
// an earlier condition (the window's) set must not leak into the actions.
func TestRuleActionsReadNoRole(t *testing.T) {
	p, err := rules.Load(os.DirFS("testdata/packs/rolecheck"), ".")
	if err != nil {
		t.Fatal(err)
	}
	if _, known := p.Rules[0].When.ClockCondition(0); !known {
		t.Fatal("CHECK's condition is not taken for a clock condition: the test tests nothing")
	}
	res, err := dryrun.Run(p, dryrun.Options{})
	if err != nil {
		t.Fatal(err)
	}
	empty := 0
	for _, r := range res.Records {
		switch {
		case strings.Contains(r.Text, "role read as qa"):
			t.Fatalf("at %d a rule's action read the window's role", r.T)
		case strings.Contains(r.Text, "role read as empty"):
			empty++
		}
	}
	if empty == 0 {
		t.Fatal("no check ran")
	}
}
