package cache_test

import (
	"errors"
	"testing"
	"time"

	"github.com/autocoder/autocoder/pkg/cache"
)

// TestRenewKeepsTheLockUntilStopped: a lock renewed by Renew outlives its
// lease many times over; once stopped, it expires within one lease.
func TestRenewKeepsTheLockUntilStopped(t *testing.T) {
	t.Parallel()
	d, err := cache.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	const lease = 300 * time.Millisecond
	tok, err := d.TryLock(t.Context(), "build", lease)
	if err != nil {
		t.Fatal(err)
	}
	var failures []error
	stop := cache.Renew(t.Context(), d, "build", tok, lease, func(err error) { failures = append(failures, err) })
	time.Sleep(4 * lease)
	if _, err := d.TryLock(t.Context(), "build", lease); !errors.Is(err, cache.ErrLockHeld) {
		t.Fatalf("TryLock while its holder renews it: %v, want ErrLockHeld", err)
	}
	stop()
	stop() // a second stop is harmless
	if len(failures) > 0 {
		t.Errorf("renewals failed: %v", failures)
	}
	deadline := time.Now().Add(time.Minute) // generous: the lease is what ends it
	for {
		if _, err := d.TryLock(t.Context(), "build", lease); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the lock outlived its renewals")
		}
		time.Sleep(lease / 3)
	}
}
