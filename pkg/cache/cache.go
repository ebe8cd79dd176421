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

// MaxValueBytes bounds a value: Set refuses a larger one and Get reads
// one as a miss without loading it, so that whoever can write to a shared
// store (a Redis) cannot make every worker that reads it allocate without
// end; the signature is checked only after the read (Signed). Stage
// results are far smaller: their JSON travels in NATS messages.
const MaxValueBytes = 64 << 20

// Cache is a content-addressed store of stage results and a home for
// short-lived cross-worker locks. Keys are opaque strings built by Key; values
// are bytes. Implementations must be safe for concurrent use.
type Cache interface {
	// Get returns the value stored under key, or ErrMiss (also for a value
	// over MaxValueBytes).
	Get(ctx context.Context, key string) ([]byte, error)
	// Set stores value under key; a value over MaxValueBytes is an error.
	// A ttl of zero means no expiry.
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
