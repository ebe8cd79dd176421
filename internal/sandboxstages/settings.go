package sandboxstages

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/secretsource"
	"github.com/autocoder/autocoder/pkg/messages"
)

// A job's sandbox settings come with each of its sandbox stage commands
// (messages.StageSettings): env_vars and the values of its secrets are set
// in the environment of its test runs and script runs, every secret value
// is cut out of what a run returns, and options.python picks the Handlers
// of that version (each has its own backend: an interpreter, or a base
// image).

// offerPythons makes h the handlers of Python version (its backend's) and
// gives it handlers of each other version, on that version's backend and
// otherwise as h.
func (h *Handlers) offerPythons(version string, backends map[string]sandbox.Backend) {
	if version == "" && len(backends) == 0 {
		return
	}
	h.python = version
	h.pythons = map[string]*Handlers{version: h}
	for v, b := range backends {
		h.pythons[v] = &Handlers{backend: b, samples: h.samples, outputs: h.outputs, workspace: h.workspace,
			failedRuns: h.failedRuns, ceilings: h.ceilings, log: h.log, secrets: h.secrets, python: v}
	}
}

// forPython is the handlers of the Python version the command asks for.
func (h *Handlers) forPython(cmd *messages.StageCommand) (*Handlers, error) {
	want := ""
	if cmd.Settings != nil {
		want = cmd.Settings.Python
	}
	if want == "" {
		return h, nil
	}
	if o, ok := h.pythons[want]; ok {
		return o, nil
	}
	have := h.python
	if h.pythons == nil {
		if v, ok := h.backend.(sandbox.PythonVersioned); ok {
			have = v.PythonVersion()
		}
		if have == want || have == "" {
			return h, nil // one interpreter, and it is that version (or cannot say)
		}
		return nil, fmt.Errorf("this sandbox worker runs Python %s, not %s (options.python); set AUTOCODER_PYTHONS to offer more", have, want)
	}
	return nil, fmt.Errorf("this sandbox worker offers Python %s, not %s (options.python)",
		strings.Join(slices.Sorted(maps.Keys(h.pythons)), ", "), want)
}

// jobEnv is the environment the job's runs get (env_vars and the values of
// its secrets) and what cuts those values out of what a run returns.
func (h *Handlers) jobEnv(cmd *messages.StageCommand) (map[string]string, func([]byte) []byte, error) {
	s := cmd.Settings
	if s == nil || len(s.EnvVars)+len(s.Secrets) == 0 {
		return nil, nil, nil
	}
	env := maps.Clone(s.EnvVars)
	if env == nil {
		env = map[string]string{}
	}
	if len(s.Secrets) == 0 {
		return env, nil, nil
	}
	if h.secrets == nil {
		return nil, nil, fmt.Errorf("the job names secrets (%s) and this sandbox worker has no secret source", strings.Join(s.Secrets, ", "))
	}
	values, err := h.secrets.Resolve(s.Secrets)
	if err != nil {
		return nil, nil, err
	}
	maps.Copy(env, values)
	return env, func(b []byte) []byte { return secretsource.Redact(b, values) }, nil
}

// keyPart is what a sandbox stage's cache key gets beyond its command
// (stagework.KeyPart): what the job's runs run on here
// (sandbox.Identified: the interpreter, the base image), so a result
// computed on another is not served, and an HMAC of the values of the
// job's secrets on this worker, so a rotated secret is not answered from
// the cache. A secret the worker lacks fails the stage, saying so.
func (h *Handlers) keyPart(_ context.Context, cmd *messages.StageCommand) ([]byte, error) {
	o, err := h.forPython(cmd)
	if err != nil {
		return nil, bus.Permanent(err)
	}
	part := []byte{}
	if id, ok := o.backend.(sandbox.Identified); ok {
		part = append(part, id.Identity()...)
	}
	if cmd.Settings == nil || len(cmd.Settings.Secrets) == 0 {
		return part, nil
	}
	if h.secrets == nil {
		return nil, bus.Permanent(fmt.Errorf("the job names secrets (%s) and this sandbox worker has no secret source", strings.Join(cmd.Settings.Secrets, ", ")))
	}
	values, err := h.secrets.Resolve(cmd.Settings.Secrets)
	if err != nil {
		return nil, bus.Permanent(err)
	}
	return append(append(part, 0), h.secrets.KeyPart(values)...), nil
}
