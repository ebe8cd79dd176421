package llmstages

import (
	"context"

	"github.com/autocoder/autocoder/internal/prompts"
	"github.com/autocoder/autocoder/pkg/messages"
)

// strengthenTests asks for tests that kill the surviving mutants: the
// whole test file again, normalised as the tests stage's reply is.
func (h *Handlers) strengthenTests(ctx context.Context, cmd *messages.StageCommand, in messages.StrengthenTestsInput) (Output, error) {
	if err := requireTask(cmd.Stage, in.Task); err != nil {
		return Output{}, err
	}
	var t messages.Tests
	out, err := h.call(ctx, cmd, prompts.StrengthenTests(in), &t)
	if err != nil {
		return out, err
	}
	return normalizeTests(cmd.Stage, out, t)
}
