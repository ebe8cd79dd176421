package cache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrLockLost is returned by ExtendLock when the token no longer holds the
// lock: its lease ran out and someone else may have it.
var ErrLockLost = errors.New("cache: lock lost")

// Leaser is a Cache whose locks can be renewed by their holder: a lease
// with a heartbeat, so a long holder keeps its lock and a crashed one
// loses it within one ttl. Dir, Redis and Signed over either implement it.
type Leaser interface {
	// ExtendLock sets the lock's expiry to ttl from now if token still
	// holds it; otherwise it returns ErrLockLost.
	ExtendLock(ctx context.Context, name, token string, ttl time.Duration) error
}

var (
	_ Leaser = (*Dir)(nil)
	_ Leaser = (*Redis)(nil)
	_ Leaser = (*Signed)(nil)
)

// Renew keeps the lock name, held with token, by extending its lease to
// lease every third of it, until stop is called or ctx ends: a holder
// that works on keeps its lock, one that crashed loses it within one
// lease. When c cannot renew (not a Leaser) the lease alone bounds the
// lock. failed, if not nil, hears of each renewal that failed. stop waits
// for the renewals to end; it may be called more than once.
func Renew(ctx context.Context, c Cache, name, token string, lease time.Duration, failed func(error)) (stop func()) {
	leaser, renews := c.(Leaser)
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		if !renews {
			return
		}
		tick := time.NewTicker(lease / 3)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				if err := leaser.ExtendLock(ctx, name, token, lease); err != nil && failed != nil {
					failed(err)
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		<-stopped
	}
}

// extendScript renews the lock only if it still holds the caller's token,
// in one atomic step (see unlockScript).
const extendScript = `if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0`

var redisExtend = redis.NewScript(extendScript)

// ExtendLock implements Leaser.
func (r *Redis) ExtendLock(ctx context.Context, name, token string, ttl time.Duration) error {
	if err := checkLockTTL(ttl); err != nil {
		return err
	}
	n, err := redisExtend.Run(ctx, r.client, []string{lockKey(name)}, token, ttl.Milliseconds()).Int()
	if err != nil {
		return r.wrap("extend lock", err)
	}
	if n == 0 {
		return ErrLockLost
	}
	return nil
}

// ExtendLock implements Leaser.
func (d *Dir) ExtendLock(ctx context.Context, name, token string, ttl time.Duration) error {
	if err := checkLockTTL(ttl); err != nil {
		return err
	}
	if err := d.check(ctx, "extend lock"); err != nil {
		return err
	}
	// create: a missing lock file reads as no record, which is ErrLockLost.
	err := d.withLockFile(ctx, dirLockPath(d.root, name), true, func(f *os.File) (bool, error) {
		rec, err := readLockRecord(f)
		if err != nil {
			return false, err
		}
		now := d.now().UnixNano()
		if !rec.valid || rec.token != token || now >= rec.expiry {
			return false, ErrLockLost
		}
		return false, writeLockRecord(f, lockRecord{valid: true, token: token, expiry: expiryAt(now, ttl)})
	})
	if errors.Is(err, ErrLockLost) {
		return ErrLockLost
	}
	if err != nil {
		return fmt.Errorf("cache: dir extend lock %q: %w", name, err)
	}
	return nil
}

// ExtendLock implements Leaser when the inner cache does; locks are not
// signed (see Signed).
func (s *Signed) ExtendLock(ctx context.Context, name, token string, ttl time.Duration) error {
	l, ok := s.inner.(Leaser)
	if !ok {
		return fmt.Errorf("cache: %T cannot extend a lock", s.inner)
	}
	return l.ExtendLock(ctx, name, token, ttl)
}
