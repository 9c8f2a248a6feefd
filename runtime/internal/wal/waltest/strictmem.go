// Package waltest holds the write-ahead log's test doubles: StrictMem, a
// file system that after a simulated power cut holds what was synced and
// no more of the rest than a torn write can leave. Only tests import it,
// so the server never links it.
package waltest

import (
	"errors"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/batonhq/baton/runtime/internal/wal/walfs"
)

// ErrPowerLost is returned by every operation on a StrictMem after its
// simulated power cut.
var ErrPowerLost = errors.New("simulated power loss")

// StrictMem is an in-memory walfs.FS that is as forgetful as a real disk
// is allowed to be. A file's contents survive a power cut only up to its
// last completed Sync. A created, renamed or removed directory entry, of
// a file or of a subdirectory, survives only once its parent directory
// is synced, as POSIX promises and ext4 delivers: at a power cut a
// created file vanishes, a rename reverts, a removed entry comes back,
// and a directory whose own entry was never synced vanishes with
// everything in it, synced or not. Only the root ("/" or ".") needs no
// entry. Of what was written since the last sync, bytes past the synced
// length survive as any prefix, zeroed or not, the way a torn write
// leaves a file whose size reached the disk before its data; bytes
// written over synced ones survive a 512-byte sector at a time, each
// sector new or old. Modelled on Pebble's vfs.NewStrictMem.
//
// CrashAfter arms a power cut after a given number of changing operations;
// Recover returns what a restart would find, Restart what a process crash
// leaves.
type StrictMem struct {
	mu      sync.Mutex
	dirs    map[string]*memDir
	crashed bool
	armed   bool
	left    int // changing operations still allowed while armed
	ops     int // changing operations so far
	locked  map[string]bool
}

type memDir struct {
	live    map[string]*memNode // entries as the running process sees them
	durable map[string]*memNode // entries as of the last SyncDir
	// subdirectories as of the last SyncDir; the live ones are those of
	// StrictMem.dirs under this one. A removed directory lives on here
	// until the removal is synced, to come back at a power cut.
	subs map[string]*memDir
}

func newMemDir() *memDir {
	return &memDir{live: map[string]*memNode{}, durable: map[string]*memNode{}, subs: map[string]*memDir{}}
}

// isRoot reports whether dir is where every path starts: it has no
// parent whose sync it would wait for.
func isRoot(dir string) bool { return dir == "/" || dir == "." }

type memNode struct {
	data   []byte // what a reader sees now
	synced []byte // what survives a power cut
	mode   fs.FileMode
	mtime  time.Time
}

var _ walfs.FS = (*StrictMem)(nil)

// NewStrictMem returns an empty strict in-memory file system.
func NewStrictMem() *StrictMem {
	return &StrictMem{dirs: map[string]*memDir{}, locked: map[string]bool{}}
}

// CrashAfter lets n more changing operations (creates, writes, syncs,
// truncations, renames, removals, chmods, directory syncs) happen; the
// next one cuts the power. A write that meets the cut may reach the file
// in part.
func (m *StrictMem) CrashAfter(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.armed, m.left = true, n
}

// Ops is how many changing operations have run.
func (m *StrictMem) Ops() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ops
}

// Crashed reports whether the power has been cut.
func (m *StrictMem) Crashed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.crashed
}

