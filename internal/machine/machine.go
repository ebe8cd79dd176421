package machine

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/autocoder/autocoder/internal/pyscan"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Step applies one event to a job's state and returns the next state and the
// commands to carry out. It is a pure function: no I/O, no clock, no
// randomness, and prev is never modified, so it can be tested exhaustively and
// replayed from a recorded event log.
//
// Events that do not fit the state (a result for a stage that is not pending,
// anything after the job is done) change nothing and return no commands: a
// redelivered message is harmless.
func Step(prev State, ev Event) (State, []Command) {
	s := prev.Clone()
	m := &stepper{s: &s, now: ev}
	switch ev.Kind {
	case EventSubmitted:
		if s.JobID != "" || ev.Submit == nil {
			return prev, nil // duplicate submission
		}
		m.submit(ev.Submit)
	case EventStageResult:
		r := ev.Result
		if r == nil || s.Done() {
			return prev, nil
		}
		p, ok := s.Pending[r.Seq]
		if !ok || p.Stage != r.Stage {
			return prev, nil // stale or duplicate result
		}
		delete(s.Pending, r.Seq)
		m.record(p, r)
		if r.Error != "" {
			m.stageFailed(r)
			break
		}
		m.result(r)
	case EventCancel:
		if s.Done() || s.JobID == "" {
			return prev, nil
		}
		m.finish(messages.StatusFailed, "cancelled: "+ev.Reason)
	default:
		return prev, nil
	}
	return s, m.cmds
}

type stepper struct {
	s    *State
	now  Event
	cmds []Command
}

func (m *stepper) submit(sub *Submission) {
	s := m.s
	s.JobID = sub.JobID
	s.Spec = sub.Spec
	s.Samples = sub.Samples
	s.SubmittedAt = m.now.Time
	s.Status = messages.StatusRunning
	s.Pending = map[int]Pending{}
	s.Task = messages.TaskSpec{
		Prompt:      sub.Spec.Prompt,
		Schema:      sub.Spec.Schema,
		Constraints: sub.Spec.Constraints,
		Inputs:      sub.Spec.Inputs,
		Outputs:     sub.Spec.Outputs,
	}
	if len(sub.Samples) > 0 {
		s.Task.Samples = map[string]string{}
		for _, r := range sub.Samples {
			s.Task.Samples[r.Name] = r.FileName
		}
	}
	s.Packages = normPackages(sub.Spec.Options.BasePackages)
	m.emit(messages.Event{Type: messages.EventJobStarted, Message: "job accepted"})
	if len(s.Samples) > 0 {
		s.Phase = PhaseProfiling
		m.dispatch(messages.StageProfile, messages.ProfileInput{
			Samples: s.Samples, MaxSampleRows: s.Spec.Options.MaxSampleRows, Constraints: s.Spec.Constraints,
		})
		return
	}
	m.plan()
}

func (m *stepper) plan() {
	m.s.Phase = PhasePlanning
	m.dispatch(messages.StagePlan, messages.PlanInput{Task: m.s.Task, DataContext: m.s.DataContext})
}

