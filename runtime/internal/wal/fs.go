package wal

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/batonhq/baton/runtime/internal/wal/walfs"
)

// The file system interfaces live in walfs, where the test file system
// can implement them without importing wal; they are named here as well
// so that a host configures a data directory with wal alone.
type (
	FS       = walfs.FS
	File     = walfs.File
	FSSyncer = walfs.FSSyncer
)

// OS is the real file system.
var OS FS = osFS{}

type osFS struct{}

func (osFS) MkdirAll(dir string) error { return os.MkdirAll(dir, 0o700) }

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Stat(name string) (fs.FileInfo, error)     { return os.Stat(name) }
func (osFS) ReadDir(dir string) ([]fs.DirEntry, error) { return os.ReadDir(dir) }
func (osFS) Rename(oldname, newname string) error      { return os.Rename(oldname, newname) }
func (osFS) Remove(name string) error                  { return os.Remove(name) }
func (osFS) Chmod(name string, mode fs.FileMode) error { return os.Chmod(name, mode) }
func (osFS) Lock(dir string) (io.Closer, error)        { return lockDir(dir) }

func (osFS) SyncDir(dir string) error            { return syncDir(dir) }
func (osFS) SyncFS(dir string) (FSSyncer, error) { return openSyncFS(dir) }

type osFile struct{ *os.File }

func (f osFile) Sync() error { return datasync(f.File) }

// tooManyFiles reports whether err is the process or system running out of
// descriptors.
func tooManyFiles(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// readAll reads a whole file through fsys.
func readAll(fsys FS, name string) ([]byte, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Base(name), err)
	}
	return b, nil
}

// mkdirAllSynced creates dir and any missing parents, and syncs the
// parent of each directory it creates: a new directory's entry, and so
// everything made durable inside it, can vanish at a power cut until its
// parent is synced. Parents that already exist are not synced (they may
// not be ours to open).
func mkdirAllSynced(fsys FS, dir string) error {
	var made []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		_, err := fsys.Stat(d)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		made = append(made, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := fsys.MkdirAll(dir); err != nil {
		return err
	}
	for _, d := range slices.Backward(made) {
		if parent := filepath.Dir(d); parent != d {
			if err := fsys.SyncDir(parent); err != nil {
				return fmt.Errorf("syncing %s: %w", parent, err)
			}
		}
	}
	return nil
}
