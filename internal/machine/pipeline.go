package machine

import (
	"fmt"
	"strings"

	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/internal/trim"
	"github.com/autocoder/autocoder/pkg/messages"
)

// The pipeline: profile the samples, then the first pass in one model
// round: the code call writes the plan as a field of its reply while the
// tests are written from the task alone, concurrently (options.first_pass
// one_round, the default). With plan_first the plan is a call of its own
// and the code and the tests are written from it concurrently (the tests
// depend on the plan, not the code). Packages
// come from a static import scan (the model maps only the imports the
// tables cannot), and the environment is built as soon as the code's
// packages are known, overlapping the test generation (advanceTests,
// env.go). Then the tests run; failures are diagnosed, routed, repaired and
// verified (repair.go); a loop that stops making progress changes strategy
// or stops. With options.candidates several solutions race in the first
// round (candidates.go). Once the tests pass the script runs on the
// samples (the acceptance run).

// pipelineKind is the default kind: every submission no other kind takes.
func pipelineKind() Kind {
	return Kind{
		Name:  "pipeline",
		Is:    func(*Submission) bool { return true },
		Start: (*Stepper).startPipeline,
		Results: []Row{
			On(messages.StageProfile, (*Stepper).profiled),
			On(messages.StagePlan, (*Stepper).planned),
			On(messages.StageConstraint, (*Stepper).constrained).advisory((*Stepper).constraintFailed), // constraint.go
			On(messages.StageCode, (*Stepper).coded),
			On(messages.StageTests, (*Stepper).testsWritten),
			On(messages.StagePackages, (*Stepper).packaged).advisory((*Stepper).packagesFailed),              // env.go
			On(messages.StagePackageReplacement, (*Stepper).replaced).advisory((*Stepper).replacementFailed), // replace.go
			On(messages.StageBuild, (*Stepper).built),                                                        // env.go
			On(messages.StageRunTests, (*Stepper).tested),
			On(messages.StageDiagnose, (*Stepper).route),                                                   // repair.go
			On(messages.StageFix, (*Stepper).fixed),                                                        // repair.go
			On(messages.StageVerify, (*Stepper).verified).advisory((*Stepper).verifyFailed),                // repair.go
			On(messages.StagePatchTests, (*Stepper).patched),                                               // repair.go
			On(messages.StageMutate, (*Stepper).mutated).advisory((*Stepper).strengthFailed),               // strength.go
			On(messages.StageStrengthenTests, (*Stepper).strengthened).advisory((*Stepper).strengthFailed), // strength.go
			On(messages.StageAcceptance, (*Stepper).accepted),
		},
		Phases: Phases{
			PhaseProfiling:  {PhaseNew},
			PhasePlanning:   {PhaseNew, PhaseProfiling},
			PhaseGenerating: {PhaseNew, PhaseProfiling, PhasePlanning, PhaseTesting, PhaseAccepting}, // one round starts here; later: a stuck loop regenerates
			PhasePackages:   {PhaseGenerating, PhaseBuilding, PhaseRepairing},
			PhaseBuilding:   {PhaseGenerating, PhasePackages, PhaseRepairing},
			PhaseTesting:    {PhaseGenerating, PhasePackages, PhaseBuilding, PhaseRepairing},
			PhaseDiagnosing: {PhaseGenerating, PhaseTesting}, // from generating: no candidate passed
			PhaseRepairing:  {PhaseDiagnosing, PhaseAccepting, PhaseStrengthening},
			// The passing tests are measured (from generating: a candidate
			// passed), and strengthened when weak (strength.go).
			PhaseMeasuring:     {PhaseGenerating, PhaseTesting},
			PhaseStrengthening: {PhaseMeasuring},
			PhaseAccepting:     {PhaseGenerating, PhaseTesting, PhaseMeasuring, PhaseStrengthening}, // from generating: a candidate passed
		},
		loop:      loop{generate: (*Stepper).generateWithTests, advance: (*Stepper).advanceTests},
		succeeded: "tests passed",
	}
}

// startPipeline profiles the samples, or starts the first pass when there
// are none.
func (m *Stepper) startPipeline(*Submission) {
	if len(m.s.Samples) > 0 {
		m.profile()
		return
	}
	m.firstPass()
}

// firstPass plans (plan_first), or writes the code with its plan and the
// tests in one round.
func (m *Stepper) firstPass() {
	if m.s.Spec.Options.PlansFirst() {
		m.plan()
		return
	}
	m.generate()
}

// profile dispatches the profile of the samples.
func (m *Stepper) profile() {
	s := m.s
	m.Enter(PhaseProfiling)
	m.Dispatch(messages.StageProfile, messages.ProfileInput{
		Samples: s.Samples, MaxSampleRows: s.Spec.Options.MaxSampleRows, Constraints: s.Spec.Constraints,
	})
}