// Recover cuts the power (if CrashAfter has not already) and returns the
// file system a restart finds: the directories reachable from the root
// through synced entries, their synced file entries, each file's synced
// bytes, and a random prefix of its unsynced bytes (zeroed a quarter of
// the time). rng chooses; nil keeps no unsynced byte.
func (m *StrictMem) Recover(rng *rand.Rand) *StrictMem {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.crashed = true
	out := NewStrictMem()
	durable := map[string]*memDir{}
	var walk func(dn string, d *memDir)
	walk = func(dn string, d *memDir) {
		durable[dn] = d
		for name, sub := range d.subs {
			walk(path.Join(dn, name), sub)
		}
	}
	for dn, d := range m.dirs {
		if isRoot(dn) {
			walk(dn, d)
		}
	}
	names := make([]string, 0, len(durable))
	for name := range durable {
		names = append(names, name)
	}
	sort.Strings(names) // rng draws in a fixed order
	seen := map[*memNode]*memNode{}
	for _, dn := range names {
		d := durable[dn]
		nd := newMemDir()
		files := make([]string, 0, len(d.durable))
		for f := range d.durable {
			files = append(files, f)
		}
		sort.Strings(files)
		for _, f := range files {
			old := d.durable[f]
			n, ok := seen[old]
			if !ok {
				n = &memNode{data: slices.Clone(old.synced), mode: old.mode, mtime: old.mtime}
				// Unsynced bytes from the first one that differs: appended
				// or written over synced ones. A prefix of them survives,
				// over what was synced.
				common := 0
				for common < len(old.data) && common < len(old.synced) && old.data[common] == old.synced[common] {
					common++
				}
				if rng != nil && common < len(old.data) {
					// Bytes written over synced ones reach the disk a
					// sector at a time in no set order: each 512-byte
					// sector is the new one or the old. Bytes past the
					// synced length survive as a prefix (a file grows
					// only once its data is written), zeroed a quarter
					// of the time.
					over := min(len(old.data), len(old.synced))
					for sec := common - common%512; sec < over; sec += 512 {
						lo, hi := max(sec, common), min(sec+512, over)
						if rng.IntN(2) == 0 {
							copy(n.data[lo:hi], old.data[lo:hi])
						}
					}
					if len(old.data) > len(old.synced) {
						extra := old.data[max(common, len(old.synced)):]
						k := rng.IntN(len(extra) + 1)
						kept := slices.Clone(extra[:k])
						if rng.IntN(4) == 0 {
							clear(kept)
						}
						n.data = append(n.data, kept...)
					}
				}
				n.synced = slices.Clone(n.data)
				seen[old] = n
			}
			nd.live[f], nd.durable[f] = n, n
		}
		out.dirs[dn] = nd
	}
	for dn, nd := range out.dirs {
		if !isRoot(dn) {
			out.dirs[path.Dir(dn)].subs[path.Base(dn)] = nd
		}
	}
	return out
}

// Restart ends the process but not the machine: the old file system
// fails every operation from now on (the dead process's goroutines can
// change nothing more), and the returned one holds what the kernel
// kept: every file as last written, synced or not, and every directory
// entry. What was not synced is still lost at a later power cut
// (Recover on the returned file system), which is how a test shows that
// recovery after a crash made durable what it relies on.
func (m *StrictMem) Restart() *StrictMem {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.crashed = true
	out := NewStrictMem()
	seen := map[*memNode]*memNode{}
	clone := func(old *memNode) *memNode {
		if n, ok := seen[old]; ok {
			return n
		}
		n := &memNode{data: slices.Clone(old.data), synced: slices.Clone(old.synced), mode: old.mode, mtime: old.mtime}
		seen[old] = n
		return n
	}
	// Directories by identity: a removed one still named by its parent's
	// synced entries is copied too, to come back at a later power cut.
	dirs := map[*memDir]*memDir{}
	var cloneDir func(d *memDir) *memDir
	cloneDir = func(d *memDir) *memDir {
		if nd, ok := dirs[d]; ok {
			return nd
		}
		nd := newMemDir()
		dirs[d] = nd
		for f, n := range d.live {
			nd.live[f] = clone(n)
		}
		for f, n := range d.durable {
			nd.durable[f] = clone(n)
		}
		for name, sub := range d.subs {
			nd.subs[name] = cloneDir(sub)
		}
		return nd
	}
	for dn, d := range m.dirs {
		out.dirs[dn] = cloneDir(d)
	}
	return out
}

// step accounts for one changing operation; it fails once the power is
// cut. partial, if set, runs at the moment of the cut (a write half done).
func (m *StrictMem) step(partial func()) error {
	if m.crashed {
		return ErrPowerLost
	}
	if m.armed {
		if m.left == 0 {
			if partial != nil {
				partial()
			}
			m.crashed = true
			return ErrPowerLost
		}
		m.left--
	}
	m.ops++
	return nil
}

func (m *StrictMem) lookup(name string) (*memDir, string, error) {
	dir, base := path.Split(path.Clean(name))
	d := m.dirs[path.Clean(dir)]
	if d == nil {
		return nil, "", fs.ErrNotExist
	}
	return d, base, nil
}

func pathErr(op, name string, err error) error { return &fs.PathError{Op: op, Path: name, Err: err} }

// MkdirAll creates dir and its parents. Each new directory's entry is
// durable once its parent is synced. It is not counted as a changing
// operation, so that CrashAfter numbers operations as before: a cut at
// the parent's sync that follows loses the new directory all the same.
func (m *StrictMem) MkdirAll(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.crashed {
		return pathErr("mkdir", dir, ErrPowerLost)
	}
	var missing []string
	for d := path.Clean(dir); m.dirs[d] == nil; d = path.Dir(d) {
		missing = append(missing, d)
		if isRoot(d) {
			break
		}
	}
	for _, d := range missing {
		m.dirs[d] = newMemDir()
	}
	return nil
}

