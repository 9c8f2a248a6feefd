package wal

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// FS is the file system a data directory lives on. The log needs only
// these operations, and naming them lets tests run the log on a strict
// in-memory file system that forgets, at a simulated power cut, whatever
// no completed sync covered (NewStrictMem).
type FS interface {
	// MkdirAll creates dir and its parents (0700).
	MkdirAll(dir string) error
	// OpenFile opens name with os.OpenFile's flags. Only O_RDONLY,
	// O_WRONLY, O_RDWR, O_CREATE, O_EXCL and O_APPEND are used.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	Stat(name string) (fs.FileInfo, error)
	ReadDir(dir string) ([]fs.DirEntry, error)
	Rename(oldname, newname string) error
	Remove(name string) error
	Chmod(name string, mode fs.FileMode) error
	// SyncDir makes the directory's entries (created, renamed, removed
	// files) durable.
	SyncDir(dir string) error
	// SyncFS opens a syncer for the file system holding dir: one call
	// (Linux's syncfs) makes the data written to all its files durable,
	// where a file-by-file fsync costs a commit of the file system's own
	// journal each. errors.ErrUnsupported where there is no such call, or
	// where it does not report writeback errors.
	SyncFS(dir string) (FSSyncer, error)
	// Lock takes an exclusive lock on the directory for this process.
	Lock(dir string) (io.Closer, error)
}

// FSSyncer makes the data written to every file of one file system
// durable. Sync reports a writeback error that happened on the file
// system since the syncer was opened, so it is opened before anything it
// must cover is written, and kept.
type FSSyncer interface {
	Sync() error
	Close() error
}

// File is an open log file. Writes only ever append.
type File interface {
	io.Reader
	io.Writer
	io.Closer
	Truncate(size int64) error
	// Sync makes the file's data and size durable.
	Sync() error
}

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
