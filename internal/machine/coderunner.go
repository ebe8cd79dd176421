package machine

import (
	"fmt"
	"sort"
	"strings"

	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/pkg/messages"
)

// The code runner (options.validate: run): no tests are written; once the
// code and its image exist the script itself runs in the sandbox on the
// samples (the acceptance stage, with its typed outputs), and that run is
// the check. The sandbox first checks the script's imports: a module its
// environment lacks is a diagnosis of kind environment (its package added,
// the environment rebuilt), not the model's mistake. A non-zero exit, a
// timeout or a missing declared output goes back to the model in a
// reflection turn: the fix stage, given the run's exit code, the tail of
// its output and the outputs it did not write, and no tests. Each run
// counts as an iteration, so max_iterations bounds the runs; a successful
// run's output stays on the result.

// codeRunnerKind is options.validate: run.
func codeRunnerKind() Kind {
	return Kind{
		Name:  "code runner",
		Is:    func(sub *Submission) bool { return sub.Spec.Options.ValidatesByRun() },
		Start: (*Stepper).startPipeline, // pipeline.go
		Results: []Row{
			On(messages.StageProfile, (*Stepper).profiled), // pipeline.go, as are the plan and the code
			On(messages.StagePlan, (*Stepper).planned),
			On(messages.StageConstraint, (*Stepper).constrained).advisory((*Stepper).constraintFailed), // constraint.go
			On(messages.StageCode, (*Stepper).coded),
			On(messages.StagePackages, (*Stepper).packaged).advisory((*Stepper).packagesFailed),              // env.go
			On(messages.StagePackageReplacement, (*Stepper).replaced).advisory((*Stepper).replacementFailed), // replace.go
			On(messages.StageBuild, (*Stepper).built),                                                        // env.go
			On(messages.StageAcceptance, (*Stepper).ran),
			On(messages.StageFix, (*Stepper).fixed), // repair.go
		},
		Phases: Phases{
			PhaseProfiling:  {PhaseNew},
			PhasePlanning:   {PhaseNew, PhaseProfiling},
			PhaseGenerating: {PhasePlanning, PhaseAccepting}, // later: a stuck loop regenerates
			PhasePackages:   {PhaseGenerating, PhaseBuilding, PhaseRepairing},
			PhaseBuilding:   {PhaseGenerating, PhasePackages, PhaseRepairing},
			PhaseAccepting:  {PhaseGenerating, PhasePackages, PhaseBuilding, PhaseRepairing},
			PhaseRepairing:  {PhaseAccepting},
		},
		loop:      loop{generate: (*Stepper).writeCode, advance: (*Stepper).advanceRun, reflect: true},
		succeeded: "the script ran",
	}
}

// runTailBudget is how much of a failed run's output the reflection turn
// sees: the tail, where a traceback ends.
const runTailBudget = caseDetailsBudget

// advanceRun is the code runner's advance: once the code and its image
// are there, the script runs.
func (m *Stepper) advanceRun() {
	if m.advancing() && m.lineReady() { // pipeline.go
		m.runValidate()
	}
}

// runValidate starts a run of the script as the job's check: the code
// runner's counterpart of runTests.
func (m *Stepper) runValidate() {
	s := m.s
	m.endRound()
	s.Iteration++
	m.Enter(PhaseAccepting)
	m.dispatchAcceptance()
}

// ran takes a run of the script: the job succeeds, or the failure goes
// back to the model.
func (m *Stepper) ran(_ Pending, out messages.AcceptanceOutput) {
	if !m.keepRun(out) { // pipeline.go
		m.reflect(*m.s.Acceptance)
	}
}

// reflect takes a failed run of the code runner: it stops the job at
// max_iterations or on a repeated failure, or sends the failure to the
// fix stage as a reflection turn.
func (m *Stepper) reflect(out messages.AcceptanceOutput) {
	s := m.s
	if m.addMissingPackages(out) {
		return
	}
	problems := runProblems(out)
	if s.Iteration >= s.Spec.Options.MaxIterations {
		m.Finish(messages.StatusFailed, fmt.Sprintf("the script still fails when run after %d runs (max_iterations): %s", s.Iteration, problems))
		return
	}
	fp := fingerprint(s.Solution.Code, "", envKey(s.BuiltPackages, s.SystemPackages),
		map[string]string{"script_run": normaliseError(problems)})
	if m.repeated(fp, "the same code and run failure") {
		return
	}
	m.Enter(PhaseRepairing)
	m.Note(fmt.Sprintf("run %d of the script failed: %s", s.Iteration, problems))
	s.Round = &Round{Iteration: s.Iteration, Acceptance: true, BaseCode: s.Solution.Code,
		Logic: []messages.Failure{runFailure(out, problems, s.Spec.Outputs)}}
	m.dispatchFix(nil)
}

// addMissingPackages takes the import check's missing modules down the
// package path, as a diagnosis of kind environment would: their packages
// are added and the environment rebuilt, then the script runs again. It
// reports false (the failure goes to the model) when every package is
// already in the set, or the runs are used up.
func (m *Stepper) addMissingPackages(out messages.AcceptanceOutput) bool {
	s := m.s
	var pkgs, mods []string
	for _, mm := range out.MissingModules {
		pkgs, mods = append(pkgs, mm.Package), append(mods, mm.Module)
	}
	// A package the index refused before is not asked for again.
	added := newPackages(append(append([]string(nil), s.Packages...), s.InvalidPackages...), validPackages(pkgs))
	if len(added) == 0 || s.Iteration >= s.Spec.Options.MaxIterations {
		return false
	}
	m.Note(fmt.Sprintf("run %d: the script imports %s, missing from its sandbox: adding packages %s and rebuilding",
		s.Iteration, strings.Join(mods, ", "), strings.Join(added, ", ")))
	s.Packages = normPackages(append(s.Packages, added...))
	m.Enter(PhaseRepairing)
	m.advance() // the rebuild, then the run again
	return true
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
