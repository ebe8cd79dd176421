package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/internal/bus"
)

// TestFleetSettings: the replicas, store bounds, sync and connection
// limits reach what they set, and a bad value is an error that names its
// variable.
func TestFleetSettings(t *testing.T) {
	t.Parallel()
	f := FleetConfig{NATSReplicas: "3", NATSStoreReplicas: "autocoder_claims=1, AUTOCODER_EVENTS=1", SamplesMaxBytes: "16Gi",
		OutputsMaxBytes: "2Gi", ClaimsMaxBytes: "512Mi", HTTPMaxConns: "500", HTTPMaxConnsPerClient: "20", NATSSync: "2m"}
	p, err := f.Provision(bus.ProvisionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	want := bus.ProvisionConfig{Replicas: 3, StoreReplicas: map[string]int{"autocoder_claims": 1, "AUTOCODER_EVENTS": 1},
		SamplesMaxBytes: 16 << 30, OutputsMaxBytes: 2 << 30, ClaimsMaxBytes: 512 << 20}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("provision (-want +got):\n%s", diff)
	}
	if kept, _ := f.Provision(bus.ProvisionConfig{Replicas: 1}); kept.Replicas != 1 {
		t.Errorf("a replicas set in code was overridden: %d", kept.Replicas)
	}
	if total, per, err := f.HTTPConnLimits(); err != nil || total != 500 || per != 20 {
		t.Errorf("HTTP limits %d, %d, %v", total, per, err)
	}
	if err := f.validate(); err != nil {
		t.Errorf("valid settings: %v", err)
	}
	for _, tc := range []struct {
		f    FleetConfig
		want string
	}{
		{FleetConfig{NATSReplicas: "four"}, "AUTOCODER_NATS_REPLICAS"},
		{FleetConfig{NATSReplicas: "7"}, "AUTOCODER_NATS_REPLICAS"},
		{FleetConfig{NATSStoreReplicas: "autocoder_nope=3"}, `"autocoder_nope=3" names no store`},
		{FleetConfig{NATSStoreReplicas: "autocoder_claims"}, "AUTOCODER_NATS_STORE_REPLICAS"},
		{FleetConfig{SamplesMaxBytes: "lots"}, "AUTOCODER_SAMPLES_MAX_BYTES"},
		{FleetConfig{ClaimsMaxBytes: "10Ki"}, "AUTOCODER_CLAIMS_MAX_BYTES"},
		{FleetConfig{HTTPMaxConns: "0"}, "AUTOCODER_HTTP_MAX_CONNS"},
		{FleetConfig{HTTPMaxConnsPerClient: "x"}, "AUTOCODER_HTTP_MAX_CONNS_PER_CLIENT"},
		{FleetConfig{NATSSync: "sometimes"}, "AUTOCODER_NATS_SYNC"},
	} {
		if err := tc.f.validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %s", tc.f, err, tc.want)
		}
	}
}
