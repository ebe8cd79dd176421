package client

import (
	"context"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Stores are the buckets and object stores a Client reads and writes.
// New opens each one left nil by its name (pkg/messages/names.go) when it
// is first needed, so a connection allowed only some of them (a producer
// that never lists the job index) works for the rest.
type Stores struct {
	Results jetstream.KeyValue // messages.BucketJobResults
	Index   jetstream.KeyValue // messages.BucketJobIndex
	Tasks   jetstream.KeyValue // messages.BucketTasks
	Samples jetstream.ObjectStore
	Outputs jetstream.ObjectStore
	Claims  jetstream.ObjectStore
}

// stores opens Stores lazily, once each.
type stores struct {
	js jetstream.JetStream
	mu sync.Mutex
	s  Stores
}

func (s *stores) kv(ctx context.Context, slot *jetstream.KeyValue, name string) (jetstream.KeyValue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if *slot != nil {
		return *slot, nil
	}
	kv, err := s.js.KeyValue(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("client: open bucket %s: %w", name, err)
	}
	*slot = kv
	return kv, nil
}

func (s *stores) obj(ctx context.Context, slot *jetstream.ObjectStore, name string) (jetstream.ObjectStore, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if *slot != nil {
		return *slot, nil
	}
	o, err := s.js.ObjectStore(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("client: open object store %s: %w", name, err)
	}
	*slot = o
	return o, nil
}

func (s *stores) results(ctx context.Context) (jetstream.KeyValue, error) {
	return s.kv(ctx, &s.s.Results, messages.BucketJobResults)
}

func (s *stores) index(ctx context.Context) (jetstream.KeyValue, error) {
	return s.kv(ctx, &s.s.Index, messages.BucketJobIndex)
}

func (s *stores) tasks(ctx context.Context) (jetstream.KeyValue, error) {
	return s.kv(ctx, &s.s.Tasks, messages.BucketTasks)
}

func (s *stores) samples(ctx context.Context) (jetstream.ObjectStore, error) {
	return s.obj(ctx, &s.s.Samples, messages.ObjectStoreSamples)
}

func (s *stores) outputs(ctx context.Context) (jetstream.ObjectStore, error) {
	return s.obj(ctx, &s.s.Outputs, messages.ObjectStoreOutputs)
}

func (s *stores) claims(ctx context.Context) (jetstream.ObjectStore, error) {
	return s.obj(ctx, &s.s.Claims, messages.ObjectStoreClaims)
}