// keepProfile keeps what the profile says of the samples.
func (m *Stepper) keepProfile(out messages.ProfileOutput) {
	m.s.DataContext = out.DataContext
	m.s.GeneratedSchemas = out.GeneratedSchemas
}

func (m *Stepper) profiled(_ Pending, out messages.ProfileOutput) {
	m.keepProfile(out)
	m.constrain(out) // constraint.go: alongside planning
	if m.s.Spec.Options.PlansFirst() {
		m.plan()
		return
	}
	if m.busy(0, messages.StageConstraint) {
		m.Enter(PhasePlanning) // one round: code and tests wait for the checks (constraint.go)
		return
	}
	m.generate()
}

func (m *Stepper) plan() {
	m.Enter(PhasePlanning)
	m.Dispatch(messages.StagePlan, messages.PlanInput{Task: m.s.Task, DataContext: m.s.DataContext})
}

func (m *Stepper) planned(_ Pending, out messages.Plan) {
	m.s.Plan = &out
	if m.busy(0, messages.StageConstraint) {
		return // generation starts when the checks arrive (constraint.go)
	}
	m.generate()
}

// generateWithTests starts code and tests at once: tests depend on the
// task and the plan, not on the code. In one round there is no plan yet:
// the code call writes it, and the tests are written from the task.
func (m *Stepper) generateWithTests() {
	s := m.s
	m.writeCode()
	if !s.Spec.Options.SkipTests {
		m.Dispatch(messages.StageTests, messages.TestsInput{Task: s.Task, DataContext: s.DataContext, Plan: planOf(s)})
	}
}

// writeCode asks for the code; with options.candidates k > 1 for k
// independent solutions (see candidates.go).
func (m *Stepper) writeCode() {
	s := m.s
	m.Enter(PhaseGenerating)
	in := messages.CodeInput{Task: s.Task, DataContext: s.DataContext, Plan: planOf(s), BasePackages: s.Spec.Options.BasePackages,
		PlanInline: s.Plan == nil && !s.Spec.Options.PlansFirst()}
	k := s.Spec.Options.Candidates
	if k > 1 && s.Spec.Options.SkipTests {
		m.Note(fmt.Sprintf("skip_tests: there are no tests to choose among %d candidates, so one solution is written", k))
		k = 1
	}
	if k > 1 {
		m.startCandidates(in, k)
		return
	}
	m.Dispatch(messages.StageCode, in)
}

// coded takes a solution of the job's line or of a candidate's; in one
// round, the job's plan comes with it.
func (m *Stepper) coded(p Pending, out messages.CodeOutput) {
	sol := out.Solution
	if p.Candidate > 0 {
		if c := m.candidate(p.Candidate); c != nil {
			c.Solution = &sol
		}
	} else {
		m.keepInlinePlan(out.Plan)
		m.s.Solution = &sol
	}
	m.advance()
}

// keepInlinePlan keeps the plan a one-round code reply wrote. A model may
// leave it out: the job goes on without one (diagnoses and fixes then work
// from the task and the code), and says so.
func (m *Stepper) keepInlinePlan(p *messages.Plan) {
	s := m.s
	if s.Plan != nil || s.Spec.Options.PlansFirst() {
		return
	}
	if p == nil || (strings.TrimSpace(p.Description) == "" && strings.TrimSpace(p.Approach) == "") {
		m.Note("the code reply wrote no plan: the job goes on without one")
		return
	}
	s.Plan = p
}

func (m *Stepper) testsWritten(_ Pending, out messages.Tests) {
	m.s.Tests = &out
	m.advance()
}

// advanceTests is the pipeline's advance: the candidates' round, or the
// job's own line until its tests can run.
func (m *Stepper) advanceTests() {
	if !m.advancing() {
		return
	}
	if len(m.s.Candidates) > 0 {
		m.advanceCandidates() // candidates.go
		return
	}
	if !m.lineReady() {
		return
	}
	switch {
	case m.s.Spec.Options.SkipTests:
		m.Note("skip_tests: no tests were generated or run")
		m.Finish(messages.StatusSucceeded, "")
	case m.s.Tests == nil:
		m.Finish(messages.StatusErrored, "internal: generation finished without tests")
	default:
		m.runTests()
	}
}

// advancing reports whether the job is where code, tests, packages or an
// image move it on: not testing, diagnosing or accepting, where a late
// build only registers its image.
func (m *Stepper) advancing() bool {
	switch m.s.Phase {
	case PhaseGenerating, PhaseRepairing, PhasePackages, PhaseBuilding:
		return !m.s.Done()
	}
	return false
}

