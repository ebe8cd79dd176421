package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

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
	r, cons, err := c.openWatch(ctx, jobID, after)
	if r != nil || err != nil {
		return r, err
	}
	it, err := cons.Messages()
	if err != nil {
		return nil, fmt.Errorf("watch job %s: %w", jobID, err)
	}
	stop := context.AfterFunc(ctx, it.Stop) // unblocks Next when ctx ends
	defer stop()
	defer it.Stop()
	stalled, endStall := c.watchStall(ctx, jobID, it)
	defer endStall()
	for {
		msg, err := it.Next()
		if err != nil {
			if r := stalled.result(); r != nil {
				return r, nil
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("watch job %s: %w", jobID, err)
		}
		stalled.saw()
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

// openWatch returns the result of a finished job with no news after
// `after` (finishedWithoutNews), or an ordered consumer of the job's
// events after it. Each try is bounded by watchStallAfter and tried again
// while ctx lasts: a request whose answer is lost while the cluster's
// leaders move (a NATS node killed) would otherwise wait for all of ctx.
func (c *Client) openWatch(ctx context.Context, jobID string, after uint64) (*messages.Result, jetstream.Consumer, error) {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{messages.EventSubject(jobID)}, DeliverPolicy: jetstream.DeliverAllPolicy}
	if after > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, after+1
	}
	for {
		tctx, cancel := context.WithTimeout(ctx, watchStallAfter)
		r, done, err := c.finishedWithoutNews(tctx, jobID, after)
		var cons jetstream.Consumer
		if !done && err == nil {
			cons, err = c.js.OrderedConsumer(tctx, messages.StreamEvents, cfg)
			if err != nil {
				err = fmt.Errorf("watch job %s: %w", jobID, err)
			}
		}
		cancel()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			continue // no answer in time: ask again
		}
		return r, cons, err
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

// watchStallAfter is how long a watch waits for an event before it looks
// for the job's result itself: an ordered consumer can stay silent after
// the events stream's leader moves (a NATS node killed), although the
// job finished and its events are stored.
const watchStallAfter = 10 * time.Second

// stallWatch ends a silent watch whose job has finished: it stops the
// iterator, and result hands the finished job's result to the watch.
type stallWatch struct {
	last atomic.Int64 // unix nanoseconds of the last event seen
	res  atomic.Pointer[messages.Result]
}

func (s *stallWatch) saw() { s.last.Store(time.Now().UnixNano()) }

func (s *stallWatch) result() *messages.Result { return s.res.Load() }

// watchStall checks, every watchStallAfter without an event, whether job
// jobID has finished, and if so stops it so that WatchFrom returns its
// result. The returned func ends the check (the watch is over).
func (c *Client) watchStall(ctx context.Context, jobID string, it jetstream.MessagesContext) (*stallWatch, func()) {
	s := &stallWatch{}
	s.saw()
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(watchStallAfter / 2)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if time.Since(time.Unix(0, s.last.Load())) < watchStallAfter {
				continue
			}
			if r, err := c.Result(ctx, jobID); err == nil {
				s.res.Store(r)
				it.Stop()
				return
			}
		}
	}()
	return s, cancel
}
