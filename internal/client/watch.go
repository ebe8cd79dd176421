package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// WatchFrom is Watch resumed after the event with stream sequence after (0:
// from the first): fn gets each event with its sequence in the events
// stream, which a later WatchFrom takes to go on where it stopped (the
// event ids of the HTTP API's Server-Sent Events).
func (c *Client) WatchFrom(ctx context.Context, jobID string, after uint64, fn func(uint64, messages.Event) error) (*messages.Result, error) {
	// A finished job with no events after `after` (all seen, or aged out
	// of the events stream: EventsMaxAge) would never send the
	// job_finished this waits for.
	if r, err := c.Result(ctx, jobID); err == nil {
		last, err := c.res.Events.GetLastMsgForSubject(ctx, bus.EventSubject(jobID))
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			return r, nil
		case err != nil:
			return nil, fmt.Errorf("watch job %s: %w", jobID, err)
		case last.Sequence <= after:
			return r, nil
		}
	} else if !errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("watch job %s: %w", jobID, err)
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{bus.EventSubject(jobID)}, DeliverPolicy: jetstream.DeliverAllPolicy}
	if after > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, after+1
	}
	cons, err := c.js.OrderedConsumer(ctx, bus.StreamEvents, cfg)
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
		// A large event travels claim-checked (bus.RedeemBody): skipping it
		// could hide the job's end.
		body, err := bus.RedeemBody(ctx, c.res.Claims, msg.Subject(), msg.Headers(), msg.Data())
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
			return c.waitResult(ctx, jobID)
		}
	}
}
