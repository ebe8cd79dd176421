package handlertest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

// plan is a handler that does everything right.
func plan(ctx context.Context, _ *messages.StageCommand, _ messages.PlanInput) (stagework.Output[any], error) {
	if err := ctx.Err(); err != nil {
		return stagework.Output[any]{}, err
	}
	return stagework.Output[any]{Value: messages.Plan{Description: "d", Approach: "a"}}, nil
}

// muxOf registers fn as the plan stage (nil: nothing registered).
func muxOf(fn stagework.Func[messages.PlanInput, any]) *stagework.Mux {
	m := stagework.NewMux(messages.DefaultStages())
	if fn != nil {
		stagework.Register(m, messages.StagePlan, fn)
	}
	return m
}

var cfg = Config{Stages: []messages.Stage{messages.StagePlan},
	Inputs:   map[messages.Stage]any{messages.StagePlan: messages.PlanInput{Task: messages.TaskSpec{Prompt: "p"}}},
	Promptly: 200 * time.Millisecond}

// failures runs every check on m and returns the names of those that fail.
func failures(m *stagework.Mux) map[string]error {
	out := map[string]error{}
	for name, check := range checks(cfg) {
		if err := check(m); err != nil {
			out[name] = err
		}
	}
	return out
}

func TestGoodHandlerPasses(t *testing.T) {
	t.Parallel()
	if f := failures(muxOf(plan)); len(f) != 0 {
		t.Errorf("a correct handler fails: %v", f)
	}
}

// TestBrokenHandlersFail: each way a handler can break the executor's
// contract makes the suite fail, on the check that names it. (A stage
// with no handler, or input that does not decode, cannot fail it: the mux
// answers them.)
func TestBrokenHandlersFail(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	tests := []struct {
		name string
		fn   stagework.Func[messages.PlanInput, any]
		want string // a check that must fail
	}{
		{"not registered", nil, "plan/version"},
		{"ignores cancellation", func(ctx context.Context, cmd *messages.StageCommand, in messages.PlanInput) (stagework.Output[any], error) {
			if ctx.Err() != nil {
				<-block
			}
			return plan(ctx, cmd, in)
		}, "plan/cancelled context"},
		{"panics", func(context.Context, *messages.StageCommand, messages.PlanInput) (stagework.Output[any], error) {
			panic("handler bug")
		}, "plan/output encodes"},
		{"output does not encode", func(ctx context.Context, cmd *messages.StageCommand, in messages.PlanInput) (stagework.Output[any], error) {
			out, err := plan(ctx, cmd, in)
			out.Value = map[string]any{"c": make(chan int)}
			return out, err
		}, "plan/output encodes"},
		{"no output", func(context.Context, *messages.StageCommand, messages.PlanInput) (stagework.Output[any], error) {
			return stagework.Output[any]{}, nil
		}, "plan/output encodes"},
	}
	for _, tc := range tests {
		f := failures(muxOf(tc.fn))
		if f[tc.want] == nil {
			t.Errorf("%s: check %q passed; failures: %v", tc.name, tc.want, f)
		} else if !strings.Contains(f[tc.want].Error(), "plan") {
			t.Errorf("%s: %q does not name the stage", tc.name, f[tc.want])
		}
	}
}
