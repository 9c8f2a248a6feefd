package service

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/packs"
	"github.com/batonhq/baton/scenarios"
)

// packCache loads each pack once; a compiled pack is immutable and shared
// by all of its sessions.
type packCache struct {
	roots    []string // folders under which clients may name pack paths
	anyPath  bool     // --dev: any folder
	mu       sync.Mutex
	byRef    map[string]*rules.Pack
	scenario map[string]string // scenario id -> bundled pack name
}

func newPackCache(roots []string, anyPath bool) (*packCache, error) {
	c := &packCache{anyPath: anyPath, byRef: map[string]*rules.Pack{}, scenario: map[string]string{}}
	for _, r := range roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, fmt.Errorf("pack root %s: %w", r, err)
		}
		c.roots = append(c.roots, abs)
	}
	for _, n := range scenarios.Names() {
		p, err := c.open(n)
		if err != nil {
			return nil, err
		}
		if p.Scenario.ID != "" {
			c.scenario[p.Scenario.ID] = n
		}
	}
	return c, nil
}

// open returns the pack named by ref: a bundled pack name, or a folder
// that is inside an allowed root (any folder with anyPath).
func (c *packCache) open(ref string) (*rules.Pack, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.byRef[ref]; ok {
		return p, nil
	}
	var (
		p   *rules.Pack
		err error
	)
	if slices.Contains(scenarios.Names(), ref) {
		// Always the embedded copy: a folder of the same name in the
		// working directory must not shadow it.
		p, err = rules.Load(scenarios.FS, ref)
	} else {
		if !c.pathAllowed(ref) {
			return nil, fmt.Errorf("pack %q is not a bundled pack (%s) and pack folders outside --packs are not allowed", truncate(ref, 80), strings.Join(scenarios.Names(), ", "))
		}
		p, err = packs.Open(ref)
	}
	if err != nil {
		return nil, err
	}
	c.byRef[ref] = p
	return p, nil
}

func (c *packCache) pathAllowed(ref string) bool {
	if c.anyPath {
		return true
	}
	abs, err := filepath.Abs(ref)
	if err != nil {
		return false
	}
	for _, r := range c.roots {
		if abs == r || strings.HasPrefix(abs, r+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// byScenario maps a DayOne scenario_id (or a pack name) to a pack ref.
func (c *packCache) byScenario(id string) (string, bool) {
	if n, ok := c.scenario[id]; ok {
		return n, true
	}
	if slices.Contains(scenarios.Names(), id) {
		return id, true
	}
	return "", false
}
