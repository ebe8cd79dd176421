package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/testredis"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestKilledWorkersStageIsTakenOver: two llm-worker processes share a
// Redis cache (so the stage's in-flight claim is shared); the first is
// SIGKILLed while its plan call is in flight, and the second takes the
// stage over and the job finishes right, within 45 s of the kill, with the
// provisioning defaults (no AckWait set here): the stage's message comes
// back after the ack deadline (15 s) and its claim's lease (15 s) has
// expired by then. The plan is asked of the model twice: the call in
// flight and the takeover, no more. Before, the ack deadline was 60 s and
// the claim's lease 2 minutes, so the second worker waited about two
// minutes on a dead holder. The measured takeover time is logged
// (BENCHMARKS.md).
func TestKilledWorkersStageIsTakenOver(t *testing.T) {
	requireSandboxTools(t)
	bin := buildCommands(t, "./cmd/llm-worker", "./cmd/sandbox-worker")
	fake := fakellm.New()
	defer fake.Close()
	fake.On("plan", fakellm.JSON(messages.Plan{Description: "return 42", Approach: "a function"}).Delay(10*time.Minute))
	scriptBasics(fake, sol(code("6 * 7")))

	redisURL := testredis.Start(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	cacheKeys := "AUTOCODER_CACHE_KEYS=k1:" + base64.StdEncoding.EncodeToString(key)

	port := freePort(t)
	cfg := testConfig(t, nil)
	cfg.NATSAuth = config.NATSAuthNone
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := wiring.Start(ctx, wiring.Options{Config: cfg, Roles: []wiring.Role{wiring.RoleCoordinator},
		EmbeddedListen: fmt.Sprintf("127.0.0.1:%d", port)})
	if err != nil {
		t.Fatalf("start stack: %v", err)
	}
	t.Cleanup(func() { st.Close() })

	start := func(name string, env ...string) (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command(filepath.Join(bin, name))
		cmd.Env = append(append(cleanEnv(), fmt.Sprintf("AUTOCODER_NATS_URL=nats://127.0.0.1:%d", port),
			"AUTOCODER_STATE_DIR="+t.TempDir(), "AUTOCODER_LOG_LEVEL=warn", "AUTOCODER_REDIS_URL="+redisURL, cacheKeys), env...)
		var logs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd, &logs
	}
	llm := func() (*exec.Cmd, *bytes.Buffer) {
		return start("llm-worker", "OPENAI_BASE_URL="+fake.URL(), "OPENAI_API_KEY=test")
	}
	_, sandboxLogs := start("sandbox-worker", "AUTOCODER_PYTHON="+python, "AUTOCODER_SANDBOX=process")
	first, _ := llm()

	jobCtx, jobCancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer jobCancel()
	id := client.NewJobID()
	if err := st.Client.Submit(jobCtx, id, planFirst(answerSpec())); err != nil { // the plan call is the one killed
		t.Fatalf("submit: %v", err)
	}
	planCalls := func() int {
		n := 0
		for _, r := range fake.Requests() {
			if r.SchemaName == "plan" {
				n++
			}
		}
		return n
	}
	for planCalls() < 1 {
		if jobCtx.Err() != nil {
			t.Fatal("the plan never reached the model")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, secondLogs := llm() // idle, ready to take over
	time.Sleep(time.Second)
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	_ = first.Wait()

	for planCalls() < 2 {
		if time.Since(killed) > 45*time.Second {
			t.Fatalf("45 s after the kill the plan was not taken over\nsecond llm-worker:\n%s", secondLogs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	takeover := time.Since(killed)
	t.Logf("takeover: the second worker called the model %.1f s after the first was killed", takeover.Seconds())

	doneCtx, doneCancel := context.WithDeadline(jobCtx, killed.Add(45*time.Second))
	defer doneCancel()
	res, err := st.Client.Watch(doneCtx, id, nil)
	if err != nil {
		t.Fatalf("the job did not end within 45 s of the kill: %v\nsecond llm-worker:\n%s\nsandbox-worker:\n%s", err, secondLogs, sandboxLogs)
	}
	if !res.Success || res.Outputs["answer"] != float64(42) {
		t.Fatalf("success %v, outputs %v, error %s", res.Success, res.Outputs, res.Error)
	}
	if n := planCalls(); n != 2 {
		t.Errorf("the plan was asked %d times, want 2 (the call in flight and the takeover)", n)
	}
}
