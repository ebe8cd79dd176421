package docker

import (
	"context"
	"strconv"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
)

// reap removes every container of this package (any worker's) whose lease
// is over: a run that outlived its timeout and margin belongs to a worker
// that died, and an idle pooled sandbox past its lease to a pool that is
// gone. It also removes those of this liveness domain whose worker's
// heartbeat is gone (liveness.go), whatever their lease. It returns how
// many it removed.
func (b *Backend) reap(ctx context.Context) int {
	// One pass at a time: passes share missingSince.
	b.reapMu.Lock()
	defer b.reapMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	list, err := b.cli.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", reaperFilter))})
	if err != nil {
		b.log.Warn("reaper: list containers", "err", err)
		return 0
	}
	now := b.cfg.Now().Unix()
	n := 0
	gone := map[string]bool{}
	for _, c := range list {
		reason := "its lease is over"
		expiry, err := strconv.ParseInt(c.Labels[labelLeaseExpiry], 10, 64)
		if err == nil && now <= expiry {
			instance := c.Labels[labelInstance]
			if b.domain == "" || c.Labels[labelLiveness] != b.domain || instance == "" || instance == b.instance ||
				!b.instanceGone(ctx, instance, gone) {
				continue
			}
			reason = "its worker's heartbeat is gone"
		}
		b.log.Info("reaper: removing a sandbox container", "reason", reason, "container", shortID(c.ID),
			"worker", c.Labels[labelWorker], "job", c.Labels[labelJob], "role", c.Labels[labelRole],
			"lease_expiry", c.Labels[labelLeaseExpiry], "state", c.State)
		b.remove(c.ID)
		n++
	}
	// Forget instances that have no containers left to judge.
	for instance := range b.missingSince {
		if _, seen := gone[instance]; !seen {
			delete(b.missingSince, instance)
		}
	}
	return n
}

// reapLoop reaps every Config.ReapInterval until Close.
func (b *Backend) reapLoop() {
	defer b.bg.Done()
	t := time.NewTicker(b.cfg.ReapInterval)
	defer t.Stop()
	ctx, cancel := b.stopContext()
	defer cancel()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			b.reap(ctx)
		}
	}
}

// stopContext is cancelled by Close.
func (b *Backend) stopContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-b.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
