//go:build !linux

package wal

import (
	"errors"
	"os"
)

func datasync(f *os.File) error { return f.Sync() }

func syncFS(string) error { return errors.ErrUnsupported }
