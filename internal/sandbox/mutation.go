package sandbox

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/autocoder/autocoder/internal/trim"
	"github.com/autocoder/autocoder/pkg/messages"
)

// mutateScript is the mutation tester (mutate.py): it runs inside the
// sandbox, beside solution.py and test_solution.py, and writes its report
// under .harness, to a name made for the run (see MutationRunSpec).
//
//go:embed mutate.py
var mutateScript []byte

// MutateScriptVersion names mutate.py's behaviour; a stage that runs it
// puts it in its cache key. Bump it with every change to mutate.py.
const MutateScriptVersion = "mutate-5"

// Files of a mutation run, under /workspace. The report's name is
// mutationPrefix, a random hex nonce made for the run, and ".json": it is
// written to mutationNameFile, which mutate.py reads and removes before any
// test runs, so that the tests (which run as the same user, in the same
// workspace) cannot tell where the report goes and leave one there.
const (
	mutateFile       = ".harness/mutate.py"
	mutationNameFile = ".harness/mutation.name"
	mutationPrefix   = "mutation-"
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

// MutationRunSpec is the RunSpec RunMutation uses. Its report is the one
// file it collects (Collect[0]), under a name made for this spec.
func MutationRunSpec(mr MutationRun) (RunSpec, error) {
	mr, err := mr.normalized()
	if err != nil {
		return RunSpec{}, err
	}
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return RunSpec{}, fmt.Errorf("sandbox: mutation report name: %w", err)
	}
	name := mutationPrefix + hex.EncodeToString(nonce) + ".json"
	return RunSpec{
		Env: mr.Env,
		Files: map[string][]byte{
			SolutionFile: []byte(mr.Code), TestFile: []byte(mr.Tests), mutateFile: mutateScript,
			mutationNameFile: []byte(name),
		},
		Inputs: mr.Inputs,
		Argv: []string{"python", mutateFile,
			"--seed", strconv.FormatInt(mr.Seed, 10),
			"--max-mutants", strconv.Itoa(mr.MaxMutants),
			"--budget", strconv.FormatFloat(mr.Budget.Seconds(), 'f', -1, 64),
			"--max-survivors", strconv.Itoa(mr.MaxSurvivors),
			"--out-name-file", mutationNameFile,
		},
		EnvVars: withHarnessEnv(mr.EnvVars),
		Timeout: mr.Budget + mutateSlack,
		Memory:  mr.Memory,
		CPUs:    mr.CPUs,
		Collect: []string{".harness/" + name},
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
	return ParseMutationReport(res.Redacted(mr.Redact), spec.Collect[0], mr.Seed), nil
}

// mutationReport is what mutate.py writes.
type mutationReport struct {
	messages.TestStrength
	Version int `json:"version"`
}

// ParseMutationReport reads the report of a MutationRunSpec run, the file
// report (the spec's Collect[0]). A run that exited non-zero, timed out or
// left no report, and a report whose counts do not add up, are a
// TestStrength with Error set, never a score: mutate.py exits 0 only when it
// wrote its report itself. A measurement that judged no mutant (none made,
// every one equivalent, or the budget ran out before the first) has no
// score either: Error says it was not judged.
func ParseMutationReport(res RunResult, report string, seed int64) messages.TestStrength {
	data, ok := res.Files[report]
	failed := func(why string) messages.TestStrength {
		msg := why
		if line := lastErrorLine(combinedOutput(res)); line != "" {
			msg += ": " + line
		}
		return messages.TestStrength{Seed: seed, Error: trim.Head(msg, caseMessageLimit),
			DurationMS: res.Duration.Milliseconds()}
	}
	switch {
	case res.TimedOut:
		return failed("the mutation run timed out and was killed")
	case res.ExitCode != 0:
		return failed(fmt.Sprintf("the mutation run exited with code %d", res.ExitCode))
	case !ok:
		return failed("the mutation run exited without a report")
	case len(data) > maxMutationReport:
		return failed(fmt.Sprintf("the mutation report is %s, over the %s bound",
			messages.FormatBytes(int64(len(data))), messages.FormatBytes(maxMutationReport)))
	}
	var rep mutationReport
	if err := json.Unmarshal(data, &rep); err != nil {
		return failed("the mutation report is unreadable: " + err.Error())
	}
	ts := rep.TestStrength
	if why := inconsistent(ts); why != "" {
		return failed("the mutation report does not add up (" + why + ")")
	}
	ts.Seed = seed
	ts.Error = trim.Head(ts.Error, caseDetailsLimit)
	ts.Score = 0
	switch j := ts.Judged(); {
	case ts.Error != "":
	case j > 0:
		ts.Score = float64(ts.Killed) / float64(j)
	default:
		ts.Error = notJudged(ts)
	}
	return ts
}

// inconsistent says how a report's counts do not add up, "" when they do.
func inconsistent(ts messages.TestStrength) string {
	for _, c := range []struct {
		name string
		n    int
	}{{"points", ts.Points}, {"mutants", ts.Mutants}, {"killed", ts.Killed}, {"survived", ts.Survived},
		{"equivalent", ts.Equivalent}, {"timed_out", ts.TimedOut}, {"not_run", ts.NotRun}} {
		if c.n < 0 {
			return fmt.Sprintf("%s is %d", c.name, c.n)
		}
	}
	switch {
	case ts.Killed+ts.Survived+ts.Equivalent+ts.NotRun != ts.Mutants:
		return fmt.Sprintf("%d killed, %d survived, %d equivalent and %d not run of %d mutants",
			ts.Killed, ts.Survived, ts.Equivalent, ts.NotRun, ts.Mutants)
	case ts.Mutants > ts.Points:
		return fmt.Sprintf("%d mutants of %d points", ts.Mutants, ts.Points)
	case ts.TimedOut > ts.Killed:
		return fmt.Sprintf("%d timed out of %d killed", ts.TimedOut, ts.Killed)
	case len(ts.Survivors) > ts.Survived:
		return fmt.Sprintf("%d survivors listed of %d", len(ts.Survivors), ts.Survived)
	case ts.Partial != (ts.NotRun > 0) && ts.Error == "":
		return fmt.Sprintf("partial %t with %d not run", ts.Partial, ts.NotRun)
	}
	return ""
}

// notJudged is the Error of a measurement that judged no mutant.
func notJudged(ts messages.TestStrength) string {
	switch {
	case ts.Mutants == 0:
		return messages.NotJudged + ": solution.py has nothing to mutate"
	case ts.NotRun > 0:
		return fmt.Sprintf("%s: the time budget ran out before a mutant was judged (%d of %d not run, options.mutation_budget)",
			messages.NotJudged, ts.NotRun, ts.Mutants)
	}
	return fmt.Sprintf("%s: all %d mutants are equivalent", messages.NotJudged, ts.Mutants)
}
