package stagework

import (
	"context"
	"errors"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/cache"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Exactly one computation per distinct stage across workers: before it
// computes a stage the cache does not have, an executor takes the stage's
// in-flight claim, a lock in the shared cache named by the stage's content
// key, with a lease it renews while it works (a heartbeat, as image builds
// have: internal/sandbox/docker build.go). An identical command arriving
// meanwhile, on any worker, waits for the claim to be released and then
// answers from the cache. A holder that crashed stops renewing, so its
// claim expires after one lease and a waiter computes instead; a holder
// whose stage failed (nothing cached) leaves the next waiter to compute.

// Defaults of the in-flight claim (Config.ClaimLease, Config.ClaimPoll).
// The lease is the stage streams' AckWait (bus.DefaultAckWait): a worker
// killed mid-stage stops both its heartbeats and its renewals, so its
// command is redelivered and its claim expires at about the same time,
// and the worker that takes the command over does not wait on a dead
// holder for longer than JetStream waited.
const (
	DefaultClaimLease = bus.DefaultAckWait
	DefaultClaimPoll  = 200 * time.Millisecond
)

// InflightClaim is the cache lock of the stage whose content key
// (Executor.Key) is key.
func InflightClaim(key string) string { return "inflight/" + key }

// inflight is a held claim; release ends its heartbeat and frees it.
type inflight struct {
	release func()
}

// noClaim is the claim of a command the cache does not answer.
var noClaim = &inflight{release: func() {}}

// claimOrWait takes the in-flight claim of key, or waits while another
// holds it. It returns either a held claim (compute, store, then release),
// or done when the cache got the stage meanwhile (res is then filled from
// it). A command the cache does not answer needs no claim. A cache that
// cannot lock costs a duplicate computation, never a stuck stage: the
// claim is then skipped.
func (e *Executor) claimOrWait(ctx context.Context, cmd *messages.StageCommand, key string, res *messages.StageResult) (c *inflight, done bool, err error) {
	if !e.cacheable(cmd) {
		return noClaim, false, nil
	}
	name := InflightClaim(key)
	for {
		token, err := e.cfg.Cache.TryLock(ctx, name, e.cfg.ClaimLease)
		switch {
		case err == nil:
			// A free claim is no proof the stage is not done: a holder may
			// have stored it and released the claim since this executor
			// last looked in the cache (a wait's last poll, or the look
			// before the claim). One more read is cheap against the stage.
			if e.fromCache(ctx, cmd, key, res) {
				e.unlock(ctx, name, token)
				return nil, true, nil
			}
			return e.hold(ctx, name, token), false, nil
		case !errors.Is(err, cache.ErrLockHeld):
			if ctx.Err() != nil {
				return nil, false, ctx.Err()
			}
			e.log.Warn("in-flight claim failed; computing without it", "job_id", cmd.JobID, "stage", cmd.Stage, "err", err)
			return noClaim, false, nil
		}
		t := time.NewTimer(e.cfg.ClaimPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, false, ctx.Err()
		case <-t.C:
		}
		if e.fromCache(ctx, cmd, key, res) {
			return nil, true, nil
		}
	}
}

// hold renews the claim every third of its lease until released.
func (e *Executor) hold(ctx context.Context, name, token string) *inflight {
	stop := cache.Renew(ctx, e.cfg.Cache, name, token, e.cfg.ClaimLease, func(err error) {
		e.log.Warn("in-flight claim not renewed", "claim", name, "err", err)
	})
	return &inflight{release: func() {
		stop()
		e.unlock(ctx, name, token)
	}}
}

func (e *Executor) unlock(ctx context.Context, name, token string) {
	if err := e.cfg.Cache.Unlock(context.WithoutCancel(ctx), name, token); err != nil {
		e.log.Warn("in-flight claim not released; it expires with its lease", "claim", name, "err", err)
	}
}
