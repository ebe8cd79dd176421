package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Watch calls fn (if not nil) for each progress event of the job, from the
// first, until the job finishes (then it returns the result), fn returns
// an error, or ctx ends.
func (c *Client) Watch(ctx context.Context, jobID string, fn func(messages.Event) error) (*messages.Result, error) {
	return c.WatchFrom(ctx, jobID, 0, func(_ uint64, e messages.Event) error {
		if fn == nil {
			return nil
		}
		return fn(e)
	})
}

// WatchFrom is Watch resumed after the event with stream sequence after (0:
// from the first): fn gets each event with its sequence in the events
// stream, which a later WatchFrom takes to go on where it stopped (the
// event ids of the HTTP API's Server-Sent Events).
func (c *Client) WatchFrom(ctx context.Context, jobID string, after uint64, fn func(uint64, messages.Event) error) (*messages.Result, error) {
	if !messages.ValidJobID(jobID) {
		return nil, fmt.Errorf("client: invalid job id %q", jobID)
	}
	if r, done, err := c.finishedWithoutNews(ctx, jobID, after); done || err != nil {
		return r, err
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{messages.EventSubject(jobID)}, DeliverPolicy: jetstream.DeliverAllPolicy}
	if after > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, after+1
	}
	cons, err := c.js.OrderedConsumer(ctx, messages.StreamEvents, cfg)
	if err != nil {
		return nil, fmt.Errorf("watch job %s: %w", jobID, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return nil, fmt.Errorf("watch job %s: %w", jobID, err)
	}
	stop := context.AfterFunc(ctx, it.Stop) // unblocks Next when ctx ends
	defer stop()
	defer it.Stop()
	for {
		msg, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("watch job %s: %w", jobID, err)
		}
		// A large event travels claim-checked: skipping it could hide the job's end.
		body, err := c.redeem(ctx, msg.Headers(), msg.Data())
		if err != nil {
			return nil, fmt.Errorf("watch job %s: %w", jobID, err)
		}
		var ev messages.Event
		if json.Unmarshal(body, &ev) != nil {
			continue
		}
		var seq uint64
		if md, err := msg.Metadata(); err == nil {
			seq = md.Sequence.Stream
		}
		if err := fn(seq, ev); err != nil {
			return nil, err
		}
		if ev.Type == messages.EventJobFinished {
			return c.Wait(ctx, jobID)
		}
	}
}

// finishedWithoutNews returns the result of a finished job that has no
// events after `after` (all seen, or aged out of the events stream),
// which would never send the job_finished a watch waits for.
func (c *Client) finishedWithoutNews(ctx context.Context, jobID string, after uint64) (*messages.Result, bool, error) {
	r, err := c.Result(ctx, jobID)
	if errors.Is(err, ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("watch job %s: %w", jobID, err)
	}
	stream, err := c.js.Stream(ctx, messages.StreamEvents)
	if err != nil {
		return nil, false, fmt.Errorf("watch job %s: %w", jobID, err)
	}
	last, err := stream.GetLastMsgForSubject(ctx, messages.EventSubject(jobID))
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return r, true, nil
	case err != nil:
		return nil, false, fmt.Errorf("watch job %s: %w", jobID, err)
	case last.Sequence <= after:
		return r, true, nil
	}
	return nil, false, nil
}
