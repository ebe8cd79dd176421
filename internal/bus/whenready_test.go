package bus_test

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
)

// TestNotReadyWaitsForAClusterStarting: what JetStream answers while a
// cluster starts is waited on, a refusal that waiting cannot change is
// not. TestClusterNodeKilledMidJobs once failed at its start on "no
// suitable peers for placement" (a leader that had not yet heard from
// every server), which was not waited on.
func TestNotReadyWaitsForAClusterStarting(t *testing.T) {
	t.Parallel()
	api := func(code int, errCode jetstream.ErrorCode, desc string) error {
		return fmt.Errorf("bus: provision stream AUTOCODER_JOBS: %w", &jetstream.APIError{Code: code, ErrorCode: errCode, Description: desc})
	}
	for _, c := range []struct {
		err  error
		wait bool
	}{
		{api(503, 10008, "JetStream system temporarily unavailable"), true},
		{api(500, 10023, "insufficient resources"), true},
		{api(400, 10005, "no suitable peers for placement"), true},
		{api(400, 10005, "no suitable peers for placement, peer offline"), true},
		{api(400, 10005, "no suitable peers for placement, insufficient storage"), false},
		{api(500, 10047, "insufficient storage resources available"), false},
		{api(400, 10058, "stream name already in use with a different configuration"), false},
		// A fitted store the cluster had not placed when the attempt ended.
		{fmt.Errorf("%w: %w", bus.ErrPlacementPending, api(400, 10005, "no suitable peers for placement, insufficient storage")), true},
	} {
		if got := bus.NotReady(c.err); got != c.wait {
			t.Errorf("notReady(%v) = %v, want %v", c.err, got, c.wait)
		}
	}
}
