package client

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/pkg/messages"
)

// RunningStage is a stage the coordinator has dispatched and not yet had
// the result of: what a job is doing now.
type RunningStage struct {
	Stage     messages.Stage `json:"stage"`
	Seq       int            `json:"seq"`
	Iteration int            `json:"iteration"`
	Since     time.Time      `json:"since"` // dispatched at, the coordinator's clock
	// StartedAt is when a worker (Worker) took it; nil while it waits in
	// its pool's queue.
	StartedAt *time.Time `json:"started_at,omitempty"`
	Worker    string     `json:"worker,omitempty"`
}

// Running returns job jobID's stages in flight, oldest first: none for a
// finished job, ErrNotFound for an unknown one.
func (c *Client) Running(ctx context.Context, jobID string) ([]RunningStage, error) {
	s, err := coordinator.LoadState(ctx, c.res.JobState, jobID)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, ErrNotFound
	}
	if err != nil || s.Done() {
		return nil, err
	}
	out := make([]RunningStage, 0, len(s.Pending))
	for seq, p := range s.Pending {
		out = append(out, RunningStage{Stage: p.Stage, Seq: seq, Iteration: p.Iteration, Since: p.DispatchedAt, StartedAt: p.StartedAt, Worker: p.Worker})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, nil
}
