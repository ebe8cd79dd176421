package coordinator

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Publisher publishes JSON on JetStream with a de-duplication ID.
type Publisher interface {
	PublishJSON(ctx context.Context, subject string, v any, msgID string) error
}

// Config configures a Coordinator. Zero values mean the documented defaults.
type Config struct {
	States    jetstream.KeyValue // job state bucket (bus.BucketJobState)
	Results   jetstream.KeyValue // result bucket (bus.BucketJobResults)
	Index     jetstream.KeyValue // job summaries (bus.BucketJobIndex); nil: no index (index.go)
	Publisher Publisher
	Logger    *slog.Logger     // nil: discard
	Now       func() time.Time // clock; default time.Now
	Metrics   Metrics          // nil: none
	// DefaultModel fills JobSpec.Options.Model when a submission has none.
	DefaultModel string
	// Offered are the models and Python versions jobs may name (settings.go);
	// the zero value checks none.
	Offered Offered
	// Stages is the stage table: which pool each stage's commands go to
	// and its deadline class. Zero: messages.DefaultStages().
	Stages messages.StageTable
	// StageDeadlines overrides, per stage, how long a dispatched stage may
	// wait for its result before WatchDeadlines fails it (ErrorInfra,
	// "stage build missed its deadline of 45m"). A stage not named gets
	// its class's default (DefaultDeadline): DefaultStepDeadline (10m) for
	// model calls and short steps, DefaultBuildDeadline (30m) for builds,
	// and the job's options.timeout plus DefaultRunSlack (30m) for sandbox
	// runs.
	StageDeadlines map[messages.Stage]time.Duration
	// SweepEvery is how often WatchDeadlines looks for overdue stages.
	// Default DefaultSweepEvery (30s).
	SweepEvery time.Duration
	// Ticks, if set, drives WatchDeadlines instead of a SweepEvery ticker
	// (tests, with Now).
	Ticks <-chan time.Time
	// Resources and JS let the coordinator answer the message API
	// (ServeAPI, api.go), dead-letter messages that exhaust their
	// deliveries (deadletters.go) and publish results on reply_to
	// subjects. Nil: none of these.
	Resources *bus.Resources
	JS        jetstream.JetStream
	// MaxStateBytes bounds one job's stored record (statebound.go).
	// Default DefaultMaxStateBytes.
	MaxStateBytes int
	// Machine steps the jobs: the kinds of job this coordinator runs.
	// Nil: machine.Default(), the built-in kinds.
	Machine *machine.Machine
	// StateCacheBytes bounds the jobs' records kept in memory between
	// their events (statecache.go), by encoded size. Zero means
	// DefaultStateCacheBytes; negative, none (every event reads the
	// state bucket).
	StateCacheBytes int
	// OutboxClearDelay is how long a step's published outbox waits before
	// the record is stored without it, unless the job's next step replaces
	// it first (outbox.go). Zero means DefaultOutboxClearDelay; negative,
	// at once (a second write on every step).
	OutboxClearDelay time.Duration
	// IndexDelay is how long a running job's changed index line waits
	// before it is written, so that one write carries the changes of
	// every step in between (index.go). Zero means DefaultIndexDelay;
	// negative, every line at once.
	IndexDelay time.Duration
}

// Coordinator owns the job state machines: it applies each submission and
// stage result to the job's state with compare-and-set on the KV revision,
// and carries out the commands Step returns.
type Coordinator struct {
	cfg    Config
	log    *slog.Logger
	states *stateCache
	clears clears     // outbox.go
	lines  lines      // index.go
	locks  jobLocks   // joblocks.go
	offers offers     // offer.go
	bg     background // background.go: what Close waits for
	// written are the records being written, for the deadline watch
	// (deadlines.go).
	written ownWrites
}