// result routes a successful stage result.
func (m *stepper) result(r *messages.StageResult) {
	s := m.s
	s.Usage = s.Usage.Add(r.Usage)
	if r.Cached {
		s.CacheHits++
	}
	s.History = append(s.History, r.Messages...)
	switch r.Stage {
	case messages.StageProfile:
		var out messages.ProfileOutput
		if !m.decode(r, &out) {
			return
		}
		s.DataContext = out.DataContext
		s.GeneratedSchemas = out.GeneratedSchemas
		m.plan()

	case messages.StagePlan:
		var out messages.Plan
		if !m.decode(r, &out) {
			return
		}
		s.Plan = &out
		s.Phase = PhaseGenerating
		// Tests depend on the task and plan, not on the code: generate both at once.
		m.dispatch(messages.StageCode, messages.CodeInput{Task: s.Task, DataContext: s.DataContext, Plan: out, BasePackages: s.Spec.Options.BasePackages})
		if !s.Spec.Options.SkipTests {
			m.dispatch(messages.StageTests, messages.TestsInput{Task: s.Task, DataContext: s.DataContext, Plan: out})
		}

	case messages.StageCode, messages.StageFix:
		var out messages.Solution
		if !m.decode(r, &out) {
			return
		}
		s.Solution = &out
		m.afterGeneration()

	case messages.StageTests:
		var out messages.Tests
		if !m.decode(r, &out) {
			return
		}
		s.Tests = &out
		m.afterGeneration()

	case messages.StagePatchTests:
		var out messages.PatchTestsOutput
		if !m.decode(r, &out) {
			return
		}
		s.Tests = &messages.Tests{Code: out.Tests}
		if len(out.Unapplied) > 0 {
			m.note("test patches not applied: " + strings.Join(out.Unapplied, ", "))
		}
		m.afterGeneration()

	case messages.StagePackages:
		var out messages.Packages
		if !m.decode(r, &out) {
			return
		}
		s.Packages = normPackages(append(s.Packages, validPackages(out.Packages)...))
		m.afterGeneration()

	case messages.StageBuild:
		var out messages.BuildOutput
		if !m.decode(r, &out) {
			return
		}
		if len(out.InvalidPackages) > 0 {
			m.invalidPackages(out.InvalidPackages)
			return
		}
		s.Image = out.Image
		s.BuiltPackages = append([]string(nil), s.Packages...)
		m.afterGeneration()

	case messages.StageRunTests:
		var out messages.TestReport
		if !m.decode(r, &out) {
			return
		}
		s.LastReport = &out
		if out.OK() {
			m.accept()
			return
		}
		if s.Iteration >= s.Spec.Options.MaxIterations {
			m.finish(messages.StatusFailed, fmt.Sprintf("tests still failing after %d iterations (max_iterations): %s", s.Iteration, reportSummary(out)))
			return
		}
		s.Phase = PhaseDiagnosing
		m.dispatch(messages.StageDiagnose, messages.DiagnoseInput{
			Task: s.Task, Plan: planOf(s), Code: s.Solution.Code, Tests: s.Tests.Code,
			Report: out, Packages: s.Packages, Hints: lastNotes(s.Notes, 5),
		})

	case messages.StageDiagnose:
		var out messages.Diagnosis
		if !m.decode(r, &out) {
			return
		}
		s.Diagnosis = &out
		m.route(out)

	case messages.StageAcceptance:
		var out messages.AcceptanceOutput
		if !m.decode(r, &out) {
			return
		}
		s.Acceptance = &out
		if out.OK {
			m.finish(messages.StatusSucceeded, "")
			return
		}
		// The tests passed but the script fails on the real samples: that is
		// a logic failure the tests missed. Fix the code against it.
		if s.Iteration >= s.Spec.Options.MaxIterations {
			m.finish(messages.StatusFailed, "acceptance run failed after max_iterations: "+strings.Join(out.Problems, "; "))
			return
		}
		s.Phase = PhaseRepairing
		m.note("acceptance run on the samples failed: " + strings.Join(out.Problems, "; "))
		m.dispatch(messages.StageFix, messages.FixInput{
			Task: s.Task, Plan: planOf(s), Code: s.Solution.Code, Tests: testsOf(s), Packages: s.Packages,
			Failures: []messages.Failure{{
				TestName:         "acceptance_run",
				ErrorMessage:     strings.Join(out.Problems, "; "),
				ActualBehavior:   out.Output,
				ExpectedBehavior: "the script runs on the samples in /var/inputs and writes every declared output to /var/outputs/<name>",
				RootCause:        "the script fails on the real sample data",
				SuggestedFix:     "make the __main__ block read the samples and write each declared output",
				ErrorType:        messages.ErrorLogic,
			}},
		})
	}
}

// afterGeneration runs whenever code, tests, packages or an image arrive: once
// nothing is pending it moves the job to the next thing it needs.
func (m *stepper) afterGeneration() {
	s := m.s
	if len(s.Pending) > 0 {
		return // wait for the rest of this phase
	}
	if s.Solution == nil || (!s.Spec.Options.SkipTests && s.Tests == nil) {
		m.finish(messages.StatusErrored, "internal: generation finished without code or tests")
		return
	}
	// Packages: a static scan first; the model only for imports it cannot map.
	if s.Phase != PhasePackages {
		dists, unknown := m.scan()
		s.Packages = normPackages(append(s.Packages, dists...))
		if len(unknown) > 0 {
			s.AskedImports = append(s.AskedImports, unknown...)
			s.Phase = PhasePackages
			m.dispatch(messages.StagePackages, messages.PackagesInput{Imports: unknown})
			return
		}
	}
	if s.Image == "" || !sameSet(s.BuiltPackages, s.Packages) {
		s.Phase = PhaseBuilding
		m.dispatch(messages.StageBuild, messages.BuildInput{Packages: s.Packages, SystemPackages: s.SystemPackages})
		return
	}
	if s.Spec.Options.SkipTests {
		m.note("skip_tests: no tests were generated or run")
		m.finish(messages.StatusSucceeded, "")
		return
	}
	m.runTests()
}

