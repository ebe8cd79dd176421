package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/pkg/messages"
)

// indexStep writes the job's summary line to the index when a step
// changed it. The index is a view for job lists: a failed write is logged,
// not retried, and the next step of the job writes the line again.
//
// A job's first line and its last are written at once, in the step: a
// client that has submitted a job lists it, and one that sees its result
// or its last event lists it finished. The lines in between (the stages
// in flight, the tokens) change on every step, and a flushed write each
// was a third of a step's writes, on the disk the next hop writes to
// (BENCHMARKS.md, "the hop's floor"). So such a line waits IndexDelay on
// the job's lock (jobLock.line), and one write carries the changes of
// every step in that time; a later step's line replaces the waiting one.
// A crash in the delay leaves the job's previous line until its next
// step. t is the step's turn, in its announce phase; nil writes at once.
func (c *Coordinator) indexStep(ctx context.Context, t *turn, prev, next machine.State) {
	sum := machine.SummaryOf(next)
	if prev.JobID != "" && equalSummaries(machine.SummaryOf(prev), sum) {
		return
	}
	if t == nil || prev.JobID == "" || next.Done() || c.cfg.IndexDelay < 0 || !c.lines.wait(c, next.JobID, t.jl, sum) {
		if t != nil {
			t.jl.line = nil // this line is newer
		}
		c.index(ctx, sum)
	}
}

// DefaultIndexDelay is Config.IndexDelay's default: a job list is read by
// people, and a quarter of a second is below what they notice.
const DefaultIndexDelay = 250 * time.Millisecond

// lines are the index lines waiting for their delay: a timer per job,
// which holds a use of the job's locks so the line stays with them.
type lines struct {
	mu     sync.Mutex
	timers map[string]waitingLine // by job ID
	closed bool
}

type waitingLine struct {
	timer *time.Timer
	jl    *jobLock
}

// wait leaves sum on jl (whose announce lock the caller holds) for the
// job's timer to write, starting the timer if none runs; false once the
// coordinator is closed (the caller writes it).
func (l *lines) wait(c *Coordinator, jobID string, jl *jobLock, sum messages.JobSummary) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	jl.line = &sum
	if _, ok := l.timers[jobID]; ok {
		return true // its timer writes this line
	}
	if l.timers == nil {
		l.timers = map[string]waitingLine{}
	}
	kept := c.locks.acquire(jobID) // jl itself: the caller's use keeps it
	l.timers[jobID] = waitingLine{jl: kept, timer: time.AfterFunc(c.cfg.IndexDelay, func() {
		l.mu.Lock()
		delete(l.timers, jobID)
		l.mu.Unlock()
		c.bg.track(func() { c.writeLine(jobID, kept) })
	})}
	return true
}

// writeLine writes the line waiting on jl, if a later step has not
// written a newer one, and ends the timer's use of the job's locks.
func (c *Coordinator) writeLine(jobID string, jl *jobLock) {
	jl.announce.Lock()
	line := jl.line
	jl.line = nil
	if line != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c.index(ctx, *line)
		cancel()
	}
	jl.announce.Unlock()
	c.locks.release(jobID, jl)
}

// closeLines writes the lines still waiting; steps after it write theirs
// at once.
func (c *Coordinator) closeLines() {
	l := &c.lines
	l.mu.Lock()
	l.closed = true
	waiting := map[string]*jobLock{}
	for jobID, w := range l.timers {
		if w.timer.Stop() { // stopped before it ran: its line is written here
			waiting[jobID] = w.jl
		}
		delete(l.timers, jobID)
	}
	l.mu.Unlock()
	for jobID, jl := range waiting {
		c.writeLine(jobID, jl)
	}
}

// index puts one summary line.
func (c *Coordinator) index(ctx context.Context, sum messages.JobSummary) {
	if c.cfg.Index == nil {
		return
	}
	b, err := json.Marshal(sum)
	if err == nil {
		_, err = c.cfg.Index.Put(ctx, bus.JobKey(sum.JobID), b)
	}
	if err != nil {
		c.log.Warn("index job", "job_id", sum.JobID, "err", err)
	}
}

func equalSummaries(a, b messages.JobSummary) bool {
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(x) == string(y)
}

// LoadIterations reads a job's iteration log from the state bucket: the
// code, tests, report and diagnosis of each of its last test runs.
func LoadIterations(ctx context.Context, kv jetstream.KeyValue, jobID string) ([]messages.Iteration, error) {
	entry, err := kv.Get(ctx, bus.JobKey(jobID))
	if err != nil {
		return nil, err
	}
	var rec record
	if err := decodeRecord(entry.Value(), &rec); err != nil {
		return nil, fmt.Errorf("job %s: corrupt state: %w", jobID, err)
	}
	return rec.Iterations, nil
}

// BackfillIndex writes the summary line of every stored job the index
// does not have: jobs from before the index existed, or whose line was
// lost. Rejected submissions of that time have no state and stay out.
func (c *Coordinator) BackfillIndex(ctx context.Context) error {
	if c.cfg.Index == nil {
		return nil
	}
	lister, err := c.cfg.States.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list jobs: %w", err)
	}
	defer lister.Stop()
	for key := range lister.Keys() {
		if _, err := c.cfg.Index.Get(ctx, key); !errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if s, err := LoadState(ctx, c.cfg.States, key); err == nil {
			c.index(ctx, machine.SummaryOf(s))
		}
	}
	return nil
}
