package coordinator

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/pkg/messages"
)

// DefaultMaxStateBytes bounds one job's stored record (its state and
// outbox): it is one KV value, which the server refuses past its max
// payload (1 MiB by default); the margin is for the message headers. The
// same bound applies to a job's result object (its own KV value).
const DefaultMaxStateBytes = 1<<20 - 16<<10

// Every job ends, whatever its size. A step whose record would pass the
// bound is handled in three ways, in this order:
//
//  1. A successful stage result that made it so becomes a failed one
//     naming the bound (overStateLimit): the job goes on to a fix, or ends
//     with that reason.
//  2. When that is not enough (the record is over the bound without the
//     result: a 600 KB solution is in the state and in the commands that
//     carry it to the next stage), the job is aborted (endOversized): the
//     machine finishes it as failed with a reason that names the bound, its
//     result and events are published first, and its state is stored
//     without an outbox and without its largest fields (trimJSON), so it
//     fits.
//  3. A submission over the bound is refused: synchronously by the message
//     API and the CLI (CheckSubmission), or, for one published on the jobs
//     stream directly, by a failed result under its job ID (HandleSubmit).
//
// Before, a step over the bound was dropped as a permanent error, and so
// was the stage deadline's failure of that job: the job stayed "running".

// overStateLimit is what the coordinator does first with a step whose
// record would be size bytes, over limit: a successful stage result that
// made it so is replaced by a failed one naming the bound, so the job goes
// on to a fix or ends with that reason instead of a state that cannot be
// stored. ok is false when ev is not such a result.
func overStateLimit(ev machine.Input, size, limit int) (machine.Input, bool) {
	if ev.Kind != machine.InputStageResult || ev.Result == nil || ev.Result.Error != "" {
		return ev, false
	}
	failed := *ev.Result
	failed.Output, failed.Messages = nil, nil
	failed.ErrorKind = messages.ErrorPermanent
	failed.Error = fmt.Sprintf("the %s result makes the job state %.1f MiB, over the %s bound of one stored job (a smaller output is needed)",
		failed.Stage, float64(size)/(1<<20), messages.FormatBytes(int64(limit)))
	ev.Result = &failed
	return ev, true
}

// oversizedReason is the failure of a job aborted at the bound: short, so
// that it fits whatever the job held.
func oversizedReason(ev machine.Input, size, limit int) string {
	what := "the job"
	if ev.Kind == machine.InputStageResult && ev.Result != nil {
		what = "the " + string(ev.Result.Stage) + " stage"
	}
	return fmt.Sprintf("job state over its bound: after %s it would be %.1f MiB, over the %s one stored job may hold "+
		"(its code, tests or outputs are too large); the job was ended", what, float64(size)/(1<<20), messages.FormatBytes(int64(limit)))
}

// overBoundError is store's answer to a record over the state bound:
// nothing was stored, and overBound decides what the step becomes.
type overBoundError struct {
	jobID       string
	size, limit int
}

func (e *overBoundError) Error() string {
	return fmt.Sprintf("job %s: state of %s is over the %s bound", e.jobID, messages.FormatBytes(int64(e.size)), messages.FormatBytes(int64(e.limit)))
}

// overBound is what applyOnce does with a step ev whose record, taken
// from rec at revision rev, would be size bytes, over the bound: the three
// ways above, in order. A result is shrunk at most once: its failure has
// an error, which overStateLimit leaves alone. It reports again when the
// step is to be tried again (with the shrunk result, or on a job another
// coordinator moved).
func (c *Coordinator) overBound(ctx context.Context, jobID string, rec record, rev uint64, ev *machine.Input, size int) (again bool, err error) {
	if shrunk, ok := overStateLimit(*ev, size, c.cfg.MaxStateBytes); ok {
		c.log.Warn("stage result too large for the job state; failing the stage", "job_id", jobID, "err", shrunk.Result.Error)
		*ev = shrunk
		return true, nil
	}
	if ev.Kind == machine.InputSubmitted {
		return false, c.reject(ctx, jobID, oversizedSubmission(*ev, size, c.cfg.MaxStateBytes))
	}
	err = c.endOversized(ctx, jobID, rec, rev, *ev, size)
	if errors.Is(err, errRetryStep) {
		return true, nil
	}
	return false, err
}

// endOversized aborts job jobID, whose record rec (at revision rev) cannot
// take the step ev: its result and events go out first, then its finished
// state is stored, trimmed to fit and with no outbox (what it would hold is
// out already). A crash in between leaves the job's result stored and its
// state running; the redelivered event ends it again, and the Msg-Ids and
// the result's put make the repeat harmless. It returns errRetryStep when
// another coordinator moved the job meanwhile.
func (c *Coordinator) endOversized(ctx context.Context, jobID string, rec record, rev uint64, ev machine.Input, size int) error {
	reason := oversizedReason(ev, size, c.cfg.MaxStateBytes)
	c.log.Error("job state over its bound; ending the job", "job_id", jobID, "kind", ev.Kind, "bytes", size)
	next, cmds := c.cfg.Machine.Step(rec.State, machine.Input{Kind: machine.InputAbort, Time: c.cfg.Now(), Reason: reason})
	if len(cmds) == 0 {
		return nil // already finished: nothing to end
	}
	c.indexStep(ctx, nil, rec.State, next) // first, as applyOnce does: who sees the result lists the job finished
	if err := c.publish(ctx, cmds); err != nil {
		return err
	}
	c.countFinished(cmds)
	b, err := trimJSON(record{State: next}, c.cfg.MaxStateBytes, nil)
	if err != nil {
		return fmt.Errorf("job %s: %w", jobID, err)
	}
	if rev == 0 {
		_, err = c.cfg.States.Create(ctx, bus.JobKey(jobID), storedRecord(b))
	} else {
		_, err = c.cfg.States.Update(ctx, bus.JobKey(jobID), storedRecord(b), rev)
	}
	if errors.Is(err, jetstream.ErrKeyExists) {
		c.cfg.Metrics.CASConflict()
		return errRetryStep
	}
	if err != nil {
		return fmt.Errorf("store job %s: %w", jobID, err)
	}
	c.cfg.Metrics.Stepped(string(machine.InputAbort), dispatched(cmds))
	return nil
}

