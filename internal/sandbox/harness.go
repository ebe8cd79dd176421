package sandbox

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/internal/trim"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Files of the script protocol (Contract 2 (docs/contracts.md)), in /workspace.
const (
	SolutionFile = protocol.SolutionFile
	TestFile     = protocol.TestFile
	// JUnitFile is where pytest writes its report: under /workspace/.harness,
	// apart from /var/outputs, which belongs to the script.
	JUnitFile = ".harness/junit.xml"
)

// Trimming of what reports carry.
const (
	reportOutputLimit = 16 << 10 // TestReport.Output, AcceptanceOutput.Output
	caseDetailsLimit  = 4 << 10  // TestCase.Details: the tail of the traceback
	caseMessageLimit  = 1 << 10  // TestCase.Message
)

// collectionCase names the synthetic case that reports a run with no
// per-test results, the way pytest names a collection error of the file.
const collectionCase = protocol.SessionTest

// TestRun is one pytest run of a solution and its tests.
type TestRun struct {
	Env     string            // Env.ID from Build
	Code    string            // solution.py
	Tests   string            // test_solution.py
	Inputs  map[string]string // file name under /var/inputs -> host path (samples)
	Timeout time.Duration     // zero: 60s
	Memory  int64             // bytes; zero: 512 MiB
	CPUs    float64           // zero: 1
	// OutputLimit caps pytest's stdout and stderr each, as RunSpec.OutputLimit.
	OutputLimit int
	JobID       string // as RunSpec.JobID
	// EnvVars are the job's variables (its env_vars and secrets), set
	// beside the harness's own, which they cannot replace.
	EnvVars map[string]string
	// Redact, if set, is applied to everything the run returns (its output
	// and files) before it is read: the job's secrets are cut out of it.
	Redact func([]byte) []byte
}

// harnessEnv are the variables every harness run gets: no bytecode files
// in the workspace, a fixed hash seed so set orders (and so results)
// repeat, and a headless matplotlib.
func harnessEnv() map[string]string {
	return map[string]string{"PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0", "MPLBACKEND": "Agg"}
}

// withHarnessEnv is the job's variables with the harness's over them.
func withHarnessEnv(job map[string]string) map[string]string {
	env := make(map[string]string, len(job)+3)
	for k, v := range job {
		env[k] = v
	}
	for k, v := range harnessEnv() {
		env[k] = v
	}
	return env
}

// Redacted is r with redact applied to its output and every file it
// returns; r itself when redact is nil.
func (r RunResult) Redacted(redact func([]byte) []byte) RunResult {
	if redact == nil {
		return r
	}
	r.Stdout, r.Stderr = redact(r.Stdout), redact(r.Stderr)
	files := make(map[string][]byte, len(r.Files))
	for k, v := range r.Files {
		files[k] = redact(v)
	}
	outputs := make(map[string][]byte, len(r.Outputs))
	for k, v := range r.Outputs {
		outputs[k] = redact(v)
	}
	r.Files, r.Outputs = files, outputs
	return r
}

// TestRunSpec is the RunSpec RunTests uses. Exported for callers that need
// the raw result (then ParseTestReport it).
func TestRunSpec(tr TestRun) RunSpec {
	return RunSpec{
		Env:    tr.Env,
		Files:  map[string][]byte{SolutionFile: []byte(tr.Code), TestFile: []byte(tr.Tests)},
		Inputs: tr.Inputs,
		Argv: []string{"python", "-m", "pytest", TestFile,
			"-q",                     // per-test results come from the XML; keep the log short
			"-p", "no:cacheprovider", // no .pytest_cache
			"--junitxml=" + WorkspaceDir + "/" + JUnitFile,
			"-o", "junit_family=xunit2", // the same XML whatever the pytest version's default
			"-o", "addopts=", // nothing from an ini file
			"--rootdir=" + WorkspaceDir,
			"--tb=short", // tracebacks a model can read without trimming
			"--color=no",
			"-rfE", // a failure summary at the end, where the tail keeps it
		},
		EnvVars:     withHarnessEnv(tr.EnvVars),
		Timeout:     tr.Timeout,
		Memory:      tr.Memory,
		CPUs:        tr.CPUs,
		OutputLimit: tr.OutputLimit,
		Collect:     []string{JUnitFile},
		JobID:       tr.JobID,
	}
}

