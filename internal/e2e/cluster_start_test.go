package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/bus/bustest"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/wiring"
)

// TestEveryRoleWaitsForTheClusterToStart: an llm-worker and a
// sandbox-worker start before any node of a three-node cluster is up, and
// a coordinator (3 replicas) when only one node is: each waits, through no
// server, then a JetStream without a leader or the servers to place its
// replicas, then nothing provisioned, and all three run once the cluster
// is whole. Before, a worker at a cluster's start exited instead.
func TestEveryRoleWaitsForTheClusterToStart(t *testing.T) {
	t.Parallel()
	requireSandboxTools(t)
	cl := bustest.StartCluster(t, 3, false)
	fake := fakellm.New()
	defer fake.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	started := make(chan error, 3)
	start := func(role wiring.Role) {
		cfg := testConfig(t, fake)
		cfg.NATSURL = cl.URLs()
		st, err := wiring.Start(ctx, wiring.Options{Config: cfg, Roles: []wiring.Role{role}, Provision: bus.ProvisionConfig{Replicas: 3}})
		if err == nil {
			t.Cleanup(func() { st.Close() })
		}
		started <- err
	}
	go start(wiring.RoleLLMWorker)
	go start(wiring.RoleSandboxWorker)
	time.Sleep(2 * time.Second) // no server answers yet
	cl.Start(0)
	go start(wiring.RoleCoordinator)
	time.Sleep(3 * time.Second) // one node: no leader, no room for 3 replicas
	select {
	case err := <-started:
		t.Fatalf("a role returned before the cluster was whole: %v", err)
	default:
	}
	cl.Start(1)
	cl.Start(2)
	for range 3 {
		select {
		case err := <-started:
			if err != nil {
				t.Errorf("a role did not wait for the cluster: %v", err)
			}
		case <-ctx.Done():
			t.Fatal("the roles did not start once the cluster was whole")
		}
	}
}
