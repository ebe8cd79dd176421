package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestAgentResumesAfterWorkerKilled: the workers are processes of their
// own, each with its role's NATS credentials (so the sandbox-worker stores
// the workspace with no more than its role's permissions); the llm-worker
// is SIGKILLed while a model turn is in flight. Another llm-worker takes the
// redelivered turn and the job finishes; the turns already stored are not
// asked of the model again: only the turn that was in flight is.
func TestAgentResumesAfterWorkerKilled(t *testing.T) {
	requireSandboxTools(t)
	bin := buildCommands(t, "./cmd/llm-worker", "./cmd/sandbox-worker")
	fake := fakellm.New()
	defer fake.Close()
	fake.On(fakellm.NoSchema,
		fakellm.ToolCalls(writeCall("solution.py", code("6 * 7"))),
		fakellm.ToolCalls(writeCall("test_solution.py", answerTests)),
		// The third turn is in flight when the worker dies: it never answers.
		fakellm.ToolCalls(call(messages.ToolRunTests, map[string]any{})).Delay(10*time.Minute),
		fakellm.ToolCalls(call(messages.ToolRunTests, map[string]any{})),
		fakellm.Text("The tests pass."))

	// The coordinator in this process, on an embedded NATS with users; the
	// workers are processes that join it with their roles' credentials. A
	// short AckWait brings the killed worker's message back soon.
	port := freePort(t)
	creds := writeNATSUsers(t)
	cfg := testConfig(t, nil)
	cfg.NATSUsersFile = creds.usersFile
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := wiring.Start(ctx, wiring.Options{Config: cfg, Roles: []wiring.Role{wiring.RoleCoordinator},
		EmbeddedListen: fmt.Sprintf("127.0.0.1:%d", port), Provision: bus.ProvisionConfig{AckWait: 3 * time.Second}})
	if err != nil {
		t.Fatalf("start stack: %v", err)
	}
	t.Cleanup(func() { st.Close() })

	natsURL := fmt.Sprintf("AUTOCODER_NATS_URL=nats://127.0.0.1:%d", port)
	start := func(name string, env ...string) (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command(filepath.Join(bin, name))
		cmd.Env = append(append(cleanEnv(), natsURL, "AUTOCODER_STATE_DIR="+t.TempDir(), "AUTOCODER_LOG_LEVEL=warn"), env...)
		var logs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd, &logs
	}
	startWorker := func() (*exec.Cmd, *bytes.Buffer) {
		return start("llm-worker", "OPENAI_BASE_URL="+fake.URL(), "OPENAI_API_KEY=test",
			"AUTOCODER_NATS_USER=llm-1", "AUTOCODER_NATS_PASSWORD=llm-secret")
	}
	_, sandboxLogs := start("sandbox-worker", "AUTOCODER_PYTHON="+python, "AUTOCODER_SANDBOX=process",
		"AUTOCODER_NATS_USER=sandbox-1", "AUTOCODER_NATS_PASSWORD_FILE="+creds.sandboxPasswordFile)
	first, _ := startWorker()

	jobCtx, jobCancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer jobCancel()
	id := client.NewJobID()
	if err := st.Client.Submit(jobCtx, id, agentSpec(0)); err != nil {
		t.Fatalf("submit: %v", err)
	}
	for len(fake.Requests()) < 3 {
		if jobCtx.Err() != nil {
			t.Fatal("the third turn never reached the model")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	_, logs := startWorker()

	res, err := st.Client.Watch(jobCtx, id, nil)
	if err != nil {
		t.Fatalf("watch %s: %v\nsecond llm-worker:\n%s\nsandbox-worker:\n%s", id, err, logs, sandboxLogs)
	}
	if !res.Success || res.Outputs["answer"] != float64(42) {
		t.Fatalf("success %v, outputs %v, error %s\nsandbox-worker:\n%s", res.Success, res.Outputs, res.Error, sandboxLogs)
	}
	// Each turn is a conversation of its own length: count the model calls per turn.
	calls := map[int]int{}
	for _, r := range fake.Requests() {
		calls[len(r.Messages)]++
	}
	want := map[int]int{2: 1, 4: 1, 6: 2, 8: 1} // system+user, then an assistant and a tool message per turn
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Errorf("model calls by conversation length %v, want %v: only the turn in flight is asked again", calls, want)
	}
	if res.Agent == nil || res.Agent.Turns != 4 || res.Agent.TestRuns != 1 {
		t.Errorf("agent report %+v", res.Agent)
	}
}
