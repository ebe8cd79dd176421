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
	for _, s := range messages.DefaultStages().Stages() {
		if messages.DefaultStages().Pool(s) == messages.PoolLLM {
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
	handlertest.Run(t, func(t *testing.T) *stagework.Mux {
		// As the llm-worker runs it: with code mode's turn beside (this client cannot chat).
		mux := newHandlers(t, ctxClient{&fakeClient{replies: replies}}, Config{}).mux
		cm, err := codemodestages.New(codemodestages.Config{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Register(mux)
		return mux
	}, handlertest.Config{Stages: stages, Inputs: map[messages.Stage]any{
		messages.StagePlan:     messages.PlanInput{Task: task},
		messages.StageCode:     messages.CodeInput{Task: task, Plan: plan},
		messages.StageTests:    messages.TestsInput{Task: task, Plan: plan},
		messages.StagePackages: messages.PackagesInput{Imports: []string{"frobnicate"}},
	}})
}

// TestFailuresKeepTheirUsage: a model error reaches the executor as it
// is (the policy classifies it, with llm.Classify), with the usage the
// failed call paid; bad input is marked permanent here.
func TestFailuresKeepTheirUsage(t *testing.T) {
	t.Parallel()
	task := messages.TaskSpec{Prompt: "Set x to 1."}
	for _, failure := range []error{&llm.CallError{StatusCode: 401, Attempts: 1}, fmt.Errorf("%w: not json", llm.ErrInvalidReply),
		errors.New("connection refused")} {
		h := newHandlers(t, &fakeClient{err: failure}, Config{})
		out, err := h.Handle(context.Background(), command(t, messages.StagePlan, messages.PlanInput{Task: task}))
		if !errors.Is(err, failure) {
			t.Errorf("err = %v, want %v", err, failure)
		}
		if out.Usage.Calls != 1 {
			t.Errorf("%v: usage %+v, want the paid call", failure, out.Usage)
		}
	}
	h := newHandlers(t, &fakeClient{}, Config{})
	if _, err := h.Handle(context.Background(), command(t, messages.StagePlan, messages.PlanInput{})); !bus.IsPermanent(err) || !errors.Is(err, ErrBadInput) {
		t.Errorf("bad input: err = %v, want permanent", err)
	}
}
