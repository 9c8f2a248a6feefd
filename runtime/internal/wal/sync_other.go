//go:build !linux

package wal

import (
	"errors"
	"os"
)

func datasync(f *os.File) error { return f.Sync() }

func openSyncFS(string) (FSSyncer, error) { return nil, errors.ErrUnsupported }
