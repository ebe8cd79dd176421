package machine

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/autocoder/autocoder/internal/trim"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Test strength: once the job's tests pass, mutants of solution.py run
// against them (the mutate stage, in the sandbox). Below
// options.min_test_strength, the model is shown the surviving mutants and
// asked for stronger tests (strengthen_tests); the stronger tests then run
// on the solution like any tests: a new test that fails goes through the
// diagnosis, which repairs the test (test_error) or the code (logic), and
// once the tests pass again they are measured again. It stops when the
// tests are strong enough, after options.strengthen_rounds calls, when the
// model's tests do not change, when no test run or token is left, or at
// once with options.mutation: measure. Mutation is advisory: a failed
// measurement or strengthening call notes why and the job goes on to its
// acceptance run.

// StrengthLog is the test-strength part of the state.
type StrengthLog struct {
	Strength *messages.StrengthReport `json:"test_strength,omitempty"`
	// Passed is the code, tests and report that last passed, kept while
	// stronger tests are tried on them (fallBack).
	Passed *PassedRun `json:"passed_before_strengthening,omitempty"`
}

// PassedRun is a test run that passed: the code, the tests, the report.
type PassedRun struct {
	Solution messages.Solution    `json:"solution"`
	Tests    messages.Tests       `json:"tests"`
	Report   *messages.TestReport `json:"report,omitempty"`
}

// Bounds of the stored report.
const (
	maxStoredScores    = 20
	maxStoredSurvivors = 5
	survivorDiffBudget = 2 << 10
)

// mutationSeed picks the mutants: one seed for every measurement, so the
// scores of a job compare the same mutants while the code is unchanged.
const mutationSeed = 1

// testsPassed takes the job's passing tests to their measurement, or to
// the acceptance run when the job does not measure them.
func (m *Stepper) testsPassed() {
	m.s.Passed = nil // these are the passing ones now
	if !m.measures() {
		m.accept()
		return
	}
	s := m.s
	o := s.Spec.Options
	m.Enter(PhaseMeasuring)
	m.Dispatch(messages.StageMutate, messages.MutateInput{
		Image: s.Image, Env: messages.BuildInput{Packages: s.BuiltPackages, SystemPackages: s.SystemPackages, Name: s.Spec.Name},
		Code: s.Solution.Code, Tests: s.Tests.Code, Samples: s.Samples, Resources: o.Resources,
		Seed: mutationSeed, MaxMutants: o.MaxMutants, Budget: o.MutationBudget,
	})
}

// measures reports whether the job measures its tests. A spec without
// options.mutation (one normalised before the option existed, as in a
// recorded log) does not. Only the pipeline kind measures: its tests are
// the ones the job generated.
func (m *Stepper) measures() bool {
	s := m.s
	mode := s.Spec.Options.Mutation
	return (mode == messages.MutationOn || mode == messages.MutationMeasure) && s.Solution != nil && s.Tests != nil
}

// mutated takes a measurement and strengthens the tests or goes on.
func (m *Stepper) mutated(_ Pending, ts messages.TestStrength) {
	s := m.s
	o := s.Spec.Options
	r := s.Strength
	if r == nil {
		r = &messages.StrengthReport{MinTestStrength: o.MinTestStrength}
		s.Strength = r
	}
	if ts.Error == "" && ts.Judged() == 0 {
		// No mutant judged (a report of an older worker says score 1): no
		// score, not a pass of min_test_strength.
		ts.Score, ts.Error = 0, messages.NotJudged+": no mutant was killed or survived"
	}
	r.TestStrength = boundStrength(ts)
	if len(r.Scores) < maxStoredScores && ts.Scored() { // a measurement that failed or judged nothing has no score
		r.Scores = append(r.Scores, ts.Score)
	}
	if why := m.enough(r); why != "" {
		r.Outcome = why
		m.Note("test strength: " + why)
		m.accept()
		return
	}
	r.Rounds++
	m.Note(fmt.Sprintf("test strength %.2f is below %.2f (%d of %d mutants killed): asking for tests that kill the %d survivors (round %d of %d)",
		ts.Score, o.MinTestStrength, ts.Killed, ts.Judged(), ts.Survived, r.Rounds, o.StrengthenRounds))
	m.Enter(PhaseStrengthening)
	m.Dispatch(messages.StageStrengthenTests, messages.StrengthenTestsInput{
		Task: s.Task, DataContext: s.DataContext, Plan: planOf(s), Code: s.Solution.Code, Tests: s.Tests.Code,
		Strength: r.TestStrength, Round: r.Rounds,
	})
}

// enough says why the loop stops at this measurement, or "" to strengthen.
func (m *Stepper) enough(r *messages.StrengthReport) string {
	s := m.s
	o := s.Spec.Options
	switch {
	case r.Error != "":
		return "not measured: " + firstLine(r.Error)
	case r.Judged() == 0:
		return "no mutant to judge"
	case o.Mutation == messages.MutationMeasure:
		return fmt.Sprintf("%.2f, measured only (mutation: measure)", r.Score)
	case r.Score >= o.MinTestStrength:
		return fmt.Sprintf("%.2f, at least %.2f (min_test_strength)", r.Score, o.MinTestStrength)
	case len(r.Survivors) == 0:
		return fmt.Sprintf("%.2f, with no survivor to show the model", r.Score)
	case r.Rounds >= o.StrengthenRounds:
		return fmt.Sprintf("%.2f, still below %.2f after %d strengthening rounds (strengthen_rounds)", r.Score, o.MinTestStrength, r.Rounds)
	case s.Iteration >= o.MaxIterations:
		return fmt.Sprintf("%.2f; no test run left for stronger tests (max_iterations)", r.Score)
	case overBudget(s):
		return fmt.Sprintf("%.2f; no token left for stronger tests (token_budget)", r.Score)
	}
	return ""
}

