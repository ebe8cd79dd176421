package llmstages

import (
	"context"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/prompts"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

// strengthenTests asks for tests that kill the surviving mutants: the
// whole test file again, normalised as the tests stage's reply is.
func (h *Handlers) strengthenTests(ctx context.Context, cmd *messages.StageCommand, in messages.StrengthenTestsInput) (stagework.Output[messages.Tests], error) {
	if err := requireTask(cmd.Stage, in.Task); err != nil {
		return stagework.Output[messages.Tests]{}, err
	}
	out, err := call[messages.Tests](ctx, h, cmd, llm.TestsSchema, prompts.StrengthenTests(in))
	if err != nil {
		return out, err
	}
	return normalizeTests(cmd.Stage, out)
}
