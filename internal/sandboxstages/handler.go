package sandboxstages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/autocoder/autocoder/internal/profile"
	"github.com/autocoder/autocoder/internal/samples"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Version of the sandbox stages; bump when what a stage computes changes.
//
// 2: the profile stage returns the unparsed constraints and its rendition;
// File and Dir outputs carry the object they were stored as; Dir inputs.
// 3: the build stage reports the sandbox interpreter's stdlib module names.
// 4: the profile decodes non-UTF-8 text with bytes 0x80-0x9f as cp1252;
// constraints that do not fit their column are kept as text.
const Version = "sandbox-stages-4"

// SampleFetcher gives local paths for samples (internal/samples.Store).
type SampleFetcher interface {
	FetchAll(ctx context.Context, refs []messages.SampleRef) (map[string]string, error)
}

// Handlers does the sandbox pool's stages on a sandbox.Backend.
type Handlers struct {
	backend sandbox.Backend
	samples SampleFetcher
	outputs OutputStore // nil: File and Dir outputs are not stored
	std     stdlibProbe // the sandbox interpreter's stdlib, learned at the first build
	// ceilings cap every run's limits (ceilings.go); log notes the cuts.
	ceilings Ceilings
	log      *slog.Logger
	// workspace keeps the agent's workspace files (agent.go); nil: no agent_tool stages.
	workspace WorkspaceStore
	// failedRuns remembers failing test runs (failedruns.go); nil: none.
	failedRuns FailedRunRecorder
}

var _ stagework.Handler = (*Handlers)(nil)

// New returns the handlers, with the default Ceilings (see WithCeilings).
func New(b sandbox.Backend, s SampleFetcher) *Handlers {
	return &Handlers{backend: b, samples: s, ceilings: Ceilings{}.withDefaults(), log: slog.New(slog.DiscardHandler)}
}

// WithOutputs makes the acceptance and run stages store the files of File
// and Dir outputs in o (the outputs object store), so that clients can
// download them; each output's value then names its object. It returns h.
func (h *Handlers) WithOutputs(o OutputStore) *Handlers {
	h.outputs = o
	return h
}

// Version implements stagework.Handler. The backend is part of it: an image
// built by Docker is not an environment the process backend can run.
func (h *Handlers) Version(stage messages.Stage) string {
	if stage == messages.StageMutate {
		return Version + "/" + sandbox.MutateScriptVersion + "/" + h.backend.Name()
	}
	return Version + "/" + h.backend.Name()
}

// Handle implements stagework.Handler.
func (h *Handlers) Handle(ctx context.Context, cmd *messages.StageCommand) (stagework.Output, error) {
	switch cmd.Stage {
	case messages.StageProfile:
		var in messages.ProfileInput
		if err := decode(cmd, &in); err != nil {
			return stagework.Output{}, err
		}
		return h.profile(ctx, in)
	case messages.StageBuild:
		var in messages.BuildInput
		if err := decode(cmd, &in); err != nil {
			return stagework.Output{}, err
		}
		return h.build(ctx, cmd.JobID, in)
	case messages.StageRunTests:
		var in messages.RunTestsInput
		if err := decode(cmd, &in); err != nil {
			return stagework.Output{}, err
		}
		return h.runTests(ctx, cmd, in)
	case messages.StageAcceptance, messages.StageRun:
		var in messages.AcceptanceInput
		if err := decode(cmd, &in); err != nil {
			return stagework.Output{}, err
		}
		return h.runScript(ctx, cmd, in)
	case messages.StageMutate:
		var in messages.MutateInput
		if err := decode(cmd, &in); err != nil {
			return stagework.Output{}, err
		}
		return h.mutate(ctx, cmd, in) // mutate.go
	case messages.StageAgentTool:
		var in messages.AgentToolInput
		if err := decode(cmd, &in); err != nil {
			return stagework.Output{}, err
		}
		return h.agentTool(ctx, cmd, in) // agent.go
	}
	return stagework.Output{}, stagework.Permanent(fmt.Errorf("sandbox worker cannot do stage %q", cmd.Stage))
}

func decode(cmd *messages.StageCommand, v any) error {
	if err := json.Unmarshal(cmd.Input, v); err != nil {
		return stagework.Permanent(fmt.Errorf("decode %s input: %w", cmd.Stage, err))
	}
	return nil
}

func (h *Handlers) profile(ctx context.Context, in messages.ProfileInput) (stagework.Output, error) {
	paths, err := h.fetch(ctx, in.Samples)
	if err != nil {
		return stagework.Output{}, err
	}
	var ss []profile.Sample
	for _, r := range in.Samples {
		ss = append(ss, profile.Sample{Name: r.Name, FileName: r.FileName, Path: paths[r.FileName]})
	}
	rep, err := profile.Profile(ctx, ss, profile.Options{MaxSampleRows: in.MaxSampleRows, Constraints: in.Constraints})
	if err != nil {
		return stagework.Output{}, stagework.Permanent(fmt.Errorf("profile samples: %w", err))
	}
	rd := rep.Rendition()
	out := messages.ProfileOutput{DataContext: rd.DataContext(), GeneratedSchemas: rd.PanderaSchemas(), Unparsed: rep.Unparsed}
	if len(rep.Unparsed) > 0 {
		// What the constraint stage needs to read them and render again.
		for _, c := range rd.Columns() {
			out.Columns = append(out.Columns, messages.DataColumn{Sample: c.Sample, Name: c.Name, Type: string(c.Type)})
		}
		if out.Render, err = json.Marshal(rd); err != nil {
			return stagework.Output{}, stagework.Permanent(fmt.Errorf("profile samples: %w", err))
		}
	}
	return stagework.Output{Value: out}, nil
}

