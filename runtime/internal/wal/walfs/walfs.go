// Package walfs is the file system interface the write-ahead log runs on.
// It is a package of its own, importing nothing of the log, so that the
// strict in-memory file system of package waltest can implement it while
// the log's own tests, inside package wal, import waltest.
package walfs

import (
	"io"
	"io/fs"
)

// FS is the file system a data directory lives on. The log needs only
// these operations, and naming them lets tests run the log on a strict
// in-memory file system that forgets, at a simulated power cut, whatever
// no completed sync covered (waltest.StrictMem).
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
	// files and subdirectories) durable. Until then a power cut may undo
	// any of them: a new directory's contents are reachable only once
	// its own entry is.
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
