package cache

import (
	"errors"
	"testing"
	"time"
)

// TestDirExtendLockKeepsALiveHolder: a renewed lease holds past its first
// expiry; a lease not renewed expires and its token can no longer renew
// it; another token never can.
func TestDirExtendLockKeepsALiveHolder(t *testing.T) {
	t.Parallel()
	d, clk := openDirAt(t)
	ctx := t.Context()
	tok, err := d.TryLock(ctx, "l", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(50 * time.Second)
	if err := d.ExtendLock(ctx, "l", tok, time.Minute); err != nil {
		t.Fatalf("ExtendLock by the holder: %v", err)
	}
	clk.Advance(50 * time.Second) // 100s after TryLock, 50s after the renewal
	if _, err := d.TryLock(ctx, "l", time.Minute); !errors.Is(err, ErrLockHeld) {
		t.Fatalf("TryLock of a renewed lock: %v, want ErrLockHeld", err)
	}
	if err := d.ExtendLock(ctx, "l", "someone-else", time.Minute); !errors.Is(err, ErrLockLost) {
		t.Errorf("ExtendLock with another token: %v, want ErrLockLost", err)
	}
	clk.Advance(time.Minute) // the holder crashed: no renewal
	if err := d.ExtendLock(ctx, "l", tok, time.Minute); !errors.Is(err, ErrLockLost) {
		t.Errorf("ExtendLock after expiry: %v, want ErrLockLost", err)
	}
	if _, err := d.TryLock(ctx, "l", time.Minute); err != nil {
		t.Errorf("TryLock of an expired lock: %v", err)
	}
	if err := d.ExtendLock(ctx, "never", tok, time.Minute); !errors.Is(err, ErrLockLost) {
		t.Errorf("ExtendLock of a lock never taken: %v, want ErrLockLost", err)
	}
}
