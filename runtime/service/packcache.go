package service

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/packs"
)

// packCache loads each pack once; a compiled pack is immutable and shared
// by all of its sessions. Which pack a reference names is the resolver's
// rule, the same as the command line's.
type packCache struct {
	refs    *packs.Resolver
	roots   []string // folders under which clients may name pack paths
	anyPath bool     // --dev: any folder
	mu      sync.Mutex
	byRef   map[string]*rules.Pack
}

func newPackCache(bundled fs.FS, roots []string, anyPath bool) (*packCache, error) {
	c := &packCache{anyPath: anyPath, byRef: map[string]*rules.Pack{}}
	c.refs = &packs.Resolver{Bundled: bundled, Folder: c.folderAllowed}
	for _, r := range roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, fmt.Errorf("pack root %s: %w", r, err)
		}
		c.roots = append(c.roots, abs)
	}
	// Bundled packs load at start-up, so a broken one stops the server
	// here rather than failing its first session.
	for _, n := range c.refs.Names() {
		if _, err := c.open(n); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// canonical is how a session's log names its pack: a bundled name as is,
// a folder by its absolute path, so a restart from another working
// directory still finds it.
func (c *packCache) canonical(ref string) string {
	if c.refs.IsBundled(ref) {
		return ref
	}
	if abs, err := filepath.Abs(ref); err == nil {
		return abs
	}
	return ref
}

// open returns the pack named by ref: a bundled pack, or a folder that is
// inside an allowed root (any folder with anyPath).
func (c *packCache) open(ref string) (*rules.Pack, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.byRef[ref]; ok {
		return p, nil
	}
	p, err := c.refs.Open(ref)
	if err != nil {
		return nil, err
	}
	c.byRef[ref] = p
	return p, nil
}

func (c *packCache) folderAllowed(abs string) error {
	if c.anyPath {
		return nil
	}
	for _, r := range c.roots {
		if abs == r || strings.HasPrefix(abs, r+string(filepath.Separator)) {
			return nil
		}
	}
	return fmt.Errorf("pack %q is not a bundled pack (%s) and pack folders outside --packs are not allowed", truncate(abs, 80), strings.Join(c.refs.Names(), ", "))
}
