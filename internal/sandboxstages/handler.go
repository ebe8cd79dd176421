package sandboxstages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/objects"
	"github.com/autocoder/autocoder/internal/profile"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/secretsource"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

// SampleFetcher gives local paths for samples (internal/objects.Store).
type SampleFetcher interface {
	FetchAll(ctx context.Context, refs []messages.SampleRef) (map[string]string, error)
}

// Config configures Handlers. The zero value of every field but Backend and
// Samples means its default.
type Config struct {
	// Backend runs the sandboxes. Required. Its name is part of every
	// stage's version: an image built by Docker is not an environment the
	// process backend can run.
	Backend sandbox.Backend
	// Samples fetches the jobs' samples. Required.
	Samples SampleFetcher
	// Outputs stores the files of File and Dir outputs of the acceptance
	// and run stages (the outputs object store), so that clients can
	// download them; each output's value then names its object. Nil: they
	// are not stored.
	Outputs OutputStore
	// Workspace keeps the agent's workspace files (agent.go); nil: the
	// agent_tool stage fails, saying so.
	Workspace WorkspaceStore
	// FailedRuns remembers failing test runs (failedruns.go); nil: none.
	FailedRuns FailedRunRecorder
	// Ceilings cap every run's limits (ceilings.go); zero fields mean
	// their defaults.
	Ceilings Ceilings
	// Logger receives the cuts to the ceilings. Nil discards them.
	Logger *slog.Logger
	// Secrets gives the runs of jobs that name secrets their values
	// (settings.go); nil: a job naming a secret fails, saying so.
	Secrets *secretsource.Source
	// Python is the version of Backend's interpreter ("3.11") and
	// PythonBackends the backends of the other versions this worker
	// offers (AUTOCODER_PYTHONS): a job's options.python picks one
	// (settings.go). Empty: Backend alone, whatever its version.
	Python         string
	PythonBackends map[string]sandbox.Backend
}

// Handlers does the sandbox pool's stages on a sandbox.Backend.
type Handlers struct {
	backend   sandbox.Backend
	samples   SampleFetcher
	outputs   OutputStore
	workspace WorkspaceStore
	// failedRuns remembers failing test runs (failedruns.go); nil: none.
	failedRuns FailedRunRecorder
	std        stdlibProbe // the sandbox interpreter's stdlib, learned at the first build
	ceilings   Ceilings
	log        *slog.Logger
	// secrets and pythons serve the jobs' sandbox settings (settings.go).
	secrets *secretsource.Source
	python  string
	pythons map[string]*Handlers
}

