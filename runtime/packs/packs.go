// Package packs finds a pack by folder or bundled name.
package packs

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/scenarios"
)

// Open loads the pack in folder dir, or the bundled pack of that name
// (also accepting "scenarios/NAME" when no such folder exists here).
func Open(dir string) (*rules.Pack, error) {
	if st, err := os.Stat(filepath.Join(dir, rules.PackFile)); err == nil && !st.IsDir() {
		p, err := rules.Load(os.DirFS(dir), ".")
		if p != nil {
			p.Dir = dir
		}
		return p, prefix(dir, err)
	}
	name := path.Base(filepath.ToSlash(filepath.Clean(dir)))
	for _, n := range scenarios.Names() {
		if n == name {
			p, err := rules.Load(scenarios.FS, n)
			if p != nil {
				p.Dir = "" // embedded: nothing on disk to update
			}
			return p, prefix(n, err)
		}
	}
	return nil, fmt.Errorf("%s: no %s there and no bundled pack named %q (bundled: %v)", dir, rules.PackFile, name, scenarios.Names())
}

func prefix(dir string, err error) error {
	if err == nil {
		return nil
	}
	var el rules.ErrorList
	if errors.As(err, &el) {
		// Name files as the user wrote the folder, so editors can jump there.
		for _, e := range el {
			if e.Pos.File != "" {
				e.Pos.File = filepath.Join(dir, e.Pos.File)
			}
		}
		return fmt.Errorf("pack %s has %d problem(s):\n%w", dir, len(el), err)
	}
	return fmt.Errorf("pack %s: %w", dir, err)
}
