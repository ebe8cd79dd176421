package stagework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/jsonhead"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Admission: a worker believes nothing it can check. Anyone who can
// publish on a stage subject could otherwise make an llm-worker send their
// prompt to the model with the operator's key and publish the reply, or
// make a sandbox-worker run their code. So before a command runs (or is
// answered from the cache), the executor checks it against the coordinator's
// own record in the job-state bucket: the job exists, is not finished, and
// has this command's seq pending with this stage, a stage of this
// executor's pool. A command that fails the check is refused: acked, logged
// and counted (Config.Metrics), never run, never answered.

// Jobs tells the executor which stage commands the coordinator has sent.
type Jobs interface {
	// PendingStage returns the stage the coordinator has pending as seq of
	// job jobID, and what it knows of the job. stage is "" when it has
	// none: no such job (JobUnknown), a finished job (JobFinished), or a
	// seq not (or no longer) pending. err is for a lookup that failed.
	PendingStage(ctx context.Context, jobID string, seq int) (stage messages.Stage, job JobStatus, err error)
}

// JobStatus is what the job-state bucket says of a command's job.
type JobStatus int

const (
	JobUnknown  JobStatus = iota // no record: the coordinator never had the job, or it expired
	JobRunning                   // a record of a job not finished
	JobFinished                  // a record of a finished job
)

// KVJobs reads the job-state bucket (bus.BucketJobState), read only.
type KVJobs struct {
	KV jetstream.KeyValue
}

var _ Jobs = KVJobs{}

// jobRecord is the part of the coordinator's record (the state and its
// outbox) that admission needs: the phase and the pending stages of
// machine.State. Decoding only these keeps the state machine out of the
// workers.
type jobRecord struct {
	State struct {
		Phase   string `json:"phase"`
		Pending map[int]struct {
			Stage messages.Stage `json:"stage"`
		} `json:"pending"`
	} `json:"state"`
}

// decodeJobRecord reads the phase and pending stages of a coordinator's
// record. They come early in it (machine.State's fields, in order, before
// the code, tests, reports and conversations that make most of a record),
// so it stops reading once it has both: every stage command's admission
// reads its job's whole record, which by the sandbox stages is mostly
// text it does not need. A record laid out otherwise (no "state" first, or
// no "pending": nothing pending) is decoded whole, as before.
func decodeJobRecord(b []byte) (jobRecord, error) {
	var early jobRecord // apart from rec: a head read that stops short may leave it half filled
	if jsonhead.Fields(b, "state", map[string]any{"phase": &early.State.Phase, "pending": &early.State.Pending}) {
		return early, nil
	}
	var rec jobRecord
	err := json.Unmarshal(b, &rec)
	return rec, err
}

// phaseDone is machine.PhaseDone: a finished job has nothing pending.
const phaseDone = "done"

// PendingStage implements Jobs.
func (j KVJobs) PendingStage(ctx context.Context, jobID string, seq int) (messages.Stage, JobStatus, error) {
	entry, err := j.KV.Get(ctx, bus.JobKey(jobID))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", JobUnknown, nil
	}
	if err != nil {
		return "", JobUnknown, fmt.Errorf("load job %s: %w", jobID, err)
	}
	b, err := bus.DecodeStateRecord(entry.Value())
	if err != nil {
		return "", JobUnknown, fmt.Errorf("job %s: %w", jobID, err)
	}
	rec, err := decodeJobRecord(b)
	if err != nil {
		return "", JobUnknown, fmt.Errorf("job %s: corrupt state: %w", jobID, err)
	}
	if rec.State.Phase == phaseDone {
		return "", JobFinished, nil
	}
	return rec.State.Pending[seq].Stage, JobRunning, nil
}

// DefaultConfirmWait is how long the executor looks for a command's
// pending stage before refusing it (Config.ConfirmWait).
const DefaultConfirmWait = time.Second

// Refusal reasons, the reason label of the refusal metric. The first two
// are never the coordinator's doing: someone publishes on the stage
// subjects who should not (the alert AutocoderCommandsRefused). The other
// two are routine: commands still queued when their job was cancelled or
// failed, and a command delivered again after its result was applied.
const (
	RefusedWrongPool   = "wrong_pool"   // a stage another pool does
	RefusedUnknownJob  = "unknown_job"  // no record of the job
	RefusedJobFinished = "job_finished" // the job is finished
	RefusedNotPending  = "not_pending"  // the job runs, with not this seq and stage pending
)

// RefusalReasons are every refusal reason.
var RefusalReasons = []string{RefusedWrongPool, RefusedUnknownJob, RefusedJobFinished, RefusedNotPending}

// refusal says why a command is not run.
type refusal struct {
	reason string
	detail string
}

// admit checks cmd against the coordinator's record. It returns a refusal,
// or nil to run the command, or an error when the record could not be read
// (the command is delivered again).
//
// The coordinator stores a job's state before it publishes the commands of
// that step, so a command on the stream is normally pending already. A
// replicated bucket may answer from a follower that has not caught up
// (direct get), so a miss is looked up again, for up to ConfirmWait, before
// the command is refused.
func (e *Executor) admit(ctx context.Context, cmd *messages.StageCommand) (*refusal, error) {
	if pool := e.mux.stages.Pool(cmd.Stage); pool != e.cfg.Pool {
		return &refusal{RefusedWrongPool, fmt.Sprintf("stage %q is done by the %q pool, not %s", cmd.Stage, pool, e.cfg.Pool)}, nil
	}
	wait, cancel := context.WithTimeout(ctx, e.cfg.ConfirmWait)
	defer cancel()
	for pause := 50 * time.Millisecond; ; pause *= 2 {
		stage, job, err := e.cfg.Jobs.PendingStage(ctx, cmd.JobID, cmd.Seq)
		if err != nil {
			return nil, err
		}
		switch {
		case stage == cmd.Stage:
			return nil, nil
		case stage != "":
			// Pending as another stage: no wait makes that right.
			return &refusal{RefusedNotPending, fmt.Sprintf("seq %d is pending as %s, not %s", cmd.Seq, stage, cmd.Stage)}, nil
		case job == JobFinished:
			// A finished job never has anything pending again.
			return &refusal{RefusedJobFinished, "the job is finished"}, nil
		}
		t := time.NewTimer(pause)
		select {
		case <-wait.Done():
			t.Stop()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if job == JobUnknown {
				return &refusal{RefusedUnknownJob, "the coordinator has no record of the job"}, nil
			}
			return &refusal{RefusedNotPending, "the coordinator has no such stage pending"}, nil
		case <-t.C:
		}
	}
}

// refuse records a refused command; the command is then acked.
func (e *Executor) refuse(cmd *messages.StageCommand, r *refusal) {
	e.log.Warn("stage command refused", "job_id", cmd.JobID, "stage", cmd.Stage, "seq", cmd.Seq,
		"reason", r.reason, "detail", r.detail)
	e.cfg.Metrics.CommandRefused(cmd.Stage, r.reason)
}
