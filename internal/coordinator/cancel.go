package coordinator

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Cancelling a job: a client publishes messages.CancelJob on
// bus.SubjectJobsCancel (the jobs stream, so the request waits for a
// coordinator that is down); the coordinator steps the job's machine with
// machine.InputCancel, which finishes it at once (failed, with who and
// when on the result), then announces the cancellation on core NATS
// (bus.CancelledSubject) so the workers stop the job's stages in flight:
// sandboxes killed, model calls abandoned (stagework.Cancels).

// CorePublisher announces on core NATS; bus.Publisher is one. A Publisher
// that is not one announces nothing: the stages in flight then run to
// their end and their results are stale.
type CorePublisher interface {
	PublishCore(subject string, v any) error
}

// HandleCancel is the bus.Handler for cancel requests. Who asked is the
// subject's: a producer asks on bus.CancelSubject(its name), which only
// it may publish on, and is recorded as nats:<name> whatever the request
// says; the request's own by is believed only on bus.SubjectJobsCancel,
// the coordinator role's (its HTTP API names the caller's token there).
func (c *Coordinator) HandleCancel(ctx context.Context, msg *bus.Message) error {
	by, trusted, ok := bus.ParseCancelSubject(msg.Subject())
	if !ok {
		return bus.Permanent(fmt.Errorf("%q is neither a submission nor a cancel subject", msg.Subject()))
	}
	var req messages.CancelJob
	if err := json.Unmarshal(msg.Data(), &req); err != nil {
		return bus.Permanent(fmt.Errorf("decode cancel request: %w", err))
	}
	if !bus.ValidJobID(req.JobID) {
		return bus.Permanent(fmt.Errorf("cancel request has an invalid job id %q", req.JobID))
	}
	if err := req.Validate(); err != nil {
		return bus.Permanent(fmt.Errorf("cancel request for job %s: %w", req.JobID, err))
	}
	if trusted {
		by = req.By
	}
	return c.cancel(ctx, req.JobID, by, req.Reason)
}

// cancel steps the job with a cancellation and announces it. The
// announcement goes out even when the job was already finished (a
// redelivered request, a coordinator that crashed before announcing): it
// stops nothing that should go on, since a finished job has no stage whose
// result counts.
func (c *Coordinator) cancel(ctx context.Context, jobID, by, reason string) error {
	in := machine.Input{Kind: machine.InputCancel, Time: c.cfg.Now(), Reason: reason, By: by}
	if err := c.apply(ctx, jobID, in); err != nil {
		return err
	}
	c.announceCancelled(jobID)
	return nil
}

// announceCancelled tells the workers that job jobID is cancelled. Core
// NATS loses it when no worker listens, which is fine: a stage that starts
// later finds the job finished (stagework's admission) and does not run.
func (c *Coordinator) announceCancelled(jobID string) {
	cp, ok := c.cfg.Publisher.(CorePublisher)
	if !ok {
		return
	}
	note := messages.CancelJob{V: messages.WireVersion, JobID: jobID}
	if err := cp.PublishCore(bus.CancelledSubject(jobID), note); err != nil {
		c.log.Warn("announce cancellation", "job_id", jobID, "err", err)
	}
}