// New validates cfg and returns a Coordinator.
func New(cfg Config) (*Coordinator, error) {
	if cfg.States == nil || cfg.Results == nil || cfg.Publisher == nil {
		return nil, errors.New("coordinator: States, Results and Publisher are required")
	}
	if cfg.SweepEvery < 0 {
		return nil, errors.New("coordinator: SweepEvery must not be negative")
	}
	cfg.SweepEvery = cmp.Or(cfg.SweepEvery, DefaultSweepEvery)
	cfg.MaxStateBytes = cmp.Or(max(cfg.MaxStateBytes, 0), DefaultMaxStateBytes)
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	cfg.Metrics = cmp.Or[Metrics](cfg.Metrics, noMetrics{})
	cfg.Machine = cmp.Or(cfg.Machine, machine.Default())
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Stages.Len() == 0 {
		cfg.Stages = messages.DefaultStages()
	}
	if err := checkDeadlines(cfg.Stages, cfg.StageDeadlines); err != nil {
		return nil, err
	}
	if cfg.StateCacheBytes == 0 {
		cfg.StateCacheBytes = DefaultStateCacheBytes
	}
	if cfg.OutboxClearDelay == 0 {
		cfg.OutboxClearDelay = DefaultOutboxClearDelay
	}
	if cfg.IndexDelay == 0 {
		cfg.IndexDelay = DefaultIndexDelay
	}
	c := &Coordinator{cfg: cfg, log: cfg.Logger, states: newStateCache(cfg.StateCacheBytes)}
	c.offers.slots = make(chan struct{}, maxOffersInHand)
	return c, nil
}

// checkDeadlines checks that each deadline override is positive and names
// a stage of the table.
func checkDeadlines(stages messages.StageTable, deadlines map[messages.Stage]time.Duration) error {
	for stage, d := range deadlines {
		if _, ok := stages.Row(stage); !ok {
			return fmt.Errorf("coordinator: a deadline for stage %q, which is not in the stage table", stage)
		}
		if d <= 0 {
			return fmt.Errorf("coordinator: the deadline of stage %s must be positive, not %s", stage, d)
		}
	}
	return nil
}

// record is what the state bucket holds: the state and the commands of the
// last step not yet known to be published (an outbox). Commands are
// published after the state is stored, so a crash in between loses nothing:
// the next step, or Recover, publishes the outbox again, and JetStream's
// Msg-Id de-duplication drops the copies.
type record struct {
	State  machine.State     `json:"state"`
	Outbox []machine.Command `json:"outbox,omitempty"`
	// Iterations is the job's iteration log for the web UI
	// (machine.NoteIteration), stored with the state it follows.
	Iterations []messages.Iteration `json:"iterations,omitempty"`
}

// HandleJobs is the bus.Handler of the jobs stream: submissions and cancel
// requests, told apart by subject.
func (c *Coordinator) HandleJobs(ctx context.Context, msg *bus.Message) error {
	if msg.Subject() == bus.SubjectJobsSubmit {
		return c.HandleSubmit(ctx, msg)
	}
	return c.HandleCancel(ctx, msg) // cancel.go: bus.SubjectJobsCancel or a producer's own cancel subject
}

