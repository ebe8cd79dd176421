package bus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// Replicas and bounds of what Provision makes.
//
// Replicas are raised, never lowered: a coordinator that restarts with
// the default (1) on a cluster whose streams an operator raised to 3 keeps
// them at 3. Lowering loses copies of the jobs, so it is done by hand
// (nats stream edit <stream> --replicas 1, docs/operations.md).
//
// Every object store has a bound (ProvisionConfig.SamplesMaxBytes...): the
// server reserves it when the store is made and refuses writes past it,
// so uploads cannot fill the disk that the jobs' streams need.

// StoreNames are the names ProvisionConfig.StoreReplicas takes: the
// streams, KV buckets and object stores Provision makes.
func StoreNames() []string {
	r := newResources()
	var names []string
	for _, q := range r.workQueues() {
		names = append(names, q.stream)
	}
	names = append(names, StreamEvents, StreamDLQ)
	for _, b := range r.buckets() {
		names = append(names, b.name)
	}
	for _, o := range r.objectStores() {
		names = append(names, o.name)
	}
	return names
}

// storeDefaults fills and checks the object store bounds and the
// per-store replicas.
func (c *ProvisionConfig) storeDefaults() error {
	div := int64(1)
	if c.MemoryStorage {
		div = 16 // tests and throwaway runs: the server reserves the bounds in memory
	}
	for _, b := range []struct {
		v   *int64
		def int64
	}{{&c.SamplesMaxBytes, DefaultSamplesMaxBytes}, {&c.OutputsMaxBytes, DefaultOutputsMaxBytes}, {&c.ClaimsMaxBytes, DefaultClaimsMaxBytes}} {
		if *b.v == 0 {
			*b.v = b.def / div
		}
		if *b.v < 1<<20 {
			return fmt.Errorf("bus: provision: an object store bound must be at least 1 MiB, not %d bytes", *b.v)
		}
	}
	names := StoreNames()
	for name, n := range c.StoreReplicas {
		if !slices.Contains(names, name) {
			return fmt.Errorf("bus: provision: StoreReplicas names %q, which is none of %s", name, strings.Join(names, ", "))
		}
		if n < 1 || n > 5 {
			return fmt.Errorf("bus: provision: StoreReplicas[%s] must be between 1 and 5, not %d", name, n)
		}
	}
	return nil
}

// maxBytes is the bound of object store bucket.
func (c *ProvisionConfig) maxBytes(bucket string) int64 {
	switch bucket {
	case ObjectStoreSamples:
		return c.SamplesMaxBytes
	case ObjectStoreOutputs:
		return c.OutputsMaxBytes
	}
	return c.ClaimsMaxBytes
}

// replicas is how many replicas the store named name (its stream: stream)
// gets: what the configuration asks, or more when it already has more.
func (p provisioner) replicas(ctx context.Context, name, stream string) (int, error) {
	want := p.cfg.Replicas
	if n, ok := p.cfg.StoreReplicas[name]; ok {
		want = n
	}
	s, err := p.js.Stream(ctx, stream)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return want, nil
	case err != nil:
		return 0, fmt.Errorf("bus: provision: look up stream %s: %w", stream, err)
	}
	if have := s.CachedInfo().Config.Replicas; have > want {
		p.cfg.Logger.Info("keeping the replicas a store has: more than configured (lower them by hand if that is meant)",
			"store", name, "replicas", have, "configured", want)
		return have, nil
	}
	return want, nil
}

// JetStream's error codes (nats-server's jetstream_errors_generated.go)
// that Provision and uploads explain.
const (
	errInsufficientResources jetstream.ErrorCode = 10023 // no servers to place the replicas on
	errMemoryExceeded        jetstream.ErrorCode = 10028 // a bound the server cannot reserve in memory
	errStorageExceeded       jetstream.ErrorCode = 10047 // a bound the server cannot reserve on disk
	errReplicasNotSupported  jetstream.ErrorCode = 10074 // replicas on a server without a cluster
	errStoreFailed           jetstream.ErrorCode = 10077 // a write refused, e.g. "maximum bytes exceeded"
)

// explain adds what to do to a server's refusal to make a store.
func (p provisioner) explain(err error, replicas int) error {
	var api *jetstream.APIError
	if !errors.As(err, &api) {
		return err
	}
	switch api.ErrorCode {
	case errReplicasNotSupported, errInsufficientResources:
		if replicas > 1 {
			return fmt.Errorf("%w (%d replicas need a NATS cluster of at least %d JetStream servers: set AUTOCODER_NATS_REPLICAS to fit)", err, replicas, replicas)
		}
	case errStorageExceeded, errMemoryExceeded:
		return fmt.Errorf("%w (the server cannot reserve the store's bound: free disk on the NATS server, "+
			"or lower AUTOCODER_SAMPLES_MAX_BYTES, AUTOCODER_OUTPUTS_MAX_BYTES, AUTOCODER_CLAIMS_MAX_BYTES)", err)
	}
	return err
}

// ErrStoreFull is returned (wrapped, as a *StoreFullError) by uploads to an
// object store that reached its bound.
var ErrStoreFull = errors.New("bus: object store full")

// StoreFullError says which store is full and what to do.
type StoreFullError struct {
	Bucket string
	Err    error // the server's refusal
}

func (e *StoreFullError) Error() string {
	return fmt.Sprintf("the %s object store is full (its bound is %s): retry once old objects are removed "+
		"(nats object rm %s <name>) or the bound is raised", e.Bucket, storeBoundSetting(e.Bucket), e.Bucket)
}

func (e *StoreFullError) Unwrap() []error { return []error{ErrStoreFull, e.Err} }

func storeBoundSetting(bucket string) string {
	switch bucket {
	case ObjectStoreSamples:
		return "AUTOCODER_SAMPLES_MAX_BYTES"
	case ObjectStoreOutputs:
		return "AUTOCODER_OUTPUTS_MAX_BYTES"
	}
	return "AUTOCODER_CLAIMS_MAX_BYTES"
}

// StoreFull turns the server's refusal of a write to object store bucket
// past its bound into a *StoreFullError; any other error is returned as
// it is.
func StoreFull(bucket string, err error) error {
	var api *jetstream.APIError
	if errors.As(err, &api) && (api.ErrorCode == errStoreFailed && strings.Contains(api.Description, "maximum bytes") ||
		api.ErrorCode == errStorageExceeded) {
		return &StoreFullError{Bucket: bucket, Err: err}
	}
	return err
}
