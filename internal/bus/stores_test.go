package bus_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/bus/bustest"
	"github.com/autocoder/autocoder/internal/objects"
)

// clusterJS connects to every node of c and returns JetStream on it.
func clusterJS(t *testing.T, c *bustest.Cluster) jetstream.JetStream {
	t.Helper()
	nc, err := bus.Connect(ctxT(t), c.URLs(), "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// replicasOf is the replicas of every stream Provision made (its
// configuration) and of every durable consumer (the peers it has: a
// consumer follows its stream), once they have settled to want (for
// every stream and consumer but the claims store's when claims is set).
func replicasOf(t *testing.T, js jetstream.JetStream, want, claims int) map[string]int {
	t.Helper()
	var out map[string]int
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		out = map[string]int{}
		settled := true
		for name := range js.StreamNames(ctxT(t)).Name() {
			s, err := js.Stream(ctxT(t), name)
			if err != nil {
				t.Fatal(err)
			}
			out[name] = s.CachedInfo().Config.Replicas
			w := want
			if claims > 0 && name == "OBJ_"+bus.ObjectStoreClaims {
				w = claims
			}
			settled = settled && out[name] == w
			for c := range s.ListConsumers(ctxT(t)).Info() {
				if c.Config.Durable == "" {
					continue
				}
				n := 1
				if c.Cluster != nil {
					n += len(c.Cluster.Replicas)
				}
				out[name+"/"+c.Name] = n
				settled = settled && n == w
			}
		}
		if settled {
			break
		}
	}
	return out
}

// TestProvisionNeverLowersReplicas: on a 3-node cluster, stores made with
// 3 replicas keep them when a coordinator starts again with the default
// (1) or a per-store override of 1; a per-store override raises one store.
// Before, a coordinator restart put every stream back to 1 replica.
func TestProvisionNeverLowersReplicas(t *testing.T) {
	t.Parallel()
	c := bustest.StartCluster(t, 3, true)
	js := clusterJS(t, c)
	ctx := ctxT(t)

	if _, err := bus.ProvisionWhenReady(ctx, js, bus.ProvisionConfig{StoreReplicas: map[string]int{bus.ObjectStoreClaims: 3}}, nil); err != nil {
		t.Fatal(err)
	}
	first := replicasOf(t, js, 1, 3)
	for name, n := range first {
		want := 1
		if strings.HasPrefix(name, "OBJ_"+bus.ObjectStoreClaims) {
			want = 3
		}
		if n != want {
			t.Errorf("%s: %d replicas, want %d (the default, or the override)", name, n, want)
		}
	}

	if _, err := bus.Provision(ctx, js, bus.ProvisionConfig{Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []bus.ProvisionConfig{{}, {Replicas: 1, StoreReplicas: map[string]int{bus.ObjectStoreClaims: 1, bus.StreamEvents: 1}}} {
		if _, err := bus.Provision(ctx, js, cfg); err != nil {
			t.Fatal(err)
		}
		got := replicasOf(t, js, 3, 0)
		if len(got) != len(first) {
			t.Errorf("stores: %v, want %d", got, len(first))
		}
		for name, n := range got {
			if n != 3 {
				t.Errorf("after a provision with %+v: %s has %d replicas, want the 3 it had", cfg.StoreReplicas, name, n)
			}
		}
	}
}

// TestProvisionExplainsReplicas: replicas a single server cannot hold are
// refused with what to do.
func TestProvisionExplainsReplicas(t *testing.T) {
	t.Parallel()
	_, js := newBus(t)
	_, err := bus.Provision(ctxT(t), js, bus.ProvisionConfig{Replicas: 3, MemoryStorage: true})
	if err == nil || !strings.Contains(err.Error(), "3 replicas need a NATS cluster of at least 3 JetStream servers") {
		t.Errorf("3 replicas on one server: %v", err)
	}
	if _, err := bus.Provision(ctxT(t), js, bus.ProvisionConfig{StoreReplicas: map[string]int{"nope": 1}}); err == nil ||
		!strings.Contains(err.Error(), `names "nope"`) {
		t.Errorf("an unknown store: %v", err)
	}
}

// TestObjectStoresAreBounded: each object store has its bound; an upload
// past it is refused with an error that names the store and the setting,
// and the streams that hold the jobs still take writes. Before, nothing
// capped the samples and outputs stores.
func TestObjectStoresAreBounded(t *testing.T) {
	t.Parallel()
	_, js := newBus(t)
	ctx := ctxT(t)
	res, err := bus.Provision(ctx, js, bus.ProvisionConfig{MemoryStorage: true, SamplesMaxBytes: 1 << 20, OutputsMaxBytes: 2 << 20, ClaimsMaxBytes: 3 << 20})
	if err != nil {
		t.Fatal(err)
	}
	for store, want := range map[jetstream.ObjectStore]int64{res.Samples: 1 << 20, res.Outputs: 2 << 20, res.Claims: 3 << 20} {
		st, err := store.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := js.Stream(ctx, "OBJ_"+st.Bucket())
		if got := s.CachedInfo().Config.MaxBytes; got != want {
			t.Errorf("%s: bound %d, want %d", st.Bucket(), got, want)
		}
	}
	dir := t.TempDir()
	store, err := objects.New(res.Samples, dir)
	if err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, "big.csv", strings.Repeat("1,2,3\n", 300_000)) // 1.8 MB
	_, err = store.Put(ctx, "big", path)
	var full *bus.StoreFullError
	if !errors.Is(err, bus.ErrStoreFull) || !errors.As(err, &full) || full.Bucket != bus.ObjectStoreSamples ||
		!strings.Contains(err.Error(), "AUTOCODER_SAMPLES_MAX_BYTES") {
		t.Fatalf("an upload past the bound: %v, want ErrStoreFull naming the setting", err)
	}
	if _, err := res.JobState.Put(ctx, "job-1", bytes.Repeat([]byte("s"), 64<<10)); err != nil {
		t.Errorf("job state with the samples store full: %v", err)
	}
	if _, err := store.Put(ctx, "small", writeFile(t, "small.csv", "a,b\n1,2\n")); err != nil {
		t.Errorf("a small upload after the refused one: %v", err)
	}
}

// TestProvisionWaitsForTheCluster: a coordinator that starts with one node
// of three up waits until JetStream can place its replicated stores,
// instead of exiting, and a worker waits for what it provisions.
func TestProvisionWaitsForTheCluster(t *testing.T) {
	t.Parallel()
	c := bustest.StartCluster(t, 3, false)
	c.Start(0)
	nc, err := nats.Connect(c.URLs(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc, jetstream.WithDefaultTimeout(2*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opened := make(chan error, 1)
	go func() {
		_, err := bus.OpenWhenReady(ctx, js, nil)
		opened <- err
	}()
	provisioned := make(chan error, 1)
	go func() {
		_, err := bus.ProvisionWhenReady(ctx, js, bus.ProvisionConfig{Replicas: 3}, nil)
		provisioned <- err
	}()
	select {
	case err := <-provisioned:
		t.Fatalf("Provision returned with one node of three up: %v", err)
	case <-time.After(3 * time.Second):
	}
	c.Start(1)
	c.Start(2)
	for name, ch := range map[string]chan error{"provision": provisioned, "open": opened} {
		select {
		case err := <-ch:
			if err != nil {
				t.Errorf("%s once the cluster is up: %v", name, err)
			}
		case <-ctx.Done():
			t.Fatalf("%s did not return once the cluster was up", name)
		}
	}
}
