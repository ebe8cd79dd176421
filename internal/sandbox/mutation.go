package sandbox

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/autocoder/autocoder/internal/trim"
	"github.com/autocoder/autocoder/pkg/messages"
)

// mutateScript is the mutation tester (mutate.py): it runs inside the
// sandbox, beside solution.py and test_solution.py, and writes MutationFile.
//
//go:embed mutate.py
var mutateScript []byte

// MutateScriptVersion names mutate.py's behaviour; a stage that runs it
// puts it in its cache key. Bump it with every change to mutate.py.
const MutateScriptVersion = "mutate-4"

// Files of a mutation run, under /workspace.
const (
	mutateFile   = ".harness/mutate.py"
	MutationFile = ".harness/mutation.json"
)

// Defaults and bounds of a MutationRun: the job options' (options.max_mutants,
// options.mutation_budget), and the survivors reported.
const (
	DefaultMaxMutants   = messages.DefaultMaxMutants
	MaxMaxMutants       = messages.MaxMaxMutants
	DefaultMutateBudget = messages.DefaultMutationBudget
	MaxMutateBudget     = messages.MaxMutationBudget
	DefaultMaxSurvivors = 5
	MaxMaxSurvivors     = 20
	// mutateSlack is the sandbox's own deadline past the budget: mutate.py
	// stops starting mutants at the budget, then finishes the one running
	// (at most its per-mutant timeout, 60 s) and writes its report.
	mutateSlack = 90 * time.Second
	// maxMutationReport bounds the report read back.
	maxMutationReport = 1 << 20
)

// MutationRun is one mutation test of a solution and its tests.
type MutationRun struct {
	Env    string            // Env.ID from Build
	Code   string            // solution.py
	Tests  string            // test_solution.py, passing on Code
	Inputs map[string]string // file name under /var/inputs -> host path (samples)
	// Seed picks the sample of mutants when there are more than MaxMutants;
	// the same seed, code and tests give the same mutants.
	Seed int64
	// MaxMutants bounds the mutants made (zero: DefaultMaxMutants; at most
	// MaxMaxMutants).
	MaxMutants int
	// Budget is the time for the whole run (zero: DefaultMutateBudget, at
	// most MaxMutateBudget); mutants not started by then are not run.
	Budget time.Duration
	// MaxSurvivors bounds the surviving mutants reported with their diff
	// (zero: DefaultMaxSurvivors; at most MaxMaxSurvivors).
	MaxSurvivors int
	Memory       int64   // bytes; zero: 512 MiB
	CPUs         float64 // zero: 1
	JobID        string  // as RunSpec.JobID
	// EnvVars and Redact as in TestRun: the job's variables and secrets
	// (the tests see what they see in a test run), cut out of the report.
	EnvVars map[string]string
	Redact  func([]byte) []byte
}

// normalized applies the defaults and reports a bound crossed.
func (mr MutationRun) normalized() (MutationRun, error) {
	switch {
	case mr.MaxMutants < 0 || mr.MaxMutants > MaxMaxMutants:
		return mr, fmt.Errorf("sandbox: MutationRun.MaxMutants %d is outside 0..%d", mr.MaxMutants, MaxMaxMutants)
	case mr.Budget < 0 || mr.Budget > MaxMutateBudget:
		return mr, fmt.Errorf("sandbox: MutationRun.Budget %s is outside 0..%s", mr.Budget, MaxMutateBudget)
	case mr.MaxSurvivors < 0 || mr.MaxSurvivors > MaxMaxSurvivors:
		return mr, fmt.Errorf("sandbox: MutationRun.MaxSurvivors %d is outside 0..%d", mr.MaxSurvivors, MaxMaxSurvivors)
	}
	mr.MaxMutants = cmpOr(mr.MaxMutants, DefaultMaxMutants)
	mr.Budget = cmpOr(mr.Budget, DefaultMutateBudget)
	mr.MaxSurvivors = cmpOr(mr.MaxSurvivors, DefaultMaxSurvivors)
	return mr, nil
}

// MutationRunSpec is the RunSpec RunMutation uses.
func MutationRunSpec(mr MutationRun) (RunSpec, error) {
	mr, err := mr.normalized()
	if err != nil {
		return RunSpec{}, err
	}
	return RunSpec{
		Env: mr.Env,
		Files: map[string][]byte{
			SolutionFile: []byte(mr.Code), TestFile: []byte(mr.Tests), mutateFile: mutateScript,
		},
		Inputs: mr.Inputs,
		Argv: []string{"python", mutateFile,
			"--seed", strconv.FormatInt(mr.Seed, 10),
			"--max-mutants", strconv.Itoa(mr.MaxMutants),
			"--budget", strconv.FormatFloat(mr.Budget.Seconds(), 'f', -1, 64),
			"--max-survivors", strconv.Itoa(mr.MaxSurvivors),
			"--out", MutationFile,
		},
		EnvVars: withHarnessEnv(mr.EnvVars),
		Timeout: mr.Budget + mutateSlack,
		Memory:  mr.Memory,
		CPUs:    mr.CPUs,
		Collect: []string{MutationFile},
		JobID:   mr.JobID,
	}, nil
}

// RunMutation measures the strength of mr.Tests by mutating mr.Code in a
// sandbox of b (mutate.py). Tests that do not pass on the code, code that
// does not parse, or a run that crashed are a TestStrength with Error set;
// the error is only for a sandbox that could not run, or a MutationRun
// outside its bounds.
func RunMutation(ctx context.Context, b Backend, mr MutationRun) (messages.TestStrength, error) {
	spec, err := MutationRunSpec(mr)
	if err != nil {
		return messages.TestStrength{}, err
	}
	res, err := b.Run(ctx, spec)
	if err != nil {
		return messages.TestStrength{}, fmt.Errorf("run mutation tests in %s sandbox: %w", b.Name(), err)
	}
	return ParseMutationReport(res.Redacted(mr.Redact), mr.Seed), nil
}

// mutationReport is what mutate.py writes.
type mutationReport struct {
	messages.TestStrength
	Version int `json:"version"`
}

// ParseMutationReport reads the report of a MutationRunSpec run.
func ParseMutationReport(res RunResult, seed int64) messages.TestStrength {
	data, ok := res.Files[MutationFile]
	failed := func(why string) messages.TestStrength {
		msg := why
		if line := lastErrorLine(combinedOutput(res)); line != "" {
			msg += ": " + line
		}
		return messages.TestStrength{Seed: seed, Score: 1, Error: trim.Head(msg, caseMessageLimit),
			DurationMS: res.Duration.Milliseconds()}
	}
	switch {
	case res.TimedOut:
		return failed("the mutation run timed out and was killed")
	case !ok:
		return failed(fmt.Sprintf("the mutation run exited with code %d without a report", res.ExitCode))
	case len(data) > maxMutationReport:
		return failed(fmt.Sprintf("the mutation report is %s, over the %s bound",
			messages.FormatBytes(int64(len(data))), messages.FormatBytes(maxMutationReport)))
	}
	var rep mutationReport
	if err := json.Unmarshal(data, &rep); err != nil {
		return failed("the mutation report is unreadable: " + err.Error())
	}
	ts := rep.TestStrength
	ts.Seed = seed
	ts.Error = trim.Head(ts.Error, caseDetailsLimit)
	ts.Score = 1
	if j := ts.Judged(); j > 0 {
		ts.Score = float64(ts.Killed) / float64(j)
	}
	return ts
}
