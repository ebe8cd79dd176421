package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/pkg/messages"
)

// indexStep writes the job's summary line to the index when a step
// changed it. The index is a view for job lists: a failed write is logged,
// not retried, and the next step of the job writes the line again.
func (c *Coordinator) indexStep(ctx context.Context, prev, next machine.State) {
	sum := machine.SummaryOf(next)
	if prev.JobID != "" && equalSummaries(machine.SummaryOf(prev), sum) {
		return
	}
	c.index(ctx, sum)
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
