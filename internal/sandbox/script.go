package sandbox

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/autocoder/autocoder/pkg/messages"
)

// ScriptRun is one run of a solution as a script (the acceptance run, or a
// run on new data): python solution.py --name value ...
type ScriptRun struct {
	Env     string                   // Env.ID from Build
	Code    string                   // solution.py
	Args    map[string]string        // non-file inputs, passed as --name value
	Inputs  map[string]string        // file name under /var/inputs -> host path (samples, File/Dir inputs)
	Outputs map[string]messages.Type // declared outputs, read from /var/outputs/<name>
	Timeout time.Duration            // zero: 60s
	Memory  int64                    // bytes; zero: 512 MiB
	CPUs    float64                  // zero: 1
	// OutputLimit caps the script's stdout and stderr each, as RunSpec.OutputLimit.
	OutputLimit int
	JobID       string // as RunSpec.JobID
	// OutputCaps bound what is read from /var/outputs; its Names are
	// always the declared Outputs.
	OutputCaps OutputCaps
	// EnvVars and Redact are TestRun's: the job's variables, and what cuts
	// its secrets out of everything the run returns (outputs included).
	EnvVars map[string]string
	Redact  func([]byte) []byte
}

var argNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ScriptRunSpec is the RunSpec RunScript uses: an argv array (never a
// shell), arguments sorted by name. A value that starts with "-" is passed
// as --name=value so argparse cannot take it for an option.
func ScriptRunSpec(sr ScriptRun) (RunSpec, error) {
	names := make([]string, 0, len(sr.Args))
	for name := range sr.Args {
		if !argNameRe.MatchString(name) {
			return RunSpec{}, fmt.Errorf("sandbox: script argument %q is not an identifier", name)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	argv := []string{"python", SolutionFile}
	for _, name := range names {
		v := sr.Args[name]
		if strings.HasPrefix(v, "-") {
			argv = append(argv, "--"+name+"="+v)
		} else {
			argv = append(argv, "--"+name, v)
		}
	}
	return RunSpec{
		Env:            sr.Env,
		Files:          map[string][]byte{SolutionFile: []byte(sr.Code)},
		Inputs:         sr.Inputs,
		Argv:           argv,
		EnvVars:        withHarnessEnv(sr.EnvVars),
		Timeout:        sr.Timeout,
		Memory:         sr.Memory,
		CPUs:           sr.CPUs,
		OutputLimit:    sr.OutputLimit,
		CollectOutputs: true,
		OutputCaps:     sr.outputCaps(),
		JobID:          sr.JobID,
	}, nil
}

// RunScript runs the solution as a script in a sandbox of b and checks that
// every declared output exists in /var/outputs and parses to its type. A
// failing script or a bad output is a result with OK false and Problems;
// the error is only for a sandbox that could not run.
func RunScript(ctx context.Context, b Backend, sr ScriptRun) (messages.AcceptanceOutput, error) {
	out, _, err := RunScriptFiles(ctx, b, sr)
	return out, err
}

// RunScriptFiles is RunScript that also returns the run's result, whose
// Outputs hold the bytes of File and Dir outputs (to store them somewhere).
func RunScriptFiles(ctx context.Context, b Backend, sr ScriptRun) (messages.AcceptanceOutput, RunResult, error) {
	spec, err := ScriptRunSpec(sr)
	if err != nil {
		return messages.AcceptanceOutput{}, RunResult{}, err
	}
	res, err := b.Run(ctx, spec)
	if err != nil {
		return messages.AcceptanceOutput{}, RunResult{}, fmt.Errorf("run script in %s sandbox: %w", b.Name(), err)
	}
	res = res.Redacted(sr.Redact)
	out := messages.AcceptanceOutput{ExitCode: res.ExitCode, TimedOut: res.TimedOut, Output: combinedOutput(res)}
	switch {
	case res.TimedOut:
		out.Problems = append(out.Problems, fmt.Sprintf("%s timed out after %s and was killed",
			SolutionFile, cmpOr(sr.Timeout, DefaultRunTimeout)))
	case res.ExitCode != 0:
		p := fmt.Sprintf("%s exited with code %d", SolutionFile, res.ExitCode)
		if line := lastErrorLine(out.Output); line != "" {
			p += ": " + line
		}
		out.Problems = append(out.Problems, p)
	}
	values, problems := ParseOutputsWithin(res, sr.Outputs, sr.outputCaps())
	out.Problems = append(out.Problems, problems...)
	if len(values) > 0 {
		out.Outputs = values
	}
	out.OK = len(out.Problems) == 0
	return out, res, nil
}

// outputCaps are the run's caps, reading the declared outputs only.
func (sr ScriptRun) outputCaps() OutputCaps {
	c := sr.OutputCaps.WithDefaults()
	c.Names = make([]string, 0, len(sr.Outputs))
	for name := range sr.Outputs {
		c.Names = append(c.Names, name)
	}
	sort.Strings(c.Names)
	return c
}