// HandleSubmit is the bus.Handler for job submissions.
func (c *Coordinator) HandleSubmit(ctx context.Context, msg *bus.Message) error {
	// The envelope first: with a job ID to answer to, a spec that does not
	// decode (a wrong type, not an object) finishes the job with the reason
	// instead of being dropped while the client waits.
	var sub struct {
		V     int             `json:"v"`
		JobID string          `json:"job_id"`
		Spec  json.RawMessage `json:"spec"`
		Run   json.RawMessage `json:"run"`
	}
	if err := json.Unmarshal(msg.Data(), &sub); err != nil {
		return bus.Permanent(fmt.Errorf("decode submission: %w", err))
	}
	if !bus.ValidJobID(sub.JobID) {
		return bus.Permanent(fmt.Errorf("submission has an invalid job id %q", sub.JobID))
	}
	if sub.V > messages.WireVersion {
		return c.reject(ctx, sub.JobID, fmt.Errorf("message version %d is newer than this coordinator's %d: upgrade it", sub.V, messages.WireVersion))
	}
	if len(sub.Run) > 0 && string(sub.Run) != "null" {
		return c.submitRun(ctx, sub.JobID, sub.Run) // run.go
	}
	// Strictly, as the HTTP API reads it (Contract 1): a field this
	// coordinator does not know, a typo of an option, is refused by name
	// rather than left at its default.
	parsed, err := messages.DecodeJobSpecJSON(sub.Spec)
	if err != nil {
		return c.reject(ctx, sub.JobID, fmt.Errorf("spec: %w", err))
	}
	spec := *parsed
	if err := c.checkOffered(&spec); err != nil {
		return c.reject(ctx, sub.JobID, err)
	}
	refs, err := wireRefs(&spec)
	if err != nil {
		return c.reject(ctx, sub.JobID, err)
	}
	spec.Normalize(c.cfg.DefaultModel)
	ev := machine.Input{Kind: machine.InputSubmitted, Time: c.cfg.Now(), Submit: &machine.Submission{JobID: sub.JobID, Spec: spec, Samples: refs}}
	return c.apply(ctx, sub.JobID, ev)
}

// wireRefs reads the spec's samples and context, which on the wire are
// object references: the samples as the sandbox sees them, by name.
func wireRefs(spec *messages.JobSpec) ([]messages.SampleRef, error) {
	var refs []messages.SampleRef
	for _, name := range slices.Sorted(maps.Keys(spec.Samples)) {
		ref, ok := messages.ParseObjectRef(spec.Samples[name])
		if !ok {
			return nil, &messages.FieldError{Field: "samples." + name, Msg: "must be an object reference (sha256:<hex>[.ext]) on the wire"}
		}
		refs = append(refs, messages.SampleRef{Name: name, Object: ref.String(), FileName: name + ref.Ext})
	}
	for i, obj := range spec.Context {
		if _, ok := messages.ParseObjectRef(obj); !ok {
			return nil, &messages.FieldError{Field: fmt.Sprintf("context[%d]", i), Msg: "must be an object reference (sha256:<hex>[.ext]) on the wire"}
		}
	}
	return refs, nil
}

// reject finishes a job whose submission is invalid, so a waiting client
// hears why instead of waiting forever. A job that already exists under that
// ID is left alone: an invalid duplicate must not overwrite its result.
func (c *Coordinator) reject(ctx context.Context, jobID string, err error) error {
	switch _, gerr := c.cfg.States.Get(ctx, bus.JobKey(jobID)); {
	case gerr == nil:
		c.log.Warn("invalid submission for an existing job dropped", "job_id", jobID, "err", err)
		return nil
	case !errors.Is(gerr, jetstream.ErrKeyNotFound):
		return fmt.Errorf("load job %s: %w", jobID, gerr)
	}
	now := c.cfg.Now()
	res := messages.Result{V: messages.WireVersion, JobID: jobID, Status: messages.StatusFailed, Error: "invalid job spec: " + err.Error(),
		SubmittedAt: now, FinishedAt: &now, Outputs: map[string]any{}, Stages: []messages.StageRecord{}}
	f := false
	cmds := []machine.Command{{Finish: &res}, {Emit: &messages.Event{V: messages.WireVersion, JobID: jobID, Type: messages.EventJobFinished, Success: &f, Message: res.Error, Time: now}}}
	if err := c.publish(ctx, cmds); err != nil {
		return err
	}
	c.countFinished(cmds)
	c.index(ctx, machine.RejectedSummary(res))
	return nil
}

// countFinished counts the job a step's commands finish, if they do, in
// the finished-job metrics. Called once per step that finishes a job, not
// where the result goes out: an outbox is sent again (a failed announce,
// Recover at every start) and the job would count twice.
func (c *Coordinator) countFinished(cmds []machine.Command) {
	for _, cmd := range cmds {
		if cmd.Finish != nil {
			c.cfg.Metrics.Finished(cmd.Finish)
		}
	}
}

