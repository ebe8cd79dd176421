package coordinator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/jsonhead"
	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Default stage deadlines (see Config.StageDeadlines). They are generous:
// a deadline counts from dispatch, so it covers the wait in the pool's
// queue and every redelivery of a failing stage, not only the work.
const (
	// DefaultStepDeadline bounds a stage of class messages.DeadlineStep:
	// a model call (plan, code, fix, ...) or a short sandbox step (the
	// profile, code-mode programs).
	DefaultStepDeadline = 10 * time.Minute
	// DefaultBuildDeadline bounds an environment build (messages.DeadlineBuild).
	DefaultBuildDeadline = 30 * time.Minute
	// DefaultRunSlack is added to the job's options.timeout for a sandbox
	// run (messages.DeadlineRun: run_tests, acceptance, run, agent tools):
	// the run may first rebuild an environment its worker lacks, so the
	// slack is a build's deadline.
	DefaultRunSlack = DefaultBuildDeadline
	// DefaultSweepEvery is how often pending stages are checked.
	DefaultSweepEvery = 30 * time.Second
)

// deadlineWorker names the coordinator on the results it makes up for
// stages that missed their deadline.
const deadlineWorker = "coordinator"

// StageDeadline is how long stage may stay pending in a job with options
// opts: the override for the stage if there is one, else its class's
// default (DefaultDeadline) as its row in stages says. A stage the table
// does not have gets DefaultStepDeadline.
func StageDeadline(stages messages.StageTable, stage messages.Stage, opts messages.Options, overrides map[messages.Stage]time.Duration) time.Duration {
	if d, ok := overrides[stage]; ok && d > 0 {
		return d
	}
	row, _ := stages.Row(stage)
	return DefaultDeadline(row.Deadline, opts)
}

// DefaultDeadline is the default deadline of a stage of class in a job
// with options opts.
func DefaultDeadline(class messages.DeadlineClass, opts messages.Options) time.Duration {
	switch class {
	case messages.DeadlineBuild:
		return DefaultBuildDeadline
	case messages.DeadlineRun:
		timeout := opts.Timeout.Std()
		if timeout <= 0 {
			timeout = messages.DefaultTimeout
		}
		return timeout + DefaultRunSlack
	}
	return DefaultStepDeadline
}

// WatchDeadlines fails the stages that miss their deadline, until ctx is
// done: a stage whose worker died, whose command was terminated, or whose
// result was lost would otherwise keep its job waiting forever. It follows
// the state bucket (so it knows each running job's next deadline without
// reading every job) and, on every tick (Config.SweepEvery), gives each
// stage past its deadline a failed result with ErrorInfra, applied like a
// worker's result. A real result that comes later is stale and ignored.
// Run it in one goroutine per coordinator; several coordinators may run it
// at once (the results go through the same compare-and-set).
func (c *Coordinator) WatchDeadlines(ctx context.Context) error {
	w, err := c.cfg.States.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watch job states: %w", err)
	}
	defer func() { _ = w.Stop() }()
	c.written.follow(true)
	defer c.written.follow(false)
	ticks := c.cfg.Ticks
	if ticks == nil {
		t := time.NewTicker(c.cfg.SweepEvery)
		defer t.Stop()
		ticks = t.C
	}
	due := map[string]time.Time{} // job -> its earliest stage deadline
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				if ctx.Err() != nil {
					return nil // the watch ends with ctx: a shutdown, not a failure
				}
				return errors.New("coordinator: the job state watch stopped")
			}
			if e != nil { // nil marks the end of the initial values
				c.track(due, e)
			}
		case <-ticks:
			c.sweep(ctx, due)
			c.written.expire(time.Now())
		}
		c.cfg.Metrics.JobsRunning(len(due))
	}
}

