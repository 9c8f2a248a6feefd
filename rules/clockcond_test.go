package rules

import (
	"testing"
	"testing/fstest"
)

// An end condition that only compares the clock with a fixed number is
// answered without expr's machine, and answers as the machine would; any
// other is left to the machine.
func TestClockCondition(t *testing.T) {
	for _, tc := range []struct {
		when  string
		known bool
		at    map[int64]bool // now → holds
	}{
		{"now() >= LIMIT", true, map[int64]bool{59_999: false, 60_000: true, 60_001: true}},
		{"now() > LIMIT", true, map[int64]bool{60_000: false, 60_001: true}},
		{"now() < 5000", true, map[int64]bool{4999: true, 5000: false}},
		{"now() <= 5000", true, map[int64]bool{5000: true, 5001: false}},
		{"LIMIT <= now()", true, map[int64]bool{59_999: false, 60_000: true}},
		{"5000 > now()", true, map[int64]bool{4999: true, 5000: false}},
		{"now() >= COUNT", false, nil}, // a variable changes
		{"now() >= HALF", false, nil},  // not a whole number
		{"now() >= LIMIT && COUNT == 0", false, nil},
		{"now() == LIMIT", false, nil},
	} {
		t.Run(tc.when, func(t *testing.T) {
			src := "name: c\nduration: 2m\nconstants:\n  LIMIT: 1m\n  HALF: 0.5\nvars:\n  COUNT: 0\n" +
				"roles:\n  qa: {name: Quinn, persona: You are Quinn., fallback: {default: \"Go on.\"}}\n" +
				"routing:\n  - {id: R, type: role, role: qa}\n" +
				"end:\n  - {id: E, when: \"" + tc.when + "\", reason: done}\n"
			p, err := LoadFS(fstest.MapFS{PackFile: {Data: []byte(src)}})
			if err != nil {
				t.Fatal(err)
			}
			x := &p.End[0].When
			if _, known := x.ClockCondition(0); known != tc.known {
				t.Fatalf("recognised %v, want %v", known, tc.known)
			}
			env := p.NewEnv()
			for now, want := range tc.at {
				got, _ := x.ClockCondition(now)
				env.Now = now
				viaVM, err := env.EvalBool(&Expr{Pos: x.Pos, Src: x.Src, prog: x.prog})
				if err != nil {
					t.Fatal(err)
				}
				if got != want || viaVM != want {
					t.Errorf("at %d: %v, expr says %v, want %v", now, got, viaVM, want)
				}
			}
		})
	}
}
