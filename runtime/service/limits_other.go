//go:build !unix

package service

// DefaultMaxOpenLogs is unbounded where the file limit cannot be read.
func DefaultMaxOpenLogs() int { return 0 }
