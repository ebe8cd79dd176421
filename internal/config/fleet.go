package config

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// FleetConfig is how a deployment keeps its promises under load and
// failure (docs/operations.md): the replicas and bounds of what the
// coordinator provisions on NATS, how the embedded NATS reaches the disk,
// and the HTTP API's connection limits. Empty fields mean the defaults.
type FleetConfig struct {
	// NATSReplicas is AUTOCODER_NATS_REPLICAS: replicas of every stream,
	// bucket and object store the coordinator provisions (1 to 5); default
	// 1, for one NATS server; 3 on a cluster. Never lowered on restart.
	NATSReplicas string
	// NATSStoreReplicas is AUTOCODER_NATS_STORE_REPLICAS: overrides of
	// NATSReplicas for some stores, "name=n,..." (bus.StoreNames).
	NATSStoreReplicas string
	// NATSSync is AUTOCODER_NATS_SYNC: how the embedded NATS's store
	// reaches the disk, "always" (the default: every write, before it is
	// acknowledged) or an interval such as 2m (nats-server's own default).
	NATSSync string
	// The bounds of the object stores (quantities such as 8Gi):
	// AUTOCODER_SAMPLES_MAX_BYTES (samples and documentation, default
	// 4Gi), AUTOCODER_OUTPUTS_MAX_BYTES (File and Dir outputs, agent
	// workspaces, default 4Gi), AUTOCODER_CLAIMS_MAX_BYTES (claim-checked
	// message bodies, default 1Gi). Unset, each is its default or less, to
	// fit the server's JetStream storage (bus.ProvisionConfig); set, it is
	// used exactly.
	SamplesMaxBytes, OutputsMaxBytes, ClaimsMaxBytes string
	// HTTPMaxConns is AUTOCODER_HTTP_MAX_CONNS: connections the HTTP
	// endpoint holds at once, from everyone; default 1024 (and at most a
	// quarter of the process's file descriptors).
	HTTPMaxConns string
	// HTTPMaxConnsPerClient is AUTOCODER_HTTP_MAX_CONNS_PER_CLIENT:
	// connections from one IP address at once; default 64. Behind a proxy
	// every client has the proxy's address: raise it to HTTPMaxConns and
	// let the proxy limit each client.
	HTTPMaxConnsPerClient string
}

func fleetFromEnv() FleetConfig {
	return FleetConfig{
		NATSReplicas:          os.Getenv("AUTOCODER_NATS_REPLICAS"),
		NATSStoreReplicas:     os.Getenv("AUTOCODER_NATS_STORE_REPLICAS"),
		NATSSync:              os.Getenv("AUTOCODER_NATS_SYNC"),
		SamplesMaxBytes:       os.Getenv("AUTOCODER_SAMPLES_MAX_BYTES"),
		OutputsMaxBytes:       os.Getenv("AUTOCODER_OUTPUTS_MAX_BYTES"),
		ClaimsMaxBytes:        os.Getenv("AUTOCODER_CLAIMS_MAX_BYTES"),
		HTTPMaxConns:          os.Getenv("AUTOCODER_HTTP_MAX_CONNS"),
		HTTPMaxConnsPerClient: os.Getenv("AUTOCODER_HTTP_MAX_CONNS_PER_CLIENT"),
	}
}

func (f *FleetConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&f.NATSReplicas, "nats-replicas", f.NATSReplicas, "coordinator: replicas of every NATS stream, bucket and object store, 1 to 5; never lowered on restart; default 1 (AUTOCODER_NATS_REPLICAS)")
	fs.StringVar(&f.NATSStoreReplicas, "nats-store-replicas", f.NATSStoreReplicas, "coordinator: replicas of some stores, name=n,... (AUTOCODER_NATS_STORE_REPLICAS)")
	fs.StringVar(&f.NATSSync, "nats-sync", f.NATSSync, "embedded NATS: always (flush every write before acknowledging it) or an interval such as 2m; default always (AUTOCODER_NATS_SYNC)")
	fs.StringVar(&f.SamplesMaxBytes, "samples-max-bytes", f.SamplesMaxBytes, "coordinator: bound of the samples object store; default 4Gi, or less to fit the server's JetStream storage (AUTOCODER_SAMPLES_MAX_BYTES)")
	fs.StringVar(&f.OutputsMaxBytes, "outputs-max-bytes", f.OutputsMaxBytes, "coordinator: bound of the outputs object store; default 4Gi, or less to fit the server's JetStream storage (AUTOCODER_OUTPUTS_MAX_BYTES)")
	fs.StringVar(&f.ClaimsMaxBytes, "claims-max-bytes", f.ClaimsMaxBytes, "coordinator: bound of the claim-check object store; default 1Gi, or less to fit the server's JetStream storage (AUTOCODER_CLAIMS_MAX_BYTES)")
	fs.StringVar(&f.HTTPMaxConns, "http-max-conns", f.HTTPMaxConns, "HTTP connections held at once; default 1024 (AUTOCODER_HTTP_MAX_CONNS)")
	fs.StringVar(&f.HTTPMaxConnsPerClient, "http-max-conns-per-client", f.HTTPMaxConnsPerClient, "HTTP connections from one IP address at once; default 64 (AUTOCODER_HTTP_MAX_CONNS_PER_CLIENT)")
}

