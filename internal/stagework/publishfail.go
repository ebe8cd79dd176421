package stagework

import (
	"context"
	"errors"
	"fmt"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// A result that cannot be published must still reach its job: a result
// too large even for the claim check (bus.ErrPayloadTooLarge), or one
// whose publish failed on the command's last delivery, is replaced by a
// failed result that says why, and that one is published. Before, the
// cached result failed to publish on every delivery, the command was
// dropped, and the job ran until its deadline.

// publishOrFail offers res to the coordinators (bus/offer.go) and, when
// none takes it, publishes it; when that fails for good it publishes the
// failure instead. It returns an error only for a publish to retry.
func (e *Executor) publishOrFail(ctx context.Context, msg *bus.Message, res *messages.StageResult) error {
	if e.cfg.Offers != nil && e.cfg.Offers.OfferJSON(ctx, bus.OfferSubject(e.cfg.Pool, res.JobID), res) {
		return nil
	}
	err := e.cfg.Publisher.PublishJSON(ctx, bus.ResultSubject(e.cfg.Pool, res.JobID), res, bus.ResultMsgID(e.cfg.Pool, res.JobID, res.Seq))
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
