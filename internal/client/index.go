package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/pkg/messages"
)

// SummaryQuery picks a page of the job index.
type SummaryQuery struct {
	Status messages.JobStatus // "": every status
	Offset int                // jobs skipped, in the order of Sort
	Limit  int                // 0: DefaultPageSize; at most MaxPageSize
	// Text keeps the jobs whose name, prompt or ID contains it, in any
	// case; "": every job.
	Text string
	// Since and Until keep the jobs submitted in [Since, Until); zero: no bound.
	Since, Until time.Time
	// Sort orders the jobs: SortNewest (the default), SortOldest,
	// SortDuration (longest first; running jobs by their time so far),
	// SortTokens (most first) or SortName.
	Sort string
}

// Orders of SummaryQuery.Sort.
const (
	SortNewest   = "newest"
	SortOldest   = "oldest"
	SortDuration = "duration"
	SortTokens   = "tokens"
	SortName     = "name"
)

// SummarySorts lists the orders of SummaryQuery.Sort.
func SummarySorts() []string {
	return []string{SortNewest, SortOldest, SortDuration, SortTokens, SortName}
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
	less, err := summaryOrder(q.Sort, time.Now())
	if err != nil {
		return nil, err
	}
	page := &SummaryPage{Jobs: []messages.JobSummary{}, Offset: q.Offset, Counts: map[messages.JobStatus]int{}}
	var match []messages.JobSummary
	for _, s := range all {
		if !q.matches(s) {
			continue
		}
		page.Counts[s.Status]++
		if q.Status == "" || s.Status == q.Status {
			match = append(match, s)
		}
	}
	sort.Slice(match, func(i, j int) bool { return less(match[i], match[j]) })
	page.Total = len(match)
	if q.Offset < len(match) {
		page.Jobs = match[q.Offset:min(len(match), q.Offset+q.Limit)]
	}
	return page, nil
}

// matches reports whether s passes the query's text and date filters
// (Counts count those that do, whatever their status).
func (q SummaryQuery) matches(s messages.JobSummary) bool {
	if !q.Since.IsZero() && s.SubmittedAt.Before(q.Since) || !q.Until.IsZero() && !s.SubmittedAt.Before(q.Until) {
		return false
	}
	if q.Text == "" {
		return true
	}
	text := strings.ToLower(q.Text)
	for _, f := range []string{s.Name, s.Prompt, s.JobID} {
		if strings.Contains(strings.ToLower(f), text) {
			return true
		}
	}
	return false
}

// summaryOrder is the order of a Sort, newest first among equals; now
// times the running jobs for SortDuration.
func summaryOrder(by string, now time.Time) (func(a, b messages.JobSummary) bool, error) {
	newest := func(a, b messages.JobSummary) bool {
		if !a.SubmittedAt.Equal(b.SubmittedAt) {
			return a.SubmittedAt.After(b.SubmittedAt)
		}
		return a.JobID > b.JobID
	}
	duration := func(s messages.JobSummary) time.Duration {
		if s.FinishedAt != nil {
			return s.FinishedAt.Sub(s.SubmittedAt)
		}
		return now.Sub(s.SubmittedAt)
	}
	then := func(key func(a, b messages.JobSummary) int) func(a, b messages.JobSummary) bool {
		return func(a, b messages.JobSummary) bool {
			if c := key(a, b); c != 0 {
				return c < 0
			}
			return newest(a, b)
		}
	}
	switch by {
	case "", SortNewest:
		return newest, nil
	case SortOldest:
		return func(a, b messages.JobSummary) bool { return newest(b, a) }, nil
	case SortDuration:
		return then(func(a, b messages.JobSummary) int { return cmp.Compare(duration(b), duration(a)) }), nil
	case SortTokens:
		return then(func(a, b messages.JobSummary) int { return cmp.Compare(b.Tokens, a.Tokens) }), nil
	case SortName:
		return then(func(a, b messages.JobSummary) int { return cmp.Compare(a.Name, b.Name) }), nil
	}
	return nil, &messages.FieldError{Field: "sort", Msg: fmt.Sprintf("%q is not one of %s", by, strings.Join(SummarySorts(), ", "))}
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
