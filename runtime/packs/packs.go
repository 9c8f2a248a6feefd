// Package packs resolves the pack that a command or a client names. Every
// command (dryrun, test, check, replay) and the server follow the same rule:
//
//  1. A reference written as a path (it contains a slash, is "." or "..",
//     or is absolute) names a folder, which must hold pack.yaml. Nothing
//     else is tried: a mistyped path is an error, never the bundled pack
//     that happens to share its last element.
//  2. A bare name is the bundled pack of that name when there is one, even
//     if the working directory has a folder of that name (write ./NAME for
//     the folder). Where the resolver has a Workspace (the command line
//     sets "scenarios") and WORKSPACE/NAME holds a pack.yaml, the name is
//     that folder instead: in a checkout of the packs, the copy being
//     edited is the one that runs, not the one built into the binary.
//  3. Any other bare name is a folder in the working directory.
//
// The bundled packs come from an fs.FS (scenarios.FS in the binary), one
// folder each at its root, so the resolver serves any set of packs and
// nothing here depends on which ones ship.
//
// A folder is opened as an os.Root, so no file of the pack, however its
// symbolic links point, is read from outside the folder.
package packs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/batonhq/baton/rules"
)

// Resolver opens packs by reference. The zero value knows no bundled packs
// and opens any folder.
type Resolver struct {
	// Bundled holds the bundled packs, one folder each at its root.
	Bundled fs.FS
	// Folder, if set, opens pack folders in place of os.OpenRoot. It is
	// given the folder's absolute path with every symbolic link resolved,
	// so a link that leads out of an allowed place is judged by where it
	// leads, and returns the folder as a root, or an error to refuse it
	// (one matching fs.ErrNotExist reads as "no pack.yaml there"). The
	// server uses it to keep clients inside --packs.
	Folder func(real string) (*os.Root, error)
	// Show, if set, is how errors name a folder reference in place of the
	// reference itself. The server passes folders by absolute path and
	// names them relative to its pack roots, so no error tells a client
	// where they are on its disk.
	Show func(ref string) string
	// Workspace, if set, is a folder (relative to the working directory)
	// where a checkout keeps the bundled packs' sources: a bundled name
	// with a pack.yaml under WORKSPACE/NAME opens that folder (rule 2).
	// The server leaves it empty: what a client names never depends on
	// the server's working directory.
	Workspace string

	hashes sync.Map // bundled name -> hash, for BundledHash
}

// Names lists the bundled packs: the folders at the root of Bundled that
// hold a pack.yaml, sorted.
func (r *Resolver) Names() []string {
	if r.Bundled == nil {
		return nil
	}
	ents, err := fs.ReadDir(r.Bundled, ".")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if st, err := fs.Stat(r.Bundled, path.Join(e.Name(), rules.PackFile)); err == nil && !st.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// IsPath reports whether ref is written as a path (rule 1).
func IsPath(ref string) bool {
	return strings.ContainsRune(ref, '/') || strings.ContainsRune(ref, filepath.Separator) ||
		ref == "." || ref == ".." || filepath.IsAbs(ref)
}

// IsBundled reports whether ref names a bundled pack (rule 2).
func (r *Resolver) IsBundled(ref string) bool {
	return !IsPath(ref) && slices.Contains(r.Names(), ref)
}

// Open loads the pack ref names. A folder's pack has Dir set to ref, so
// pack tests can rewrite its golden files; a bundled pack has no Dir.
func (r *Resolver) Open(ref string) (*rules.Pack, error) {
	shown := r.show(ref)
	switch {
	case ref == "":
		return nil, errors.New("no pack named: give a pack folder or a bundled pack name")
	case r.IsBundled(ref) && r.inWorkspace(ref):
		dir := filepath.Join(r.Workspace, ref)
		return r.openFolder(dir, r.show(dir), func() error {
			return fmt.Errorf("%s: no %s there", dir, rules.PackFile)
		})
	case r.IsBundled(ref):
		p, err := rules.Load(r.Bundled, ref)
		if p != nil {
			p.Dir = "" // embedded: nothing on disk to update
		}
		return p, prefix(ref, err)
	case IsPath(ref):
		return r.openFolder(ref, shown, func() error {
			why := fmt.Sprintf("%s: no %s there", shown, rules.PackFile)
			if base := filepath.Base(ref); slices.Contains(r.Names(), base) {
				why += fmt.Sprintf(" (a path names a folder; for the bundled pack write %s)", base)
			}
			return errors.New(why)
		})
	}
	return r.openFolder(ref, shown, func() error {
		return fmt.Errorf("%s: no bundled pack of that name (bundled: %s) and no folder %s with a %s",
			shown, strings.Join(r.Names(), ", "), shown, rules.PackFile)
	})
}

// inWorkspace reports whether the workspace holds a folder for bundled
// pack name.
func (r *Resolver) inWorkspace(name string) bool {
	if r.Workspace == "" {
		return false
	}
	st, err := os.Stat(filepath.Join(r.Workspace, name, rules.PackFile))
	return err == nil && !st.IsDir()
}

// OpenBundled loads the bundled pack name, whatever the workspace holds:
// a log recorded with the binary's copy replays with that copy.
func (r *Resolver) OpenBundled(name string) (*rules.Pack, error) {
	if !r.IsBundled(name) {
		return nil, fmt.Errorf("%s: no bundled pack of that name (bundled: %s)", name, strings.Join(r.Names(), ", "))
	}
	p, err := rules.Load(r.Bundled, name)
	if p != nil {
		p.Dir = ""
	}
	return p, prefix(name, err)
}

// BundledHash is the content hash of the bundled pack name, or "" when
// there is none (or it does not load), so a command can say that the
// folder it ran differs from the copy in the binary.
func (r *Resolver) BundledHash(name string) string {
	if !r.IsBundled(name) {
		return ""
	}
	if h, ok := r.hashes.Load(name); ok {
		return h.(string)
	}
	h := ""
	if p, err := rules.Load(r.Bundled, name); err == nil {
		h = p.Hash
	}
	r.hashes.Store(name, h)
	return h
}

func (r *Resolver) show(ref string) string {
	if r.Show == nil || ref == "" {
		return ref
	}
	return r.Show(ref)
}

// openFolder loads the pack in folder dir, named shown in errors; missing
// explains a folder without a pack.yaml.
func (r *Resolver) openFolder(dir, shown string, missing func() error) (*rules.Pack, error) {
	real, err := RealPath(dir)
	if err != nil {
		return nil, fmt.Errorf("pack folder %s: %w", shown, err)
	}
	open := os.OpenRoot
	if r.Folder != nil {
		open = r.Folder
	}
	root, err := open(real)
	if err != nil {
		// The error's path is the real one, which shown stands for.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil, missing()
		}
		if r.Folder != nil {
			return nil, fmt.Errorf("%s: %w", shown, err)
		}
		if st, serr := os.Stat(real); serr == nil && !st.IsDir() {
			return nil, missing()
		}
		return nil, fmt.Errorf("pack folder %s: %w", shown, err)
	}
	// The pack keeps the root open: pack tests and the dry run read its
	// files later, through the same root.
	p, err := rules.Load(root.FS(), ".")
	if err != nil {
		root.Close()
		if errors.Is(err, rules.ErrNotPack) {
			return nil, missing()
		}
		return nil, prefix(shown, err)
	}
	p.Dir = dir
	return p, nil
}

// RealPath is dir made absolute with its symbolic links resolved, or,
// for a path that does not exist (yet), made absolute only.
func RealPath(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	}
	return abs, nil
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
