// Package scenarios holds the bundled rule packs, one folder each, embedded
// in the binary so `baton dryrun dayone` works anywhere.
package scenarios

import (
	"embed"
	"io/fs"
)

// FS holds every bundled pack folder. The embed directive is the one list
// of bundled packs; everything else derives from FS.
//
//go:embed all:dayone all:hotseat all:boardroom all:brain all:training
var FS embed.FS

// Names lists the bundled packs, sorted.
func Names() []string { return names(FS) }

// names lists the folders at the root of fsys.
func names(fsys fs.FS) []string {
	ents, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}
