package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/pkg/messages"
)

// ErrNoPauseSwitch is the answer of a deployment whose coordinator made no
// pools bucket (messages.BucketPools): it predates pausing pools.
var ErrNoPauseSwitch = errors.New("client: this deployment has no pool pause switch (no " + messages.BucketPools + " bucket: its coordinator predates pausing pools)")

// PausePool pauses pool (paused true) or resumes it (River's paused
// queues): its workers fetch no new stage command while it is paused and
// finish the ones they hold. by says who asks (as CancelJob.By:
// "cli:<user>@<host>"), reason why; both are bounded, and errors name the
// field (*messages.FieldError).
func (c *Client) PausePool(ctx context.Context, pool string, paused bool, by, reason string) (*messages.PoolPause, error) {
	if !slices.Contains(messages.Pools(), messages.Pool(pool)) {
		return nil, &messages.FieldError{Field: "pool", Msg: fmt.Sprintf("%q is not a pool (%v)", pool, messages.Pools())}
	}
	for _, f := range []struct {
		name, value string
		limit       int
	}{{"by", by, messages.MaxPauseByBytes}, {"reason", reason, messages.MaxPauseReasonBytes}} {
		if !utf8.ValidString(f.value) || len(f.value) > f.limit {
			return nil, &messages.FieldError{Field: f.name, Msg: fmt.Sprintf("must be UTF-8 text of at most %d bytes", f.limit)}
		}
	}
	kv, err := c.js.KeyValue(ctx, messages.BucketPools)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, ErrNoPauseSwitch
	}
	if err != nil {
		return nil, fmt.Errorf("client: open bucket %s: %w", messages.BucketPools, err)
	}
	p := messages.PoolPause{V: messages.SchemaVersion, Pool: pool, Paused: paused, By: by, Reason: reason, At: time.Now().UTC()}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	if _, err := kv.Put(ctx, pool, b); err != nil {
		return nil, fmt.Errorf("client: switch the pause of pool %s: %w", pool, err)
	}
	return &p, nil
}