func (m *stepper) scan() (dists, unknown []string) {
	s := m.s
	imports := pyscan.Imports(s.Solution.Code)
	if s.Tests != nil {
		imports = append(imports, pyscan.Imports(s.Tests.Code)...)
	}
	dists, unknown = pyscan.Distributions(imports, nil)
	dists = append(dists, validPackages(s.Solution.Packages)...)
	dists = removePackages(dists, s.InvalidPackages) // the index said no: never ask again
	s.SystemPackages = normPackages(append(s.SystemPackages, s.Solution.SystemPackages...))
	// Imports the model already asked for by a matching package name are not unknown.
	have := map[string]bool{}
	for _, p := range append(append(dists, s.Packages...), s.AskedImports...) {
		have[canonical(p)] = true
	}
	var still []string
	for _, u := range unknown {
		if !have[canonical(u)] {
			still = append(still, u)
		}
	}
	return dists, still
}

func (m *stepper) runTests() {
	s := m.s
	s.Iteration++
	s.Phase = PhaseTesting
	m.dispatch(messages.StageRunTests, messages.RunTestsInput{
		Image: s.Image, Code: s.Solution.Code, Tests: s.Tests.Code, Samples: s.Samples,
		Timeout: s.Spec.Options.Timeout, Resources: s.Spec.Options.Resources,
	})
}

// accept runs the script on the real samples once the tests pass, when there
// is something to check (samples to read or outputs to write).
func (m *stepper) accept() {
	s := m.s
	if len(s.Samples) == 0 && len(s.Spec.Outputs) == 0 {
		m.finish(messages.StatusSucceeded, "")
		return
	}
	s.Phase = PhaseAccepting
	m.dispatch(messages.StageAcceptance, messages.AcceptanceInput{
		Image: s.Image, Code: s.Solution.Code, Samples: s.Samples, Outputs: s.Spec.Outputs,
		Timeout: s.Spec.Options.Timeout, Resources: s.Spec.Options.Resources,
	})
}

// route sends each diagnosed failure to its fix. Mixed diagnoses are handled
// together in one repair round: code fixes, test patches and package rebuilds
// run concurrently, and the tests run once all of them are in. A failure
// class with nothing to act on falls back to fixing the code, so the loop
// never repeats itself without a change.
func (m *stepper) route(d messages.Diagnosis) {
	s := m.s
	var logic, testErrs, env []messages.Failure
	for _, f := range d.Failures {
		switch f.ErrorType {
		case messages.ErrorTestError:
			testErrs = append(testErrs, f)
		case messages.ErrorEnvironment:
			env = append(env, f)
		default:
			logic = append(logic, f)
		}
	}
	added := newPackages(s.Packages, validPackages(d.NeedsPackages))
	s.SystemPackages = normPackages(append(s.SystemPackages, d.NeedsSystemPackages...))
	if len(env) > 0 && len(added) == 0 {
		// An environment failure with no package to add cannot be fixed by a
		// rebuild: treat it as a code problem instead of looping.
		m.note("environment failures without a new package were routed to a code fix")
		logic = append(logic, env...)
	}
	if len(logic) == 0 && len(testErrs) == 0 && len(added) == 0 {
		// Nothing actionable came back: fix the code against the raw report.
		logic = failuresFromReport(s.LastReport)
	}
	s.Phase = PhaseRepairing
	if len(added) > 0 {
		s.Packages = normPackages(append(s.Packages, added...))
		m.note("adding packages: " + strings.Join(added, ", "))
	}
	if len(logic) > 0 {
		m.dispatch(messages.StageFix, messages.FixInput{
			Task: s.Task, Plan: planOf(s), Code: s.Solution.Code, Tests: testsOf(s), Failures: logic, Packages: s.Packages,
		})
	}
	if len(testErrs) > 0 {
		m.dispatch(messages.StagePatchTests, messages.PatchTestsInput{
			Task: s.Task, Code: s.Solution.Code, Tests: testsOf(s), Failures: testErrs,
		})
	}
	if len(s.Pending) == 0 {
		m.afterGeneration() // packages only: rebuild and rerun
	}
}