func (h *Handlers) build(ctx context.Context, jobID string, in messages.BuildInput) (stagework.Output, error) {
	env, err := h.backend.Build(ctx, sandbox.EnvSpec{Packages: in.Packages, SystemPackages: in.SystemPackages})
	var inv *sandbox.InvalidPackageError
	if errors.As(err, &inv) {
		// Not a failed stage: the coordinator acts on the names.
		return stagework.Output{Value: messages.BuildOutput{InvalidPackages: inv.Packages, Log: inv.Log}}, nil
	}
	if err != nil {
		return stagework.Output{}, fmt.Errorf("build environment: %w", err)
	}
	return stagework.Output{Value: messages.BuildOutput{Image: env.ID, Log: env.Log, Stdlib: h.stdlib(ctx, jobID, env.ID),
		Provenance: provenance(env.Provenance)}}, nil
}

// provenance is the wire form of a build's provenance.
func provenance(arts []sandbox.Artifact) []messages.Artifact {
	var out []messages.Artifact
	for _, a := range arts {
		out = append(out, messages.Artifact{URL: a.URL, SHA256: a.SHA256, Bytes: a.Bytes})
	}
	return out
}

func (h *Handlers) runTests(ctx context.Context, cmd *messages.StageCommand, in messages.RunTestsInput) (stagework.Output, error) {
	inputs, err := h.fetch(ctx, in.Samples)
	if err != nil {
		return stagework.Output{}, err
	}
	image, err := h.ensureEnv(ctx, in.Image, in.Env)
	if err != nil {
		return stagework.Output{}, err
	}
	l := h.limits(cmd.JobID, cmd.Stage, in.Timeout, in.Resources)
	rep, err := sandbox.RunTests(ctx, h.backend, sandbox.TestRun{
		Env: image, Code: in.Code, Tests: in.Tests, Inputs: inputs,
		Timeout: l.timeout, Memory: l.memory, CPUs: l.cpus, JobID: cmd.JobID,
	})
	if err != nil {
		return stagework.Output{}, fmt.Errorf("run tests: %w", err)
	}
	h.rememberFailure(ctx, cmd.JobID, in, rep)
	return stagework.Output{Value: rep}, nil
}

func (h *Handlers) runScript(ctx context.Context, cmd *messages.StageCommand, in messages.AcceptanceInput) (stagework.Output, error) {
	inputs, err := h.fetch(ctx, in.Samples)
	if err != nil {
		return stagework.Output{}, err
	}
	inputs, cleanup, err := unpackDirs(in.Samples, inputs)
	if err != nil {
		return stagework.Output{}, err
	}
	defer cleanup()
	image, err := h.ensureEnv(ctx, in.Image, in.Env)
	if err != nil {
		return stagework.Output{}, err
	}
	l := h.limits(cmd.JobID, cmd.Stage, in.Timeout, in.Resources)
	out, res, err := sandbox.RunScriptFiles(ctx, h.backend, sandbox.ScriptRun{
		Env: image, Code: in.Code, Inputs: inputs, Args: in.Args, Outputs: in.Outputs,
		Timeout: l.timeout, Memory: l.memory, CPUs: l.cpus, JobID: cmd.JobID, OutputCaps: h.ceilings.Outputs,
	})
	if err != nil {
		return stagework.Output{}, fmt.Errorf("run script: %w", err)
	}
	if h.outputs != nil {
		if err := storeOutputs(ctx, h.outputs, out.Outputs, res); err != nil {
			return stagework.Output{}, err
		}
	}
	return stagework.Output{Value: out}, nil
}

// ensureEnv makes sure this worker has the environment: with many
// sandbox-workers, the one that built it may not be the one that runs the
// tests. Build is idempotent and returns at once when the environment exists,
// so it is simply asked again.
func (h *Handlers) ensureEnv(ctx context.Context, image string, env messages.BuildInput) (string, error) {
	if image == "" && len(env.Packages) == 0 && len(env.SystemPackages) == 0 {
		return "", stagework.Permanent(errors.New("no environment to run in"))
	}
	e, err := h.backend.Build(ctx, sandbox.EnvSpec{Packages: env.Packages, SystemPackages: env.SystemPackages})
	if err != nil {
		return "", fmt.Errorf("prepare environment: %w", err)
	}
	// The package set is what matters: if another backend or builder
	// version built the recorded image, this one's own build is used.
	return e.ID, nil
}

// fetch gets the samples; a sample that can never be fetched fails the
// stage at once instead of after every retry.
func (h *Handlers) fetch(ctx context.Context, refs []messages.SampleRef) (map[string]string, error) {
	paths, err := h.samples.FetchAll(ctx, refs)
	if errors.Is(err, samples.ErrBadSample) {
		return nil, stagework.Permanent(err)
	}
	return paths, err
}
