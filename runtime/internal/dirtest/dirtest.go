// Package dirtest builds folder trees for tests, symbolic links included,
// the way an operator's pack roots look on disk.
package dirtest

import (
	"os"
	"path/filepath"
	"testing"
)

// Write creates files (slash-separated path to content) and then links
// (slash-separated path to link target, written as is) under top, making
// every folder on the way.
func Write(t testing.TB, top string, files, links map[string]string) {
	t.Helper()
	place := func(name string) string {
		p := filepath.Join(top, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for name, data := range files {
		if err := os.WriteFile(place(name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range links {
		if err := os.Symlink(target, place(name)); err != nil {
			t.Fatal(err)
		}
	}
}
