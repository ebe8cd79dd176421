package handlertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

// good is a handler that does everything right: it serves plan.
type good struct{}

func (good) Version(stage messages.Stage) string {
	if stage == messages.StagePlan {
		return "plan-v1"
	}
	return ""
}

func (good) Handle(ctx context.Context, cmd *messages.StageCommand) (stagework.Output, error) {
	if cmd.Stage != messages.StagePlan {
		return stagework.Output{}, stagework.Permanent(fmt.Errorf("cannot do %s", cmd.Stage))
	}
	var in messages.PlanInput
	if err := json.Unmarshal(cmd.Input, &in); err != nil {
		return stagework.Output{}, stagework.Permanent(err)
	}
	if err := ctx.Err(); err != nil {
		return stagework.Output{}, err
	}
	return stagework.Output{Value: messages.Plan{Description: "d", Approach: "a"}}, nil
}

// broken is good but for one thing.
type broken struct {
	good
	version func(messages.Stage) string
	handle  func(ctx context.Context, cmd *messages.StageCommand) (stagework.Output, error)
}

func (b broken) Version(stage messages.Stage) string {
	if b.version != nil {
		return b.version(stage)
	}
	return b.good.Version(stage)
}

func (b broken) Handle(ctx context.Context, cmd *messages.StageCommand) (stagework.Output, error) {
	if b.handle != nil {
		return b.handle(ctx, cmd)
	}
	return b.good.Handle(ctx, cmd)
}

var cfg = Config{Stages: []messages.Stage{messages.StagePlan},
	Inputs:   map[messages.Stage]any{messages.StagePlan: messages.PlanInput{Task: messages.TaskSpec{Prompt: "p"}}},
	Promptly: 200 * time.Millisecond}

// failures runs every check on h and returns the names of those that fail.
func failures(h stagework.Handler) map[string]error {
	out := map[string]error{}
	for name, check := range checks(cfg) {
		if err := check(h); err != nil {
			out[name] = err
		}
	}
	return out
}

func TestGoodHandlerPasses(t *testing.T) {
	t.Parallel()
	if f := failures(good{}); len(f) != 0 {
		t.Errorf("a correct handler fails: %v", f)
	}
}

// TestBusPermanentPasses: a handler that marks its failures with the bus's
// Permanent gets the same published result, so it conforms.
func TestBusPermanentPasses(t *testing.T) {
	t.Parallel()
	h := broken{handle: func(ctx context.Context, cmd *messages.StageCommand) (stagework.Output, error) {
		out, err := good{}.Handle(ctx, cmd)
		var pe *stagework.PermanentError
		if errors.As(err, &pe) {
			err = bus.Permanent(pe.Err)
		}
		return out, err
	}}
	if f := failures(h); len(f) != 0 {
		t.Errorf("a handler using bus.Permanent fails: %v", f)
	}
}

// TestBrokenHandlersFail: each way a handler can break the executor's
// contract makes the suite fail, on the check that names it.
func TestBrokenHandlersFail(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	plain := func(ctx context.Context, cmd *messages.StageCommand) (stagework.Output, error) {
		out, err := good{}.Handle(ctx, cmd)
		var pe *stagework.PermanentError
		if errors.As(err, &pe) {
			err = pe.Err // retryable: the stage would be delivered again and again
		}
		return out, err
	}
	tests := []struct {
		name string
		h    stagework.Handler
		want string // a check that must fail
	}{
		{"empty version", broken{version: func(messages.Stage) string { return "" }}, "plan/version"},
		{"unstable version", broken{version: func() func(messages.Stage) string {
			n := 0
			return func(messages.Stage) string { n++; return fmt.Sprint(n) }
		}()}, "plan/version"},
		{"panics on an unknown stage", broken{handle: func(ctx context.Context, cmd *messages.StageCommand) (stagework.Output, error) {
			if cmd.Stage != messages.StagePlan {
				panic("unknown stage")
			}
			return good{}.Handle(ctx, cmd)
		}}, "unknown stage is permanent"},
		{"retryable error for an unknown stage", broken{handle: plain}, "unknown stage is permanent"},
		{"retryable error for malformed input", broken{handle: plain}, "plan/truncated JSON input is permanent"},
		{"ignores cancellation", broken{handle: func(ctx context.Context, cmd *messages.StageCommand) (stagework.Output, error) {
			if ctx.Err() != nil {
				<-block
			}
			return good{}.Handle(ctx, cmd)
		}}, "plan/cancelled context"},
		{"output does not encode", broken{handle: func(ctx context.Context, cmd *messages.StageCommand) (stagework.Output, error) {
			out, err := good{}.Handle(ctx, cmd)
			if err == nil {
				out.Value = map[string]any{"c": make(chan int)}
			}
			return out, err
		}}, "plan/output encodes"},
		{"no output", broken{handle: func(ctx context.Context, cmd *messages.StageCommand) (stagework.Output, error) {
			_, err := good{}.Handle(ctx, cmd)
			return stagework.Output{}, err
		}}, "plan/output encodes"},
	}
	for _, tc := range tests {
		f := failures(tc.h)
		if f[tc.want] == nil {
			t.Errorf("%s: check %q passed; failures: %v", tc.name, tc.want, f)
		} else if !strings.Contains(f[tc.want].Error(), "plan") && !strings.Contains(f[tc.want].Error(), string(unknownStage)) {
			t.Errorf("%s: %q does not name the stage", tc.name, f[tc.want])
		}
	}
}