// OpenFile opens or creates a file.
func (m *StrictMem) OpenFile(name string, flag int, perm fs.FileMode) (walfs.File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.crashed {
		return nil, pathErr("open", name, ErrPowerLost)
	}
	d, base, err := m.lookup(name)
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	n := d.live[base]
	switch {
	case n != nil && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, pathErr("open", name, fs.ErrExist)
	case n == nil && flag&os.O_CREATE == 0:
		return nil, pathErr("open", name, fs.ErrNotExist)
	case n == nil:
		if err := m.step(nil); err != nil {
			return nil, pathErr("open", name, err)
		}
		n = &memNode{mode: perm}
		d.live[base] = n
	}
	if flag&os.O_TRUNC != 0 {
		return nil, pathErr("open", name, errors.New("O_TRUNC is not supported"))
	}
	return &memFile{fs: m, node: n, name: name, write: flag&(os.O_WRONLY|os.O_RDWR) != 0, read: flag&os.O_WRONLY == 0, appends: flag&os.O_APPEND != 0}, nil
}

type memInfo struct {
	name string
	size int64
	mode fs.FileMode
	mt   time.Time
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() fs.FileMode  { return i.mode }
func (i memInfo) ModTime() time.Time { return i.mt }
func (i memInfo) IsDir() bool        { return i.mode.IsDir() }
func (i memInfo) Sys() any           { return nil }

// Stat describes a file or directory.
func (m *StrictMem) Stat(name string) (fs.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.crashed {
		return nil, pathErr("stat", name, ErrPowerLost)
	}
	if m.dirs[path.Clean(name)] != nil {
		return memInfo{name: path.Base(name), mode: fs.ModeDir | 0o700}, nil
	}
	d, base, err := m.lookup(name)
	if err != nil {
		return nil, pathErr("stat", name, err)
	}
	n := d.live[base]
	if n == nil {
		return nil, pathErr("stat", name, fs.ErrNotExist)
	}
	return memInfo{name: base, size: int64(len(n.data)), mode: n.mode, mt: n.mtime}, nil
}

// ReadDir lists a directory's files, sorted.
func (m *StrictMem) ReadDir(dir string) ([]fs.DirEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.crashed {
		return nil, pathErr("readdir", dir, ErrPowerLost)
	}
	d := m.dirs[path.Clean(dir)]
	if d == nil {
		return nil, pathErr("readdir", dir, fs.ErrNotExist)
	}
	out := make([]fs.DirEntry, 0, len(d.live))
	for name, n := range d.live {
		out = append(out, fs.FileInfoToDirEntry(memInfo{name: name, size: int64(len(n.data)), mode: n.mode, mt: n.mtime}))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// Rename moves a file within or across directories.
func (m *StrictMem) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	od, ob, err := m.lookup(oldname)
	if err != nil {
		return pathErr("rename", oldname, err)
	}
	nd, nb, err := m.lookup(newname)
	if err != nil {
		return pathErr("rename", newname, err)
	}
	n := od.live[ob]
	if n == nil {
		return pathErr("rename", oldname, fs.ErrNotExist)
	}
	if err := m.step(nil); err != nil {
		return pathErr("rename", oldname, err)
	}
	delete(od.live, ob)
	nd.live[nb] = n
	return nil
}

// Remove deletes a file or an empty directory; the removal is durable
// once the parent directory is synced.
func (m *StrictMem) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if sub := m.dirs[path.Clean(name)]; sub != nil {
		if len(sub.live) > 0 || m.hasSubdirs(path.Clean(name)) {
			return pathErr("remove", name, errors.New("directory not empty"))
		}
		if err := m.step(nil); err != nil {
			return pathErr("remove", name, err)
		}
		delete(m.dirs, path.Clean(name))
		return nil
	}
	d, base, err := m.lookup(name)
	if err != nil {
		return pathErr("remove", name, err)
	}
	if d.live[base] == nil {
		return pathErr("remove", name, fs.ErrNotExist)
	}
	if err := m.step(nil); err != nil {
		return pathErr("remove", name, err)
	}
	delete(d.live, base)
	return nil
}

func (m *StrictMem) hasSubdirs(dir string) bool {
	for d := range m.dirs {
		if d != dir && path.Dir(d) == dir {
			return true
		}
	}
	return false
}

// Chmod changes a file's mode; like other metadata it is durable at once.
func (m *StrictMem) Chmod(name string, mode fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.lookup(name)
	if err != nil {
		return pathErr("chmod", name, err)
	}
	n := d.live[base]
	if n == nil {
		return pathErr("chmod", name, fs.ErrNotExist)
	}
	if err := m.step(nil); err != nil {
		return pathErr("chmod", name, err)
	}
	n.mode = mode
	return nil
}

// SyncDir makes a directory's current entries, files and
// subdirectories, durable. The entries inside a subdirectory wait for
// that subdirectory's own sync.
func (m *StrictMem) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir = path.Clean(dir)
	d := m.dirs[dir]
	if d == nil {
		return pathErr("sync", dir, fs.ErrNotExist)
	}
	if err := m.step(nil); err != nil {
		return pathErr("sync", dir, err)
	}
	d.durable = maps.Clone(d.live)
	d.subs = map[string]*memDir{}
	for sn, sub := range m.dirs {
		if sn != dir && path.Dir(sn) == dir {
			d.subs[path.Base(sn)] = sub
		}
	}
	return nil
}

