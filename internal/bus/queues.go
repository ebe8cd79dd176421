package bus

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/pkg/messages"
)

// PoolQueue reads pool's queue from its consumer's info: the stage
// commands waiting (and how long, at now, the first has waited) and those
// delivered and not yet done. Slots, Workers and Pause are left for the
// caller (Roster, PoolPauseOf).
func PoolQueue(ctx context.Context, res *Resources, pool messages.Pool, now time.Time) (messages.PoolView, error) {
	v := messages.PoolView{Pool: string(pool)}
	cons, ok := res.StageConsumers[pool]
	if !ok {
		return v, fmt.Errorf("bus: no consumer for pool %s", pool)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return v, fmt.Errorf("bus: read the queue of pool %s: %w", pool, err)
	}
	v.Pending, v.InFlight = info.NumPending, info.NumAckPending
	v.OldestPendingSeconds = oldestAge(ctx, res.Stages[pool], info, now)
	return v, nil
}

// CapacityOf is the slots and number of pool's workers in beats.
func CapacityOf(beats []messages.WorkerBeat, pool messages.Pool) (slots, workers int) {
	for _, b := range beats {
		if b.Pool == string(pool) {
			slots += b.Slots
			workers++
		}
	}
	return slots, workers
}

// oldestAge is how long the next message the consumer would deliver has
// waited: the stream holds it at the sequence after the last delivered.
func oldestAge(ctx context.Context, stream jetstream.Stream, info *jetstream.ConsumerInfo, now time.Time) float64 {
	if info.NumPending == 0 || stream == nil {
		return 0
	}
	msg, err := stream.GetMsg(ctx, info.Delivered.Stream+1)
	if err != nil {
		return 0
	}
	return max(now.Sub(msg.Time).Seconds(), 0)
}
