package pyexec

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/internal/sandbox"
)

//go:embed prelude.py
var prelude []byte

// Prelude is the Python that runs before every program (for the docs and
// tests that read it).
func Prelude() string { return string(prelude) }

// Runner runs programs in the sandbox's own CPython. It is safe for
// concurrent use.
type Runner struct {
	// Backend runs the interpreter; required.
	Backend sandbox.Backend
	// Env is the environment to run in; "" builds the base environment
	// (Backend.Build with no packages) on first use.
	Env    string
	Limits Limits

	mu  sync.Mutex
	env string
}

// Result is what a run produced: the value, what was printed, and the
// files written under /var/outputs.
type Result struct {
	codemode.Result
	// Files are the regular files the program left under /var/outputs,
	// by path relative to it, within Limits.Outputs.
	Files map[string][]byte
	// FilesOmitted lists files left out (past the caps, or not regular).
	FilesOmitted []string
	// ToolCalls counts the calls the program made.
	ToolCalls int
}

// Run checks, then runs one program with the tools. A program's own
// failure (syntax, the static check, an exception, a limit) is an
// *codemode.Error; any other error is the infrastructure's (the sandbox
// could not run, ctx ended), and the Result is then empty.
func (r *Runner) Run(ctx context.Context, code string, tools *codemode.Registry) (Result, error) {
	return r.run(ctx, code, tools, r.Limits)
}

func (r *Runner) run(ctx context.Context, code string, tools *codemode.Registry, limits Limits) (Result, error) {
	if r.Backend == nil {
		return Result{}, errors.New("pyexec: Runner without a sandbox backend")
	}
	limits = limits.WithDefaults()
	spec, err := programSpec(tools, limits)
	if err != nil {
		return Result{}, err
	}
	env, err := r.environment(ctx)
	if err != nil {
		return Result{}, err
	}
	b := newBridge(tools, limits)
	ctx = codemode.WithCallOrdinals(ctx) // one program: cached tools number its identical calls
	run := sandbox.RunSpec{
		Env:  env,
		Argv: []string{"python", "-I", "prelude.py"},
		Files: map[string][]byte{
			"prelude.py": prelude, "program.py": []byte(code), "spec.json": spec,
		},
		Timeout: limits.WallTime, Memory: limits.Memory, CPUs: limits.CPUs,
		OutputLimit: 16 << 10, CollectOutputs: true, OutputCaps: limits.Outputs,
		Stdio: b.run,
	}
	start := time.Now()
	res, err := r.Backend.Run(ctx, run)
	b.wait()
	if errors.Is(err, sandbox.ErrEnvNotFound) {
		r.forgetEnv(env) // built by a backend that is gone: build again next time
	}
	out := Result{Result: codemode.Result{Output: b.output(), Duration: time.Since(start)},
		Files: res.Outputs, FilesOmitted: res.OutputsOmitted, ToolCalls: b.calls}
	if err != nil && !errors.Is(err, errStop) {
		return Result{}, fmt.Errorf("pyexec: run: %w", err)
	}
	runErr := b.outcome(res, limits)
	if runErr == nil && b.done.HasValue {
		// Numbers stay as CPython wrote them (json.Number): a big int or
		// a float's shortest repr comes back exactly.
		dec := json.NewDecoder(bytes.NewReader(b.done.Value))
		dec.UseNumber()
		if err := dec.Decode(&out.Value); err != nil {
			runErr = &codemode.Error{Kind: codemode.KindRuntime, Msg: "the program's value is not JSON: " + err.Error()}
		}
	}
	if runErr != nil {
		return out, runErr
	}
	return out, nil
}

