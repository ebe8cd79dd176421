package wiring_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

// shout is a stage that exists only in this test: the recipe of
// docs/adding-a-stage.md, a row in the stage table and a Register call.
const shout messages.Stage = "shout"

var shoutRow = messages.StageRow{Stage: shout, Pool: messages.PoolLLM, Deadline: messages.DeadlineStep, Cached: true, Version: 1}

type shoutInput struct {
	Text string `json:"text"`
}

type shoutOutput struct {
	Shouted string `json:"shouted"`
}

func registerShout(mux *stagework.Mux) {
	stagework.Register(mux, shout, func(_ context.Context, _ *messages.StageCommand, in shoutInput) (stagework.Output[shoutOutput], error) {
		return stagework.Output[shoutOutput]{Value: shoutOutput{Shouted: strings.ToUpper(in.Text) + "!"}}, nil
	})
}

// TestAStageOfOnesOwn: a stage added with one row and one Register call
// is served by an llm-worker started as the binaries start it, on the
// real bus (an embedded NATS): a command the coordinator has pending gets
// the handler's result on the pool's result stream, and its row's Cached
// answers the same command again from the cache.
func TestAStageOfOnesOwn(t *testing.T) {
	t.Parallel()
	stages, err := messages.DefaultStages().With(shoutRow)
	if err != nil {
		t.Fatal(err)
	}
	model := fakellm.New()
	t.Cleanup(model.Close)
	client, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: model.URL(), APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := config.Config{StateDir: t.TempDir(), WorkerName: "stage-test", CacheUnsigned: true}
	st, err := wiring.Start(ctx, wiring.Options{Config: cfg, Roles: []wiring.Role{wiring.RoleLLMWorker}, LLM: client,
		Stages: stages, Register: registerShout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })

	for i, want := range []bool{false, true} { // computed, then from the cache
		jobID := fmt.Sprintf("job-shout-%d", i)
		pending(t, ctx, st.Resources.JobState, jobID, 1, shout) // as the coordinator records a dispatch
		cmd := messages.StageCommand{V: messages.WireVersion, JobID: jobID, Seq: 1, Stage: shout, Input: json.RawMessage(`{"text":"hello"}`)}
		if err := st.Publisher.PublishJSON(ctx, bus.StageSubject(stages.Pool(shout), shout), cmd, bus.StageMsgID(jobID, 1)); err != nil {
			t.Fatal(err)
		}
		msg, err := st.Resources.ResultConsumers[messages.PoolLLM].Next(jetstream.FetchMaxWait(time.Minute))
		if err != nil {
			t.Fatalf("no result: %v", err)
		}
		_ = msg.Ack()
		var res messages.StageResult
		if err := json.Unmarshal(msg.Data(), &res); err != nil {
			t.Fatal(err)
		}
		if res.JobID != jobID || res.Stage != shout || res.Error != "" || string(res.Output) != `{"shouted":"HELLO!"}` || res.Cached != want {
			t.Errorf("result %d: %+v (output %s), want HELLO! with cached %v", i, res, res.Output, want)
		}
	}
	if n := len(model.Requests()); n != 0 {
		t.Errorf("the model got %d requests for a stage that calls none", n)
	}
}

// shoutKind is a job kind of this test: a job named "shout" dispatches the
// shout stage with its prompt, and its result table's one row finishes
// the job with the shouted text as a note.
func shoutKind() machine.Kind {
	const phaseShouting machine.Phase = "shouting"
	return machine.Kind{
		Name: "shout",
		Is:   func(sub *machine.Submission) bool { return sub.Spec.Name == "shout" },
		Start: func(m *machine.Stepper, sub *machine.Submission) {
			m.Enter(phaseShouting)
			m.Dispatch(shout, shoutInput{Text: sub.Spec.Prompt})
		},
		Results: []machine.Row{machine.On(shout, func(m *machine.Stepper, _ machine.Pending, out shoutOutput) {
			m.Note("shouted: " + out.Shouted)
			m.Finish(messages.StatusSucceeded, "")
		})},
		Phases: machine.Phases{phaseShouting: {machine.PhaseNew}},
	}
}

// TestAJobThroughAStageOfOnesOwn is docs/adding-a-stage.md end to end: a
// stage that exists only in this test, with one row in the stage table,
// one Register call and one row in a job kind's result table. A job runs
// through it on the real bus: the submission on the jobs stream, the
// coordinator's machine dispatches the stage on its pool's stream, the
// llm-worker's executor admits it and runs the registered handler, and
// the result comes back to the kind's row, which finishes the job.
func TestAJobThroughAStageOfOnesOwn(t *testing.T) {
	t.Parallel()
	stages, err := messages.DefaultStages().With(shoutRow)
	if err != nil {
		t.Fatal(err)
	}
	kinds, err := machine.New(append([]machine.Kind{shoutKind()}, machine.Builtin()...)...)
	if err != nil {
		t.Fatal(err)
	}
	model := fakellm.New()
	t.Cleanup(model.Close)
	client, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: model.URL(), APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := config.Config{StateDir: t.TempDir(), WorkerName: "shout-test", CacheUnsigned: true}
	st, err := wiring.Start(ctx, wiring.Options{Config: cfg, Roles: []wiring.Role{wiring.RoleCoordinator, wiring.RoleLLMWorker},
		LLM: client, Stages: stages, Register: registerShout, Machine: kinds})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })

	if err := st.Client.Submit(ctx, "job-shout", messages.JobSpec{Name: "shout", Prompt: "hello"}); err != nil {
		t.Fatal(err)
	}
	res, err := st.Client.WaitResult(ctx, "job-shout")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Success || len(res.Stages) != 1 || res.Stages[0].Name != shout || res.Stages[0].Worker != "shout-test" ||
		len(res.Notes) != 1 || res.Notes[0] != "shouted: HELLO!" {
		t.Errorf("result: success %v, stages %+v, notes %v, error %q", res.Success, res.Stages, res.Notes, res.Error)
	}
}

// pending records seq of job jobID as dispatched for stage, as the
// coordinator's state record holds it: the executor runs only what it
// finds there.
func pending(t *testing.T, ctx context.Context, kv jetstream.KeyValue, jobID string, seq int, stage messages.Stage) {
	t.Helper()
	rec := map[string]any{"state": map[string]any{"phase": "running", "pending": map[string]any{fmt.Sprint(seq): map[string]any{"stage": stage}}}}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, bus.JobKey(jobID), b); err != nil {
		t.Fatal(err)
	}
}