// HandleResult is the bus.Handler for stage results.
func (c *Coordinator) HandleResult(ctx context.Context, msg *bus.Message) error {
	var res messages.StageResult
	if err := json.Unmarshal(msg.Data(), &res); err != nil {
		return bus.Permanent(fmt.Errorf("decode stage result: %w", err))
	}
	if !bus.ValidJobID(res.JobID) {
		return bus.Permanent(fmt.Errorf("stage result has an invalid job id %q", res.JobID))
	}
	if err := c.fromItsPool(msg.Subject(), bus.ParseResultSubject, &res); err != nil {
		// Only the pool a stage was dispatched to may answer it (each
		// pool's credentials publish on its own subject only); whether
		// that stage is pending, and only once, the machine checks.
		c.log.Warn("stage result refused", "job_id", res.JobID, "stage", res.Stage, "seq", res.Seq, "subject", msg.Subject(), "err", err)
		c.cfg.Metrics.ResultRefused()
		return nil
	}
	switch taken, err := c.offers.wait(ctx, &res); {
	case err != nil:
		return err
	case taken:
		return nil // its offer, answered too late for the worker, took it (offer.go)
	}
	if err := c.apply(ctx, res.JobID, machine.Input{Kind: machine.InputStageResult, Time: c.cfg.Now(), Result: &res}); err != nil {
		return err
	}
	c.cfg.Metrics.ResultTaken(CopyStream)
	return nil
}

// fromItsPool checks that a result arrived on a subject (a result or an
// offer subject, by parse) of the pool that does its stage, for its job.
func (c *Coordinator) fromItsPool(subject string, parse func(string) (messages.Pool, string, bool), res *messages.StageResult) error {
	pool, jobID, ok := parse(subject)
	switch {
	case !ok:
		return fmt.Errorf("%q is not a result subject", subject)
	case jobID != res.JobID:
		return fmt.Errorf("a result of job %s on the subject of job %s", res.JobID, jobID)
	case pool != c.cfg.Stages.Pool(res.Stage):
		return fmt.Errorf("a %s result from the %s pool: the %s pool does that stage", res.Stage, pool, c.cfg.Stages.Pool(res.Stage))
	}
	return nil
}

// Cancel cancels a running job on the coordinator's own behalf (cancel.go
// has the requests of clients).
func (c *Coordinator) Cancel(ctx context.Context, jobID, reason string) error {
	return c.cancel(ctx, jobID, "", reason)
}

// maxCASAttempts bounds retries when coordinators race on one job.
const maxCASAttempts = 50

// apply loads the job's state (the copy kept in memory, else the stored
// one), steps the machine and stores the new state with compare-and-set;
// on a lost race (another coordinator moved the job, or the kept copy was
// stale) it starts again from the stored state.
func (c *Coordinator) apply(ctx context.Context, jobID string, ev machine.Input) error {
	t := c.locks.begin(jobID) // joblocks.go
	err := c.applyTurn(ctx, jobID, ev, t)
	c.locks.end(jobID, t)
	if s := t.sent; s != nil {
		c.outboxSent(ctx, jobID, s.rec, s.rev) // outbox.go
	}
	return err
}

// applyTurn is apply's work in the job's turn t.
func (c *Coordinator) applyTurn(ctx context.Context, jobID string, ev machine.Input, t *turn) error {
	fresh := false
	for attempt := 0; attempt < maxCASAttempts; attempt++ {
		again, err := c.applyOnce(ctx, jobID, &ev, fresh, t)
		if !again {
			return err
		}
		fresh = true
	}
	return fmt.Errorf("job %s: gave up after %d compare-and-set conflicts", jobID, maxCASAttempts)
}

