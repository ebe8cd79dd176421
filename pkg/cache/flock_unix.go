//go:build linux || darwin || freebsd || openbsd || netbsd || dragonfly

package cache

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// flockExclusive takes an exclusive flock(2) on f, waiting while another open
// file (in this process or another) holds it, until ctx is done. flock rather
// than fcntl locks: flock belongs to the open file, so it also excludes other
// goroutines of this process, and the kernel drops it when a holder dies.
//
// It polls with LOCK_NB because a blocking flock cannot be cancelled; holders
// keep it only for a read and a small write, so waits are short.
func flockExclusive(ctx context.Context, f *os.File) error {
	conn, err := f.SyscallConn()
	if err != nil {
		return err
	}
	wait := 50 * time.Microsecond
	for {
		var lockErr error
		if err := conn.Control(func(fd uintptr) {
			lockErr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
		}); err != nil {
			return err
		}
		switch {
		case lockErr == nil:
			return nil
		case errors.Is(lockErr, syscall.EINTR):
			continue
		case !errors.Is(lockErr, syscall.EWOULDBLOCK):
			return &os.PathError{Op: "flock", Path: f.Name(), Err: lockErr}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 5*time.Millisecond)
	}
}
