package client

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Every object store is bounded (docs/operations.md): an upload past a
// store's bound is refused by the server, and the client says so clearly
// rather than as a JetStream API error.

// ErrStoreFull is returned (wrapped, as a *StoreFullError) by uploads to an
// object store that reached its bound.
var ErrStoreFull = errors.New("client: object store full")

// StoreFullError says which store is full and what to do.
type StoreFullError struct {
	Bucket string
	Err    error // the server's refusal
}

func (e *StoreFullError) Error() string {
	return fmt.Sprintf("the %s object store is full (its bound is %s): retry once old objects are removed "+
		"(nats object rm %s <name>) or the bound is raised", e.Bucket, BoundSetting(e.Bucket), e.Bucket)
}

func (e *StoreFullError) Unwrap() []error { return []error{ErrStoreFull, e.Err} }

// BoundSetting is the operator's setting that bounds object store bucket
// (docs/operations.md).
func BoundSetting(bucket string) string {
	switch bucket {
	case messages.ObjectStoreSamples:
		return "AUTOCODER_SAMPLES_MAX_BYTES"
	case messages.ObjectStoreOutputs:
		return "AUTOCODER_OUTPUTS_MAX_BYTES"
	}
	return "AUTOCODER_CLAIMS_MAX_BYTES"
}

// JetStream's error codes of a write past a store's bound.
const (
	errStorageExceeded jetstream.ErrorCode = 10047 // a bound the server cannot reserve on disk
	errStoreFailed     jetstream.ErrorCode = 10077 // a write refused, e.g. "maximum bytes exceeded"
)

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