// track notes the next deadline of the job an update of the state bucket
// is about. The bucket's keys are job IDs (bus.JobKey).
//
// Every step's store comes here, on the hop's heels, so it reads as little
// as it can: nothing for a record this coordinator wrote (ownWrites), else
// the few fields a deadline needs (deadlineFields).
func (c *Coordinator) track(due map[string]time.Time, e jetstream.KeyValueEntry) {
	if e.Operation() != jetstream.KeyValuePut {
		delete(due, e.Key())
		return
	}
	if next, ok, mine := c.written.take(e.Key(), e.Value()); mine {
		if ok {
			due[e.Key()] = next
		} else {
			delete(due, e.Key())
		}
		return
	}
	s, err := deadlineFields(e.Value())
	if err != nil {
		delete(due, e.Key())
		return
	}
	c.setDue(due, e.Key(), s)
}

// deadlineFields decodes what nextDeadline reads of a stored record: the
// job's options, phase and pending stages.
func deadlineFields(value []byte) (*machine.State, error) {
	b, err := bus.DecodeStateRecord(value)
	if err != nil {
		return nil, err
	}
	var s machine.State
	var spec struct {
		Options messages.Options `json:"options"`
	}
	if jsonhead.Fields(b, "state", map[string]any{"spec": &spec, "phase": &s.Phase, "pending": &s.Pending}) {
		s.Spec.Options = spec.Options
		return &s, nil
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, err
	}
	return &rec.State, nil
}

func (c *Coordinator) setDue(due map[string]time.Time, jobID string, s *machine.State) {
	if next, ok := c.nextDeadline(s); ok {
		due[jobID] = next
	} else {
		delete(due, jobID)
	}
}

// nextDeadline is the earliest deadline of the job's pending stages.
func (c *Coordinator) nextDeadline(s *machine.State) (time.Time, bool) {
	var next time.Time
	if s.Done() {
		return next, false
	}
	for _, p := range s.Pending {
		d := p.DispatchedAt.Add(StageDeadline(c.cfg.Stages, p.Stage, s.Spec.Options, c.cfg.StageDeadlines))
		if next.IsZero() || d.Before(next) {
			next = d
		}
	}
	return next, !next.IsZero()
}

// sweep fails the overdue stages of every job whose next deadline has passed.
func (c *Coordinator) sweep(ctx context.Context, due map[string]time.Time) {
	now := c.cfg.Now()
	for jobID, at := range due {
		if at.After(now) {
			continue
		}
		if err := c.expire(ctx, jobID, now); err != nil {
			c.log.Warn("fail overdue stages", "job_id", jobID, "err", err)
			continue // the next tick tries again
		}
		// The watch brings the new state; until then, look again next tick
		// rather than at once.
		delete(due, jobID)
		if s, err := c.State(ctx, jobID); err == nil {
			c.setDue(due, jobID, &s)
		}
	}
}

// expire gives each stage of the job past its deadline at now a failed
// result, through the same path as a worker's result.
func (c *Coordinator) expire(ctx context.Context, jobID string, now time.Time) error {
	s, err := c.State(ctx, jobID)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil || s.Done() {
		return err
	}
	pauses := c.pauses(ctx)
	for _, seq := range slices.Sorted(maps.Keys(s.Pending)) {
		p, pending := s.Pending[seq] // s is reloaded after each failed stage
		limit := StageDeadline(c.cfg.Stages, p.Stage, s.Spec.Options, c.cfg.StageDeadlines)
		from, counts := deadlineStart(p, pauses[c.cfg.Stages.Pool(p.Stage)])
		if !pending || !counts || now.Before(from.Add(limit)) {
			continue
		}
		c.log.Warn("stage missed its deadline", "job_id", jobID, "stage", p.Stage, "seq", seq, "deadline", limit)
		c.cfg.Metrics.DeadlineMissed(p.Stage)
		res := &messages.StageResult{V: messages.WireVersion, JobID: jobID, Seq: seq, Stage: p.Stage,
			Error:     fmt.Sprintf("stage %s missed its deadline of %s", p.Stage, shortDuration(limit)),
			ErrorKind: messages.ErrorInfra, StartedAt: p.DispatchedAt, DurationMS: now.Sub(p.DispatchedAt).Milliseconds(),
			Worker: deadlineWorker}
		if err := c.apply(ctx, jobID, machine.Input{Kind: machine.InputStageResult, Time: now, Result: res}); err != nil {
			return fmt.Errorf("stage %s (seq %d): %w", p.Stage, seq, err)
		}
		// The failure may have ended the job, or moved it on.
		if s, err = c.State(ctx, jobID); err != nil || s.Done() {
			return err
		}
	}
	return nil
}

