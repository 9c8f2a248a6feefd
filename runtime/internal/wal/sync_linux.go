package wal

import (
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

// syncFS runs syncfs(2) on the file system holding dir. Since Linux 5.8 it
// reports a writeback error that happened on that file system since the
// descriptor was opened, as fsync does for one file.
func syncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	for {
		err := unix.Syncfs(int(f.Fd()))
		if err != unix.EINTR {
			if err != nil {
				return fmt.Errorf("syncfs %s: %w", dir, err)
			}
			return nil
		}
	}
}
