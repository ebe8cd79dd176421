package machine

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/internal/trim"
	"github.com/autocoder/autocoder/pkg/messages"
)

// The code runner (options.validate: run): no tests are written; once the
// code and its image exist the script itself runs in the sandbox on the
// samples (the acceptance stage, with its typed outputs), and that run is
// the check. A non-zero exit, a timeout or a missing declared output goes
// back to the model in a reflection turn: the fix stage, given the run's
// exit code, the tail of its output and the outputs it did not write, and
// no tests. Each run counts as an iteration, so max_iterations bounds the
// runs.

// runTailBudget is how much of a failed run's output the reflection turn
// sees: the tail, where a traceback ends.
const runTailBudget = caseDetailsBudget

// The context record (one entry per model stage that had the job's
// context in its prompt) is bounded like the rest of the state: the most
// recent records, the best chunks of each, names cut short.
const (
	maxContextRecords = 40
	maxContextChunks  = 20
	contextNameBudget = 160
)

// ContextLog is which chunks of the job's context each model stage was
// given (ContextUsed on the result).
type ContextLog struct {
	ContextUsed []messages.StageContext `json:"context_used,omitempty"`
}

func validatesByRun(s *State) bool { return s.Spec.Options.ValidatesByRun() }

// runValidate starts a run of the script as the job's check: the code
// runner's counterpart of runTests.
func (m *stepper) runValidate() {
	s := m.s
	m.endRound()
	s.Iteration++
	m.enter(PhaseAccepting)
	m.dispatchAcceptance()
}

// reflect takes a failed run of the code runner: it stops the job at
// max_iterations or on a repeated failure, or sends the failure to the
// fix stage as a reflection turn.
func (m *stepper) reflect(out messages.AcceptanceOutput) {
	s := m.s
	problems := runProblems(out)
	if s.Iteration >= s.Spec.Options.MaxIterations {
		m.finish(messages.StatusFailed, fmt.Sprintf("the script still fails when run after %d runs (max_iterations): %s", s.Iteration, problems))
		return
	}
	fp := fingerprint(s.Solution.Code, "", envKey(s.BuiltPackages, s.SystemPackages),
		map[string]string{"script_run": normaliseError(problems)})
	if m.repeated(fp, "the same code and run failure") {
		return
	}
	m.enter(PhaseRepairing)
	m.note(fmt.Sprintf("run %d of the script failed: %s", s.Iteration, problems))
	s.Round = &Round{Iteration: s.Iteration, Acceptance: true, BaseCode: s.Solution.Code,
		Logic: []messages.Failure{runFailure(out, problems, s.Spec.Outputs)}}
	m.dispatchFix(nil)
}

// runProblems says in one line why a run failed: the sandbox names the
// exit code and the last error line, a timeout, and each missing or
// malformed output.
func runProblems(out messages.AcceptanceOutput) string {
	if len(out.Problems) == 0 {
		return fmt.Sprintf("the run failed (exit code %d)", out.ExitCode)
	}
	return strings.Join(out.Problems, "; ")
}

// runFailure is the failure a reflection turn fixes: what the run did
// (exit code, timeout, the tail of its output) against what it must do.
func runFailure(out messages.AcceptanceOutput, problems string, outputs map[string]messages.Type) messages.Failure {
	want := "the script exits with code 0"
	if len(outputs) > 0 {
		names := make([]string, 0, len(outputs))
		for n, t := range outputs {
			names = append(names, fmt.Sprintf("%s (%s)", n, t))
		}
		sort.Strings(names)
		want += " and writes every declared output to " + protocol.OutputPath("<name>") + ": " + strings.Join(names, ", ")
	}
	f := trimFailure(messages.Failure{
		TestName:         "script_run",
		ErrorMessage:     problems,
		ExpectedBehavior: want,
		RootCause:        "the script fails when run in the sandbox on the samples",
		ErrorType:        messages.ErrorLogic,
	})
	f.ActualBehavior = fmt.Sprintf("exit code %d; output (tail):\n%s", out.ExitCode, tailOf(out.Output, runTailBudget))
	return f
}

// tailOf keeps the last n bytes of s, at a rune boundary.
func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && s[i]&0xC0 == 0x80 {
		i++
	}
	return "..." + s[i:]
}

// recordContext keeps which chunks of the job's context a model stage's
// prompt held (the stage's output says, beside its own fields).
func (m *stepper) recordContext(p Pending, r *messages.StageResult) {
	if r.Error != "" || messages.DefaultStages().Pool(r.Stage) != messages.PoolLLM || len(m.s.Task.Context) == 0 {
		return
	}
	var use messages.ContextUse
	if json.Unmarshal(r.Output, &use) != nil || use.Context == nil {
		return
	}
	c := *use.Context
	c.Stage, c.Seq, c.Iteration = r.Stage, r.Seq, p.Iteration
	if len(c.Chunks) > maxContextChunks {
		c.Chunks = c.Chunks[:maxContextChunks] // retrieved chunks come best first
	}
	for i := range c.Chunks {
		c.Chunks[i].File = trim.Middle(c.Chunks[i].File, contextNameBudget)
		c.Chunks[i].Heading = trim.Middle(c.Chunks[i].Heading, contextNameBudget)
	}
	s := m.s
	s.ContextUsed = append(s.ContextUsed, c)
	if len(s.ContextUsed) > maxContextRecords {
		s.ContextUsed = append([]messages.StageContext(nil), s.ContextUsed[len(s.ContextUsed)-maxContextRecords:]...)
	}
}

// finishedMessage is the job_finished event's message on success.
func finishedMessage(s *State) string {
	if s.CodeMode != nil {
		return "answered"
	}
	if validatesByRun(s) {
		return "the script ran"
	}
	return "tests passed"
}
