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
	"github.com/autocoder/autocoder/internal/submit"
	"github.com/autocoder/autocoder/internal/wiring"
)

// TestComposeNATSPermissions runs the orders job of TestDataAwareJobAndRuns
// on a standalone nats-server configured with deploy/compose/nats.conf, each
// part as the role compose gives it: the coordinator (which alone
// provisions), both workers (started first: they wait for the coordinator)
// and the submit CLI as a producer, which uploads the sample, downloads File
// and Dir outputs, and runs the script again with File and Dir inputs. Any
// permission the table lacks fails a step.
func TestComposeNATSPermissions(t *testing.T) {
	requireSandboxTools(t)
	passwords := map[string]string{}
	for _, role := range []string{"coordinator", "llm-worker", "sandbox-worker", "producer", "tool-server"} {
		passwords[role] = "pw-" + role
		t.Setenv("NATS_"+strings.ToUpper(strings.ReplaceAll(role, "-", "_"))+"_PASSWORD", passwords[role])
	}
	natsURL := startComposeNATS(t)
	fake := fakellm.New()
	defer fake.Close()
	dir := t.TempDir()
	job := ordersJob(t, fake, dir)

	cfgAs := func(user string) config.Config {
		cfg := testConfig(t, fake)
		cfg.NATSURL, cfg.NATSUser, cfg.NATSPassword = natsURL, user, passwords[user]
		return cfg
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := func(user string, role wiring.Role) {
		st, err := wiring.Start(ctx, wiring.Options{Config: cfgAs(user), Roles: []wiring.Role{role}})
		if err != nil {
			t.Errorf("start %s: %v", user, err)
			return
		}
		t.Cleanup(func() { st.Close() })
	}
	var wg sync.WaitGroup
	for user, role := range map[string]wiring.Role{"llm-worker": wiring.RoleLLMWorker, "sandbox-worker": wiring.RoleSandboxWorker} {
		wg.Add(1)
		go func() { defer wg.Done(); start(user, role) }()
	}
	time.Sleep(300 * time.Millisecond) // let the workers find nothing provisioned yet
	start("coordinator", wiring.RoleCoordinator)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	producer := cfgAs("producer")
	out1 := filepath.Join(dir, "out1")
	code, stdout, stderr := cli(t, producer, "--json", "--out", out1, job)
	if code != submit.ExitSuccess {
		t.Fatalf("exit %d\nstderr:\n%s\nstdout:\n%s", code, stderr, stdout)
	}
	res := decodeResult(t, stdout)
	if got := readFile(t, filepath.Join(out1, "report")); got != "region,amount\nnorth,25.00\nsouth,3.00\n" {
		t.Errorf("downloaded report %q", got)
	}
	notes := filepath.Join(dir, "notes.txt")
	attachments := filepath.Join(dir, "attachments")
	if err := os.MkdirAll(attachments, 0o755); err != nil {
		t.Fatal(err)
	}
	for p, body := range map[string]string{notes: "twelve bytes", filepath.Join(attachments, "a.txt"): "a"} {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out2 := filepath.Join(dir, "out2")
	code, stdout, stderr = cli(t, producer, "run", res.JobID, "--json", "--allow-outside", "--input", "threshold=15", "--input", "label=x",
		"--input", "notes="+notes, "--input", "attachments="+attachments, "--out", out2)
	if code != submit.ExitSuccess {
		t.Fatalf("submit run: exit %d\nstderr:\n%s\nstdout:\n%s", code, stderr, stdout)
	}
	if run := decodeResult(t, stdout); run.Outputs["notes_len"] != 12.0 || run.Outputs["attachment_count"] != 1.0 {
		t.Errorf("run outputs %v", run.Outputs)
	}
	if got := readFile(t, filepath.Join(out2, "charts", "meta", "count.txt")); got != "2" {
		t.Errorf("run's charts/meta/count.txt %q", got)
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
