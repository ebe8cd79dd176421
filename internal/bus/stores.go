package bus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/pkg/client"
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

// storeDefaults checks the object store bounds that are set (the others
// are fitted to the server by Provision: storefit.go) and the per-store
// replicas.
func (c *ProvisionConfig) storeDefaults() error {
	for _, v := range []int64{c.SamplesMaxBytes, c.OutputsMaxBytes, c.ClaimsMaxBytes} {
		if v != 0 && v < minStoreBound {
			return fmt.Errorf("bus: provision: an object store bound must be at least 1 MiB, not %d bytes", v)
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

// bound is the field of the bound of object store bucket.
func (c *ProvisionConfig) bound(bucket string) *int64 {
	switch bucket {
	case ObjectStoreSamples:
		return &c.SamplesMaxBytes
	case ObjectStoreOutputs:
		return &c.OutputsMaxBytes
	}
	return &c.ClaimsMaxBytes
}

// current is the configuration the server has for stream, nil when it
// does not exist yet.
func (p provisioner) current(ctx context.Context, stream string) (*jetstream.StreamConfig, error) {
	s, err := p.js.Stream(ctx, stream)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("bus: provision: look up stream %s: %w", stream, err)
	}
	return &s.CachedInfo().Config, nil
}

// replicas is how many replicas the store named name gets, its stream's
// configuration being cur (nil: not made yet): what the configuration
// asks, or more when it already has more.
func (p provisioner) replicas(name string, cur *jetstream.StreamConfig) int {
	want := p.cfg.Replicas
	if n, ok := p.cfg.StoreReplicas[name]; ok {
		want = n
	}
	if cur != nil && cur.Replicas > want {
		p.cfg.Logger.Info("keeping the replicas a store has: more than configured (lower them by hand if that is meant)",
			"store", name, "replicas", cur.Replicas, "configured", want)
		return cur.Replicas
	}
	return want
}

// JetStream's error codes (nats-server's jetstream_errors_generated.go)
// that Provision explains (pkg/client's StoreFull, those of uploads).
const (
	errInsufficientResources jetstream.ErrorCode = 10023 // no servers to place the replicas on
	errMemoryExceeded        jetstream.ErrorCode = 10028 // a bound the server cannot reserve in memory
	errStorageExceeded       jetstream.ErrorCode = 10047 // a bound the server cannot reserve on disk
	errReplicasNotSupported  jetstream.ErrorCode = 10074 // replicas on a server without a cluster
	errNoPeers               jetstream.ErrorCode = 10005 // a cluster found no peers to place a store on
)

// clusterReportWait bounds how long, in all, a store with a fitted bound
// waits for a cluster to place it: its servers report their usage when a
// reservation changes (at most once a second) and every ten seconds
// (nats-server's statsz), and a refusal may rest on a report older than a
// reservation just released.
const clusterReportWait = 12 * time.Second

// errPlacementPending is returned (wrapped, with the server's refusal)
// when a fitted store is still not made as the attempt's context ends,
// before clusterReportWait: a later attempt (ProvisionWhenReady) waits on,
// for what is left of clusterReportWait (placeWaits).
var errPlacementPending = errors.New("bus: provision: the store is not made yet (a cluster's next usage report, or another coordinator's storage probe ending, may leave room)")

// refusal is how a server refused to reserve a store's bound, if it did.
type refusal int

const (
	notRefused refusal = iota
	// refusedByServer: a standalone server's (disk or memory).
	refusedByServer
	// refusedAtPlacement: a cluster's, which places a store only on peers
	// whose last reported usage leaves room for its bound.
	refusedAtPlacement
)

// boundRefusal says whether, and how, err refuses a store's bound.
func boundRefusal(err error) refusal {
	var api *jetstream.APIError
	if !errors.As(err, &api) {
		return notRefused
	}
	switch api.ErrorCode {
	case errStorageExceeded, errMemoryExceeded:
		return refusedByServer
	case errNoPeers:
		if strings.Contains(api.Description, "insufficient storage") || strings.Contains(api.Description, "insufficient memory") {
			return refusedAtPlacement
		}
	}
	return notRefused
}

// explain adds what to do to a server's refusal to make a store.
func (p provisioner) explain(err error, replicas int) error {
	var api *jetstream.APIError
	if !errors.As(err, &api) {
		return err
	}
	switch {
	case api.ErrorCode == errReplicasNotSupported || api.ErrorCode == errInsufficientResources:
		if replicas > 1 {
			return fmt.Errorf("%w (%d replicas need a NATS cluster of at least %d JetStream servers: set AUTOCODER_NATS_REPLICAS to fit)", err, replicas, replicas)
		}
	case boundRefusal(err) != notRefused:
		return fmt.Errorf("%w (the server cannot reserve the store's bound: free disk on the NATS server, "+
			"or lower AUTOCODER_SAMPLES_MAX_BYTES, AUTOCODER_OUTPUTS_MAX_BYTES, AUTOCODER_CLAIMS_MAX_BYTES; "+
			"unset, they fit what the server can reserve)", err)
	}
	return err
}

// ErrStoreFull is returned (wrapped, as a *StoreFullError) by uploads to an
// object store that reached its bound (pkg/client's, which producers'
// uploads return too).
var ErrStoreFull = client.ErrStoreFull

// StoreFullError says which store is full and what to do.
type StoreFullError = client.StoreFullError

// StoreFull turns the server's refusal of a write to object store bucket
// past its bound into a *StoreFullError; any other error is returned as
// it is.
func StoreFull(bucket string, err error) error { return client.StoreFull(bucket, err) }
