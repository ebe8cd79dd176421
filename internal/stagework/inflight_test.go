package stagework_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/cache"
	"github.com/autocoder/autocoder/pkg/messages"
)

func openDir(t *testing.T) *cache.Dir {
	t.Helper()
	c, err := cache.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestIdenticalStagesComputeOnce: two executors (two workers) on one cache
// get the same command while the first is still computing it: the second
// waits on the in-flight claim and answers from the cache.
func TestIdenticalStagesComputeOnce(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}, 2), make(chan struct{})
	h := &handler{version: "v1", fn: func(context.Context, *messages.StageCommand) (stagework.Output[any], error) {
		started <- struct{}{}
		<-release
		return planOutput("computed"), nil
	}}
	c := openDir(t)
	pa, pb := &publisher{}, &publisher{}
	a := newExecutor(t, h, pa, c, func(cfg *stagework.Config) { cfg.ClaimPoll = 10 * time.Millisecond })
	b := newExecutor(t, h, pb, c, func(cfg *stagework.Config) { cfg.ClaimPoll = 10 * time.Millisecond })
	cmd := command(messages.CacheAuto)
	errs := make(chan error, 2)
	go func() { errs <- a.Handle(ctxT(t), message(t, cmd, 1)) }()
	<-started // a holds the claim and computes
	go func() { errs <- b.Handle(ctxT(t), message(t, cmd, 1)) }()
	select {
	case <-started:
		t.Fatal("the second executor computed the stage the first was computing")
	case <-time.After(200 * time.Millisecond): // b is polling the claim by now
	}
	close(release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := h.calls.Load(); n != 1 {
		t.Errorf("handler ran %d times, want once", n)
	}
	ra, rb := pa.results(), pb.results()
	if len(ra) != 1 || ra[0].Result.Cached || len(rb) != 1 || !rb[0].Result.Cached {
		t.Errorf("results %+v and %+v: want the first computed, the second cached", ra, rb)
	}
}

// TestStoredJustBeforeTheClaimIsNotComputedAgain: the second executor's
// first look in the cache misses, and before it takes the claim the first
// executor stores the stage and releases it. Taking a free claim is no
// proof the stage is not done: the second answers from the cache.
func TestStoredJustBeforeTheClaimIsNotComputedAgain(t *testing.T) {
	t.Parallel()
	h := &handler{version: "v1", fn: func(context.Context, *messages.StageCommand) (stagework.Output[any], error) {
		return planOutput("computed"), nil
	}}
	c := openDir(t)
	pa, pb := &publisher{}, &publisher{}
	a := newExecutor(t, h, pa, c, nil)
	cmd := command(messages.CacheAuto)
	late := &missOnce{Cache: c, before: func() {
		if err := a.Handle(ctxT(t), message(t, cmd, 1)); err != nil {
			t.Error(err)
		}
	}}
	b := newExecutor(t, h, pb, late, nil)
	if err := b.Handle(ctxT(t), message(t, cmd, 1)); err != nil {
		t.Fatal(err)
	}
	if n := h.calls.Load(); n != 1 {
		t.Errorf("handler ran %d times, want once", n)
	}
	if rb := pb.results(); len(rb) != 1 || !rb[0].Result.Cached {
		t.Errorf("the second executor's results %+v, want one, from the cache", rb)
	}
}

// missOnce misses the first Get, after calling before: the stage is
// stored by someone else between that miss and what follows it.
type missOnce struct {
	cache.Cache
	before func()
	once   sync.Once
}

func (m *missOnce) Get(ctx context.Context, key string) ([]byte, error) {
	missed := false
	m.once.Do(func() { m.before(); missed = true })
	if missed {
		return nil, cache.ErrMiss
	}
	return m.Cache.Get(ctx, key)
}

// TestCrashedHoldersClaimExpires: a claim whose holder died (taken, never
// renewed nor released) stops holding after its lease: the next identical
// command computes the stage instead of waiting forever.
func TestCrashedHoldersClaimExpires(t *testing.T) {
	t.Parallel()
	h, p, c := &handler{version: "v1"}, &publisher{}, openDir(t)
	r := newExecutor(t, h, p, c, func(cfg *stagework.Config) { cfg.ClaimPoll = 10 * time.Millisecond })
	cmd := command(messages.CacheAuto)
	if _, err := c.TryLock(ctxT(t), stagework.InflightClaim(mustKey(t, r, cmd)), 300*time.Millisecond); err != nil {
		t.Fatal(err) // the crashed holder's claim
	}
	if err := r.Handle(ctxT(t), message(t, cmd, 1)); err != nil {
		t.Fatal(err)
	}
	res := p.results()
	if h.calls.Load() != 1 || len(res) != 1 || res[0].Result.Cached || res[0].Result.Error != "" {
		t.Errorf("calls %d, results %+v: want the stage computed once the dead claim expired", h.calls.Load(), res)
	}
}
