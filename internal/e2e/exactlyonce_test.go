package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/testredis"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestIdenticalJobsComputeEachStageOnce: 20 identical jobs submitted at
// once to two llm-workers and two sandbox-workers (two stacks on one NATS
// and one Redis cache) make each distinct model call once and run each
// distinct sandbox stage once; every other copy waits on the in-flight
// claim (internal/stagework inflight.go) and answers from the cache.
// Before, concurrent copies each missed the cache and computed.
func TestIdenticalJobsComputeEachStageOnce(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	scriptBasics(fake, sol(code("6 * 7")))
	redisURL := testredis.Start(t)
	port := freePort(t)
	shared := func(cfg config.Config) config.Config {
		cfg.RedisURL, cfg.CacheUnsigned, cfg.NATSAuth = redisURL, true, config.NATSAuthNone
		return cfg
	}
	first := startStack(t, wiring.Options{Config: shared(testConfig(t, fake)), Roles: []wiring.Role{wiring.RoleLocal},
		EmbeddedListen: fmt.Sprintf("127.0.0.1:%d", port)})
	second := shared(testConfig(t, fake))
	second.NATSURL = fmt.Sprintf("nats://127.0.0.1:%d", port)
	startStack(t, wiring.Options{Config: second, Roles: []wiring.Role{wiring.RoleLLMWorker, wiring.RoleSandboxWorker}})

	const jobs = 20
	results := make([]*messages.Result, jobs)
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = submitAndWatch(t, first, answerSpec())
		}()
	}
	wg.Wait()

	computed := map[messages.Stage]int{}
	for i, res := range results {
		if res == nil || !res.Success {
			t.Fatalf("job %d did not succeed: %+v", i, res)
		}
		for _, s := range res.Stages {
			if !s.Cached {
				computed[s.Name]++
			}
		}
	}
	for stage, n := range computed {
		if n != 1 {
			t.Errorf("stage %s computed %d times across %d identical jobs, want once", stage, n, jobs)
		}
	}
	for _, stage := range []messages.Stage{messages.StagePlan, messages.StageBuild, messages.StageRunTests, messages.StageAcceptance} {
		if computed[stage] != 1 {
			t.Errorf("stage %s computed %d times, want once", stage, computed[stage])
		}
	}
	calls := map[string]int{}
	for _, r := range fake.Requests() {
		calls[r.SchemaName]++
	}
	for name, n := range calls {
		if n != 1 {
			t.Errorf("model call %q made %d times, want once (all calls: %v)", name, n, calls)
		}
	}
}

func startStack(t *testing.T, o wiring.Options) *wiring.Stack {
	t.Helper()
	requireSandboxTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := wiring.Start(ctx, o)
	if err != nil {
		t.Fatalf("start stack %v: %v", o.Roles, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// submitAndWatch is runJob for many goroutines: errors are reported, not fatal.
func submitAndWatch(t *testing.T, st *wiring.Stack, spec messages.JobSpec) *messages.Result {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	id := client.NewJobID()
	if err := st.Client.Submit(ctx, id, spec); err != nil {
		t.Errorf("submit: %v", err)
		return nil
	}
	res, err := st.Client.Watch(ctx, id, nil)
	if err != nil {
		t.Errorf("watch %s: %v", id, err)
		return nil
	}
	return res
}