func (m *stepper) invalidPackages(bad []string) {
	s := m.s
	s.InvalidPackages = normPackages(append(s.InvalidPackages, bad...))
	remaining := removePackages(s.Packages, bad)
	if len(remaining) == len(s.Packages) {
		m.finish(messages.StatusFailed, "image build failed: invalid packages "+strings.Join(bad, ", "))
		return
	}
	m.note("dropped packages the index does not have: " + strings.Join(bad, ", "))
	s.Packages = remaining
	s.Phase = PhaseBuilding
	m.dispatch(messages.StageBuild, messages.BuildInput{Packages: s.Packages, SystemPackages: s.SystemPackages})
}

func (m *stepper) stageFailed(r *messages.StageResult) {
	status := messages.StatusErrored
	if r.ErrorKind == messages.ErrorPermanent {
		status = messages.StatusFailed
	}
	m.finish(status, fmt.Sprintf("stage %s failed: %s", r.Stage, r.Error))
}

func (m *stepper) decode(r *messages.StageResult, v any) bool {
	if err := json.Unmarshal(r.Output, v); err != nil {
		m.finish(messages.StatusErrored, fmt.Sprintf("stage %s returned malformed output: %v", r.Stage, err))
		return false
	}
	return true
}

func (m *stepper) record(p Pending, r *messages.StageResult) {
	outcome := "ok"
	if r.Error != "" {
		outcome = "error: " + firstLine(r.Error)
	} else if r.Stage == messages.StageRunTests {
		var rep messages.TestReport
		if json.Unmarshal(r.Output, &rep) == nil {
			outcome = reportSummary(rep)
		}
	}
	m.s.Stages = append(m.s.Stages, messages.StageRecord{
		Name: r.Stage, Seq: r.Seq, Iteration: p.Iteration, StartedAt: r.StartedAt,
		DurationMS: r.DurationMS, Cached: r.Cached, Outcome: outcome, Usage: r.Usage,
	})
	m.emit(messages.Event{Type: messages.EventStageFinished, Stage: r.Stage, Seq: r.Seq,
		Iteration: p.Iteration, Cached: r.Cached, Outcome: outcome})
}

func (m *stepper) dispatch(stage messages.Stage, input any) {
	s := m.s
	b, err := json.Marshal(input)
	if err != nil {
		m.finish(messages.StatusErrored, "internal: marshal "+string(stage)+" input: "+err.Error())
		return
	}
	s.NextSeq++
	seq := s.NextSeq
	s.Pending[seq] = Pending{Stage: stage, Iteration: s.Iteration, DispatchedAt: m.now.Time}
	m.cmds = append(m.cmds, Command{Dispatch: &messages.StageCommand{
		V: messages.SchemaVersion, JobID: s.JobID, Seq: seq, Stage: stage, Iteration: s.Iteration,
		Model: s.Spec.Options.Model, Cache: s.Spec.Options.Cache, Input: b,
	}})
	m.emit(messages.Event{Type: messages.EventStageStarted, Stage: stage, Seq: seq, Iteration: s.Iteration})
}

func (m *stepper) emit(e messages.Event) {
	e.V = messages.SchemaVersion
	e.JobID = m.s.JobID
	e.Time = m.now.Time
	m.cmds = append(m.cmds, Command{Emit: &e})
}

func (m *stepper) note(n string) { m.s.Notes = append(m.s.Notes, n) }

func (m *stepper) finish(status messages.JobStatus, reason string) {
	s := m.s
	s.Phase = PhaseDone
	s.Status = status
	s.Error = reason
	t := m.now.Time
	s.FinishedAt = &t
	s.Pending = map[int]Pending{} // results still in flight are now stale
	res := ResultOf(*s)
	success := status == messages.StatusSucceeded
	msg := "tests passed"
	if !success {
		msg = reason
	}
	m.emit(messages.Event{Type: messages.EventJobFinished, Success: &success, Message: msg})
	m.cmds = append(m.cmds, Command{Finish: &res})
}