// lineReady moves the job's own line towards its check and reports
// whether the code, the tests and the image for their packages are all
// there (the image then being the job's). It is level-triggered: it looks
// at what the state has and what is pending, and dispatches what is
// missing. That is what lets builds overlap model calls: the environment
// for the code is built as soon as the code's packages are known, while
// the tests (or a fix, or a test patch) are still being written; tests
// that import more packages cause a second build, nothing else does.
func (m *Stepper) lineReady() bool {
	s := m.s
	if s.Solution == nil {
		if !m.busy(0, messages.StageCode) {
			m.Finish(messages.StatusErrored, "internal: generation finished without code")
		}
		return false
	}
	codeBusy := m.busy(0, messages.StageCode, messages.StageFix, messages.StageVerify)
	testsBusy := m.busy(0, messages.StageTests, messages.StagePatchTests)
	img, built, ready := m.env(0, codeBusy)
	switch {
	case s.Done():
		return false
	case codeBusy || testsBusy:
		return false
	case !ready:
		if m.busy(0, messages.StagePackages) {
			m.Enter(PhasePackages)
		} else {
			m.Enter(PhaseBuilding)
		}
		return false
	}
	s.Image, s.BuiltPackages = img, built.Packages
	return true
}

func (m *Stepper) runTests() {
	s := m.s
	m.endRound()
	s.Iteration++
	m.Enter(PhaseTesting)
	m.Dispatch(messages.StageRunTests, messages.RunTestsInput{
		Image: s.Image, Env: messages.BuildInput{Packages: s.BuiltPackages, SystemPackages: s.SystemPackages, Name: s.Spec.Name},
		Code: s.Solution.Code, Tests: s.Tests.Code, Samples: s.Samples,
		Timeout: s.Spec.Options.Timeout, Resources: s.Spec.Options.Resources,
	})
}

// tested takes a test run of the job's line or of a candidate's.
func (m *Stepper) tested(p Pending, out messages.TestReport) {
	if p.Candidate > 0 {
		m.candidateReport(p.Candidate, out)
		return
	}
	m.report(out)
}

// report handles the job's own test run (not a candidate's).
func (m *Stepper) report(out messages.TestReport) {
	s := m.s
	out = m.unskip(out)
	rep := trimReport(out)
	s.LastReport = &rep
	if rep.OK() {
		if len(s.Tracks) > 0 {
			m.Note(fmt.Sprintf("iteration %d: every test passes", s.Iteration))
		}
		s.Tracks = nil
		m.testsPassed() // strength.go: measured first, then accepted
		return
	}
	sigs := m.observe(rep)
	if s.Iteration >= s.Spec.Options.MaxIterations {
		if m.fallBack(fmt.Sprintf("still failed after %d test runs (max_iterations)", s.Iteration)) { // strength.go
			return
		}
		m.Finish(messages.StatusFailed, fmt.Sprintf("tests still failing after %d iterations (max_iterations): %s", s.Iteration, reportSummary(rep)))
		return
	}
	fp := fingerprint(s.Solution.Code, testsOf(s), envKey(s.BuiltPackages, s.SystemPackages), sigs)
	if m.repeated(fp, "the same code, tests, packages and failures") {
		return
	}
	if m.stale() { // repair.go
		m.unstick(fmt.Sprintf("the same failures for %d test runs, through repairs", staleRuns))
		return
	}
	m.Enter(PhaseDiagnosing)
	m.Dispatch(messages.StageDiagnose, messages.DiagnoseInput{
		Task: s.Task, Plan: planOf(s), Code: s.Solution.Code, Tests: s.Tests.Code,
		Report: rep, Packages: s.Packages, Hints: m.diagnoseHints(), Stdlib: s.Stdlib,
	})
}

// accept runs the script on the real samples once the tests pass, when there
// is something to check (samples to read or outputs to write).
func (m *Stepper) accept() {
	s := m.s
	if len(s.Samples) == 0 && len(s.Spec.Outputs) == 0 {
		m.Finish(messages.StatusSucceeded, "")
		return
	}
	m.Enter(PhaseAccepting)
	m.dispatchAcceptance()
}

// dispatchAcceptance runs the script on the samples, with the declared outputs.
func (m *Stepper) dispatchAcceptance() {
	s := m.s
	m.Dispatch(messages.StageAcceptance, messages.AcceptanceInput{
		Image: s.Image, Env: messages.BuildInput{Packages: s.BuiltPackages, SystemPackages: s.SystemPackages, Name: s.Spec.Name},
		Code: s.Solution.Code, Samples: s.Samples, Args: protocol.FileArgs(s.Samples), Outputs: s.Spec.Outputs,
		Timeout: s.Spec.Options.Timeout, Resources: s.Spec.Options.Resources, CheckImports: s.Spec.Options.ValidatesByRun(),
	})
}

