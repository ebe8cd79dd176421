//go:build !(linux || darwin || freebsd || openbsd || netbsd || dragonfly)

package cache

import (
	"context"
	"errors"
	"os"
)

// flockExclusive is not available here: without it Dir could not keep a lock
// exclusive across processes, so TryLock and Unlock fail rather than pretend.
func flockExclusive(ctx context.Context, f *os.File) error {
	return errors.ErrUnsupported
}