// applyOnce is one attempt of apply; fresh reads the stored state even
// when a copy is kept. It reports again when the attempt must be made
// again: another coordinator moved the job first, or the input was a
// result too large for the state, now shrunk to its failure.
func (c *Coordinator) applyOnce(ctx context.Context, jobID string, ev *machine.Input, fresh bool, t *turn) (again bool, err error) {
	rec, rev, kept, err := c.loadKept(ctx, jobID, ev.Kind, fresh)
	if err != nil || rec == nil {
		return false, err
	}
	published := false
	if len(rec.Outbox) > 0 && !c.states.sent(jobID, rev) {
		// The previous step's commands may not have gone out.
		if err := c.publish(ctx, rec.Outbox); err != nil {
			return false, err
		}
		published = true
	}
	next, cmds := c.cfg.Machine.Step(rec.State, *ev)
	if len(cmds) == 0 && kept {
		return true, nil // stale or duplicate for the kept copy: is it for the stored state?
	}
	if len(cmds) == 0 {
		if published {
			// Out now. One this turn did not send is its step's to clear
			// (outboxSent), which may still be sending it, and fail.
			c.clearOutbox(ctx, jobID, *rec, rev)
		}
		return false, nil // stale or duplicate event: nothing changes
	}
	stored := record{State: next, Outbox: cmds, Iterations: machine.NoteIteration(rec.Iterations, rec.State, next, *ev)}
	newRev, again, err := c.store(ctx, jobID, stored, rev, ev)
	if over := (*overBoundError)(nil); errors.As(err, &over) {
		c.states.drop(jobID) // overBound stores what it stores itself
		if kept {
			// Ending the job publishes its end before the compare-and-set
			// that would show the copy stale: decide on the stored state.
			return true, nil
		}
		return c.overBound(ctx, jobID, *rec, rev, ev, over.size) // statebound.go
	}
	if again || err != nil {
		return again, err
	}
	rev = newRev
	c.countFinished(cmds) // once: the compare-and-set took the step, and outboxes are sent again
	// The stage commands go first: the next hop waits on them, and no
	// client sees them. The index line goes before the result and the
	// events: whoever sees the result or the last event and then lists
	// the job sees it finished too.
	if err := c.dispatch(ctx, cmds); err != nil {
		c.retryOutboxLater(jobID, rev, outboxRetryDelay) // outbox.go
		return false, err                                // the outbox holds them; redelivery of this event retries too
	}
	// The rest goes out in this turn, before any later step's (the
	// announce lock): the next step need not publish this outbox again.
	c.states.markSent(jobID, rev)
	t.toAnnounce()
	c.indexStep(ctx, t, rec.State, next)
	if err := c.announceInTurn(ctx, t, cmds); err != nil {
		c.states.drop(jobID) // the next event reads the stored outbox and publishes it again
		if next.Done() {
			// A finished job has no next event, and the input that ended
			// it may never come again (a deadline's sweep, a dead letter's
			// advisory): its result and last events go out from here.
			c.retryOutboxLater(jobID, rev, outboxRetryDelay) // outbox.go
		}
		return false, err
	}
	c.cfg.Metrics.Stepped(string(ev.Kind), dispatched(cmds))
	t.sent = &sentOutbox{stored, rev} // cleared once the turn is over (apply)
	return false, nil
}

// loadKept is the job's record and revision as this coordinator last
// stored them, when it keeps them and fresh is false; else the stored
// ones (load). A submission of a job it does not keep is taken for a new
// job without a read: if the job exists, creating it conflicts, and the
// next attempt reads it.
//
// kept reports a copy from memory: an input that changes nothing in it
// may be one the copy is too old for, so it is tried again on the stored
// state before it is dropped.
func (c *Coordinator) loadKept(ctx context.Context, jobID string, kind machine.InputKind, fresh bool) (rec *record, rev uint64, kept bool, err error) {
	if !fresh {
		if rec, rev, ok := c.states.get(jobID); ok {
			return &rec, rev, true, nil
		}
		if kind == machine.InputSubmitted && c.states != nil {
			return &record{}, 0, false, nil
		}
	}
	rec, rev, err = c.load(ctx, jobID, kind)
	if _, keptRev, ok := c.states.get(jobID); ok && (err != nil || rec == nil || keptRev != rev) {
		c.states.drop(jobID) // stale; kept as it is when it is the stored record (its outbox sent or not)
	}
	return rec, rev, false, err
}

