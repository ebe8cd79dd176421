package coordinator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/pkg/messages"
)

// stageEcho exists only in this test: the echo kind's one stage.
const stageEcho messages.Stage = "echo"

// echoKind is a job kind defined in this test: a submission named "echo"
// dispatches the echo stage with its prompt and finishes with the answer
// as a note.
func echoKind() machine.Kind {
	type echo struct {
		Text string `json:"text"`
	}
	const phaseEchoing machine.Phase = "echoing"
	return machine.Kind{
		Name: "echo",
		Is:   func(sub *machine.Submission) bool { return sub.Spec.Name == "echo" },
		Start: func(m *machine.Stepper, sub *machine.Submission) {
			m.Enter(phaseEchoing)
			m.Dispatch(stageEcho, echo{Text: sub.Spec.Prompt})
		},
		Results: []machine.Row{machine.On(stageEcho, func(m *machine.Stepper, _ machine.Pending, out echo) {
			m.Note("echoed: " + out.Text)
			m.Finish(messages.StatusSucceeded, "")
		})},
		Phases: machine.Phases{phaseEchoing: {machine.PhaseNew}},
	}
}

// TestCoordinatorRunsTheKindsItIsGiven: a coordinator given a kind that
// exists only in this test runs its jobs on the real bus. The submission
// arrives on the jobs stream, the kind's stage command goes out on its
// pool's stream, a stand-in worker answers it on the pool's result
// subject, and the job finishes with what the kind made of the answer.
func TestCoordinatorRunsTheKindsItIsGiven(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mc, err := machine.New(append([]machine.Kind{echoKind()}, machine.Builtin()...)...)
	if err != nil {
		t.Fatal(err)
	}
	// The stage's row: the coordinator routes and times it by the table.
	stages, err := messages.DefaultStages().With(messages.StageRow{Stage: stageEcho, Pool: messages.PoolLLM,
		Deadline: messages.DeadlineStep, Cached: true, Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	c, err := coordinator.New(coordinator.Config{States: e.res.JobState, Results: e.res.JobResults, Publisher: e.pub,
		DefaultModel: "test-model", Machine: mc, Stages: stages})
	if err != nil {
		t.Fatal(err)
	}
	runWorker(t, e.res.JobsConsumer, bus.HandlerFunc(c.HandleJobs))
	e.takeResults(t, c)

	pool := stages.Pool(stageEcho)
	runWorker(t, e.res.StageConsumers[pool], bus.HandlerFunc(func(ctx context.Context, msg *bus.Message) error {
		var cmd messages.StageCommand
		if err := json.Unmarshal(msg.Data(), &cmd); err != nil {
			return bus.Permanent(err)
		}
		if cmd.Stage != stageEcho || msg.Subject() != bus.StageSubject(pool, stageEcho) {
			return bus.Permanent(fmt.Errorf("a %s command on %s", cmd.Stage, msg.Subject()))
		}
		res := messages.StageResult{V: messages.WireVersion, JobID: cmd.JobID, Seq: cmd.Seq, Stage: cmd.Stage,
			Output: cmd.Input, StartedAt: t0, DurationMS: 1}
		return e.pub.PublishJSON(ctx, bus.ResultSubject(pool, cmd.JobID), res, bus.ResultMsgID(pool, cmd.JobID, cmd.Seq))
	}))

	submit := messages.SubmitJob{V: messages.WireVersion, JobID: "job-echo", Spec: messages.JobSpec{Name: "echo", Prompt: "hello"}}
	if err := e.pub.PublishJSON(ctxT(t), bus.SubjectJobsSubmit, submit, "submit.job-echo"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(testTimeout)
	for !e.finished(t, "job-echo") {
		if time.Now().After(deadline) {
			t.Fatal("the echo job never finished")
		}
		time.Sleep(20 * time.Millisecond)
	}
	r := e.result(t, "job-echo")
	if !r.Success || len(r.Notes) != 1 || r.Notes[0] != "echoed: hello" || len(r.Stages) != 1 || r.Stages[0].Name != stageEcho {
		t.Errorf("result: success %v, notes %v, stages %+v, error %q", r.Success, r.Notes, r.Stages, r.Error)
	}
}

// runWorker consumes cons with h until the test ends.
func runWorker(t *testing.T, cons jetstream.Consumer, h bus.Handler) {
	t.Helper()
	w := bus.NewWorker(cons, h, bus.WorkerConfig{Concurrency: 1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
	})
}
