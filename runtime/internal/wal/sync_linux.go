package wal

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// datasync flushes file data and the metadata needed to read it back
// (its size) without forcing unrelated metadata such as mtime.
func datasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}

// openSyncFS opens dir for syncfs(2). Before Linux 5.8 syncfs did not
// report writeback errors, so there it is ErrUnsupported and checkpoints
// fsync file by file; from 5.8 it reports an error that happened on the
// file system since the descriptor was opened.
func openSyncFS(dir string) (FSSyncer, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return nil, fmt.Errorf("uname: %w", err)
	}
	var major, minor int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor); err != nil || major < 5 || major == 5 && minor < 8 {
		return nil, fmt.Errorf("syncfs on Linux %s does not report writeback errors: %w", unix.ByteSliceToString(u.Release[:]), errors.ErrUnsupported)
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	return fsSyncer{f}, nil
}

type fsSyncer struct{ f *os.File }

func (s fsSyncer) Close() error { return s.f.Close() }

func (s fsSyncer) Sync() error {
	for {
		err := unix.Syncfs(int(s.f.Fd()))
		if err != unix.EINTR {
			if err != nil {
				return fmt.Errorf("syncfs %s: %w", s.f.Name(), err)
			}
			return nil
		}
	}
}