// load reads the job's record and its revision; a record of revision 0
// for a submission of a new job. It returns no record, and no error, for
// another input of a job that does not exist (it is dropped).
func (c *Coordinator) load(ctx context.Context, jobID string, kind machine.InputKind) (*record, uint64, error) {
	entry, err := c.cfg.States.Get(ctx, bus.JobKey(jobID))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound) && kind == machine.InputSubmitted:
		return &record{}, 0, nil
	case errors.Is(err, jetstream.ErrKeyNotFound):
		c.log.Warn("event for unknown job dropped", "job_id", jobID, "kind", kind)
		return nil, 0, nil
	case err != nil:
		return nil, 0, fmt.Errorf("load job %s: %w", jobID, err)
	}
	var rec record
	if err := decodeRecord(entry.Value(), &rec); err != nil {
		return nil, 0, bus.Permanent(fmt.Errorf("job %s: corrupt state: %w", jobID, err))
	}
	return &rec, entry.Revision(), nil
}

// store writes rec at revision rev (creating it at 0) and returns the new
// revision. It reports again, with nothing stored, when another
// coordinator moved the job first, and an *overBoundError, with nothing
// stored, when rec is over the state bound (statebound.go).
func (c *Coordinator) store(ctx context.Context, jobID string, rec record, rev uint64, ev *machine.Input) (uint64, bool, error) {
	b, err := json.Marshal(rec)
	if err != nil {
		return 0, false, fmt.Errorf("marshal job %s: %w", jobID, err)
	}
	if len(b) > c.cfg.MaxStateBytes {
		return 0, false, &overBoundError{jobID: jobID, size: len(b), limit: c.cfg.MaxStateBytes}
	}
	stored := storedRecord(b)
	c.noteWrite(jobID, stored, &rec.State)
	created := rev == 0
	if created {
		rev, err = c.cfg.States.Create(ctx, bus.JobKey(jobID), stored)
	} else {
		rev, err = c.cfg.States.Update(ctx, bus.JobKey(jobID), stored, rev)
	}
	if errors.Is(err, jetstream.ErrKeyExists) {
		c.states.drop(jobID)
		if !created || ev.Kind != machine.InputSubmitted {
			c.cfg.Metrics.CASConflict() // a resubmission is no race
		}
		return 0, true, nil // another coordinator moved the job: step again on its state
	}
	if err != nil {
		c.states.drop(jobID)
		return 0, false, fmt.Errorf("store job %s: %w", jobID, err)
	}
	c.states.put(jobID, rec, rev, len(b))
	return rev, false, nil
}

// clearOutbox stores the state without its outbox once the commands are
// out, if the record is still at rev. Losing that race only means a
// harmless re-publish; an outbox left behind would be published again by
// every Recover, and past the streams' duplicate window the copies are
// real duplicates (a second job_finished event, a stage run again).
func (c *Coordinator) clearOutbox(ctx context.Context, jobID string, rec record, rev uint64) {
	rec.Outbox = nil
	b, err := json.Marshal(rec)
	if err != nil {
		return
	}
	stored := storedRecord(b)
	c.noteWrite(jobID, stored, &rec.State)
	rev, err = c.cfg.States.Update(ctx, bus.JobKey(jobID), stored, rev)
	if err != nil {
		c.states.drop(jobID) // the kept copy still has the outbox, or is stale
		if !errors.Is(err, jetstream.ErrKeyExists) {
			c.log.Warn("clear outbox", "job_id", jobID, "err", err)
		}
		return
	}
	c.states.put(jobID, rec, rev, len(b))
}

// publish carries out commands. Each is idempotent: stage commands carry a
// Msg-Id, results are puts, events are progress notes. The stage commands
// go first (the next hop waits on them), then the result, then the events,
// so what they announce is already stored: a client that reads the result
// as soon as it sees job_finished finds it. The events but job_finished
// go out as one batch, without waiting for each acknowledgement in turn
// (a BatchPublisher); job_finished follows them, so it is the job's last.
func (c *Coordinator) publish(ctx context.Context, cmds []machine.Command) error {
	if err := c.dispatch(ctx, cmds); err != nil {
		return err
	}
	return c.announce(ctx, cmds)
}

