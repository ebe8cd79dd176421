package client

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/pkg/messages"
)

// JobSummary is one line of a job list.
type JobSummary struct {
	JobID       string             `json:"job_id"`
	Name        string             `json:"name,omitempty"`
	Status      messages.JobStatus `json:"status"`
	Attempts    int                `json:"attempts"`
	Prompt      string             `json:"prompt"`
	Error       string             `json:"error,omitempty"`
	SubmittedAt time.Time          `json:"submitted_at"`
	FinishedAt  *time.Time         `json:"finished_at,omitempty"`
}

// List returns the newest jobs first, at most limit of them.
func (c *Client) List(ctx context.Context, limit int) ([]JobSummary, error) {
	lister, err := c.res.JobState.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return []JobSummary{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	defer lister.Stop()
	out := []JobSummary{}
	for key := range lister.Keys() {
		s, err := coordinator.LoadState(ctx, c.res.JobState, key)
		if err != nil {
			continue // deleted meanwhile, or unreadable: not worth failing the list
		}
		prompt := s.Spec.Prompt
		if len(prompt) > 200 {
			prompt = prompt[:200] + "…"
		}
		out = append(out, JobSummary{JobID: s.JobID, Name: s.Spec.Name, Status: s.Status, Attempts: s.Iteration,
			Prompt: prompt, Error: s.Error, SubmittedAt: s.SubmittedAt, FinishedAt: s.FinishedAt})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SubmittedAt.After(out[j].SubmittedAt) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
