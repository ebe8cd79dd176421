package sandboxstages

import (
	"context"
	"fmt"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

// mutate measures the strength of passing tests by mutation
// (sandbox.RunMutation). The budget is capped at the worker's timeout
// ceiling, as every run's timeout is.
func (h *Handlers) mutate(ctx context.Context, cmd *messages.StageCommand, in messages.MutateInput) (stagework.Output[messages.TestStrength], error) {
	var none stagework.Output[messages.TestStrength]
	h, r, err := h.prepareTestRun(ctx, cmd, in.Samples, in.Image, in.Env)
	if err != nil {
		return none, err
	}
	l := h.limits(cmd.JobID, cmd.Stage, in.Budget, in.Resources)
	ts, err := sandbox.RunMutation(ctx, h.backend, sandbox.MutationRun{
		Env: r.image, Code: in.Code, Tests: in.Tests, Inputs: r.inputs,
		Seed: in.Seed, MaxMutants: min(in.MaxMutants, sandbox.MaxMaxMutants), Budget: min(l.timeout, sandbox.MaxMutateBudget),
		Memory: l.memory, CPUs: l.cpus, JobID: cmd.JobID, EnvVars: r.env, Redact: r.redact,
	})
	if err != nil {
		return none, fmt.Errorf("mutation tests: %w", err)
	}
	return stagework.Output[messages.TestStrength]{Value: ts}, nil
}
