package cache

import (
	"context"
	"errors"
	"time"
)

// ErrMiss is returned by Get when the key is not in the cache.
var ErrMiss = errors.New("cache: miss")

// ErrLockHeld is returned by TryLock when another holder has the lock.
var ErrLockHeld = errors.New("cache: lock held")

// Cache is a content-addressed store of stage results and a home for
// short-lived cross-worker locks. Keys are opaque strings built by Key; values
// are bytes. Implementations must be safe for concurrent use.
type Cache interface {
	// Get returns the value stored under key, or ErrMiss.
	Get(ctx context.Context, key string) ([]byte, error)
	// Set stores value under key. A ttl of zero means no expiry.
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// Delete removes key; deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// TryLock takes the named lock for ttl if nobody holds it, returning a
	// token to Unlock with, or ErrLockHeld. A lock whose ttl has passed is free.
	TryLock(ctx context.Context, name string, ttl time.Duration) (token string, err error)
	// Unlock releases the lock if token still holds it; otherwise it does nothing.
	Unlock(ctx context.Context, name, token string) error
	// Close releases resources.
	Close() error
}
