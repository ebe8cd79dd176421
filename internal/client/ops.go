package client

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Queues reads every pool's queue (pending, the oldest one's age, in
// flight), its live workers and their capacity, and its pause switch: the
// web UI's queues page and GET /v1/queues.
func (c *Client) Queues(ctx context.Context) (*messages.QueuesView, error) {
	now := time.Now()
	beats, err := bus.Roster(ctx, c.res.Workers)
	if err != nil {
		return nil, err
	}
	v := &messages.QueuesView{V: messages.WireVersion, At: now}
	for _, pool := range messages.Pools() {
		pv, err := bus.PoolQueue(ctx, c.res, pool, now)
		if err != nil {
			return nil, err
		}
		pv.Workers = []messages.WorkerBeat{}
		for _, b := range beats {
			if b.Pool == string(pool) {
				pv.Workers = append(pv.Workers, b)
				pv.Slots += b.Slots
			}
		}
		if pv.Slots > 0 {
			pv.Saturation = float64(pv.InFlight) / float64(pv.Slots)
		}
		if pv.Pause, err = bus.PoolPauseOf(ctx, c.res.Pools, pool); err != nil {
			return nil, err
		}
		v.Pools = append(v.Pools, pv)
	}
	return v, nil
}

// PausePool pauses pool (paused true) or resumes it: its workers fetch no
// new stage command while it is paused, and finish the ones they hold.
// by says who asks (as CancelJob.By: "http:<token name>", "cli:<user>@<host>"),
// reason why; both are bounded, and errors name the field
// (*messages.FieldError).
func (c *Client) PausePool(ctx context.Context, pool string, paused bool, by, reason string) (*messages.PoolPause, error) {
	p := messages.PoolPause{V: messages.WireVersion, Pool: pool, Paused: paused, By: by, Reason: reason, At: time.Now().UTC()}
	for _, f := range []struct {
		name, value string
		limit       int
	}{{"by", by, messages.MaxPauseByBytes}, {"reason", reason, messages.MaxPauseReasonBytes}} {
		if !utf8.ValidString(f.value) || len(f.value) > f.limit {
			return nil, &messages.FieldError{Field: f.name, Msg: fmt.Sprintf("must be UTF-8 text of at most %d bytes", f.limit)}
		}
	}
	if err := bus.SetPoolPause(ctx, c.res.Pools, p); err != nil {
		return nil, err
	}
	return &p, nil
}