// New validates cfg and returns the handlers.
func New(cfg Config) (*Handlers, error) {
	if cfg.Backend == nil || cfg.Samples == nil {
		return nil, errors.New("sandboxstages: Config.Backend and Config.Samples are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handlers{backend: cfg.Backend, samples: cfg.Samples, outputs: cfg.Outputs, workspace: cfg.Workspace,
		failedRuns: cfg.FailedRuns, ceilings: cfg.Ceilings.withDefaults(), log: cfg.Logger, secrets: cfg.Secrets}
	h.offerPythons(cfg.Python, cfg.PythonBackends) // settings.go
	return h, nil
}

// Register puts the sandbox stages on mux. Each depends on the backend
// (stagework.DependsOn); each that runs code, also on what the job's runs
// run on and on its secrets (keyPart).
func (h *Handlers) Register(mux *stagework.Mux) {
	backend := stagework.DependsOn("backend", h.backend.Name())
	// The interpreter or image, and the job's secrets, hashed (settings.go).
	runsOn := stagework.KeyPart(h.keyPart)
	stagework.Register(mux, messages.StageProfile, h.profile, backend) // in Go: no sandbox
	stagework.Register(mux, messages.StageBuild, h.build, backend, runsOn)
	stagework.Register(mux, messages.StageRunTests, h.runTests, backend, runsOn)
	stagework.Register(mux, messages.StageAcceptance, h.runScript, backend, runsOn)
	stagework.Register(mux, messages.StageRun, h.runScript, backend, runsOn)
	stagework.Register(mux, messages.StageAgentTool, h.agentTool, backend, runsOn) // agent.go
	stagework.Register(mux, messages.StageMutate, h.mutate, backend, runsOn,
		stagework.DependsOn("mutate", sandbox.MutateScriptVersion)) // mutate.go
}

func (h *Handlers) profile(ctx context.Context, cmd *messages.StageCommand, in messages.ProfileInput) (stagework.Output[messages.ProfileOutput], error) {
	var none stagework.Output[messages.ProfileOutput]
	h, err := h.forPython(cmd) // the handlers of the job's Python version (settings.go)
	if err != nil {
		return none, bus.Permanent(err)
	}
	paths, err := h.fetch(ctx, in.Samples)
	if err != nil {
		return none, err
	}
	var ss []profile.Sample
	for _, r := range in.Samples {
		ss = append(ss, profile.Sample{Name: r.Name, FileName: r.FileName, Path: paths[r.FileName]})
	}
	rep, err := profile.Profile(ctx, ss, profile.Options{MaxSampleRows: in.MaxSampleRows, Constraints: in.Constraints})
	if err != nil {
		return none, bus.Permanent(fmt.Errorf("profile samples: %w", err))
	}
	rd := rep.Rendition()
	out := messages.ProfileOutput{DataContext: rd.DataContext(), GeneratedSchemas: rd.PanderaSchemas(), Unparsed: rep.Unparsed}
	if len(rep.Unparsed) > 0 {
		// What the constraint stage needs to read them and render again.
		for _, c := range rd.Columns() {
			out.Columns = append(out.Columns, messages.DataColumn{Sample: c.Sample, Name: c.Name, Type: string(c.Type)})
		}
		if out.Render, err = json.Marshal(rd); err != nil {
			return none, bus.Permanent(fmt.Errorf("profile samples: %w", err))
		}
	}
	return stagework.Output[messages.ProfileOutput]{Value: out}, nil
}

func (h *Handlers) build(ctx context.Context, cmd *messages.StageCommand, in messages.BuildInput) (stagework.Output[messages.BuildOutput], error) {
	var none stagework.Output[messages.BuildOutput]
	h, err := h.forPython(cmd) // the handlers of the job's Python version (settings.go)
	if err != nil {
		return none, bus.Permanent(err)
	}
	env, err := h.backend.Build(ctx, sandbox.EnvSpec{Packages: in.Packages, SystemPackages: in.SystemPackages, Name: in.Name})
	var inv *sandbox.InvalidPackageError
	if errors.As(err, &inv) {
		// Not a failed stage: the coordinator acts on the names.
		return stagework.Output[messages.BuildOutput]{Value: messages.BuildOutput{InvalidPackages: inv.Packages, Log: inv.Log}}, nil
	}
	if err != nil {
		return none, fmt.Errorf("build environment: %w", err)
	}
	return stagework.Output[messages.BuildOutput]{Value: messages.BuildOutput{Image: env.ID, Log: env.Log, Stdlib: h.stdlib(ctx, cmd.JobID, env.ID),
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

func (h *Handlers) runTests(ctx context.Context, cmd *messages.StageCommand, in messages.RunTestsInput) (stagework.Output[messages.TestReport], error) {
	var none stagework.Output[messages.TestReport]
	h, r, err := h.prepareTestRun(ctx, cmd, in.Samples, in.Image, in.Env)
	if err != nil {
		return none, err
	}
	l := h.limits(cmd.JobID, cmd.Stage, in.Timeout, in.Resources)
	rep, err := sandbox.RunTests(ctx, h.backend, sandbox.TestRun{
		Env: r.image, Code: in.Code, Tests: in.Tests, Inputs: r.inputs,
		Timeout: l.timeout, Memory: l.memory, CPUs: l.cpus, JobID: cmd.JobID, EnvVars: r.env, Redact: r.redact,
	})
	if err != nil {
		return none, fmt.Errorf("run tests: %w", err)
	}
	h.rememberFailure(ctx, cmd, in, rep)
	return stagework.Output[messages.TestReport]{Value: rep}, nil
}

// testRun is what a run of a job's tests needs besides its files: the
// samples fetched, the environment built, the job's variables and secrets.
type testRun struct {
	inputs map[string]string
	image  string
	env    map[string]string
	redact func([]byte) []byte
}

// prepareTestRun gets a run of tests ready (runTests, mutate): the
// handlers of the job's Python version, its samples, its environment and
// its variables.
func (h *Handlers) prepareTestRun(ctx context.Context, cmd *messages.StageCommand, samples []messages.SampleRef, image string, env messages.BuildInput) (*Handlers, testRun, error) {
	var r testRun
	h, err := h.forPython(cmd) // the handlers of the job's Python version (settings.go)
	if err != nil {
		return nil, r, bus.Permanent(err)
	}
	if r.inputs, err = h.fetch(ctx, samples); err != nil {
		return nil, r, err
	}
	if r.image, err = h.ensureEnv(ctx, image, env); err != nil {
		return nil, r, err
	}
	if r.env, r.redact, err = h.jobEnv(cmd); err != nil { // settings.go
		return nil, r, bus.Permanent(err)
	}
	return h, r, nil
}

func (h *Handlers) runScript(ctx context.Context, cmd *messages.StageCommand, in messages.AcceptanceInput) (stagework.Output[messages.AcceptanceOutput], error) {
	var none stagework.Output[messages.AcceptanceOutput]
	h, err := h.forPython(cmd) // the handlers of the job's Python version (settings.go)
	if err != nil {
		return none, bus.Permanent(err)
	}
	inputs, err := h.fetch(ctx, in.Samples)
	if err != nil {
		return none, err
	}
	inputs, cleanup, err := unpackDirs(in.Samples, inputs)
	if err != nil {
		return none, err
	}
	defer cleanup()
	image, err := h.ensureEnv(ctx, in.Image, in.Env)
	if err != nil {
		return none, err
	}
	env, redact, err := h.jobEnv(cmd) // settings.go
	if err != nil {
		return none, bus.Permanent(err)
	}
	if in.CheckImports {
		if out, missing, err := h.checkImports(ctx, cmd, image, in.Code); err != nil || missing {
			return out, err
		}
	}
	l := h.limits(cmd.JobID, cmd.Stage, in.Timeout, in.Resources)
	out, res, err := sandbox.RunScriptFiles(ctx, h.backend, sandbox.ScriptRun{
		Env: image, Code: in.Code, Inputs: inputs, Args: in.Args, Outputs: in.Outputs,
		Timeout: l.timeout, Memory: l.memory, CPUs: l.cpus, JobID: cmd.JobID, OutputCaps: h.ceilings.Outputs,
		EnvVars: env, Redact: redact,
	})
	if err != nil {
		return none, fmt.Errorf("run script: %w", err)
	}
	if h.outputs != nil {
		if err := storeOutputs(ctx, h.outputs, out.Outputs, res); err != nil {
			return none, err
		}
	}
	return stagework.Output[messages.AcceptanceOutput]{Value: out}, nil
}

// ensureEnv makes sure this worker has the environment: with many
// sandbox-workers, the one that built it may not be the one that runs the
// tests. Build is idempotent and returns at once when the environment exists,
// so it is simply asked again.
func (h *Handlers) ensureEnv(ctx context.Context, image string, env messages.BuildInput) (string, error) {
	if image == "" && len(env.Packages) == 0 && len(env.SystemPackages) == 0 {
		return "", bus.Permanent(errors.New("no environment to run in"))
	}
	e, err := h.backend.Build(ctx, sandbox.EnvSpec{Packages: env.Packages, SystemPackages: env.SystemPackages, Name: env.Name})
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
	if errors.Is(err, objects.ErrBadObject) {
		return nil, bus.Permanent(err)
	}
	return paths, err
}
