package cache

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// errClosed is returned by every operation on a cache after Close.
var errClosed = errors.New("cache: closed")

// checkSetTTL rejects a negative ttl: Redis would read it as "keep the old
// ttl" and a file cache as "already expired"; neither is what a caller meant.
func checkSetTTL(ttl time.Duration) error {
	if ttl < 0 {
		return fmt.Errorf("cache: negative ttl %v", ttl)
	}
	return nil
}

// checkValue rejects a value over MaxValueBytes, which Get would not read.
func checkValue(value []byte) error {
	if len(value) > MaxValueBytes {
		return fmt.Errorf("cache: a value of %d bytes is over the %d-byte bound", len(value), MaxValueBytes)
	}
	return nil
}

// checkLockTTL rejects a lock without a positive ttl: a lock that never
// expires would outlive a crashed holder forever.
func checkLockTTL(ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("cache: lock ttl must be positive, got %v", ttl)
	}
	return nil
}

// newToken returns a random lock token, unique across processes and machines.
func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("cache: lock token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
