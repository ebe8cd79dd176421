package sandboxstages

import (
	"context"
	"sync"
	"time"

	"github.com/autocoder/autocoder/internal/pyscan"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/pkg/messages"
)

// stdlibProbeAttempts bounds how often a worker tries to learn its
// interpreter's standard library when the probe fails.
const stdlibProbeAttempts = 3

// stdlibProbe is what a worker knows of its sandbox interpreter's standard
// library. Every environment of a backend has the same interpreter (the
// process backend's AUTOCODER_PYTHON, the Docker backend's base image), so
// the first successful build teaches it once for the worker's lifetime.
type stdlibProbe struct {
	mu       sync.Mutex
	names    []string // sorted; nil until learned
	attempts int
}

// stdlib returns the standard library module names of the interpreter in
// environment env (built for job jobID), asking it (sys.stdlib_module_names, in a sandbox of env)
// the first time. It returns nil when the interpreter could not be asked;
// the build is not failed for that: the coordinator then falls back to the
// CPython 3.11 list, and says so.
func (h *Handlers) stdlib(ctx context.Context, jobID, env string) []string {
	p := &h.std
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.names != nil || p.attempts >= stdlibProbeAttempts {
		return p.names
	}
	p.attempts++
	l := h.limits(jobID, messages.StageBuild, messages.Duration(30*time.Second), messages.Resources{}) // the ceilings hold here too
	res, err := h.backend.Run(ctx, sandbox.RunSpec{
		Env:         env,
		JobID:       jobID, // the first job to build on this worker pays for the probe
		Argv:        []string{"python", "-I", "-c", pyscan.StdlibScript},
		Timeout:     l.timeout,
		Memory:      l.memory,
		CPUs:        l.cpus,
		OutputLimit: 256 << 10,
	})
	if ctx.Err() != nil {
		p.attempts-- // the job was cancelled: no verdict on the interpreter
		return nil
	}
	if err != nil || res.ExitCode != 0 || res.TimedOut || res.Truncated {
		return nil
	}
	names, err := pyscan.ParseStdlib(res.Stdout)
	if err != nil {
		return nil
	}
	p.names = names
	return names
}