// A paused pool (bus.SetPoolPause) takes no new stage: its queued stages
// wait for the resume, and no deadline of theirs runs meanwhile, so a
// pause for a model provider's outage leaves the jobs waiting rather than
// failing them. A stage a worker already took keeps its deadline.

// pauses reads the pools' pause switches; none without Config.Resources.
// A switch that cannot be read (the bucket away, a value that does not
// decode) counts as paused for this sweep: a deadline held back a sweep
// late can be made up, a queued stage failed during a pause cannot, and
// the workers, which keep the last switch they read, may well be paused.
func (c *Coordinator) pauses(ctx context.Context) map[messages.Pool]*messages.PoolPause {
	out := map[messages.Pool]*messages.PoolPause{}
	if c.cfg.Resources == nil || c.cfg.Resources.Pools == nil {
		return out
	}
	for _, pool := range messages.Pools() {
		p, err := bus.PoolPauseOf(ctx, c.cfg.Resources.Pools, pool)
		if err != nil {
			c.log.Warn("a pool's pause switch unread: its queued stages' deadlines wait", "pool", pool, "err", err)
			p = &messages.PoolPause{Pool: string(pool), Paused: true}
		}
		out[pool] = p
	}
	return out
}

// deadlineStart is when a pending stage's deadline starts counting: its
// dispatch; for a stage no worker has taken yet, the resume of its pool
// if that came later; counts is false while its pool is paused.
func deadlineStart(p machine.Pending, pause *messages.PoolPause) (from time.Time, counts bool) {
	switch {
	case p.StartedAt != nil || pause == nil:
		return p.DispatchedAt, true
	case pause.Paused:
		return time.Time{}, false
	case pause.At.After(p.DispatchedAt):
		return pause.At, true
	}
	return p.DispatchedAt, true
}

// shortDuration prints d as people write it: 12m, not 12m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// ownWrites are the records this coordinator is writing to the state
// bucket, each with the deadline it gives its job, so the deadline watch
// knows them without reading them. A write is noted before it is made
// (its update may reach the watch before the write's acknowledgement
// reaches the writer) and taken when the watch sees the same bytes; one
// that never shows up (it lost the compare-and-set, or another
// coordinator's came first) is replaced by the job's next, or dropped
// after ownWriteTTL.
type ownWrites struct {
	mu       sync.Mutex
	m        map[string]ownWrite // by job ID
	followed bool                // a deadline watch runs: only then are writes noted
}

type ownWrite struct {
	b     []byte
	next  time.Time
	ok    bool
	noted time.Time
}

// ownWriteTTL is how long a noted write waits for the watch to see it.
const ownWriteTTL = time.Minute

// follow starts or stops noting writes, as a deadline watch starts or
// stops: with no watch to take them they would only pile up.
func (w *ownWrites) follow(on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.followed, w.m = on, nil
}

// noteWrite records that b, the record of s, is being written for jobID.
func (c *Coordinator) noteWrite(jobID string, b []byte, s *machine.State) {
	w := &c.written
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.followed {
		return
	}
	next, ok := c.nextDeadline(s)
	if w.m == nil {
		w.m = map[string]ownWrite{}
	}
	w.m[jobID] = ownWrite{b: b, next: next, ok: ok, noted: time.Now()}
}

// take reports the deadline of the noted write of jobID when b is it
// (mine), and forgets it.
func (w *ownWrites) take(jobID string, b []byte) (next time.Time, ok, mine bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	o, found := w.m[jobID]
	if !found || !bytes.Equal(o.b, b) {
		return time.Time{}, false, false
	}
	delete(w.m, jobID)
	return o.next, o.ok, true
}

// expire drops the noted writes the watch never saw.
func (w *ownWrites) expire(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, o := range w.m {
		if now.Sub(o.noted) > ownWriteTTL {
			delete(w.m, id)
		}
	}
}
