//go:build unix

package service

import "syscall"

// DefaultMaxOpenLogs leaves three quarters of the process's file limit to
// sockets: logs beyond a quarter are closed when idle and reopened on
// their next write.
func DefaultMaxOpenLogs() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == 0 {
		return 0
	}
	return max(64, int(min(lim.Cur, 1<<30)/4))
}
