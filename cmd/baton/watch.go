package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/packs"
	"github.com/fsnotify/fsnotify"
)

// watchSettle is how long the pack folder must be quiet before a run:
// an editor's save is a burst of writes, renames and creates, and one
// run should follow the whole burst.
var watchSettle = 150 * time.Millisecond

// clearScreen moves a terminal's cursor home and clears it, so each run
// replaces the last instead of scrolling under it.
const clearScreen = "\033[H\033[2J"

// watchPack runs the pack ref names each time a file of its folder
// changes, until ctx ends (Ctrl-C), which is success. A pack that does
// not load prints its problems and is watched on: the next save may fix it.
func watchPack(ctx context.Context, c *cli, a *dryrunArgs, ref string) error {
	switch {
	case a.record != "":
		return usageError("--watch and --record do not go together: each save would record another session")
	case a.strict:
		return usageError("--watch and --strict do not go together: a watch goes on after a failed run")
	case a.events == "-":
		return usageError("--watch cannot read --events from stdin: a second run would find it empty")
	case a.llm == "live" || isVendor(a.llm):
		return usageError("--watch plays the scripted model only: with --llm %s every save would call the vendor", a.llm)
	}
	dir, err := watchDir(ref)
	if err != nil {
		return err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching %s: %w", dir, err)
	}
	defer w.Close()
	if err := watchTree(w, dir); err != nil {
		return fmt.Errorf("watching %s: %w", dir, err)
	}
	noise, err := newWatchNoise(dir, a.out)
	if err != nil {
		return err
	}
	clear := false
	if f, ok := c.stdout.(*os.File); ok && a.out == "" {
		clear = isTerminal(f)
	}

	runs := 0
	run := func() {
		runs++
		if clear {
			io.WriteString(c.stdout, clearScreen)
		}
		err := watchRun(ctx, c, a, ref)
		if ctx.Err() != nil {
			return
		}
		at := time.Now().Format("15:04:05")
		if err != nil {
			fmt.Fprintf(c.stdout, "%s\n# run %d at %s failed; watching %s for changes (Ctrl-C stops)\n", err, runs, at, dir)
			return
		}
		if a.out != "" {
			fmt.Fprintf(c.stdout, "# run %d at %s: wrote %s; watching %s for changes (Ctrl-C stops)\n", runs, at, a.out, dir)
			return
		}
		fmt.Fprintf(c.stdout, "# run %d at %s; watching %s for changes (Ctrl-C stops)\n", runs, at, dir)
	}
	run()

	var settle <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Has(fsnotify.Create) {
				// A new folder (or one renamed into place) is watched too,
				// with whatever it already holds.
				if st, err := os.Stat(ev.Name); err == nil && st.IsDir() && !hiddenPath(dir, ev.Name) {
					if err := watchTree(w, ev.Name); err != nil {
						fmt.Fprintf(c.stderr, "watching %s: %v\n", ev.Name, err)
					}
				}
			}
			if noise.ignore(ev) {
				continue
			}
			settle = time.After(watchSettle)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			fmt.Fprintf(c.stderr, "watching %s: %v\n", dir, err)
		case <-settle:
			settle = nil
			run()
		}
	}
}

// watchRun loads the pack afresh and plays it once, to stdout or -o.
func watchRun(ctx context.Context, c *cli, a *dryrunArgs, ref string) error {
	p, loaded, err := openTimed(ref)
	if err != nil {
		return err
	}
	printWarnings(c, p)
	if a.out == "" {
		return dryrunOnce(ctx, c, a, ref, p, loaded, c.stdout)
	}
	return writeFileWhole(a.out, func(w io.Writer) error {
		return dryrunOnce(ctx, c, a, ref, p, loaded, w)
	})
}

// watchDir is the folder the pack ref names, resolved as packRefs.Open
// resolves it; a pack only built into the binary has no folder to watch.
func watchDir(ref string) (string, error) {
	dir := ref
	if !packs.IsPath(ref) && packRefs.IsBundled(ref) {
		dir = filepath.Join(packRefs.Workspace, ref)
		if st, err := os.Stat(filepath.Join(dir, rules.PackFile)); err != nil || st.IsDir() {
			return "", fmt.Errorf("%s is the pack built into baton, which has no folder to watch: run from a checkout holding %s, or name a pack folder (./%s)", ref, dir, ref)
		}
	}
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return "", fmt.Errorf("pack folder %s: %w", dir, err)
	case !st.IsDir():
		return "", fmt.Errorf("%s is not a folder: --watch watches a pack folder", dir)
	}
	return dir, nil
}

// watchTree watches dir and every folder under it but hidden ones.
func watchTree(w *fsnotify.Watcher, dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // gone again before it could be watched
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if path != dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		return w.Add(path)
	})
}

// watchNoise tells a change to the pack from the other writes its folder
// sees: a run's own -o file, editors' swap, backup and probe files, and
// hidden files and folders. Each of those would otherwise start a run, and
// a run's own -o in the folder would start the next one, for ever.
type watchNoise struct {
	root string
	// out is the -o file, absolute, and outDir its folder's FileInfo, so
	// a path that reaches the same file through a link is still it.
	out    string
	outDir os.FileInfo
}

func newWatchNoise(root, out string) (*watchNoise, error) {
	n := &watchNoise{root: root}
	if out == "" {
		return n, nil
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return nil, fmt.Errorf("-o %s: %w", out, err)
	}
	n.out = abs
	// The folder may not exist yet: the run then fails, and nothing in
	// the pack's folder can be the file.
	n.outDir, _ = os.Stat(filepath.Dir(abs))
	return n, nil
}

// ignore reports whether ev is not a change to the pack.
func (n *watchNoise) ignore(ev fsnotify.Event) bool {
	if ev.Op == fsnotify.Chmod {
		return true // a touch of metadata
	}
	// A hidden name anywhere under the root: .git, an editor's .swp or
	// lock file, and the .FILE.* a run writes -o through.
	if hiddenPath(n.root, ev.Name) {
		return true
	}
	base := filepath.Base(ev.Name)
	if editorScratch(base) {
		return true
	}
	return n.isOut(ev.Name, base)
}

// isOut reports whether name, whose base name is base, is the -o file.
func (n *watchNoise) isOut(name, base string) bool {
	if n.out == "" || base != filepath.Base(n.out) {
		return false
	}
	if abs, err := filepath.Abs(name); err == nil && abs == n.out {
		return true
	}
	if n.outDir == nil {
		return false
	}
	st, err := os.Stat(filepath.Dir(name))
	return err == nil && os.SameFile(st, n.outDir)
}

// editorScratch reports whether base is a file an editor writes beside
// the one being saved: a backup (pack.yaml~), an Emacs auto-save
// (#pack.yaml#), or the file Vim creates to probe whether it may write
// the folder, named 4913 or, if that is taken, 4913 plus a multiple of 123.
func editorScratch(base string) bool {
	switch {
	case strings.HasSuffix(base, "~"):
		return true
	case len(base) > 1 && strings.HasPrefix(base, "#") && strings.HasSuffix(base, "#"):
		return true
	}
	n, err := strconv.Atoi(base)
	return err == nil && n >= 4913 && (n-4913)%123 == 0 && base == strconv.Itoa(n)
}

// hiddenPath reports whether path, under root, is hidden or in a hidden
// folder (.git, an editor's backup folder), whose changes are not the
// pack's.
func hiddenPath(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == "." {
		return false
	}
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		if strings.HasPrefix(part, ".") && part != ".." {
			return true
		}
	}
	return false
}
