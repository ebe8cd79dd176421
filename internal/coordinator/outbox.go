package coordinator

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
)

// The outbox: a step's commands are stored with its state (one
// compare-and-set) and published after it, so a crash in between loses
// nothing (the next step, or Recover, publishes them again; Msg-Ids drop
// the copies). Once they are out the outbox is cleared, so that a Recover
// long after does not publish them again past the streams' duplicate
// window, where a copy is a real duplicate.
//
// Clearing is a second write of the record, and on a job that moves fast
// it lands on the next hop's path (the next result waits behind it on the
// same connection). So it waits a second: a job whose next step
// comes first needs no clear at all (that step's record replaces the
// outbox), and the kept copy remembers that its outbox is out, so that
// step does not publish it again. A job that waits longer on a stage is
// cleared as before. Finished jobs are cleared at once
// (Config.OutboxClearDelay). A crash in the delay leaves an outbox that
// is out already: the job's next input, or Recover at the next start,
// sends it again, and JetStream drops the copies that come within the
// stage streams' duplicate window (bus.DefaultDuplicateWindow, ten
// minutes); a later copy of a stage command is refused by its worker's
// admission check once its stage is no longer pending.

// DefaultOutboxClearDelay is Config.OutboxClearDelay's default.
const DefaultOutboxClearDelay = time.Second

// clears holds the delayed clears not yet done, so Close does them, and
// the outboxes being published again after their step failed to.
type clears struct {
	mu      sync.Mutex
	pending map[string]pendingClear // by job ID
	retries map[string]*time.Timer  // by job ID
	closed  bool
}

// A step that stored its record and then failed to send its commands
// returns the error, and the redelivery of its input sends them. But an
// offer's result may never be redelivered (the worker answered not taken
// publishes it on the stream, and that publish may fail too; its command,
// redelivered, is no longer pending), and then nothing would send the
// outbox until the stage's deadline. So the coordinator that stored it
// also sends it itself, after outboxRetryDelay, then at doubling waits up
// to maxOutboxRetryDelay, until it is out or a later step replaced it.
const (
	outboxRetryDelay    = time.Second
	maxOutboxRetryDelay = 30 * time.Second
)

// retryOutboxLater sends the outbox of the job's record stored at rev
// after wait, unless the job has moved past rev by then.
func (c *Coordinator) retryOutboxLater(jobID string, rev uint64, wait time.Duration) {
	c.clears.mu.Lock()
	defer c.clears.mu.Unlock()
	if c.clears.closed {
		return // the next start's Recover sends it
	}
	if c.clears.retries == nil {
		c.clears.retries = map[string]*time.Timer{}
	}
	if old, ok := c.clears.retries[jobID]; ok {
		old.Stop()
	}
	var t *time.Timer
	t = time.AfterFunc(wait, func() {
		c.clears.mu.Lock()
		if c.clears.retries[jobID] == t {
			delete(c.clears.retries, jobID)
		}
		c.clears.mu.Unlock()
		c.bg.track(func() {
			if !c.retryOutbox(jobID, rev) {
				c.retryOutboxLater(jobID, rev, min(2*wait, maxOutboxRetryDelay))
			}
		})
	})
	c.clears.retries[jobID] = t
}

// retryOutbox sends, in a turn of its own on the job, the outbox of its
// record if that is still the one stored at rev; false when it failed.
func (c *Coordinator) retryOutbox(jobID string, rev uint64) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t := c.locks.begin(jobID)
	defer c.locks.end(jobID, t)
	entry, err := c.cfg.States.Get(ctx, bus.JobKey(jobID))
	if err != nil || entry.Revision() != rev {
		return err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) // moved on, or gone: nothing to send
	}
	var rec record
	if err := decodeRecord(entry.Value(), &rec); err != nil || len(rec.Outbox) == 0 {
		return true
	}
	if err := c.publish(ctx, rec.Outbox); err != nil {
		c.log.Warn("outbox not sent; trying again", "job_id", jobID, "err", err)
		return false
	}
	c.log.Info("outbox sent after its step failed to", "job_id", jobID, "commands", len(rec.Outbox))
	c.clearOutbox(ctx, jobID, rec, rev)
	return true
}

// pendingClear is a clear waiting for its delay: the record it clears.
type pendingClear struct {
	timer *time.Timer
	rec   record
	rev   uint64
}

// outboxSent is called once the outbox of rec, stored at rev, is out and
// the step's turn on the job has ended.
func (c *Coordinator) outboxSent(ctx context.Context, jobID string, rec record, rev uint64) {
	if !rec.State.Done() && c.states.markSent(jobID, rev) && c.clearLater(jobID, rec, rev) {
		return
	}
	c.clearIfCurrent(ctx, jobID, rec, rev) // now: not kept, finished, or closing
}

// clearLater schedules the clear of the job's outbox at rev after
// Config.OutboxClearDelay; false when it clears at once or is closing.
func (c *Coordinator) clearLater(jobID string, rec record, rev uint64) bool {
	c.clears.mu.Lock()
	defer c.clears.mu.Unlock()
	if c.clears.closed || c.cfg.OutboxClearDelay < 0 {
		return false
	}
	if c.clears.pending == nil {
		c.clears.pending = map[string]pendingClear{}
	}
	if p, ok := c.clears.pending[jobID]; ok {
		p.timer.Stop() // an older step's clear: this record replaced its outbox
	}
	var t *time.Timer
	t = time.AfterFunc(c.cfg.OutboxClearDelay, func() {
		c.clears.mu.Lock()
		if c.clears.pending[jobID].timer == t {
			delete(c.clears.pending, jobID)
		}
		c.clears.mu.Unlock()
		c.bg.track(func() { c.clearAfterDelay(jobID, rec, rev) })
	})
	c.clears.pending[jobID] = pendingClear{timer: t, rec: rec, rev: rev}
	return true
}

// clearIfCurrent clears the outbox of the job's record at rev, in a turn
// of its own on the job (joblocks.go), unless a later step has replaced
// the record this coordinator keeps.
func (c *Coordinator) clearIfCurrent(ctx context.Context, jobID string, rec record, rev uint64) {
	t := c.locks.begin(jobID)
	defer c.locks.end(jobID, t)
	if _, keptRev, ok := c.states.get(jobID); ok && keptRev != rev {
		return
	}
	c.clearOutbox(ctx, jobID, rec, rev)
}

// clearAfterDelay is a delayed clear's work (clearLater).
func (c *Coordinator) clearAfterDelay(jobID string, rec record, rev uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.clearIfCurrent(ctx, jobID, rec, rev)
}

// Close clears the outboxes whose clears are still waiting, so a
// coordinator that stops leaves no outbox behind that is out already, and
// writes the index lines still waiting. Steps taken after Close clear, and
// write their lines, at once.
func (c *Coordinator) Close() error {
	c.closeLines() // index.go
	c.clears.mu.Lock()
	c.clears.closed = true
	for _, t := range c.clears.retries {
		t.Stop() // the next start's Recover sends what they would have
	}
	waiting := map[string]pendingClear{}
	for jobID, p := range c.clears.pending {
		if p.timer.Stop() { // stopped before it ran: its work is done here
			waiting[jobID] = p
		}
		delete(c.clears.pending, jobID)
	}
	c.clears.mu.Unlock()
	for jobID, p := range waiting {
		c.clearAfterDelay(jobID, p.rec, p.rev)
	}
	c.bg.closeAndWait() // offers being stepped, timers that had fired
	return nil
}
