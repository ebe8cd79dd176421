package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/submit"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestDeadLetterReplay: a stage command that every llm-worker takes and
// never answers (the test plays a worker that crashes on it) is given up
// by JetStream after its deliveries; the coordinator copies it into the
// dead-letter stream and fails the job with the reason. `submit dlq list`
// and `show` find it, and `submit dlq replay` with a working llm-worker
// completes the job.
func TestDeadLetterReplay(t *testing.T) {
	t.Parallel()
	requireSandboxTools(t)
	fake := fakellm.New()
	defer fake.Close()
	scriptBasics(fake, sol(code("6 * 7")))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	port := freePort(t)
	cfg := testConfig(t, fake)
	cfg.NATSAuth = config.NATSAuthNone
	st, err := wiring.Start(ctx, wiring.Options{Config: cfg, Roles: []wiring.Role{wiring.RoleCoordinator, wiring.RoleSandboxWorker},
		EmbeddedListen: fmt.Sprintf("127.0.0.1:%d", port), Provision: bus.ProvisionConfig{MaxDeliver: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	remote := testConfig(t, fake)
	remote.NATSURL = fmt.Sprintf("nats://127.0.0.1:%d", port)

	id := client.NewJobID()
	if err := st.Client.Submit(ctx, id, answerSpec()); err != nil {
		t.Fatal(err)
	}
	crashOnEveryDelivery(ctx, t, st.Resources.StageConsumers[messages.PoolLLM], 2)

	letter := waitDeadLetter(ctx, t, remote)
	if letter.Letter.JobID != id || letter.Letter.Stage != messages.StagePlan || letter.Letter.Deliveries != 2 ||
		!strings.Contains(letter.Letter.Reason, "dead-lettered") || len(letter.Letter.Data) == 0 {
		t.Errorf("dead letter %+v: want the plan command of job %s after 2 deliveries", letter.Letter, id)
	}
	if info, err := st.Resources.Stages[messages.PoolLLM].Info(ctx); err != nil || info.State.Msgs != 0 {
		t.Errorf("the llm stage stream still holds %v messages (%v): the dead letter should be moved out", info.State.Msgs, err)
	}
	failed := waitStatus(ctx, t, st.Client, id, func(r *messages.Result) bool { return r.Status != messages.StatusRunning })
	if failed.Status != messages.StatusErrored || !strings.Contains(failed.Error, "dead-lettered") {
		t.Fatalf("job after the dead letter: %s %q, want errored with the reason", failed.Status, failed.Error)
	}
	seq := strconv.FormatUint(letter.Seq, 10)
	if out := submitCLI(ctx, t, remote, 0, "dlq", "show", seq); !strings.Contains(out, `"stream": "AUTOCODER_STAGE_LLM"`) {
		t.Errorf("submit dlq show: %s", out)
	}

	worker, err := wiring.Start(ctx, wiring.Options{Config: remote, Roles: []wiring.Role{wiring.RoleLLMWorker}})
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	if out := submitCLI(ctx, t, remote, 0, "dlq", "replay", seq); !strings.Contains(out, "job "+id+" is running again") {
		t.Errorf("submit dlq replay: %s", out)
	}
	done := waitStatus(ctx, t, st.Client, id, func(r *messages.Result) bool { return r.Status != messages.StatusRunning })
	if !done.Success || fmt.Sprint(done.Outputs["answer"]) != "42" {
		t.Fatalf("job after the replay: %s %q, want success", done.Status, done.Error)
	}
	// The job's failure is over: a second replay would be ignored, so it is refused.
	if out := submitCLI(ctx, t, remote, submit.ExitUsage, "dlq", "replay", seq); !strings.Contains(out, "not replayed") {
		t.Errorf("second replay: %s", out)
	}
}

// crashOnEveryDelivery takes the consumer's next message each time it is
// delivered and hands it back unanswered, as a worker that crashes on it
// would, until JetStream gives it up after maxDeliver deliveries.
func crashOnEveryDelivery(ctx context.Context, t *testing.T, cons jetstream.Consumer, maxDeliver int) {
	t.Helper()
	for i := 0; i < maxDeliver; i++ {
		m, err := cons.Next(jetstream.FetchMaxWait(time.Minute))
		if err != nil {
			t.Fatalf("delivery %d: %v", i+1, err)
		}
		if err := m.Nak(); err != nil {
			t.Fatal(err)
		}
	}
	// The next pull finds the message past its deliveries: the server
	// sends the max-deliveries advisory instead of the message.
	if m, err := cons.Next(jetstream.FetchMaxWait(time.Second)); err == nil {
		t.Fatalf("a delivery past MaxDeliver: %s", m.Subject())
	}
}

func waitDeadLetter(ctx context.Context, t *testing.T, cfg config.Config) messages.DeadLetterEntry {
	t.Helper()
	for ctx.Err() == nil {
		var letters []messages.DeadLetterEntry
		out := submitCLI(ctx, t, cfg, 0, "dlq", "list", "--json")
		if err := json.Unmarshal([]byte(out), &letters); err != nil {
			t.Fatalf("submit dlq list --json: %v\n%s", err, out)
		}
		if len(letters) > 0 {
			return letters[0]
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("no dead letter")
	return messages.DeadLetterEntry{}
}

func waitStatus(ctx context.Context, t *testing.T, c *client.Client, id string, done func(*messages.Result) bool) *messages.Result {
	t.Helper()
	for ctx.Err() == nil {
		if r, err := c.Status(ctx, id); err == nil && done(r) {
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("job %s: no status in time", id)
	return nil
}

// submitCLI runs the submit CLI and checks its exit code; it returns stdout and stderr.
func submitCLI(ctx context.Context, t *testing.T, cfg config.Config, wantCode int, args ...string) string {
	t.Helper()
	var out strings.Builder
	if code := submit.Run(ctx, args, cfg, submit.IO{Stdout: &out, Stderr: &out}); code != wantCode {
		t.Fatalf("submit %v: exit %d, want %d\n%s", args, code, wantCode, out.String())
	}
	return out.String()
}
