package wal

import (
	"os"
	"syscall"
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
