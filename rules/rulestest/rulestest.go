// Package rulestest holds helpers for tests that need a pack. Only tests
// import it, so the binaries never link testing/fstest.
package rulestest

import (
	"testing/fstest"

	"github.com/batonhq/baton/rules"
)

// LoadBytes loads a pack from a single pack.yaml held in memory, for
// tests and fuzzing that write a pack inline.
func LoadBytes(data []byte) (*rules.Pack, error) {
	return rules.LoadFS(fstest.MapFS{rules.PackFile: {Data: data}})
}