// dispatch publishes the stage commands among cmds, together: as one batch
// when the publisher can (code and tests go out at once), each with its
// Msg-Id.
func (c *Coordinator) dispatch(ctx context.Context, cmds []machine.Command) error {
	var batch []bus.Outgoing
	jobID := ""
	for _, cmd := range cmds {
		if d := cmd.Dispatch; d != nil {
			jobID = d.JobID
			batch = append(batch, bus.Outgoing{Subject: bus.StageSubject(c.cfg.Stages.Pool(d.Stage), d.Stage), Value: d, MsgID: bus.StageMsgID(d.JobID, d.Seq)})
		}
	}
	if err := c.publishAll(ctx, batch); err != nil {
		return fmt.Errorf("dispatch stages of job %s: %w", jobID, err)
	}
	return nil
}

// publishAll publishes msgs in order: as one batch when the publisher can
// and there are several, else one by one.
func (c *Coordinator) publishAll(ctx context.Context, msgs []bus.Outgoing) error {
	if bp, ok := c.cfg.Publisher.(BatchPublisher); ok && len(msgs) > 1 {
		return bp.PublishJSONBatch(ctx, msgs)
	}
	for _, m := range msgs {
		if err := c.cfg.Publisher.PublishJSON(ctx, m.Subject, m.Value, m.MsgID); err != nil {
			return err
		}
	}
	return nil
}

// announce carries out the rest of cmds after their stage commands: the
// result, then the events.
func (c *Coordinator) announce(ctx context.Context, cmds []machine.Command) error {
	var events []*messages.Event
	var finished *messages.Event
	for _, cmd := range cmds {
		switch {
		case cmd.Dispatch != nil:
			// dispatch sent it
		case cmd.Emit == nil:
			if err := c.carryOut(ctx, cmd); err != nil {
				return err
			}
		case cmd.Emit.Type == messages.EventJobFinished:
			finished = cmd.Emit
		default:
			events = append(events, cmd.Emit)
		}
	}
	if err := c.emit(ctx, events); err != nil {
		return err
	}
	if finished != nil {
		return c.carryOut(ctx, machine.Command{Emit: finished})
	}
	return nil
}

// announceInTurn announces cmds in the job's turn t, after what earlier
// turns on the job failed to announce. The next step may have loaded the
// kept copy, marked sent, before this announce failed, and its record then
// replaces this one's outbox: what did not go out is handed to that step
// on the job's lock instead, in order. (With no next step here, the
// stored outbox, not marked sent, is published again by the next event.)
func (c *Coordinator) announceInTurn(ctx context.Context, t *turn, cmds []machine.Command) error {
	if len(t.jl.unsent) > 0 {
		cmds = append(t.jl.unsent, cmds...)
		t.jl.unsent = nil
	}
	err := c.announce(ctx, cmds)
	if err != nil {
		for _, cmd := range cmds {
			if cmd.Dispatch == nil { // dispatched before the turn changed hands
				t.jl.unsent = append(t.jl.unsent, cmd)
			}
		}
	}
	return err
}

// BatchPublisher is a Publisher that can also publish several messages
// at once, each in order, waiting for their acknowledgements together
// (bus.Publisher).
type BatchPublisher interface {
	PublishJSONBatch(ctx context.Context, msgs []bus.Outgoing) error
}

// emit publishes progress events in order: as one batch when the
// publisher can, else one by one.
func (c *Coordinator) emit(ctx context.Context, events []*messages.Event) error {
	batch := make([]bus.Outgoing, len(events))
	for i, e := range events {
		batch[i] = bus.Outgoing{Subject: bus.EventSubject(e.JobID), Value: e, MsgID: eventMsgID(e)}
	}
	if err := c.publishAll(ctx, batch); err != nil {
		return fmt.Errorf("emit events for job %s: %w", events[0].JobID, err)
	}
	return nil
}

