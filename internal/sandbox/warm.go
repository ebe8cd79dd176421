package sandbox

import (
	_ "embed"
	"strings"
)

// WarmRunSource is the Python both backends' warm runners run a RunSpec
// with, in a forked interpreter that has imported pytest: it defines
// warm_run(args, env), which runs args (of WarmArgs) with exactly env as a
// fresh interpreter would, and exits.
//
//go:embed warmrun.py
var WarmRunSource string

// A warm runner (docs/sandbox.md) runs a RunSpec in a child forked from a
// long-lived interpreter that has imported pytest once, instead of a
// fresh interpreter. It can do so only for what a fresh interpreter would
// do the same way: these are its rules, the same on every backend.

// WarmZygoteEnv are the interpreter variables a warm runner's zygote
// starts with: the harness's (harnessEnv), which are read at start-up and
// so cannot be changed per run.
func WarmZygoteEnv() map[string]string {
	return map[string]string{"PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}
}

// Why a warm run fell back to a cold one: the reasons a backend gives its
// fallback hook (bwrap.Config.OnWarmFallback), the label of the metric.
const (
	WarmFallbackStart    = "start"    // the warm runner could not be started
	WarmFallbackDead     = "dead"     // the warm runner was gone when the run was sent
	WarmFallbackWedged   = "wedged"   // the warm runner's child did not answer in time
	WarmFallbackCrashed  = "crashed"  // the child, or the warm runner under it, died before the run's result
	WarmFallbackProtocol = "protocol" // the child said something the worker cannot read, or reported an error
)

// WarmFallbackReasons lists the reasons, for a metric's series.
var WarmFallbackReasons = []string{WarmFallbackStart, WarmFallbackDead, WarmFallbackWedged, WarmFallbackCrashed, WarmFallbackProtocol}

// warmPerRunEnv are the PYTHON* variables a warm child applies itself.
var warmPerRunEnv = map[string]bool{"PYTHONDONTWRITEBYTECODE": true, "PYTHONUNBUFFERED": true}

// WarmArgs is what a warm runner runs for spec: its argv without the
// interpreter (["-m", module, ...], ["-c", code, ...] or [script, ...],
// after an optional "-I"), or "" and why a cold run is needed: inputs
// (host paths the process backend's zygote cannot see), other interpreter
// options, or a variable read at interpreter start-up (PYTHON* other than
// the zygote's, LD_*).
func WarmArgs(spec RunSpec) (args []string, whyCold string) {
	switch {
	case len(spec.Inputs) > 0:
		return nil, "inputs"
	case len(spec.Argv) < 2 || (spec.Argv[0] != "python" && spec.Argv[0] != "python3"):
		return nil, "not a python argv"
	}
	args = spec.Argv[1:]
	rest := args
	if rest[0] == "-I" && len(rest) > 1 {
		rest = rest[1:]
	}
	switch {
	case rest[0] == "-m" || rest[0] == "-c":
		if len(rest) < 2 {
			return nil, "interpreter options"
		}
	case strings.HasPrefix(rest[0], "-"):
		return nil, "interpreter options"
	}
	if why := warmEnvCold(spec.EnvVars); why != "" {
		return nil, why
	}
	return args, ""
}

// warmEnvCold says why env needs a cold run, or "".
func warmEnvCold(env map[string]string) string {
	zygote := WarmZygoteEnv()
	for k, v := range env {
		switch {
		case strings.HasPrefix(k, "LD_"):
			return "dynamic linker variables"
		case !strings.HasPrefix(k, "PYTHON") || warmPerRunEnv[k]:
		case zygote[k] != v:
			return "interpreter variable " + k
		}
	}
	return ""
}
