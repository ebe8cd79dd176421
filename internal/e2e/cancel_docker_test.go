package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/sandbox/docker"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestCancelRemovesTheDockerSandbox: on the Docker backend, a job
// cancelled while its tests sleep in a container ends, well before the
// sleep would, with no container of the job left, running or not. How fast
// is bench.BenchmarkCancel's figure.
func TestCancelRemovesTheDockerSandbox(t *testing.T) {
	t.Parallel()
	pctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	err := docker.Ping(pctx, "")
	cancel()
	if err != nil {
		t.Fatalf("%v\nrun scripts/setup-docker.sh and export the DOCKER_HOST it prints (scripts/test.sh does both)", err)
	}
	marker := "autocoder-cancel-test-" + randomHex(t)
	fake := fakellm.New()
	defer fake.Close()
	scriptWithTests(fake, sleepingTests(marker), sol(code("6 * 7")))
	cfg := testConfig(t, fake)
	cfg.Sandbox = "docker"
	cfg.DockerBaseImage = dockerBaseImage()
	cfg.DockerPoolSize = -1 // every run in a container of its own, labelled with its job
	cfg.WorkerName = "e2e-cancel-" + randomHex(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	st, err := wiring.Start(ctx, wiring.Options{Config: cfg, Roles: []wiring.Role{wiring.RoleLocal}})
	if err != nil {
		t.Fatalf("start stack: %v", err)
	}
	defer st.Close()
	cli, err := docker.NewClient("")
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()

	spec := answerSpec()
	spec.Options.Timeout = messages.Duration(2 * time.Minute)
	id := client.NewJobID()
	if err := st.Client.Submit(ctx, id, spec); err != nil {
		t.Fatal(err)
	}
	containers := func(running bool) int {
		list, err := cli.ContainerList(ctx, container.ListOptions{All: !running,
			Filters: filters.NewArgs(filters.Arg("label", "autocoder.job="+id))})
		if err != nil {
			t.Fatalf("list containers: %v", err)
		}
		return len(list)
	}
	// The test run's container is up and its tests are in the sleep (the
	// marker's process, seen from the host).
	waitFor(t, 3*time.Minute, "the sandbox's sleep to start", func() bool { return containers(true) > 0 && len(processesWith(marker)) > 0 })

	if _, err := st.Client.Cancel(ctx, id, "test:docker", "stop"); err != nil {
		t.Fatal(err)
	}
	res, err := st.Client.WaitResult(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, cancelDeadline, "the job's containers to be removed", func() bool { return containers(false) == 0 && len(processesWith(marker)) == 0 })
	if res.Cancelled == nil || res.Cancelled.By != "test:docker" {
		t.Errorf("result: status %s, cancelled %+v", res.Status, res.Cancelled)
	}
}