// SyncFS returns a syncer whose Sync makes every file's data durable, but
// no directory entry: the real call commits those too on ext4, but the
// log does not count on it.
func (m *StrictMem) SyncFS(dir string) (walfs.FSSyncer, error) { return memSyncer{m, dir}, nil }

type memSyncer struct {
	m   *StrictMem
	dir string
}

func (memSyncer) Close() error { return nil }

func (s memSyncer) Sync() error {
	m := s.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.step(nil); err != nil {
		return pathErr("syncfs", s.dir, err)
	}
	for _, d := range m.dirs {
		for _, n := range d.live {
			n.synced = slices.Clone(n.data)
		}
	}
	return nil
}

// Lock takes the directory's lock; a second Lock fails until the first is
// closed.
func (m *StrictMem) Lock(dir string) (io.Closer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir = path.Clean(dir)
	if m.locked[dir] {
		return nil, errors.New("data dir " + dir + " is in use by another baton process")
	}
	m.locked[dir] = true
	return lockCloser(func() error {
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(m.locked, dir)
		return nil
	}), nil
}

type lockCloser func() error

func (f lockCloser) Close() error { return f() }

type memFile struct {
	fs          *StrictMem
	node        *memNode
	name        string
	read, write bool
	appends     bool // O_APPEND; otherwise writes go at off, as os.File's do
	off         int
	closed      bool
}

func (f *memFile) Read(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	switch {
	case f.fs.crashed:
		return 0, pathErr("read", f.name, ErrPowerLost)
	case f.closed:
		return 0, pathErr("read", f.name, fs.ErrClosed)
	case !f.read:
		return 0, pathErr("read", f.name, errors.New("file not open for reading"))
	case f.off >= len(f.node.data):
		return 0, io.EOF
	}
	n := copy(p, f.node.data[f.off:])
	f.off += n
	return n, nil
}

// Write appends with O_APPEND, and otherwise writes at the file's offset
// (over what is there, as the journal does into a prepared segment).
func (f *memFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return 0, pathErr("write", f.name, fs.ErrClosed)
	}
	if !f.write {
		return 0, pathErr("write", f.name, errors.New("file not open for writing"))
	}
	if err := f.fs.step(func() { f.put(p) }); err != nil {
		return 0, pathErr("write", f.name, err)
	}
	f.put(p)
	return len(p), nil
}

func (f *memFile) put(p []byte) {
	if f.appends {
		f.node.data = append(f.node.data, p...)
		return
	}
	if end := f.off + len(p); end > len(f.node.data) {
		f.node.data = append(f.node.data, make([]byte, end-len(f.node.data))...)
	}
	// data never shares its array with synced (a clone), so writing in
	// place leaves the synced copy as it was.
	copy(f.node.data[f.off:], p)
	f.off += len(p)
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return pathErr("truncate", f.name, fs.ErrClosed)
	}
	if size < 0 || size > int64(len(f.node.data)) {
		return pathErr("truncate", f.name, errors.New("size out of range"))
	}
	if err := f.fs.step(nil); err != nil {
		return pathErr("truncate", f.name, err)
	}
	f.node.data = f.node.data[:size:size]
	return nil
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return pathErr("sync", f.name, fs.ErrClosed)
	}
	if err := f.fs.step(nil); err != nil {
		return pathErr("sync", f.name, err)
	}
	f.node.synced = slices.Clone(f.node.data)
	return nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return pathErr("close", f.name, fs.ErrClosed)
	}
	f.closed = true
	return nil
}
