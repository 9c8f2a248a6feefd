package service

import (
	"fmt"
	"io/fs"
	"os"
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
	roots   []packRoot // folders under which clients may name pack paths
	anyPath bool       // --dev: any folder
	mu      sync.Mutex
	byRef   map[string]*packLoad
}

// packRoot is one --packs folder.
type packRoot struct {
	abs  string   // as given, made absolute: what clients' paths are shown against
	real string   // with symbolic links resolved: what folders are checked against
	root *os.Root // pack folders are opened through it, so none escapes it
}

// packLoad is one pack, loaded or being loaded; done is closed when p or
// err is set.
type packLoad struct {
	done chan struct{}
	p    *rules.Pack
	err  error
}

func newPackCache(bundled fs.FS, roots []string, anyPath bool) (*packCache, error) {
	c := &packCache{anyPath: anyPath, byRef: map[string]*packLoad{}}
	c.refs = &packs.Resolver{Bundled: bundled, Folder: c.openFolder, Show: c.show}
	for _, r := range roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, fmt.Errorf("pack root %s: %w", r, err)
		}
		// Resolved once, here: a folder a client names is allowed when
		// where it really is lies under where a root really is.
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, fmt.Errorf("pack root %s: %w", r, err)
		}
		root, err := os.OpenRoot(real)
		if err != nil {
			return nil, fmt.Errorf("pack root %s: %w", r, err)
		}
		c.roots = append(c.roots, packRoot{abs: abs, real: real, root: root})
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
// inside an allowed root (any folder with anyPath). Its errors go to
// clients, so they name folders as show does. A pack loads once however
// many sessions ask for it at the same time, and loading one pack does
// not hold up sessions of others; a pack that fails to load is tried
// again next time, as its folder may have been fixed.
func (c *packCache) open(ref string) (*rules.Pack, error) {
	c.mu.Lock()
	if l, ok := c.byRef[ref]; ok {
		c.mu.Unlock()
		<-l.done
		return l.p, l.err
	}
	l := &packLoad{done: make(chan struct{})}
	c.byRef[ref] = l
	c.mu.Unlock()

	defer close(l.done)
	l.p, l.err = c.refs.Open(ref)
	if l.err != nil {
		c.mu.Lock()
		delete(c.byRef, ref)
		c.mu.Unlock()
	}
	return l.p, l.err
}

// openFolder opens the pack folder whose resolved path is real, through
// the --packs root that holds it: os.Root refuses any path that leaves
// the root, so a folder swapped for a link after this check is still
// refused.
func (c *packCache) openFolder(real string) (*os.Root, error) {
	for _, r := range c.roots {
		if rel, ok := within(r.real, real); ok {
			root, err := r.root.OpenRoot(rel)
			if st, serr := r.root.Stat(rel); err != nil && serr == nil && !st.IsDir() {
				return nil, errNotFolder
			}
			return root, err
		}
	}
	if c.anyPath {
		root, err := os.OpenRoot(real)
		if st, serr := os.Stat(real); err != nil && serr == nil && !st.IsDir() {
			return nil, errNotFolder
		}
		return root, err
	}
	return nil, fmt.Errorf("not a bundled pack (bundled: %s), and pack folders outside --packs are not allowed", strings.Join(c.refs.Names(), ", "))
}

// errNotFolder is the error for a file named as a pack folder; it
// matches fs.ErrNotExist, which the resolver explains as "no pack.yaml
// there".
var errNotFolder = fmt.Errorf("not a folder: %w", fs.ErrNotExist)

// show names a pack reference in errors for clients: a folder under a
// root as the root's last element and the path below it ("packs/hr"),
// another under the working directory relative to it, and any other by
// its last element only. The server's absolute paths stay in its log.
func (c *packCache) show(ref string) string { return clip(c.place(ref), maxEcho) }

// place is where ref is, in words that name no server directory.
func (c *packCache) place(ref string) string {
	if !packs.IsPath(ref) && !filepath.IsAbs(ref) {
		return ref
	}
	abs, err := filepath.Abs(ref)
	if err != nil {
		return "…/" + filepath.Base(ref)
	}
	for _, r := range c.roots {
		for _, base := range []string{r.abs, r.real} {
			if rel, ok := within(base, abs); ok {
				return filepath.Join(filepath.Base(r.abs), rel)
			}
		}
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, ok := within(wd, abs); ok {
			return rel
		}
	}
	return "…/" + filepath.Base(abs)
}

// within reports whether path is base or below it, and the path from
// base to it.
func within(base, path string) (string, bool) {
	rel, err := filepath.Rel(base, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}