// strengthened takes the stronger tests: they run on the solution next,
// through the environment check (they may import more) and the test run.
func (m *Stepper) strengthened(_ Pending, t messages.Tests) {
	s := m.s
	r := s.Strength
	if r == nil || strings.TrimSpace(t.Code) == strings.TrimSpace(testsOf(s)) {
		why := "the model's stronger tests are the tests it had"
		if r != nil {
			r.Outcome = fmt.Sprintf("%.2f; %s", r.Score, why)
		}
		m.Note("test strength: " + why)
		m.accept()
		return
	}
	s.Passed = &PassedRun{Solution: *s.Solution, Tests: *s.Tests, Report: s.LastReport}
	s.Tests = &t
	m.Note(fmt.Sprintf("stronger tests (round %d): they run on the solution; a new test that fails is diagnosed and repaired like any", r.Rounds))
	m.Enter(PhaseRepairing)
	m.advance()
}

// fallBack ends a job whose stronger tests do not pass when the loop
// cannot go on (its test runs or its token budget ran out, it got stuck, a
// stage of the repair failed: why says which, after "the stronger tests
// of round N") on the code and tests that passed before them, and reports
// whether it did: the strength is advisory, and a job whose tests passed
// does not fail for having tried to strengthen them.
func (m *Stepper) fallBack(why string) bool {
	s := m.s
	p, r := s.Passed, s.Strength
	if p == nil || r == nil {
		return false
	}
	s.Solution, s.Tests, s.LastReport, s.Passed = &p.Solution, &p.Tests, p.Report, nil
	s.Tracks = nil
	s.Round = nil
	r.Outcome = fmt.Sprintf("%.2f; the stronger tests of round %d %s: the code and tests that passed before them are kept",
		r.Score, r.Rounds, why)
	m.Note("test strength: " + r.Outcome)
	m.accept()
	return true
}

// strengthFailed lets the job go on when a measurement or a strengthening
// call failed: the tests pass, and their strength is advisory. A failed
// measurement leaves the current tests unmeasured: the report's last
// measurement (of tests since replaced by stronger ones) is dropped, its
// score and survivors with it, and Error says why; Scores keeps the
// measurements made. A failed strengthening call leaves the tests the last
// measurement measured.
func (m *Stepper) strengthFailed(_ Pending, r *messages.StageResult) {
	s := m.s
	why := fmt.Sprintf("the %s stage failed (%s)", r.Stage, firstLine(r.Error))
	switch {
	case r.Stage == messages.StageMutate && s.Strength != nil:
		s.Strength.TestStrength = messages.TestStrength{Seed: s.Strength.Seed, Error: trim.Middle(why, failureFieldBudget)}
		s.Strength.Outcome = why
	case r.Stage == messages.StageMutate:
		s.Strength = &messages.StrengthReport{MinTestStrength: s.Spec.Options.MinTestStrength, Outcome: why,
			TestStrength: messages.TestStrength{Seed: mutationSeed, Error: trim.Middle(why, failureFieldBudget)}}
	case s.Strength != nil:
		s.Strength.Outcome = why
	}
	m.Note("test strength: " + why + "; going on without it")
	m.accept()
}

// boundStrength keeps a measurement's survivors within the state's bounds.
func boundStrength(ts messages.TestStrength) messages.TestStrength {
	if len(ts.Survivors) > maxStoredSurvivors {
		ts.Survivors = ts.Survivors[:maxStoredSurvivors]
	}
	ts.Survivors = append([]messages.SurvivingMutant(nil), ts.Survivors...)
	for i := range ts.Survivors {
		sv := &ts.Survivors[i]
		sv.Diff = trim.Middle(sv.Diff, survivorDiffBudget)
		sv.Description = trim.Middle(sv.Description, failureFieldBudget)
		sv.Witness = trim.Middle(sv.Witness, failureFieldBudget)
		sv.Original = trim.Middle(sv.Original, failureFieldBudget)
		sv.Mutant = trim.Middle(sv.Mutant, failureFieldBudget)
	}
	ts.Error = trim.Middle(ts.Error, failureFieldBudget)
	return ts
}

// strengthNote is the stage_finished note of a measurement.
func strengthNote(output []byte) string {
	var ts messages.TestStrength
	if json.Unmarshal(output, &ts) != nil {
		return ""
	}
	if ts.Error != "" {
		return "test strength not measured: " + firstLine(ts.Error)
	}
	return fmt.Sprintf("test strength %.2f: %d of %d mutants killed, %d equivalent", ts.Score, ts.Killed, ts.Judged(), ts.Equivalent)
}

// strengthResult is the result's test_strength, with the strengthening
// calls' usage.
func strengthResult(s State) *messages.StrengthReport {
	if s.Strength == nil {
		return nil
	}
	r := *s.Strength
	r.Usage = s.StageUsage[messages.StageStrengthenTests]
	return &r
}
