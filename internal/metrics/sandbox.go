package metrics

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/internal/sandbox"
)

// Outcomes of a sandbox run (SandboxRunsTotal's outcome label).
const (
	RunPassed       = "passed"         // exit 0
	RunFailed       = "failed"         // a non-zero exit of the code (a failing test, an exception)
	RunTimeout      = "timeout"        // killed at its wall-clock timeout
	RunOOM          = "oom"            // killed by SIGKILL (exit 137) before its timeout: the memory cap, as a rule
	RunOutputCapped = "output_capped"  // finished, but stdout or stderr went past the cap and was cut
	RunInfra        = "infrastructure" // the backend could not run it (engine down, environment missing)
)

// observedBackend measures a sandbox.Backend's runs and builds.
type observedBackend struct {
	sandbox.Backend
	runs, builds       *prometheus.CounterVec
	runSecs, buildSecs prometheus.Observer
}

var (
	_ sandbox.Backend         = (*observedBackend)(nil)
	_ sandbox.PythonVersioned = (*observedBackend)(nil)
	_ sandbox.Identified      = (*observedBackend)(nil)
)

// PythonVersion implements sandbox.PythonVersioned: the counted backend's
// ("" when it cannot say, as when it does not implement it). A wrapper
// that hid it would let a job asking for another Python run on this one.
func (o *observedBackend) PythonVersion() string {
	if v, ok := o.Backend.(sandbox.PythonVersioned); ok {
		return v.PythonVersion()
	}
	return ""
}

// Identity implements sandbox.Identified: the counted backend's, which
// sandbox stage results are cached under ("" when it says none).
func (o *observedBackend) Identity() string {
	if id, ok := o.Backend.(sandbox.Identified); ok {
		return id.Identity()
	}
	return ""
}

// ObserveBackend returns b with its runs counted by outcome
// (SandboxRunsTotal, SandboxRunSeconds) and its builds by outcome (ok,
// failed: the installer refused; error: infrastructure) with their time
// (SandboxBuildsTotal, SandboxBuildSeconds). A build that reuses an
// environment counts too, and is fast.
func ObserveBackend(b sandbox.Backend, reg prometheus.Registerer) (sandbox.Backend, error) {
	o := &observedBackend{Backend: b}
	runs, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: SandboxRunsTotal,
		Help: "Sandbox runs, by backend and outcome (passed, failed, timeout, oom, output_capped, infrastructure)."},
		[]string{"backend", "outcome"}))
	if err != nil {
		return nil, fmt.Errorf("metrics: register %s: %w", SandboxRunsTotal, err)
	}
	runSecs, err := register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: SandboxRunSeconds,
		Help: "Wall time of sandbox runs, by backend.", Buckets: StageBuckets}, []string{"backend"}))
	if err != nil {
		return nil, fmt.Errorf("metrics: register %s: %w", SandboxRunSeconds, err)
	}
	builds, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: SandboxBuildsTotal,
		Help: "Environment builds (image builds on docker), by backend and outcome (ok, failed, error)."},
		[]string{"backend", "outcome"}))
	if err != nil {
		return nil, fmt.Errorf("metrics: register %s: %w", SandboxBuildsTotal, err)
	}
	buildSecs, err := register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: SandboxBuildSeconds,
		Help: "Time of environment builds, reuses included, by backend.", Buckets: StageBuckets}, []string{"backend"}))
	if err != nil {
		return nil, fmt.Errorf("metrics: register %s: %w", SandboxBuildSeconds, err)
	}
	o.runs, o.builds = runs, builds
	// Every series from the start: rates and ratios see the first of each.
	for _, outcome := range []string{RunPassed, RunFailed, RunTimeout, RunOOM, RunOutputCapped, RunInfra} {
		runs.WithLabelValues(b.Name(), outcome)
	}
	for _, outcome := range []string{"ok", "failed", "error"} {
		builds.WithLabelValues(b.Name(), outcome)
	}
	o.runSecs, o.buildSecs = runSecs.WithLabelValues(b.Name()), buildSecs.WithLabelValues(b.Name())
	return o, nil
}

// Run implements sandbox.Backend, counting the run by RunOutcome.
func (o *observedBackend) Run(ctx context.Context, spec sandbox.RunSpec) (sandbox.RunResult, error) {
	began := time.Now()
	res, err := o.Backend.Run(ctx, spec)
	if ctx.Err() != nil {
		return res, err // abandoned (shutdown, cancel): a kill then is no verdict on the code or the sandbox
	}
	o.runs.WithLabelValues(o.Name(), RunOutcome(res, err)).Inc()
	o.runSecs.Observe(time.Since(began).Seconds())
	return res, err
}

// Build implements sandbox.Backend, counting and timing the build.
func (o *observedBackend) Build(ctx context.Context, spec sandbox.EnvSpec) (sandbox.Env, error) {
	began := time.Now()
	env, err := o.Backend.Build(ctx, spec)
	if err != nil && ctx.Err() != nil {
		return env, err
	}
	outcome := "ok"
	switch {
	case errors.Is(err, sandbox.ErrBuildFailed) || errors.Is(err, sandbox.ErrInvalidPackage):
		outcome = "failed"
	case err != nil:
		outcome = "error"
	}
	o.builds.WithLabelValues(o.Name(), outcome).Inc()
	o.buildSecs.Observe(time.Since(began).Seconds())
	return env, err
}

// RunOutcome is the outcome label of a run that returned res and err.
func RunOutcome(res sandbox.RunResult, err error) string {
	switch {
	case err != nil:
		return RunInfra
	case res.TimedOut:
		return RunTimeout
	case res.ExitCode == 128+9:
		return RunOOM
	case res.Truncated:
		return RunOutputCapped
	case res.ExitCode == 0:
		return RunPassed
	}
	return RunFailed
}
