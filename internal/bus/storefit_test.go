package bus_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/bus/bustest"
	"github.com/autocoder/autocoder/pkg/messages"
)

// storeBounds is the bound of each object store as the server has it.
func storeBounds(t *testing.T, js jetstream.JetStream) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, b := range []string{bus.ObjectStoreSamples, bus.ObjectStoreOutputs, bus.ObjectStoreClaims} {
		s, err := js.Stream(ctxT(t), "OBJ_"+b)
		if err != nil {
			t.Fatal(err)
		}
		out[b] = s.CachedInfo().Config.MaxBytes
	}
	return out
}

// checkFitted checks that bounds fit half of limit, shared 4:4:1, each
// under its default.
func checkFitted(t *testing.T, bounds map[string]int64, limit int64) {
	t.Helper()
	s, o, c := bounds[bus.ObjectStoreSamples], bounds[bus.ObjectStoreOutputs], bounds[bus.ObjectStoreClaims]
	share := limit / 2 * 4 / 9
	if s+o+c > limit/2 || s != o || s > share || s < share-(1<<20) || s >= bus.DefaultSamplesMaxBytes ||
		c >= bus.DefaultClaimsMaxBytes || s/c < 3 || s/c > 5 {
		t.Errorf("bounds %v with %d bytes of JetStream storage: want 4:4:1 of half of it, each under its default", bounds, limit)
	}
}

// TestDefaultStoreBoundsFitTheServer: on an embedded server with 2 GiB of
// JetStream storage, the coordinator's defaults (4 GiB + 4 GiB + 1 GiB,
// reserved by the server) are fitted to half of it, 4:4:1, so it starts;
// an explicit bound is used exactly, and one the server cannot reserve is
// refused naming its setting; a fitted bound never lowers the one a store
// has. Before, the defaults were reserved whatever the server had, and a
// machine with less than about 12 GB of free disk could not start the
// coordinator at all.
func TestDefaultStoreBoundsFitTheServer(t *testing.T) {
	t.Parallel()
	const limit = 2 << 30
	srv, js := newBusWith(t, bus.EmbeddedConfig{StoreDir: t.TempDir(), MaxStore: limit})
	if got := srv.StorageLimit(false); got != limit {
		t.Fatalf("StorageLimit = %d, want the MaxStore %d", got, limit)
	}
	ctx := ctxT(t)

	// What the coordinator did before: the defaults as they are.
	_, err := bus.Provision(ctx, js, bus.ProvisionConfig{SamplesMaxBytes: bus.DefaultSamplesMaxBytes})
	if err == nil || !strings.Contains(err.Error(), "AUTOCODER_SAMPLES_MAX_BYTES") || !strings.Contains(err.Error(), "cannot reserve") {
		t.Fatalf("an explicit 4 GiB bound on 2 GiB of storage: %v, want a refusal naming the setting", err)
	}

	if _, err := bus.Provision(ctx, js, bus.ProvisionConfig{StorageLimit: srv.StorageLimit(false)}); err != nil {
		t.Fatalf("the default bounds on 2 GiB of storage: %v", err)
	}
	fitted := storeBounds(t, js)
	checkFitted(t, fitted, limit)

	const explicit = 100 << 20
	if _, err := bus.Provision(ctx, js, bus.ProvisionConfig{StorageLimit: limit, OutputsMaxBytes: explicit}); err != nil {
		t.Fatal(err)
	}
	if got := storeBounds(t, js); got[bus.ObjectStoreOutputs] != explicit || got[bus.ObjectStoreSamples] != fitted[bus.ObjectStoreSamples] {
		t.Errorf("an explicit outputs bound of 100 MiB: %v, want it exactly and the others as they were", got)
	}

	// A disk that filled up: the fitted bounds would be smaller, and the
	// stores keep theirs.
	if _, err := bus.Provision(ctx, js, bus.ProvisionConfig{StorageLimit: limit / 4}); err != nil {
		t.Fatal(err)
	}
	got := storeBounds(t, js)
	if got[bus.ObjectStoreSamples] != fitted[bus.ObjectStoreSamples] || got[bus.ObjectStoreClaims] != fitted[bus.ObjectStoreClaims] {
		t.Errorf("after a start with less storage: %v, want the bounds the stores had, %v", got, fitted)
	}
	if want := int64(limit / 4 / 2 * 4 / 9); got[bus.ObjectStoreOutputs] < want-(1<<20) || got[bus.ObjectStoreOutputs] > want {
		t.Errorf("outputs, whose explicit bound was unset: %d, want fitted to about %d", got[bus.ObjectStoreOutputs], want)
	}
}