// ResultOf builds the result object (Contract 5) from a state, finished or not.
func ResultOf(s State) messages.Result {
	r := messages.Result{
		V: messages.SchemaVersion, JobID: s.JobID, Status: s.Status,
		Success: s.Status == messages.StatusSucceeded, Attempts: s.Iteration,
		Plan: s.Plan, Solution: s.Solution, Error: s.Error, Image: s.Image,
		DetectedPackages: nonNil(s.Packages), DetectedSystemPackages: nonNil(s.SystemPackages),
		GeneratedSchemas: s.GeneratedSchemas, DataContext: s.DataContext,
		TotalInputTokens: s.Usage.InputTokens, TotalOutputTokens: s.Usage.OutputTokens,
		LLMCalls: s.Usage.Calls, CacheHits: s.CacheHits, Stages: s.Stages,
		ConversationHistory: s.History, SkippedTests: s.Spec.Options.SkipTests,
		SubmittedAt: s.SubmittedAt, FinishedAt: s.FinishedAt,
	}
	spec := s.Spec
	r.Spec = &spec
	if s.Tests != nil {
		r.Tests = s.Tests.Code
	}
	if s.LastReport != nil {
		r.Output = s.LastReport.Output
		r.ExitCode = s.LastReport.ExitCode
	}
	if s.Acceptance != nil {
		r.Outputs = s.Acceptance.Outputs
		if !s.Acceptance.OK {
			r.Output = s.Acceptance.Output
			r.ExitCode = s.Acceptance.ExitCode
		}
	}
	if r.Outputs == nil {
		r.Outputs = map[string]any{}
	}
	if r.Stages == nil {
		r.Stages = []messages.StageRecord{}
	}
	if r.ConversationHistory == nil {
		r.ConversationHistory = []messages.ChatMessage{}
	}
	if r.GeneratedSchemas == nil {
		r.GeneratedSchemas = map[string]string{}
	}
	return r
}

// ---- small pure helpers ----

func planOf(s *State) messages.Plan {
	if s.Plan == nil {
		return messages.Plan{}
	}
	return *s.Plan
}

func testsOf(s *State) string {
	if s.Tests == nil {
		return ""
	}
	return s.Tests.Code
}

func failuresFromReport(r *messages.TestReport) []messages.Failure {
	var out []messages.Failure
	if r == nil {
		return out
	}
	for _, c := range r.Cases {
		if c.Outcome == messages.OutcomeFailed || c.Outcome == messages.OutcomeError {
			out = append(out, messages.Failure{TestName: c.Name, ErrorMessage: c.Message, ActualBehavior: c.Details, ErrorType: messages.ErrorLogic})
		}
	}
	if len(out) == 0 {
		out = append(out, messages.Failure{TestName: "pytest", ErrorMessage: firstLine(r.Output), ActualBehavior: r.Output, ErrorType: messages.ErrorLogic})
	}
	return out
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

func lastNotes(n []string, k int) []string {
	if len(n) <= k {
		return n
	}
	return n[len(n)-k:]
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// canonical is the PEP 503 normal form of a distribution name, ignoring any
// version specifier.
func canonical(p string) string {
	name := p
	if i := strings.IndexAny(name, "=<>!~[;"); i >= 0 {
		name = name[:i]
	}
	name = strings.ToLower(strings.TrimSpace(name))
	return strings.NewReplacer("_", "-", ".", "-").Replace(name)
}

func validPackages(ps []string) []string {
	var out []string
	for _, p := range ps {
		p = strings.TrimSpace(p)
		if messages.PackageNameRe.MatchString(p) {
			out = append(out, p)
		}
	}
	return out
}

// normPackages dedupes by canonical name (the first spelling wins) and sorts.
func normPackages(ps []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range ps {
		c := canonical(p)
		if c == "" || seen[c] {
			continue
		}
		seen[c] = true
		out = append(out, strings.TrimSpace(p))
	}
	sort.Slice(out, func(i, j int) bool { return canonical(out[i]) < canonical(out[j]) })
	return out
}

func newPackages(have, want []string) []string {
	h := map[string]bool{}
	for _, p := range have {
		h[canonical(p)] = true
	}
	var out []string
	for _, p := range want {
		if !h[canonical(p)] {
			h[canonical(p)] = true
			out = append(out, p)
		}
	}
	return out
}

func removePackages(ps, bad []string) []string {
	b := map[string]bool{}
	for _, p := range bad {
		b[canonical(p)] = true
	}
	var out []string
	for _, p := range ps {
		if !b[canonical(p)] {
			out = append(out, p)
		}
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = normPackages(a), normPackages(b)
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if canonical(a[i]) != canonical(b[i]) {
			return false
		}
	}
	return true
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
