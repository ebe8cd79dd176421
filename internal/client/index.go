package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/pkg/messages"
)

// SummaryQuery picks a page of the job index.
type SummaryQuery struct {
	Status messages.JobStatus // "": every status
	Offset int                // jobs skipped, newest first
	Limit  int                // 0: DefaultPageSize; at most MaxPageSize
}

// Page sizes of Summaries.
const (
	DefaultPageSize = 50
	MaxPageSize     = 500
)

// SummaryPage is one page of the job index, newest first.
type SummaryPage struct {
	Jobs   []messages.JobSummary `json:"jobs"`
	Total  int                   `json:"total"`  // jobs matching the query
	Offset int                   `json:"offset"` // of the first job on the page
	// Counts are the jobs of each status, whatever the query's status.
	Counts map[messages.JobStatus]int `json:"counts"`
}

// Summaries reads a page of the job index (bus.BucketJobIndex): small
// summary lines the coordinator writes as jobs change, rejected
// submissions included, never the jobs' full states.
func (c *Client) Summaries(ctx context.Context, q SummaryQuery) (*SummaryPage, error) {
	if q.Offset < 0 || q.Limit < 0 {
		return nil, errors.New("client: offset and limit must not be negative")
	}
	if q.Limit == 0 {
		q.Limit = DefaultPageSize
	}
	q.Limit = min(q.Limit, MaxPageSize)
	all, err := c.readIndex(ctx)
	if err != nil {
		return nil, err
	}
	page := &SummaryPage{Jobs: []messages.JobSummary{}, Offset: q.Offset, Counts: map[messages.JobStatus]int{}}
	var match []messages.JobSummary
	for _, s := range all {
		page.Counts[s.Status]++
		if q.Status == "" || s.Status == q.Status {
			match = append(match, s)
		}
	}
	sort.Slice(match, func(i, j int) bool {
		if !match[i].SubmittedAt.Equal(match[j].SubmittedAt) {
			return match[i].SubmittedAt.After(match[j].SubmittedAt)
		}
		return match[i].JobID > match[j].JobID
	})
	page.Total = len(match)
	if q.Offset < len(match) {
		page.Jobs = match[q.Offset:min(len(match), q.Offset+q.Limit)]
	}
	return page, nil
}

// readIndex reads every line of the index in one pass of a KV watch
// (rather than a Get per key).
func (c *Client) readIndex(ctx context.Context) ([]messages.JobSummary, error) {
	w, err := c.res.JobIndex.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("read the job index: %w", err)
	}
	defer w.Stop()
	var out []messages.JobSummary
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return nil, errors.New("read the job index: the watch ended early")
			}
			if e == nil { // every current value has been delivered
				return out, nil
			}
			var s messages.JobSummary
			if json.Unmarshal(e.Value(), &s) == nil && s.JobID != "" {
				out = append(out, s)
			}
		}
	}
}

// Iterations returns a job's iteration log: the code, tests, report,
// diagnosis and repairs of each of its last test runs (bounded by the
// coordinator). A job that never ran its tests, or was rejected, has none.
func (c *Client) Iterations(ctx context.Context, jobID string) ([]messages.Iteration, error) {
	its, err := coordinator.LoadIterations(ctx, c.res.JobState, jobID)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		if _, rerr := c.Result(ctx, jobID); rerr != nil {
			return nil, rerr // ErrNotFound for an unknown job
		}
		return []messages.Iteration{}, nil
	}
	if err != nil {
		return nil, err
	}
	if its == nil {
		its = []messages.Iteration{}
	}
	return its, nil
}