// errRetryStep makes overBound step again on the job's fresh state.
var errRetryStep = errors.New("coordinator: step again")

// keptFields are the fields of a state or result that trimJSON never
// drops: who the job is, where it is and how it ended.
var keptFields = map[string]bool{
	"v": true, "job_id": true, "phase": true, "status": true, "success": true, "error": true,
	"cancelled": true, "submitted_at": true, "finished_at": true, "next_seq": true, "iteration": true,
	"attempts": true, "pending": true, "notes": true, "outputs": true, "stages": true,
}

// trimJSON encodes v (a struct whose JSON is an object; a record's state
// is flattened into it for the purpose) and, while it is over limit
// bytes, drops its largest field that keptFields does not protect. A
// record is trimmed at its state's fields. note, when not nil, is told
// what was dropped (it adds a line to a result's notes). It is an error
// only when even the kept fields do not fit.
func trimJSON(v any, limit int, note func(dropped []string) any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || len(b) <= limit {
		return b, err
	}
	rec, isRecord := v.(record)
	var fields map[string]json.RawMessage
	src := b
	if isRecord {
		if src, err = json.Marshal(rec.State); err != nil {
			return nil, err
		}
	}
	if err := json.Unmarshal(src, &fields); err != nil {
		return nil, err
	}
	var dropped []string
	for size := len(b); size > limit; {
		name := largestField(fields)
		if name == "" {
			return nil, fmt.Errorf("%s even without its large fields, over the %s bound", messages.FormatBytes(int64(size)), messages.FormatBytes(int64(limit)))
		}
		size -= len(fields[name])
		delete(fields, name)
		dropped = append(dropped, name)
	}
	if note != nil {
		fields["notes"], _ = json.Marshal(note(dropped))
	}
	if isRecord {
		return json.Marshal(struct {
			State map[string]json.RawMessage `json:"state"`
		}{fields})
	}
	return json.Marshal(fields)
}

// largestField is the name of the largest field trimJSON may drop, "" when none is left.
func largestField(fields map[string]json.RawMessage) string {
	var names []string
	for name := range fields {
		if !keptFields[name] {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return slices.MaxFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(fields[a]), len(fields[b])), cmp.Compare(b, a))
	})
}

// boundedResult is the JSON of a finished job's result, at most limit
// bytes: a result over it (the state held, and the result repeats, a
// job's code, tests and conversation) is stored without its largest
// fields, and its notes say which.
func boundedResult(res *messages.Result, limit int) ([]byte, error) {
	return trimJSON(res, limit, func(dropped []string) any {
		return append(slices.Clone(res.Notes), fmt.Sprintf("the result was over the %s bound of a stored result: %v left out",
			messages.FormatBytes(int64(limit)), dropped))
	})
}

// CheckSubmission reports whether a job submitted as sub fits in the
// bound of one stored job (limit bytes; 0 means DefaultMaxStateBytes): it
// takes the machine's first step, as the coordinator will, and measures
// the record. It is pure, so the message API, the CLI and the coordinator
// refuse the same submissions. The error is a *messages.FieldError on
// "spec".
func CheckSubmission(sub machine.Submission, limit int) error {
	if limit <= 0 {
		limit = DefaultMaxStateBytes
	}
	if sub.JobID == "" {
		sub.JobID = "job-size-check"
	}
	next, cmds := machine.Step(machine.State{}, machine.Input{Kind: machine.InputSubmitted, Submit: &sub})
	b, err := json.Marshal(record{State: next, Outbox: cmds})
	if err != nil {
		return err
	}
	if len(b) > limit {
		return &messages.FieldError{Field: "spec", Msg: fmt.Sprintf("the job would start with a state of %s, over the %s bound of one stored job: "+
			"make the prompt, schema, constraints or context smaller, or use fewer samples", messages.FormatBytes(int64(len(b))), messages.FormatBytes(int64(limit)))}
	}
	return nil
}

// oversizedSubmission is why a submission whose first record is size
// bytes, over limit, is refused.
func oversizedSubmission(ev machine.Input, size, limit int) error {
	if err := CheckSubmission(*ev.Submit, limit); err != nil {
		return err
	}
	return &messages.FieldError{Field: "spec", Msg: fmt.Sprintf("the job would start with a state of %s, over the %s bound of one stored job",
		messages.FormatBytes(int64(size)), messages.FormatBytes(int64(limit)))}
}

// SubmissionOf is the machine's submission of a job with a valid spec
// whose samples are object references, as HandleSubmit makes it: for
// CheckSubmission before the job is queued. A sample that is not an
// object reference is left out (the spec's checks refuse it).
func SubmissionOf(jobID string, spec messages.JobSpec, defaultModel string) machine.Submission {
	var refs []messages.SampleRef
	for _, name := range slices.Sorted(maps.Keys(spec.Samples)) {
		if ref, ok := messages.ParseObjectRef(spec.Samples[name]); ok {
			refs = append(refs, messages.SampleRef{Name: name, Object: ref.String(), FileName: name + ref.Ext})
		}
	}
	spec.Normalize(defaultModel)
	return machine.Submission{JobID: jobID, Spec: spec, Samples: refs}
}
