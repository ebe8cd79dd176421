package llmstages

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/codemodestages"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/internal/stagework/handlertest"
	"github.com/autocoder/autocoder/pkg/messages"
)

// ctxClient is a fakeClient that, like a real one, gives up on a done context.
type ctxClient struct{ *fakeClient }

func (c ctxClient) Structured(ctx context.Context, req llm.StructuredRequest) (llm.StructuredReply, error) {
	if err := ctx.Err(); err != nil {
		return llm.StructuredReply{}, err
	}
	return c.fakeClient.Structured(ctx, req)
}

func TestConformance(t *testing.T) {
	t.Parallel()
	var stages []messages.Stage
	for _, s := range messages.Stages() {
		if s.Pool() == messages.PoolLLM {
			stages = append(stages, s)
		}
	}
	replies := map[string]string{
		"plan":     `{"description":"d","approach":"a"}`,
		"solution": `{"language":"python","code":"x = 1\n","packages":[],"system_packages":[]}`,
		"tests":    `{"code":"from solution import x\n\ndef test_x():\n    assert x == 1\n"}`,
		"packages": `{"packages":["numpy"]}`,
	}
	task := messages.TaskSpec{Prompt: "Set x to 1."}
	plan := messages.Plan{Description: "d", Approach: "a"}
	handlertest.Run(t, func(*testing.T) stagework.Handler {
		// As the llm-worker runs it: code-mode turns in front (this client cannot chat).
		return codemodestages.Wrap(NewStageHandler(New(ctxClient{&fakeClient{replies: replies}}, Options{})), codemodestages.Turn{})
	}, handlertest.Config{Stages: stages, Inputs: map[messages.Stage]any{
		messages.StagePlan:     messages.PlanInput{Task: task},
		messages.StageCode:     messages.CodeInput{Task: task, Plan: plan},
		messages.StageTests:    messages.TestsInput{Task: task, Plan: plan},
		messages.StagePackages: messages.PackagesInput{Imports: []string{"frobnicate"}},
		messages.StageStrengthenTests: messages.StrengthenTestsInput{Task: task, Plan: plan, Code: "x = 1\n", Tests: "def test_x():\n    pass\n",
			Strength: messages.TestStrength{Mutants: 2, Killed: 1, Survived: 1, Score: 0.5}},
	}})
}

// TestStageHandlerFailures: the model's errors reach the executor with the
// marker llm.Classify gives them, and the usage they paid.
func TestStageHandlerFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		err       error
		permanent bool
	}{
		{"refused request", &llm.CallError{StatusCode: 401, Attempts: 1}, true},
		{"invalid reply", fmt.Errorf("%w: not json", llm.ErrInvalidReply), true},
		{"endpoint down", errors.New("connection refused"), false},
	}
	for _, tc := range tests {
		h := NewStageHandler(New(&fakeClient{err: tc.err}, Options{}))
		out, err := h.Handle(context.Background(), command(t, messages.StagePlan, messages.PlanInput{Task: task}))
		if err == nil || stagework.IsPermanent(err) != tc.permanent {
			t.Errorf("%s: err = %v, permanent %v; want permanent %v", tc.name, err, stagework.IsPermanent(err), tc.permanent)
		}
		if _, asked := bus.RetryDelayOf(err); asked {
			t.Errorf("%s: a retry delay no server asked for", tc.name)
		}
		if out.Usage.Calls != 1 {
			t.Errorf("%s: usage %+v, want the paid call", tc.name, out.Usage)
		}
	}
	h := NewStageHandler(New(&fakeClient{}, Options{}))
	if _, err := h.Handle(context.Background(), command(t, messages.StagePlan, messages.PlanInput{})); !stagework.IsPermanent(err) {
		t.Errorf("bad input: err = %v, want permanent", err)
	}
}