// eventMsgID is an event's de-duplication ID.
func eventMsgID(e *messages.Event) string {
	return fmt.Sprintf("event.%s.%s.%d.%s", e.JobID, e.Type, e.Seq, e.Stage)
}

// carryOut carries out one command that is not a stage command
// (dispatch sends those): a result to the results bucket (and its reply_to
// subject), an event to the job's event subject.
func (c *Coordinator) carryOut(ctx context.Context, cmd machine.Command) error {
	switch {
	case cmd.Finish != nil:
		b, err := boundedResult(cmd.Finish, c.cfg.MaxStateBytes) // statebound.go
		if err != nil {
			return fmt.Errorf("result of job %s: %w", cmd.Finish.JobID, err)
		}
		if _, err := c.cfg.Results.Put(ctx, bus.JobKey(cmd.Finish.JobID), b); err != nil {
			return fmt.Errorf("store result of job %s: %w", cmd.Finish.JobID, err)
		}
		c.replyResult(ctx, cmd.Finish, b) // api.go
	case cmd.Emit != nil:
		e := cmd.Emit
		if err := c.cfg.Publisher.PublishJSON(ctx, bus.EventSubject(e.JobID), e, eventMsgID(e)); err != nil {
			return fmt.Errorf("emit event for job %s: %w", e.JobID, err)
		}
	}
	return nil
}

// Recover publishes the outboxes of every stored job, for a coordinator
// that starts after a crash between storing a state and publishing its
// commands. An outbox that fails to go out is tried again later, on its
// own, and the others are sent; the error joins those failures.
func (c *Coordinator) Recover(ctx context.Context) error {
	lister, err := c.cfg.States.ListKeys(ctx)
	if err != nil {
		return fmt.Errorf("list jobs: %w", err)
	}
	defer lister.Stop()
	var failed error
	for key := range lister.Keys() {
		entry, err := c.cfg.States.Get(ctx, key)
		if err != nil {
			if !errors.Is(err, jetstream.ErrKeyNotFound) { // gone since it was listed: nothing to send
				c.log.Warn("recover: job state not read; its outbox, if any, goes with its next input", "job_id", key, "err", err)
			}
			continue
		}
		var rec record
		if decodeRecord(entry.Value(), &rec) != nil || len(rec.Outbox) == 0 {
			continue
		}
		c.log.Info("re-publishing outbox", "job_id", key, "commands", len(rec.Outbox))
		if err := c.publish(ctx, rec.Outbox); err != nil {
			// One job's failure is not every later job's: they are sent,
			// and this one is tried again on its own.
			c.log.Warn("recover: outbox not sent; trying again", "job_id", key, "err", err)
			failed = errors.Join(failed, err)
			c.retryOutboxLater(key, entry.Revision(), outboxRetryDelay) // a job's key is its ID
			continue
		}
		c.clearOutbox(ctx, key, rec, entry.Revision())
	}
	return failed
}

// State returns a job's current state.
func (c *Coordinator) State(ctx context.Context, jobID string) (machine.State, error) {
	return LoadState(ctx, c.cfg.States, jobID)
}

// LoadState reads a job's state from the state bucket.
func LoadState(ctx context.Context, kv jetstream.KeyValue, jobID string) (machine.State, error) {
	entry, err := kv.Get(ctx, bus.JobKey(jobID))
	if err != nil {
		return machine.State{}, err
	}
	var rec record
	if err := decodeRecord(entry.Value(), &rec); err != nil {
		return machine.State{}, fmt.Errorf("job %s: corrupt state: %w", jobID, err)
	}
	return rec.State, nil
}

// dispatched lists the stages cmds dispatch.
func dispatched(cmds []machine.Command) []messages.Stage {
	var out []messages.Stage
	for _, cmd := range cmds {
		if cmd.Dispatch != nil {
			out = append(out, cmd.Dispatch.Stage)
		}
	}
	return out
}
