package sandboxstages

import (
	"context"
	"fmt"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

// mutate measures the strength of passing tests by mutation
// (sandbox.RunMutation). The budget is capped at the worker's timeout
// ceiling, as every run's timeout is.
func (h *Handlers) mutate(ctx context.Context, cmd *messages.StageCommand, in messages.MutateInput) (stagework.Output[messages.TestStrength], error) {
	var none stagework.Output[messages.TestStrength]
	h, err := h.forPython(cmd) // the handlers of the job's Python version (settings.go)
	if err != nil {
		return none, bus.Permanent(err)
	}
	inputs, err := h.fetch(ctx, in.Samples)
	if err != nil {
		return none, err
	}
	image, err := h.ensureEnv(ctx, in.Image, in.Env)
	if err != nil {
		return none, err
	}
	env, redact, err := h.jobEnv(cmd) // settings.go
	if err != nil {
		return none, bus.Permanent(err)
	}
	l := h.limits(cmd.JobID, cmd.Stage, in.Budget, in.Resources)
	ts, err := sandbox.RunMutation(ctx, h.backend, sandbox.MutationRun{
		Env: image, Code: in.Code, Tests: in.Tests, Inputs: inputs,
		Seed: in.Seed, MaxMutants: min(in.MaxMutants, sandbox.MaxMaxMutants), Budget: min(l.timeout, sandbox.MaxMutateBudget),
		Memory: l.memory, CPUs: l.cpus, JobID: cmd.JobID, EnvVars: env, Redact: redact,
	})
	if err != nil {
		return none, fmt.Errorf("mutation tests: %w", err)
	}
	return stagework.Output[messages.TestStrength]{Value: ts}, nil
}