// RunTests runs pytest on tr.Code and tr.Tests in a sandbox of b and reads
// the JUnit XML report. Failing tests, a timeout, a collection error or a
// pytest that wrote no report are all a report; the error is only for a
// sandbox that could not run.
func RunTests(ctx context.Context, b Backend, tr TestRun) (messages.TestReport, error) {
	spec := TestRunSpec(tr)
	res, err := b.Run(ctx, spec)
	if err != nil {
		return messages.TestReport{}, fmt.Errorf("run tests in %s sandbox: %w", b.Name(), err)
	}
	return ParseTestReport(res.Redacted(tr.Redact), cmpOr(spec.Timeout, DefaultRunTimeout)), nil
}

// ParseTestReport builds the report of a TestRunSpec run. timeout is only
// used to word the report of a run that timed out.
func ParseTestReport(res RunResult, timeout time.Duration) messages.TestReport {
	rep := messages.TestReport{
		ExitCode: res.ExitCode,
		TimedOut: res.TimedOut,
		Output:   combinedOutput(res),
	}
	xmlData, haveXML := res.Files[JUnitFile]
	var cases []messages.TestCase
	var parseErr error
	switch {
	case haveXML && len(xmlData) > MaxJUnitBytes:
		parseErr = fmt.Errorf("it is %s, over the %s bound", messages.FormatBytes(int64(len(xmlData))), messages.FormatBytes(MaxJUnitBytes))
	case haveXML && !res.TimedOut:
		cases, parseErr = parseJUnit(xmlData)
	}
	switch {
	case res.TimedOut:
		cases = []messages.TestCase{{Name: collectionCase, Outcome: messages.OutcomeError,
			Message: fmt.Sprintf("the test run timed out after %s and was killed", timeout),
			Details: trim.Tail(rep.Output, caseDetailsLimit)}}
	case !haveXML || parseErr != nil:
		msg := fmt.Sprintf("pytest exited with code %d without a test report", res.ExitCode)
		if parseErr != nil {
			msg = fmt.Sprintf("pytest exited with code %d and its report is unreadable: %v", res.ExitCode, parseErr)
		}
		if line := lastErrorLine(rep.Output); line != "" {
			msg += ": " + line
		}
		cases = []messages.TestCase{{Name: collectionCase, Outcome: messages.OutcomeError,
			Message: trim.Head(msg, caseMessageLimit), Details: trim.Tail(rep.Output, caseDetailsLimit)}}
	case len(cases) == 0 && res.ExitCode != 0:
		// Exit 5 is "no tests collected"; anything else without cases is
		// an internal error or a usage error. Either way there is nothing
		// to pass.
		cases = []messages.TestCase{{Name: collectionCase, Outcome: messages.OutcomeError,
			Message: fmt.Sprintf("pytest ran no tests (exit code %d)", res.ExitCode),
			Details: trim.Tail(rep.Output, caseDetailsLimit)}}
	}
	for _, c := range cases {
		switch c.Outcome {
		case messages.OutcomePassed:
			rep.Passed++
		case messages.OutcomeFailed:
			rep.Failed++
		case messages.OutcomeError:
			rep.Errors++
		case messages.OutcomeSkipped:
			rep.Skipped++
		}
	}
	var omitted int
	rep.Cases, omitted = boundCases(cases)
	if omitted > 0 {
		rep.Output += omittedNote(omitted, len(cases))
	}
	return rep
}

// combinedOutput is stdout then stderr, trimmed for a report.
func combinedOutput(res RunResult) string {
	out := string(res.Stdout)
	if len(res.Stderr) > 0 {
		if out != "" && !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		out += "--- stderr ---\n" + string(res.Stderr)
	}
	return trim.HeadTail(strings.ToValidUTF8(out, ""), reportOutputLimit)
}

// lastErrorLine finds the most telling line of a crash log: the last one
// that names an exception ("ModuleNotFoundError: No module named 'x'").
func lastErrorLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[i]), "E "))
		if head, _, ok := strings.Cut(l, ": "); ok && (strings.HasSuffix(head, "Error") || strings.HasSuffix(head, "Exception")) {
			return trim.Head(l, 300)
		}
	}
	return ""
}
