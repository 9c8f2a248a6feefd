package engine

import "testing"

// Today's features always settle within a few passes (a turn that starts
// either speaks, waits for the model or is held), so the bound on settle
// cannot be reached from a pack; it is tested here directly, and
// FuzzStepModes and the pack tests fail on any engine_error effect.
func TestConvergeReportsALoop(t *testing.T) {
	n := 0
	if converge(maxSettle, func() bool { n++; return true }) {
		t.Fatal("a step that always makes progress was reported as settled")
	}
	if n != maxSettle {
		t.Fatalf("ran %d passes, want %d", n, maxSettle)
	}
	n = 0
	if !converge(maxSettle, func() bool { n++; return n < 3 }) || n != 3 {
		t.Fatalf("a step that settles after 3 passes: settled=%v after %d", false, n)
	}
}