// outcome is the run's error: the bridge's failure, the program's own
// report, or what the sandbox says of an interpreter that never reported.
func (b *bridge) outcome(res sandbox.RunResult, limits Limits) *codemode.Error {
	b.mu.Lock()
	failure, done := b.failure, b.done
	b.mu.Unlock()
	switch {
	case failure != nil:
		return failure
	case done != nil && done.OK:
		return nil
	case done != nil:
		return &codemode.Error{Kind: codemode.ErrorKind(done.Kind), Line: done.Line, Col: done.Col,
			Msg: done.Msg, Backtrace: done.Trace}
	case res.TimedOut:
		msg := fmt.Sprintf("wall time limit: the program ran longer than %s", limits.WallTime)
		if w := b.waiting(); len(w) > 0 {
			msg += "; it was waiting for " + strings.Join(w, ", ")
		}
		return &codemode.Error{Kind: codemode.KindLimit, Msg: msg}
	case res.ExitCode == 128+9 || res.ExitCode == -1:
		return &codemode.Error{Kind: codemode.KindLimit, Msg: fmt.Sprintf(
			"memory limit: the program was killed, most likely for using more than %s of memory", fmtBytes(limits.Memory))}
	case res.ExitCode == 128+24:
		return &codemode.Error{Kind: codemode.KindLimit, Msg: "CPU time limit: the program used more CPU time than the run may"}
	}
	return &codemode.Error{Kind: codemode.KindRuntime, Msg: fmt.Sprintf(
		"the interpreter exited (code %d) without finishing the program: %s", res.ExitCode, lastLine(string(res.Stderr)))}
}

// programSpec is spec.json: the tools as the prelude defines them, and
// the limits it checks first.
func programSpec(tools *codemode.Registry, l Limits) ([]byte, error) {
	type tool struct {
		Name   string           `json:"name"`
		Doc    string           `json:"doc"`
		Params []codemode.Param `json:"params"`
	}
	spec := struct {
		Tools  []tool         `json:"tools"`
		Limits map[string]int `json:"limits"`
	}{Tools: []tool{}, Limits: map[string]int{
		"max_arg_bytes": l.MaxArgBytes, "max_value_bytes": l.MaxValueBytes, "max_output_bytes": l.MaxOutputBytes,
	}}
	for _, n := range tools.Names() {
		t, _ := tools.Tool(n)
		spec.Tools = append(spec.Tools, tool{Name: t.Name, Doc: t.Doc, Params: t.Params})
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("pyexec: tool descriptions: %w", err)
	}
	return b, nil
}

// environment is Env, or the base environment, built once.
func (r *Runner) environment(ctx context.Context) (string, error) {
	if r.Env != "" {
		return r.Env, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.env != "" {
		return r.env, nil
	}
	env, err := r.Backend.Build(ctx, sandbox.EnvSpec{})
	if err != nil {
		return "", fmt.Errorf("pyexec: build the base environment: %w", err)
	}
	r.env = env.ID
	return r.env, nil
}

func (r *Runner) forgetEnv(env string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.env == env {
		r.env = ""
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return truncate(l, 300)
	}
	return "(no message)"
}

func fmtBytes(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// IsImage reports whether an output file is a picture the UI can show (a
// chart): by its extension.
func IsImage(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".png", ".svg", ".jpg", ".jpeg", ".gif", ".webp":
		return true
	}
	return false
}

var _ codemode.LimitedInterpreter = (*Runner)(nil)

// RunProgram implements codemode.Interpreter (an Agent running Python).
func (r *Runner) RunProgram(ctx context.Context, code string, tools *codemode.Registry) (codemode.Result, error) {
	res, err := r.Run(ctx, code, tools)
	return res.Result, err
}

// RunProgramLimits implements codemode.LimitedInterpreter: the run is
// under r.Limits with the fields of a Session's Limits that apply to
// Python (WallTime, MaxOutputBytes, MaxToolCalls, MaxParallel) put over
// them when set. MaxSteps and MaxAllocBytes are Starlark's (a Python
// program's memory is Limits.Memory, the sandbox's).
func (r *Runner) RunProgramLimits(ctx context.Context, code string, tools *codemode.Registry, l codemode.Limits) (codemode.Result, error) {
	limits := r.Limits
	if l.WallTime > 0 {
		limits.WallTime = l.WallTime
	}
	if l.MaxOutputBytes > 0 {
		limits.MaxOutputBytes = l.MaxOutputBytes
	}
	if l.MaxToolCalls > 0 {
		limits.MaxToolCalls = l.MaxToolCalls
	}
	if l.MaxParallel > 0 {
		limits.MaxParallel = l.MaxParallel
	}
	res, err := r.run(ctx, code, tools, limits)
	return res.Result, err
}
