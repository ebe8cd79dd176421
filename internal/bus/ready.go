package bus

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Check asks the server for every stream, consumer, bucket and object
// store of r: nil when each answers, else the first that does not. It is
// a process's readiness (GET /readyz): NATS answers and what Provision
// made is there.
func (r *Resources) Check(ctx context.Context) error {
	streams := map[string]jetstream.Stream{StreamJobs: r.Jobs, StreamEvents: r.Events, StreamDLQ: r.DLQ}
	consumers := map[string]jetstream.Consumer{StreamJobs + "/" + ConsumerCoordinator: r.JobsConsumer}
	for _, pool := range messages.Pools() {
		streams[StageStream(pool)], streams[ResultStream(pool)] = r.Stages[pool], r.Results[pool]
		consumers[StageStream(pool)+"/"+StageConsumer(pool)] = r.StageConsumers[pool]
		consumers[ResultStream(pool)+"/"+ConsumerCoordinator] = r.ResultConsumers[pool]
	}
	for name, s := range streams {
		if s == nil {
			return fmt.Errorf("stream %s: not opened", name)
		}
		if _, err := s.Info(ctx); err != nil {
			return fmt.Errorf("stream %s: %w", name, err)
		}
	}
	for name, c := range consumers {
		if c == nil {
			return fmt.Errorf("consumer %s: not opened", name)
		}
		if _, err := c.Info(ctx); err != nil {
			return fmt.Errorf("consumer %s: %w", name, err)
		}
	}
	for _, b := range r.buckets() {
		if *b.dst == nil {
			return fmt.Errorf("key-value bucket %s: not opened", b.name)
		}
		if _, err := (*b.dst).Status(ctx); err != nil {
			return fmt.Errorf("key-value bucket %s: %w", b.name, err)
		}
	}
	for _, o := range r.objectStores() {
		if *o.dst == nil {
			return fmt.Errorf("object store %s: not opened", o.name)
		}
		if _, err := (*o.dst).Status(ctx); err != nil {
			return fmt.Errorf("object store %s: %w", o.name, err)
		}
	}
	return nil
}
