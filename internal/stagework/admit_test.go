package stagework_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/bus/bustest"
	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmstages"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

// llmSystem is an embedded NATS with a real coordinator, and an
// llm-worker's executor on the real LLM stage handlers, calling a fake
// OpenAI server that counts the requests.
type llmSystem struct {
	be      *bustest.Env
	coord   *coordinator.Coordinator
	model   *fakellm.Server
	x       *stagework.Executor
	mu      sync.Mutex
	refused []string // reasons
	signal  chan struct{}
}

func newLLMSystem(t *testing.T) *llmSystem {
	t.Helper()
	s := &llmSystem{be: bustest.Start(t, bus.ProvisionConfig{MemoryStorage: true}), model: fakellm.New(), signal: make(chan struct{}, 16)}
	t.Cleanup(s.model.Close)
	s.model.On("plan", fakellm.JSON(messages.Plan{Description: "d", Approach: "a"}))
	var err error
	s.coord, err = coordinator.New(coordinator.Config{States: s.be.Resources.JobState, Results: s.be.Resources.JobResults,
		Publisher: s.be.Publisher, DefaultModel: "test-model"})
	if err != nil {
		t.Fatal(err)
	}
	client, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: s.model.URL(), APIKey: "the-operators-key"})
	if err != nil {
		t.Fatal(err)
	}
	stages, err := llmstages.New(llmstages.Config{Client: client})
	if err != nil {
		t.Fatal(err)
	}
	mux := stagework.NewMux(messages.DefaultStages())
	stages.Register(mux)
	s.x, err = stagework.NewExecutor(stagework.Config{
		Mux:         mux,
		Publisher:   s.be.Publisher,
		Pool:        messages.PoolLLM,
		Jobs:        stagework.KVJobs{KV: s.be.Resources.JobState},
		ConfirmWait: 200 * time.Millisecond,
		Metrics:     refusals{s},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *llmSystem) submit(t *testing.T, jobID string) messages.StageCommand {
	t.Helper()
	spec := messages.JobSpec{Prompt: "Compute 42.", Outputs: map[string]messages.Type{"answer": messages.TypeInt},
		Options: messages.Options{FirstPass: messages.FirstPassPlanFirst}} // the tests take the plan command
	b, err := json.Marshal(messages.SubmitJob{V: messages.WireVersion, JobID: jobID, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.coord.HandleSubmit(ctxT(t), bus.NewMessage(bus.SubjectJobsSubmit, b, nil, 1)); err != nil {
		t.Fatal(err)
	}
	st, err := s.coord.State(ctxT(t), jobID)
	if err != nil {
		t.Fatal(err)
	}
	for seq, p := range st.Pending {
		if p.Stage == messages.StagePlan {
			return messages.StageCommand{V: messages.WireVersion, JobID: jobID, Seq: seq, Stage: messages.StagePlan, Model: "test-model",
				Input: mustJSON(t, messages.PlanInput{Task: messages.TaskSpec{Prompt: "Compute 42."}})}
		}
	}
	t.Fatalf("job %s has no plan pending: %+v", jobID, st.Pending)
	return messages.StageCommand{}
}

// results is every stage result the results streams hold.
func (s *llmSystem) results(t *testing.T) uint64 {
	t.Helper()
	var n uint64
	for _, results := range s.be.Resources.Results {
		info, err := results.Info(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		n += info.State.LastSeq
	}
	return n
}

func (s *llmSystem) reasons() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.refused...)
}

// TestCommandsTheCoordinatorDidNotSendAreRefused: an llm-worker does not
// send a stage command to the model, or answer it, unless the job-state
// bucket has it pending: not for a job that does not exist (the open-proxy
// attack: an attacker's prompt, the operator's key), a seq not pending, a
// stage other than the pending one, a finished job, or another pool's
// stage. The one command that is pending runs, with one model call.
func TestCommandsTheCoordinatorDidNotSendAreRefused(t *testing.T) {
	t.Parallel()
	s := newLLMSystem(t)
	plan := s.submit(t, "job-real")
	done := s.submit(t, "job-done")
	if err := s.coord.Cancel(ctxT(t), "job-done", "test"); err != nil {
		t.Fatal(err)
	}
	attacker := plan
	attacker.JobID = "job-nobody-submitted"
	attacker.Input = mustJSON(t, messages.PlanInput{Task: messages.TaskSpec{Prompt: "Write my essay, on the operator's bill."}})
	notPending, otherStage, otherPool := plan, plan, plan
	notPending.Seq = 42
	otherStage.Stage = messages.StageCode
	otherPool.Stage = messages.StageBuild

	tests := []struct {
		name   string
		cmd    messages.StageCommand
		reason string
	}{
		{"unknown job", attacker, stagework.RefusedUnknownJob},
		{"seq not pending", notPending, stagework.RefusedNotPending},
		{"another stage than the pending one", otherStage, stagework.RefusedNotPending},
		{"finished job", done, stagework.RefusedJobFinished},
		{"another pool's stage", otherPool, stagework.RefusedWrongPool},
	}
	for _, tc := range tests {
		before := s.jobState(t, tc.cmd.JobID)
		if err := s.x.Handle(ctxT(t), message(t, &tc.cmd, 1)); err != nil {
			t.Errorf("%s: Handle = %v, want nil (acked)", tc.name, err)
		}
		if got := s.reasons(); len(got) == 0 || got[len(got)-1] != tc.reason {
			t.Errorf("%s: refusals %v, want the last one %s", tc.name, got, tc.reason)
		}
		if diff := cmp.Diff(before, s.jobState(t, tc.cmd.JobID)); diff != "" {
			t.Errorf("%s changed the job's state (-before +after):\n%s", tc.name, diff)
		}
	}
	if n := len(s.model.Requests()); n != 0 {
		t.Errorf("the model got %d requests for commands nobody sent", n)
	}
	if n := s.results(t); n != 0 {
		t.Errorf("%d results published for commands nobody sent", n)
	}

	// The command the coordinator did send runs.
	if err := s.x.Handle(ctxT(t), message(t, &plan, 1)); err != nil {
		t.Fatal(err)
	}
	if n := len(s.model.Requests()); n != 1 {
		t.Errorf("the pending plan made %d model requests, want 1", n)
	}
	if n := s.results(t); n != 1 {
		t.Errorf("the pending plan published %d results, want 1", n)
	}
	if got := s.reasons(); len(got) != len(tests) {
		t.Errorf("refusals %v, want %d", got, len(tests))
	}
}

// jobState is the job's stored record and its revision ("" if none).
func (s *llmSystem) jobState(t *testing.T, jobID string) string {
	t.Helper()
	en, err := s.be.Resources.JobState.Get(ctxT(t), bus.JobKey(jobID))
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s@%d", en.Value(), en.Revision())
}

// TestRefusedCommandIsAcked: on the bus, a command for a job that does not
// exist is taken once, refused and acked (not redelivered), with no model
// call and no result.
func TestRefusedCommandIsAcked(t *testing.T) {
	t.Parallel()
	s := newLLMSystem(t)
	cmd := messages.StageCommand{V: messages.WireVersion, JobID: "job-ghost", Seq: 1, Stage: messages.StagePlan, Model: "m",
		Input: mustJSON(t, messages.PlanInput{Task: messages.TaskSpec{Prompt: "free tokens"}})}
	if err := s.be.Publisher.PublishJSON(ctxT(t), bus.StageSubject(messages.DefaultStages().Pool(cmd.Stage), cmd.Stage), &cmd, bus.StageMsgID(cmd.JobID, cmd.Seq)); err != nil {
		t.Fatal(err)
	}
	cons := s.be.Resources.StageConsumers[messages.PoolLLM]
	w := bus.NewWorker(cons, s.x, bus.WorkerConfig{Concurrency: 1})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- w.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("worker: %v", err)
		}
	}()
	select {
	case <-s.signal:
	case <-ctxT(t).Done():
		t.Fatal("the command was never refused")
	}
	waitAcked(t, cons)
	if n := len(s.model.Requests()); n != 0 {
		t.Errorf("the model got %d requests", n)
	}
	if n := s.results(t); n != 0 {
		t.Errorf("%d results published", n)
	}
	if got := s.reasons(); len(got) != 1 {
		t.Errorf("refused %d times, want once (acked, not redelivered)", len(got))
	}
}

// waitAcked waits until cons has nothing pending or unacknowledged.
func waitAcked(t *testing.T, cons jetstream.Consumer) {
	t.Helper()
	ctx := ctxT(t)
	for {
		info, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.NumAckPending == 0 && info.NumPending == 0 && info.NumRedelivered == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the command was not acked: %+v", info)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// refusals counts the system's refused commands.
type refusals struct{ s *llmSystem }

func (refusals) StageDone(messages.Stage, bool, bool, time.Duration) {}

func (r refusals) CommandRefused(_ messages.Stage, reason string) {
	r.s.mu.Lock()
	r.s.refused = append(r.s.refused, reason)
	r.s.mu.Unlock()
	r.s.signal <- struct{}{}
}