// Provision is the provisioning the settings ask for, on top of base (a
// field set in base wins: tests and embedders set them in code). The
// error names the setting.
func (f *FleetConfig) Provision(base bus.ProvisionConfig) (bus.ProvisionConfig, error) {
	p := base
	if f.NATSReplicas != "" && p.Replicas == 0 {
		n, err := strconv.Atoi(strings.TrimSpace(f.NATSReplicas))
		if err != nil || n < 1 || n > 5 {
			return p, fmt.Errorf("AUTOCODER_NATS_REPLICAS: %q is not a number of replicas from 1 to 5", f.NATSReplicas)
		}
		p.Replicas = n
	}
	if f.NATSStoreReplicas != "" && p.StoreReplicas == nil {
		m, err := storeReplicas(f.NATSStoreReplicas)
		if err != nil {
			return p, err
		}
		p.StoreReplicas = m
	}
	for _, b := range []struct {
		env, v string
		dst    *int64
	}{{"AUTOCODER_SAMPLES_MAX_BYTES", f.SamplesMaxBytes, &p.SamplesMaxBytes},
		{"AUTOCODER_OUTPUTS_MAX_BYTES", f.OutputsMaxBytes, &p.OutputsMaxBytes},
		{"AUTOCODER_CLAIMS_MAX_BYTES", f.ClaimsMaxBytes, &p.ClaimsMaxBytes}} {
		if b.v == "" || *b.dst != 0 {
			continue
		}
		n, err := messages.ParseQuantity(b.v)
		if err != nil || n < 1<<20 {
			return p, fmt.Errorf("%s: %q is not a quantity of at least 1Mi, such as 4Gi", b.env, b.v)
		}
		*b.dst = n
	}
	return p, nil
}

// storeReplicas parses "name=n,...".
func storeReplicas(s string) (map[string]int, error) {
	out := map[string]int{}
	for _, entry := range strings.Split(s, ",") {
		if entry = strings.TrimSpace(entry); entry == "" {
			continue
		}
		name, v, ok := strings.Cut(entry, "=")
		n, err := strconv.Atoi(strings.TrimSpace(v))
		name = strings.TrimSpace(name)
		known := false
		for _, s := range bus.StoreNames() {
			known = known || s == name
		}
		switch {
		case !ok || err != nil || n < 1 || n > 5:
			return nil, fmt.Errorf("AUTOCODER_NATS_STORE_REPLICAS: %q is not name=replicas (1 to 5)", entry)
		case !known:
			return nil, fmt.Errorf("AUTOCODER_NATS_STORE_REPLICAS: %q names no store (stores: %s)", entry, strings.Join(bus.StoreNames(), ", "))
		}
		out[name] = n
	}
	return out, nil
}

// HTTPConnLimits parses the HTTP connection limits; zero means the default.
func (f *FleetConfig) HTTPConnLimits() (total, perClient int, err error) {
	for _, l := range []struct {
		env, v string
		dst    *int
	}{{"AUTOCODER_HTTP_MAX_CONNS", f.HTTPMaxConns, &total}, {"AUTOCODER_HTTP_MAX_CONNS_PER_CLIENT", f.HTTPMaxConnsPerClient, &perClient}} {
		if l.v == "" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(l.v))
		if err != nil || n < 1 {
			return 0, 0, fmt.Errorf("%s: %q is not a positive number of connections", l.env, l.v)
		}
		*l.dst = n
	}
	return total, perClient, nil
}

// validate checks what can be checked without I/O.
func (f *FleetConfig) validate() error {
	if _, err := f.Provision(bus.ProvisionConfig{}); err != nil {
		return err
	}
	if _, _, err := f.HTTPConnLimits(); err != nil {
		return err
	}
	return bus.CheckSync(f.NATSSync)
}
