package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"time"

	"github.com/autocoder/autocoder/pkg/cache"
)

// Worker liveness. A lease alone cannot free the containers of a worker
// that died: a warm-pool container is leased for Config.PoolLease (30m) when
// it is started, before anyone knows which run will take it, and labels
// cannot change afterwards. Shortening pool leases would mean recycling
// idle containers every few minutes and keeping long runs out of the pool;
// instead each backend with a Cache heartbeats a key of its instance (a
// random id in the autocoder.instance label beside the worker name; a TTL
// of Config.HeartbeatTTL, refreshed three times per TTL),
// and a reaper removes a container whose lease is over OR whose worker's
// heartbeat is gone. So a SIGKILLed worker's containers, pooled or running,
// go within twice HeartbeatTTL plus one reaper interval (see below).
//
// Only workers that share a cache can judge each other's heartbeats, so
// containers carry the cache's liveness domain (a random id kept in the
// cache) and a reaper applies the heartbeat rule only to containers of its
// own domain. Containers without one (no Cache, or another cache) keep
// being reaped by their lease alone. A worker that cannot reach the cache
// for a whole TTL is taken for dead: its runs fail and are redelivered,
// which is the safe direction for untrusted code.
//
// A missing heartbeat is trusted only when it stays missing: a reaper
// reaps an instance by heartbeat when it found the key missing on two
// passes at least HeartbeatTTL apart. A cache that lost its contents (a
// Redis restart without persistence, FLUSHALL, a failover to a replica
// that missed writes) would otherwise make every live worker look dead at
// once; live workers beat again within HeartbeatTTL/3, so by the second
// look they are back. Workers that share a cache are expected to share
// HeartbeatTTL too.

// livenessDomain returns the liveness domain of c, creating it once.
func livenessDomain(ctx context.Context, c cache.Cache) (string, error) {
	key := livenessDomainKey()
	for attempt := 0; ; attempt++ {
		v, err := c.Get(ctx, key)
		if err == nil && len(v) > 0 {
			return string(v), nil
		}
		if err != nil && !errors.Is(err, cache.ErrMiss) {
			return "", err
		}
		tok, err := c.TryLock(ctx, livenessDomainLock, 10*time.Second)
		if err == nil {
			defer c.Unlock(context.WithoutCancel(ctx), livenessDomainLock, tok)
			if v, err := c.Get(ctx, key); err == nil && len(v) > 0 {
				return string(v), nil
			}
			var id [8]byte
			if _, err := rand.Read(id[:]); err != nil {
				return "", err
			}
			domain := hex.EncodeToString(id[:])
			if err := c.Set(ctx, key, []byte(domain), 0); err != nil {
				return "", err
			}
			return domain, nil
		}
		if !errors.Is(err, cache.ErrLockHeld) {
			return "", err
		}
		if attempt > 100 {
			return "", errors.New("docker: the liveness domain lock stays held")
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// startLiveness sets up the heartbeat: the domain, a first beat (before any
// container of this worker exists), and the loop that keeps it up. Without
// a Cache, or when the cache fails now, there is no heartbeat: containers
// are then reaped by their leases only.
func (b *Backend) startLiveness(ctx context.Context) {
	if b.cfg.Cache == nil || b.cfg.HeartbeatTTL < 0 {
		return
	}
	domain, err := livenessDomain(ctx, b.cfg.Cache)
	if err == nil {
		err = b.beat(ctx)
	}
	if err != nil {
		b.log.Warn("worker heartbeat unavailable: containers are reaped by lease only", "err", err)
		return
	}
	b.domain = domain
	b.bg.Add(1)
	go b.heartbeatLoop()
}

func (b *Backend) beat(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.HeartbeatTTL/3)
	defer cancel()
	return b.cfg.Cache.Set(ctx, heartbeatKey(b.instance), []byte(strconv.FormatInt(time.Now().Unix(), 10)), b.cfg.HeartbeatTTL)
}

// heartbeatLoop refreshes the heartbeat three times per TTL until Close.
// The key is left to expire after Close: runs may still be finishing.
func (b *Backend) heartbeatLoop() {
	defer b.bg.Done()
	ctx, cancel := b.stopContext()
	defer cancel()
	// A timer, not the injected clock: the cache's TTL is real time.
	t := time.NewTicker(b.cfg.HeartbeatTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			if err := b.beat(ctx); err != nil && ctx.Err() == nil {
				b.log.Warn("worker heartbeat", "err", err)
			}
		}
	}
}

// instanceGone reports whether the heartbeat of a Backend instance is
// known to be gone: missing now, and missing already at a pass at least
// HeartbeatTTL ago (b.missingSince, kept across passes). Any doubt (a
// cache error) counts as alive. memo holds this pass's answers.
func (b *Backend) instanceGone(ctx context.Context, instance string, memo map[string]bool) bool {
	if gone, ok := memo[instance]; ok {
		return gone
	}
	_, err := b.cfg.Cache.Get(ctx, heartbeatKey(instance))
	missing := errors.Is(err, cache.ErrMiss)
	if err != nil && !missing {
		b.log.Warn("reaper: read a worker heartbeat", "instance", instance, "err", err)
	}
	gone := false
	if !missing {
		delete(b.missingSince, instance)
	} else if since, ok := b.missingSince[instance]; !ok {
		b.missingSince[instance] = time.Now() // real time, as the cache's TTLs
	} else {
		gone = time.Since(since) >= b.cfg.HeartbeatTTL
	}
	memo[instance] = gone
	return gone
}
