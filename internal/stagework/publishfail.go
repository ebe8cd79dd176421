package stagework

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// A result that cannot be published must still reach its job: a result
// too large even for the claim check (bus.ErrPayloadTooLarge), or one
// whose publish failed on the command's last delivery, is replaced by a
// failed result that says why, and that one is published. Before, the
// cached result failed to publish on every delivery, the command was
// dropped, and the job ran until its deadline.

// publishRetryWaits are the pauses before each new attempt of a result's
// publish within one delivery of its command.
var publishRetryWaits = []time.Duration{200 * time.Millisecond, time.Second, 3 * time.Second}

// publishOrFail offers res to the coordinators (bus/offer.go) and, when
// none takes it, publishes it; when that fails for good it publishes the
// failure instead. It returns an error only for a publish to retry.
func (e *Executor) publishOrFail(ctx context.Context, msg *bus.Message, res *messages.StageResult) error {
	if e.cfg.Offers != nil && e.cfg.Offers.OfferJSON(ctx, bus.OfferSubject(e.cfg.Pool, res.JobID), res) {
		return nil
	}
	publish := func() error {
		return e.cfg.Publisher.PublishJSON(ctx, bus.ResultSubject(e.cfg.Pool, res.JobID), res, bus.ResultMsgID(e.cfg.Pool, res.JobID, res.Seq))
	}
	err := publish()
	// Tried again here first, while the worker's heartbeat keeps the
	// command: a redelivery is answered from the cache only when the stage
	// is cached and its result storable, and otherwise runs the stage, and
	// pays its model call, again (a failed result, a run that timed out,
	// cache mode override or disable).
	for _, wait := range publishRetryWaits {
		if err == nil || ctx.Err() != nil || errors.Is(err, bus.ErrPayloadTooLarge) {
			break
		}
		e.log.Warn("stage result not published; trying again", "job_id", res.JobID, "stage", res.Stage, "seq", res.Seq, "in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
			err = publish()
		}
	}
	if err == nil || ctx.Err() != nil {
		return err
	}
	tooLarge := errors.Is(err, bus.ErrPayloadTooLarge)
	if !tooLarge && !lastAttempt(msg) {
		return err // redelivered; the cache makes the retry cheap
	}
	failed := *res
	failed.Output, failed.Messages, failed.Cached = nil, nil, false
	failed.ErrorKind = messages.ErrorPermanent
	if !tooLarge {
		failed.ErrorKind = messages.ErrorInfra
	}
	failed.Error = fmt.Sprintf("publish the %s result: %v", res.Stage, err)
	e.log.Error("stage result not published; publishing its failure", "job_id", res.JobID, "stage", res.Stage, "seq", res.Seq, "err", err)
	if ferr := e.cfg.Publisher.PublishJSON(ctx, bus.ResultSubject(e.cfg.Pool, res.JobID), &failed, bus.ResultMsgID(e.cfg.Pool, res.JobID, res.Seq)); ferr != nil {
		return fmt.Errorf("%w (and its failure: %w)", err, ferr)
	}
	*res = failed
	return nil
}
