// Package scripttest holds what tests of pack scripts share: a load that
// keeps the machine busy, and a text that makes a backtracking regular
// expression work hard. Only tests import it.
package scripttest

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Busy keeps n goroutines spinning until the test ends, so that what the
// test checks is checked on a loaded machine.
func Busy(t testing.TB, n int) {
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for !stop.Load() {
			}
		})
	}
	t.Cleanup(func() {
		stop.Store(true)
		wg.Wait()
	})
}

// RepeatedWords is 500 different words and the last one again: a
// pattern that looks for a repeated word with a backreference backtracks
// for about a quarter of a second over it on an idle machine.
func RepeatedWords() string {
	var b strings.Builder
	for i := range 500 {
		fmt.Fprintf(&b, "w%d ", i)
	}
	b.WriteString("w499")
	return b.String()
}
