package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/stack"
)

// TestComposeNATSPermissions runs a job on a standalone nats-server
// configured with deploy/compose/nats.conf, each part as the role compose
// gives it: the coordinator (which alone provisions), both workers (started
// first: they wait for the coordinator) and a producer that submits with a
// sample file and watches. Any permission the table lacks fails the job.
func TestComposeNATSPermissions(t *testing.T) {
	requireSandboxTools(t)
	passwords := map[string]string{}
	for _, role := range []string{"coordinator", "llm-worker", "sandbox-worker", "producer"} {
		passwords[role] = "pw-" + role
		t.Setenv("NATS_"+strings.ToUpper(strings.ReplaceAll(role, "-", "_"))+"_PASSWORD", passwords[role])
	}
	natsURL := startComposeNATS(t)
	fake := fakellm.New()
	defer fake.Close()
	scriptBasics(fake, sol(code("6 * 7")))

	cfgAs := func(user string) config.Config {
		cfg := testConfig(t, fake)
		cfg.NATSURL, cfg.NATSUser, cfg.NATSPassword = natsURL, user, passwords[user]
		return cfg
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := func(user string, roles ...stack.Role) *stack.Stack {
		st, err := stack.Start(ctx, stack.Options{Config: cfgAs(user), Roles: roles})
		if err != nil {
			t.Errorf("start %s: %v", user, err)
			return nil
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	var wg sync.WaitGroup
	for user, role := range map[string]stack.Role{"llm-worker": stack.RoleLLMWorker, "sandbox-worker": stack.RoleSandboxWorker} {
		wg.Add(1)
		go func() { defer wg.Done(); start(user, role) }()
	}
	time.Sleep(300 * time.Millisecond) // let the workers find nothing provisioned yet
	start("coordinator", stack.RoleCoordinator)
	wg.Wait()
	producer := start("producer")
	if t.Failed() {
		t.FailNow()
	}

	sample := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(sample, []byte("the answer is 42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := answerSpec()
	spec.Samples = map[string]string{"notes": sample}
	res := runJob(t, producer, spec)
	if !res.Success || res.Outputs["answer"] != float64(42) {
		t.Fatalf("result: success %v, outputs %v, error %s", res.Success, res.Outputs, res.Error)
	}
}

// startComposeNATS starts a nats-server from deploy/compose/nats.conf (the
// passwords from the environment) with JetStream, on a free port.
func startComposeNATS(t *testing.T) string {
	t.Helper()
	opts, err := server.ProcessConfigFile(filepath.Join(repoRoot(t), "deploy", "compose", "nats.conf"))
	if err != nil {
		t.Fatal(err)
	}
	opts.Host, opts.Port = "127.0.0.1", -1
	opts.JetStream, opts.StoreDir = true, t.TempDir()
	opts.NoSigs, opts.NoLog = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	return srv.ClientURL()
}