// keepRun keeps a run of the script (an acceptance run, a rerun) on the
// state, bounded, and finishes the job when it succeeded; it reports
// whether it did.
func (m *Stepper) keepRun(out messages.AcceptanceOutput) bool {
	out.Output = trim.Middle(out.Output, reportOutputBudget)
	out.Problems = trimAll(out.Problems, failureFieldBudget, 20)
	m.s.Acceptance = &out
	if out.OK {
		m.Finish(messages.StatusSucceeded, "")
	}
	return out.OK
}

// accepted handles the acceptance run. The tests passed but the script may
// still fail on the real samples: that is a logic failure the tests missed,
// fixed like one (the next acceptance run is its verification).
func (m *Stepper) accepted(_ Pending, out messages.AcceptanceOutput) {
	s := m.s
	if m.keepRun(out) {
		return
	}
	problems := strings.Join(s.Acceptance.Problems, "; ")
	if s.Iteration >= s.Spec.Options.MaxIterations {
		m.Finish(messages.StatusFailed, "acceptance run failed after max_iterations: "+problems)
		return
	}
	fp := fingerprint(s.Solution.Code, testsOf(s), envKey(s.BuiltPackages, s.SystemPackages),
		map[string]string{"acceptance_run": normaliseError(problems)})
	if m.repeated(fp, "the same code, tests and acceptance failure") {
		return
	}
	m.Enter(PhaseRepairing)
	m.Note("acceptance run on the samples failed: " + problems)
	s.Round = &Round{Iteration: s.Iteration, Acceptance: true, BaseCode: s.Solution.Code, BaseTests: testsOf(s),
		Logic: []messages.Failure{trimFailure(messages.Failure{
			TestName:         "acceptance_run",
			ErrorMessage:     problems,
			ActualBehavior:   s.Acceptance.Output,
			ExpectedBehavior: "the script runs on the samples in " + protocol.InputsDir + " and writes every declared output to " + protocol.OutputPath("<name>"),
			RootCause:        "the script fails on the real sample data",
			SuggestedFix:     "make the __main__ block read the samples and write each declared output",
			ErrorType:        messages.ErrorLogic,
		})}}
	m.dispatchFix(nil)
}

// failuresFromReport stands in for an empty diagnosis: every failing case
// as a logic failure, or the run as a whole. It never returns nothing, so
// an empty diagnosis still changes the code.
func failuresFromReport(r *messages.TestReport) []messages.Failure {
	var out []messages.Failure
	if r == nil {
		r = &messages.TestReport{}
	}
	for _, c := range r.Cases {
		if protocol.Failing(c) {
			out = append(out, messages.Failure{TestName: protocol.TestID(c), ErrorMessage: c.Message, ActualBehavior: c.Details, ErrorType: messages.ErrorLogic})
		}
	}
	if len(out) == 0 {
		out = append(out, messages.Failure{TestName: "pytest", ErrorMessage: firstLine(r.Output), ActualBehavior: r.Output, ErrorType: messages.ErrorLogic})
	}
	return trimFailures(out)
}

func reportSummary(r messages.TestReport) string {
	if r.TimedOut {
		return "timed out"
	}
	if r.OK() {
		return fmt.Sprintf("%d passed", r.Passed)
	}
	return fmt.Sprintf("%d passed, %d failed, %d errors", r.Passed, r.Failed, r.Errors)
}

// unskip turns back into failures the tests that failed before and are
// skipped now: a test patch that skips a failing test (pytest.skip, a skip
// or an xfail mark, which JUnit reports as skipped) has not made it pass,
// and the job must not pass on it.
func (m *Stepper) unskip(r messages.TestReport) messages.TestReport {
	failed := map[string]bool{}
	for _, t := range m.s.Tracks {
		failed[t.Test] = true
	}
	if len(failed) == 0 || r.Skipped == 0 {
		return r
	}
	cases := append([]messages.TestCase(nil), r.Cases...)
	var again []string
	for i, c := range cases {
		if c.Outcome != messages.OutcomeSkipped || !failed[protocol.TestID(c)] {
			continue
		}
		cases[i].Outcome = messages.OutcomeFailed
		cases[i].Message = strings.TrimSpace("skipped after it failed: a skipped test does not pass; make it pass instead (" + c.Message + ")")
		r.Skipped--
		r.Failed++
		again = append(again, protocol.TestID(c))
	}
	if len(again) > 0 {
		r.Cases = cases
		m.Note("failed before and skipped now, counted as failing: " + joinShort(again, 5))
	}
	return r
}