// TestStoreBoundsFitTheAccountsLimit: against a server the coordinator
// does not embed, the bounds that are not set fit the JetStream storage
// limit of its account, as the server reports it.
func TestStoreBoundsFitTheAccountsLimit(t *testing.T) {
	t.Parallel()
	const limit = 2 << 30
	srv := startConfServer(t, `jetstream { store_dir: %q }
accounts { TEAM { jetstream { max_file: `+fmt.Sprint(limit)+`, max_mem: -1 }, users [ {user: coordinator, password: s3cret-pass} ] } }
`)
	nc, err := nats.Connect(srv.ClientURL(), nats.UserInfo("coordinator", "s3cret-pass"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)

	if _, err := bus.Provision(ctxT(t), js, bus.ProvisionConfig{}); err != nil {
		t.Fatalf("the default bounds in an account with 2 GiB of storage: %v", err)
	}
	checkFitted(t, storeBounds(t, js), limit)

	_, err = bus.Provision(ctxT(t), js, bus.ProvisionConfig{ClaimsMaxBytes: limit})
	var api *jetstream.APIError
	if !errors.As(err, &api) || !strings.Contains(err.Error(), "AUTOCODER_CLAIMS_MAX_BYTES") {
		t.Errorf("an explicit claims bound the account cannot hold: %v, want the server's refusal naming the setting", err)
	}
}

// TestStoreBoundsFitAServerThatReportsNoLimit: a standalone nats-server
// whose account has no JetStream limits reports none, though the server
// has one (max_file_store; by default three quarters of the free disk, as
// in deploy/compose on a small disk). The coordinator finds it by
// reserving a probe stream and fits the bounds to it; before, it reserved
// the defaults (9 GiB), which such a server refused, and the coordinator
// could not start (TestComposeNATSPermissions failed so on a CI machine
// with 14 GB of free disk). The probe leaves no stream behind, and an
// explicit bound is still used exactly.
func TestStoreBoundsFitAServerThatReportsNoLimit(t *testing.T) {
	t.Parallel()
	const limit = 2 << 30
	nc, js := startNoLimitServer(t, limit)
	info, err := js.AccountInfo(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if info.Limits.MaxStore > 0 {
		t.Fatalf("the account reports a storage limit (%d): this test needs a server that reports none", info.Limits.MaxStore)
	}

	if _, err := bus.Provision(ctxT(t), js, bus.ProvisionConfig{}); err != nil {
		t.Fatalf("the default bounds on a server with 2 GiB of storage that reports no limit: %v", err)
	}
	got := storeBounds(t, js)
	s, o, c := got[bus.ObjectStoreSamples], got[bus.ObjectStoreOutputs], got[bus.ObjectStoreClaims]
	if sum := s + o + c; sum > limit/2 || sum < limit/2*9/10 || s != o || s/c < 3 || s/c > 5 {
		t.Errorf("bounds %v with 2 GiB of storage the server does not report: want 4:4:1 of about half of it", got)
	}
	names := js.StreamNames(ctxT(t))
	for name := range names.Name() {
		if strings.Contains(name, "PROBE") {
			t.Errorf("stream %s left behind by the probe", name)
		}
	}

	// Two coordinators starting at once, a store missing: each probes with
	// a stream of its own, and the stores made keep their bounds.
	if err := js.DeleteObjectStore(ctxT(t), bus.ObjectStoreClaims); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	for range 2 {
		go func() { _, err := bus.Provision(ctxT(t), js, bus.ProvisionConfig{}); errs <- err }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("two coordinators starting at once: %v", err)
		}
	}
	if again := storeBounds(t, js); again[bus.ObjectStoreSamples] != s || again[bus.ObjectStoreOutputs] != o {
		t.Errorf("bounds after two more starts %v, want those of the first %v", again, got)
	}

	// Every store made: a start keeps their bounds and makes no probe.
	created, err := nc.SubscribeSync("$JS.EVENT.ADVISORY.STREAM.CREATED.>")
	if err != nil {
		t.Fatal(err)
	}
	before := storeBounds(t, js)
	if _, err := bus.Provision(ctxT(t), js, bus.ProvisionConfig{}); err != nil {
		t.Fatal(err)
	}
	if after := storeBounds(t, js); !maps.Equal(after, before) {
		t.Errorf("bounds after a start with every store made: %v, want %v", after, before)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := created.NextMsg(200 * time.Millisecond)
		if err != nil {
			break
		}
		if strings.Contains(m.Subject, "PROBE") {
			t.Errorf("a start with every store made probed the server (%s)", m.Subject)
		}
	}
	_, err = bus.Provision(ctxT(t), js, bus.ProvisionConfig{ClaimsMaxBytes: limit})
	if err == nil || !strings.Contains(err.Error(), "AUTOCODER_CLAIMS_MAX_BYTES") {
		t.Errorf("an explicit claims bound the server cannot hold: %v, want the server's refusal naming the setting", err)
	}
}

// TestFittedStoreWaitsForAnotherCoordinatorsProbe: two coordinators
// starting at once on a server that reports no storage limit. One that
// finds another's probe waits for it, then probes alone: two probing at
// once would each fit about half of what is free, and keep it. If the
// other's probe lasts past ProbeAwait, it probes too, and a store fitted
// to what it found may be refused while the other's probe holds its
// reservation: it is tried again while that probe is live, so the start
// does not fail (TestStoreBoundsFitAServerThatReportsNoLimit failed so
// once, under load). Here the other probe holds all that is free.
func TestFittedStoreWaitsForAnotherCoordinatorsProbe(t *testing.T) {
	t.Parallel()
	const limit = 2 << 30
	_, js := startNoLimitServer(t, limit)
	if _, err := bus.Provision(ctxT(t), js, bus.ProvisionConfig{}); err != nil {
		t.Fatal(err)
	}
	made := storeBounds(t, js)
	free := int64(limit) - made[bus.ObjectStoreSamples] - made[bus.ObjectStoreOutputs]
	const other = "AUTOCODER_STORAGE_PROBE_OTHERCOORDINATOR_R"
	startWith := func(held time.Duration) int64 {
		t.Helper()
		if err := js.DeleteObjectStore(ctxT(t), bus.ObjectStoreClaims); err != nil {
			t.Fatal(err)
		}
		if _, err := js.CreateStream(ctxT(t), jetstream.StreamConfig{Name: other, Subjects: []string{"autocoder.storage-probe.OTHERCOORDINATOR.r"},
			MaxBytes: free - 512<<10}); err != nil {
			t.Fatalf("the other coordinator's probe: %v", err)
		}
		released := make(chan error, 1)
		go func() {
			time.Sleep(held)
			released <- js.DeleteStream(context.Background(), other)
		}()
		if _, err := bus.Provision(ctxT(t), js, bus.ProvisionConfig{}); err != nil {
			t.Fatalf("a start while another coordinator's probe holds the free storage for %v: %v", held, err)
		}
		if err := <-released; err != nil {
			t.Fatal(err)
		}
		for name := range js.StreamNames(ctxT(t)).Name() {
			if strings.Contains(name, "PROBE") {
				t.Errorf("stream %s left behind", name)
			}
		}
		return storeBounds(t, js)[bus.ObjectStoreClaims]
	}
	// Waited for: the claims store is fitted to what is free once the
	// other probe ends (about half of made's claims bound, as samples and
	// outputs hold theirs now), not to the 1 MiB left beside it.
	if got := startWith(1500 * time.Millisecond); got < made[bus.ObjectStoreClaims]/4 {
		t.Errorf("claims bound %s after waiting for another coordinator's probe, want about half of %s",
			messages.FormatBytes(got), messages.FormatBytes(made[bus.ObjectStoreClaims]))
	}
	// Not waited for past ProbeAwait: the store, fitted to the 1 MiB its
	// probe found, is refused, and made once the other probe ends.
	if got := startWith(bus.ProbeAwait + 1500*time.Millisecond); got < 1<<20 {
		t.Errorf("claims bound %d, want the store made", got)
	}
}

// TestStoreBoundsFitAClusterThatReportsNoLimit: a cluster places a store
// only on peers with room for its bound, and refuses it otherwise ("no
// suitable peers for placement, insufficient storage"). On three nodes of
// 2 GiB each that report no limit, a coordinator with three replicas fits
// the bounds to what the cluster can place; before, it asked for the
// defaults and could not start (TestClusterNodeKilledMidJobs failed so on
// a 4 GB disk).
func TestStoreBoundsFitAClusterThatReportsNoLimit(t *testing.T) {
	t.Parallel()
	const limit = 2 << 30
	c := bustest.StartCluster(t, 3, false)
	c.MaxStore = limit
	for i := range 3 {
		c.Start(i)
	}
	c.WaitReady(30 * time.Second)
	nc, err := nats.Connect(c.URLs())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	if _, err := bus.Provision(ctxT(t), js, bus.ProvisionConfig{Replicas: 3}); err != nil {
		t.Fatalf("the default bounds on a cluster of 2 GiB nodes that reports no limit: %v", err)
	}
	got := storeBounds(t, js)
	t.Logf("bounds fitted on nodes of 2 GiB: %v", got)
	s, o, cl := got[bus.ObjectStoreSamples], got[bus.ObjectStoreOutputs], got[bus.ObjectStoreClaims]
	if sum := s + o + cl; sum > limit/2 || sum < limit/8 || s != o || s/cl < 3 || s/cl > 5 {
		t.Errorf("bounds %v on nodes of 2 GiB: want 4:4:1 of at most half of it", got)
	}

	// A fitted store the cluster refuses to place is waited on for the
	// cluster's next usage report, but not past the attempt's context
	// (ProvisionWhenReady bounds each attempt to 10 s, under that wait):
	// the attempt ends with the refusal, as one to wait on, not with a
	// bare deadline. (A limit said to be 64 GiB fits the defaults, 4 GiB
	// of samples, which no node of 2 GiB can place.)
	for _, b := range []string{bus.ObjectStoreSamples, bus.ObjectStoreOutputs, bus.ObjectStoreClaims} {
		if err := js.DeleteObjectStore(ctxT(t), b); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(ctxT(t), 3*time.Second)
	defer cancel()
	_, err = bus.Provision(ctx, js, bus.ProvisionConfig{Replicas: 3, StorageLimit: 64 << 30})
	if !errors.Is(err, bus.ErrPlacementPending) || !strings.Contains(err.Error(), "insufficient storage") || !bus.NotReady(err) {
		t.Errorf("a store no node can place, the attempt ending: %v, want the cluster's refusal as one to wait on", err)
	}
	// Across attempts the wait is ClusterReportWait in all: then the
	// refusal is explained, and not waited on for ever.
	start := time.Now()
	_, err = bus.ProvisionWhenReady(ctxT(t), js, bus.ProvisionConfig{Replicas: 3, StorageLimit: 64 << 30}, nil)
	if err == nil || errors.Is(err, bus.ErrPlacementPending) || bus.NotReady(err) || !strings.Contains(err.Error(), "AUTOCODER_SAMPLES_MAX_BYTES") {
		t.Errorf("a store no node can place, after %v of attempts: %v, want the cluster's refusal, naming the setting", time.Since(start), err)
	}
	if waited := time.Since(start); waited < bus.ClusterReportWait {
		t.Errorf("the refusal came after %v, want a wait of %v for the cluster's usage reports", waited, bus.ClusterReportWait)
	}
}

// startNoLimitServer starts a nats-server whose JetStream has limit
// bytes of file storage and whose account reports no limit, and connects
// to it.
func startNoLimitServer(t *testing.T, limit int64) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	srv := startConfServer(t, "jetstream { store_dir: %q, max_file_store: "+fmt.Sprint(limit)+" }\n")
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	return nc, js
}

// startConfServer starts a nats-server on a free port from the
// configuration conf, whose %q is its store directory.
func startConfServer(t *testing.T, conf string) *server.Server {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "nats.conf")
	text := "listen: \"127.0.0.1:-1\"\n" + fmt.Sprintf(conf, filepath.Join(dir, "js"))
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(file)
	if err != nil {
		t.Fatal(err)
	}
	opts.NoSigs, opts.NoLog = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(30 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	return srv
}
