//go:build unix

package bus

import "syscall"

// OpenFileLimit is the process's limit on open files: the soft
// RLIMIT_NOFILE, which Go's runtime raised to the hard limit at start (the
// syscall package does it on Linux and the BSDs), 0 when unknown. What
// listens for the outside world (the HTTP API's connections, the embedded
// NATS's clients) is capped well under it, so one of them filling up cannot
// starve the other.
func OpenFileLimit() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1<<30 {
		return 0
	}
	return int(r.Cur)
}
