package codemodestages

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Version of the code-mode stages; bump when what a stage computes changes.
const Version = "codemode-2"

// Stages is a handler of some code-mode stages.
type Stages interface {
	stagework.Handler
	// Serves lists the stages it does.
	Serves() []messages.Stage
}

// Wrap returns a handler that gives cm's stages to cm and the rest to
// inner.
func Wrap(inner stagework.Handler, cm Stages) stagework.Handler {
	return wrapped{inner: inner, cm: cm, stages: cm.Serves()}
}

type wrapped struct {
	inner  stagework.Handler
	cm     Stages
	stages []messages.Stage
}

func (w wrapped) Version(stage messages.Stage) string {
	if slices.Contains(w.stages, stage) {
		return w.cm.Version(stage)
	}
	return w.inner.Version(stage)
}

func (w wrapped) Handle(ctx context.Context, cmd *messages.StageCommand) (stagework.Output, error) {
	if slices.Contains(w.stages, cmd.Stage) {
		return w.cm.Handle(ctx, cmd)
	}
	return w.inner.Handle(ctx, cmd)
}

// decode reads a command's input strictly; bad input is permanent.
func decode(cmd *messages.StageCommand, v any) error {
	if len(cmd.Input) == 0 {
		return stagework.Permanent(fmt.Errorf("stage %s: no input", cmd.Stage))
	}
	if err := json.Unmarshal(cmd.Input, v); err != nil {
		return stagework.Permanent(fmt.Errorf("stage %s: malformed input: %w", cmd.Stage, err))
	}
	return nil
}

func unknownStage(cmd *messages.StageCommand) error {
	return stagework.Permanent(fmt.Errorf("codemodestages: stage %s is not a code-mode stage", cmd.Stage))
}
