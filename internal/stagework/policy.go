package stagework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/pkg/messages"
)

// The failure policy of stage work lives in this file, and only here. A
// stage handler says what a failure means by the error it returns:
//
//	bus.Permanent(err)      the stage fails now: a result with ErrorPermanent
//	                        is published
//	bus.RetryAfter(err, d)  the command is delivered again after d
//	a model's error         as llm.Classify says: permanent (a refusal, a
//	                        reply that stays invalid) or retried, after the
//	                        wait the endpoint asked for if it did
//	any other error         delivered again after Config.RetryDelay(n), an
//	                        exponential backoff by delivery count
//	a panic                 like any other error (it is usually one input's bug)
//	an output that does not encode as JSON, or input that does not
//	decode (mux.go): permanent
//
// Attempts have one knob: the MaxDeliver of the pool's consumer
// (bus.ProvisionConfig.MaxDeliver, default bus.DefaultMaxDeliver), read
// against the delivery count JetStream keeps on each message. On the last
// delivery a failure that would be retried becomes a result with
// ErrorInfra, "<err> (after n attempts)". So every command with a job to
// answer to ends in a result: the executor never leaves the bus to
// terminate one silently. What it cannot answer (a command that does not
// decode, or has no valid job ID) is terminated with bus.Permanent, and a
// result that cannot be published is retried, then replaced by its
// failure (publishfail.go).
//
// A handler cut off by shutdown (ctx cancelled) is not a failure: its error
// goes back to the worker, which hands the message to another worker.
//
// Model calls have their own in-process retries (internal/llm); what they
// finally give up with is classified next to the model code (llm.Classify),
// and applied here, for every stage.

// DefaultRetryDelay is the backoff between deliveries of a failing stage:
// the bus's (1s doubling to 5m, with jitter).
func DefaultRetryDelay(numDelivered uint64) time.Duration { return bus.DefaultRetryDelay(numDelivered) }

// lastAttempt reports whether msg is the last delivery its consumer makes.
// A message whose consumer's MaxDeliver is unknown gets the provisioning
// default; one without a limit is never the last.
func lastAttempt(msg *bus.Message) bool {
	limit := msg.MaxDeliver()
	switch {
	case limit < 0:
		return false
	case limit == 0:
		limit = bus.DefaultMaxDeliver
	}
	return msg.NumDelivered() >= uint64(limit)
}

// decodeCommand reads a stage command. One that cannot be read has no job
// to answer to, so it is terminated (bus.Permanent).
func decodeCommand(msg *bus.Message) (*messages.StageCommand, error) {
	var cmd messages.StageCommand
	if err := json.Unmarshal(msg.Data(), &cmd); err != nil {
		return nil, bus.Permanent(fmt.Errorf("decode stage command: %w", err))
	}
	if cmd.V > messages.WireVersion {
		return nil, bus.Permanent(fmt.Errorf("stage command version %d is newer than %d", cmd.V, messages.WireVersion))
	}
	if !bus.ValidJobID(cmd.JobID) {
		return nil, bus.Permanent(fmt.Errorf("stage command has an invalid job id %q", cmd.JobID))
	}
	return &cmd, nil
}

// classify says what err asks for: a permanent failure, or a retry after
// a delay the error names (asked) or the backoff's.
func classify(err error) (permanent bool, delay time.Duration, asked bool) {
	v := llm.Classify(err)
	if bus.IsPermanent(err) || v.Permanent {
		return true, 0, false
	}
	if d, ok := bus.RetryDelayOf(err); ok {
		return false, d, true
	}
	return false, v.RetryAfter, v.RetryAfter > 0
}

// onFailure applies the policy to a handler's error: either it fills res
// with the failure, to be published, and returns nil, or it returns the
// error to give the worker, which delivers the command again.
func (e *Executor) onFailure(ctx context.Context, msg *bus.Message, herr error, res *messages.StageResult) (retry error) {
	n := msg.NumDelivered()
	permanent, delay, asked := classify(herr)
	switch {
	case ctx.Err() != nil:
		// Shutting down: leave the message for another worker. The error
		// wraps ctx's, so the worker hands it back even on a last delivery
		// whatever the handler returned.
		if errors.Is(herr, ctx.Err()) {
			return herr
		}
		return fmt.Errorf("%w: %w", ctx.Err(), herr)
	case permanent:
		res.Error, res.ErrorKind = herr.Error(), messages.ErrorPermanent
	case lastAttempt(msg):
		res.Error, res.ErrorKind = fmt.Sprintf("%v (after %d attempts)", herr, n), messages.ErrorInfra
	default:
		if !asked {
			delay = e.cfg.RetryDelay(n)
		}
		e.log.Warn("stage failed; will retry", "job_id", res.JobID, "stage", res.Stage, "seq", res.Seq,
			"err", herr, "attempt", n, "retry_in", delay)
		return bus.RetryAfter(herr, delay)
	}
	e.log.Error("stage failed", "job_id", res.JobID, "stage", res.Stage, "seq", res.Seq, "err", res.Error, "kind", res.ErrorKind)
	return nil
}

// run runs cmd's handler on the mux, turning a panic into an error the
// policy retries. It is the executor's one panic recovery.
func (e *Executor) run(ctx context.Context, cmd *messages.StageCommand) (out Output[json.RawMessage], storable bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			pe := &bus.PanicError{Value: v, Stack: debug.Stack()}
			e.log.Error("stage handler panic", "job_id", cmd.JobID, "stage", cmd.Stage, "panic", v, "stack", string(pe.Stack))
			out, storable, err = Output[json.RawMessage]{}, false, pe
		}
	}()
	return e.mux.Serve(ctx, cmd)
}
