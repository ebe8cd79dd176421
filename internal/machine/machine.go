package machine

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Step applies one input to a job's state and returns the next state and the
// commands to carry out. It is a pure function: no I/O, no clock, no
// randomness, and prev is never modified, so it can be tested exhaustively and
// replayed from a recorded event log.
//
// Inputs that do not fit the state (a result for a stage that is not pending,
// anything after the job is done) change nothing and return no commands: a
// redelivered message is harmless.
func Step(prev State, in Input) (State, []Command) {
	s := prev.Clone()
	m := &stepper{s: &s, now: in}
	changed := false
	switch in.Kind {
	case InputSubmitted:
		changed = s.JobID == "" && in.Submit != nil // else a duplicate submission
		if changed {
			m.submit(in.Submit)
		}
	case InputStageResult:
		changed = m.stageResult(in.Result)
	case InputCancel:
		changed = !s.Done() && s.JobID != ""
		if changed {
			m.cancel(in)
		}
	case InputAbort:
		changed = !s.Done() && s.JobID != ""
		if changed {
			m.abort(in) // abort.go
		}
	}
	if !changed {
		return prev, nil
	}
	return s, m.cmds
}

// stageResult takes the result of a pending stage and reports whether it
// was one: a stale or duplicate result, or one after the job is done,
// changes nothing.
func (m *stepper) stageResult(r *messages.StageResult) bool {
	s := m.s
	if r == nil || s.Done() {
		return false
	}
	p, ok := s.Pending[r.Seq]
	if !ok || p.Stage != r.Stage {
		return false
	}
	delete(s.Pending, r.Seq)
	m.record(p, r)
	switch {
	case p.Orphan:
		m.orphanResult(p, r) // results.go
	case r.Error != "":
		m.stageFailed(p, r)
	default:
		m.result(p, r) // results.go
	}
	return true
}

type stepper struct {
	s    *State
	now  Input
	cmds []Command
}

// enter moves the job to phase p: every phase change goes through here.
func (m *stepper) enter(p Phase) { m.s.Phase = p }

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
		Context:     sub.Spec.Context,
	}
	if len(sub.Samples) > 0 {
		s.Task.Samples = map[string]string{}
		for _, r := range sub.Samples {
			s.Task.Samples[r.Name] = r.FileName
		}
	}
	s.Packages = normPackages(sub.Spec.Options.BasePackages)
	m.emit(messages.Event{Type: messages.EventJobStarted, Message: "job accepted"})
	if sub.Rerun != nil {
		m.startRerun(sub.Rerun) // rerun.go
		return
	}
	if sub.Spec.Mode == messages.ModeCodeMode {
		m.startCodeMode() // codemode.go
		return
	}
	if len(s.Samples) > 0 {
		m.enter(PhaseProfiling)
		m.dispatch(messages.StageProfile, messages.ProfileInput{
			Samples: s.Samples, MaxSampleRows: s.Spec.Options.MaxSampleRows, Constraints: s.Spec.Constraints,
		})
		return
	}
	m.plan()
}

func (m *stepper) plan() {
	if m.isAgent() {
		m.agentStart() // agent.go
		return
	}
	m.enter(PhasePlanning)
	m.dispatch(messages.StagePlan, messages.PlanInput{Task: m.s.Task, DataContext: m.s.DataContext})
}

// generate starts code and tests at once: tests depend on the task and the
// plan, not on the code. With options.candidates k > 1 it asks for k
// independent solutions (see candidates.go).
func (m *stepper) generate() {
	s := m.s
	m.enter(PhaseGenerating)
	in := messages.CodeInput{Task: s.Task, DataContext: s.DataContext, Plan: planOf(s), BasePackages: s.Spec.Options.BasePackages}
	k := s.Spec.Options.Candidates
	if k > 1 && s.Spec.Options.SkipTests {
		m.note(fmt.Sprintf("skip_tests: there are no tests to choose among %d candidates, so one solution is written", k))
		k = 1
	}
	if k > 1 {
		m.startCandidates(in, k)
	} else {
		m.dispatch(messages.StageCode, in)
	}
	if !s.Spec.Options.SkipTests && !validatesByRun(s) {
		m.dispatch(messages.StageTests, messages.TestsInput{Task: s.Task, DataContext: s.DataContext, Plan: planOf(s)})
	}
}

// advance moves the job towards its next test run whenever code, tests,
// packages or an image arrive. It is level-triggered: it looks at what the
// state has and what is pending, and dispatches what is missing. That is
// what lets builds overlap model calls: the environment for the code is
// built as soon as the code's packages are known, while the tests (or a fix,
// or a test patch) are still being written; tests that import more packages
// cause a second build, nothing else does. The test run starts when code,
// tests and the image for their packages are all there.
func (m *stepper) advance() {
	s := m.s
	if s.Done() {
		return
	}
	switch s.Phase {
	case PhaseGenerating, PhaseRepairing, PhasePackages, PhaseBuilding:
	default:
		return // testing, diagnosing, accepting: a late build only registered its image
	}
	if s.Agent != nil {
		m.agentAdvance() // agent.go
		return
	}
	if len(s.Candidates) > 0 {
		m.advanceCandidates()
		return
	}
	if s.Solution == nil {
		if !m.busy(0, messages.StageCode) {
			m.finish(messages.StatusErrored, "internal: generation finished without code")
		}
		return
	}
	codeBusy := m.busy(0, messages.StageCode, messages.StageFix, messages.StageVerify)
	testsBusy := m.busy(0, messages.StageTests, messages.StagePatchTests)
	img, set, ready := m.env(0, codeBusy)
	if s.Done() {
		return
	}
	if codeBusy || testsBusy || !ready {
		if !codeBusy && !testsBusy {
			phase := PhaseBuilding
			if m.busy(0, messages.StagePackages) {
				phase = PhasePackages
			}
			m.enter(phase)
		}
		return
	}
	s.Image, s.BuiltPackages = img, set
	if validatesByRun(s) {
		m.runValidate() // runvalidate.go
		return
	}
	if s.Spec.Options.SkipTests {
		m.note("skip_tests: no tests were generated or run")
		m.finish(messages.StatusSucceeded, "")
		return
	}
	if s.Tests == nil {
		m.finish(messages.StatusErrored, "internal: generation finished without tests")
		return
	}
	m.runTests()
}

func (m *stepper) runTests() {
	s := m.s
	m.endRound()
	s.Iteration++
	m.enter(PhaseTesting)
	m.dispatch(messages.StageRunTests, messages.RunTestsInput{
		Image: s.Image, Env: messages.BuildInput{Packages: s.BuiltPackages, SystemPackages: s.SystemPackages},
		Code: s.Solution.Code, Tests: s.Tests.Code, Samples: s.Samples,
		Timeout: s.Spec.Options.Timeout, Resources: s.Spec.Options.Resources,
	})
}

// report handles the job's own test run (not a candidate's).
func (m *stepper) report(out messages.TestReport) {
	s := m.s
	rep := trimReport(out)
	s.LastReport = &rep
	if rep.OK() {
		if len(s.Tracks) > 0 {
			m.note(fmt.Sprintf("iteration %d: every test passes", s.Iteration))
		}
		s.Tracks = nil
		m.accept()
		return
	}
	sigs := m.observe(rep)
	if s.Iteration >= s.Spec.Options.MaxIterations {
		m.finish(messages.StatusFailed, fmt.Sprintf("tests still failing after %d iterations (max_iterations): %s", s.Iteration, reportSummary(rep)))
		return
	}
	fp := fingerprint(s.Solution.Code, testsOf(s), envKey(s.BuiltPackages, s.SystemPackages), sigs)
	if m.repeated(fp, "the same code, tests, packages and failures") {
		return
	}
	m.enter(PhaseDiagnosing)
	m.dispatch(messages.StageDiagnose, messages.DiagnoseInput{
		Task: s.Task, Plan: planOf(s), Code: s.Solution.Code, Tests: s.Tests.Code,
		Report: rep, Packages: s.Packages, Hints: m.diagnoseHints(), Stdlib: s.Stdlib,
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
	m.enter(PhaseAccepting)
	m.dispatchAcceptance()
}

// dispatchAcceptance runs the script on the samples, with the declared outputs.
func (m *stepper) dispatchAcceptance() {
	s := m.s
	m.dispatch(messages.StageAcceptance, messages.AcceptanceInput{
		Image: s.Image, Env: messages.BuildInput{Packages: s.BuiltPackages, SystemPackages: s.SystemPackages},
		Code: s.Solution.Code, Samples: s.Samples, Args: protocol.FileArgs(s.Samples), Outputs: s.Spec.Outputs,
		Timeout: s.Spec.Options.Timeout, Resources: s.Spec.Options.Resources,
	})
}

// accepted handles the acceptance run. The tests passed but the script may
// still fail on the real samples: that is a logic failure the tests missed,
// fixed like one (the next acceptance run is its verification).
func (m *stepper) accepted(_ Pending, out messages.AcceptanceOutput) {
	s := m.s
	if s.Agent != nil {
		m.agentAccepted(out) // agent.go
		return
	}
	out.Output = protocol.Trim(out.Output, reportOutputBudget)
	out.Problems = trimAll(out.Problems, failureFieldBudget, 20)
	s.Acceptance = &out
	if out.OK {
		m.finish(messages.StatusSucceeded, "")
		return
	}
	if validatesByRun(s) {
		m.reflect(out) // runvalidate.go
		return
	}
	problems := strings.Join(out.Problems, "; ")
	if s.Iteration >= s.Spec.Options.MaxIterations {
		m.finish(messages.StatusFailed, "acceptance run failed after max_iterations: "+problems)
		return
	}
	fp := fingerprint(s.Solution.Code, testsOf(s), envKey(s.BuiltPackages, s.SystemPackages),
		map[string]string{"acceptance_run": normaliseError(problems)})
	if m.repeated(fp, "the same code, tests and acceptance failure") {
		return
	}
	m.enter(PhaseRepairing)
	m.note("acceptance run on the samples failed: " + problems)
	s.Round = &Round{Iteration: s.Iteration, Acceptance: true, BaseCode: s.Solution.Code, BaseTests: testsOf(s),
		Logic: []messages.Failure{trimFailure(messages.Failure{
			TestName:         "acceptance_run",
			ErrorMessage:     problems,
			ActualBehavior:   out.Output,
			ExpectedBehavior: "the script runs on the samples in " + protocol.InputsDir + " and writes every declared output to " + protocol.OutputPath("<name>"),
			RootCause:        "the script fails on the real sample data",
			SuggestedFix:     "make the __main__ block read the samples and write each declared output",
			ErrorType:        messages.ErrorLogic,
		})}}
	m.dispatchFix(nil)
}

// built registers an image, or drops the packages the index does not have.
func (m *stepper) built(p Pending, out messages.BuildOutput) {
	s := m.s
	if len(out.InvalidPackages) > 0 {
		s.InvalidPackages = normPackages(append(s.InvalidPackages, out.InvalidPackages...))
		if p.Env != "" && !contains(s.FailedEnvs, p.Env) {
			s.FailedEnvs = append(s.FailedEnvs, p.Env)
		}
		m.askReplacements(p, out) // replace.go: the model names packages that exist
		m.advance()               // rebuilds once the replacements are in, or fails the line if nothing changes
		return
	}
	if p.Env != "" {
		m.keepImage(p.Env, out.Image)
	}
	m.learnStdlib(out.Stdlib) // env.go: a rescan may change the set and rebuild
	m.advance()
}

// keepImage registers the image built for the environment env.
func (m *stepper) keepImage(env, image string) {
	if m.s.Images == nil {
		m.s.Images = map[string]string{}
	}
	m.s.Images[env] = image
}

// stageFailed ends the job on a failed stage, except for a candidate's
// stage (that candidate is out, and the others go on) and for the advisory
// stages: a failed verification leaves the fix unverified, a failed package
// mapping leaves those imports unmapped (a missing module then shows in the
// test run, as an environment failure).
func (m *stepper) stageFailed(p Pending, r *messages.StageResult) {
	switch {
	case r.Stage == messages.StageVerify && m.s.Round != nil && m.s.Round.Fix == RepairVerifying:
		m.s.Round.Fix = RepairAssumed
		m.note("the verify stage failed (" + firstLine(r.Error) + "): testing the fix unverified")
		m.advance()
		return
	case r.Stage == messages.StageConstraint:
		// The checks are advisory: the constraints stay in the prompt as text.
		m.note("the constraint stage failed (" + firstLine(r.Error) + "): the constraints stay in the prompt as text")
		if m.s.Phase == PhasePlanning && m.s.Plan != nil {
			m.generate()
		}
		return
	case r.Stage == messages.StagePackageReplacement:
		m.replacementMaps()
		m.s.Replacements[protocol.CanonicalName(p.Package)] = ""
		m.note("the package_replacement stage failed (" + firstLine(r.Error) + "): building without " + p.Package)
		m.advance()
		return
	case r.Stage == messages.StagePackages && p.Candidate == 0:
		m.note("the packages stage failed (" + firstLine(r.Error) + "): building without the unmapped imports")
		m.advance()
		return
	}
	if p.Candidate > 0 {
		if c := m.candidate(p.Candidate); c != nil {
			c.Failed = fmt.Sprintf("stage %s failed: %s", r.Stage, firstLine(r.Error))
			m.note(fmt.Sprintf("candidate %d is out: %s", c.Index, c.Failed))
			m.advance()
		}
		return
	}
	status := messages.StatusErrored
	if r.ErrorKind == messages.ErrorPermanent {
		status = messages.StatusFailed
	}
	m.finish(status, fmt.Sprintf("stage %s failed: %s", r.Stage, r.Error))
}

// record counts a result's usage (per stage too), keeps its conversation and
// lists it on the result object, whatever becomes of it.
func (m *stepper) record(p Pending, r *messages.StageResult) {
	s := m.s
	s.Usage = s.Usage.Add(r.Usage)
	if r.Usage != (messages.Usage{}) {
		if s.StageUsage == nil {
			s.StageUsage = map[messages.Stage]messages.Usage{}
		}
		s.StageUsage[r.Stage] = s.StageUsage[r.Stage].Add(r.Usage)
	}
	if r.Cached {
		s.CacheHits++
	}
	m.appendHistory(r.Messages)
	m.recordContext(p, r) // runvalidate.go
	outcome := outcomeOf(r)
	if p.Candidate > 0 {
		outcome = fmt.Sprintf("candidate %d: %s", p.Candidate, outcome)
	}
	if p.Orphan {
		outcome += " (ignored: another candidate passed first)"
	}
	s.Stages = append(s.Stages, messages.StageRecord{
		Name: r.Stage, Seq: r.Seq, Iteration: p.Iteration, StartedAt: r.StartedAt,
		DurationMS: r.DurationMS, Cached: r.Cached, Outcome: outcome, Usage: r.Usage, Worker: r.Worker,
	})
	if len(s.Stages) > maxStageRecords {
		s.Stages = append([]messages.StageRecord(nil), s.Stages[len(s.Stages)-maxStageRecords:]...)
	}
	m.emit(messages.Event{Type: messages.EventStageFinished, Stage: r.Stage, Seq: r.Seq,
		Iteration: p.Iteration, Cached: r.Cached, Outcome: outcome, Message: stageNote(r)}) // eventnote.go
}

// outcomeOf says in a few words what a stage result was: its error, a test
// run's counts, a script run's problems, or "ok".
func outcomeOf(r *messages.StageResult) string {
	if r.Error != "" {
		return "error: " + firstLine(r.Error)
	}
	switch r.Stage {
	case messages.StageRunTests:
		var rep messages.TestReport
		if json.Unmarshal(r.Output, &rep) == nil {
			return reportSummary(rep)
		}
	case messages.StageAcceptance, messages.StageRun:
		var out messages.AcceptanceOutput
		if json.Unmarshal(r.Output, &out) == nil && !out.OK {
			if len(out.Problems) == 0 {
				return "failed"
			}
			return "failed: " + firstLine(strings.Join(out.Problems, "; "))
		}
	}
	return "ok"
}

func (m *stepper) dispatch(stage messages.Stage, input any) bool {
	return m.dispatchWith(stage, input, Pending{})
}

// dispatchWith sends a stage command; p carries the candidate and the
// environment key. Once the job is done it sends nothing, and a model call
// over options.token_budget ends the job instead (the budget is checked
// before every model call, so sandbox stages already paid for can finish).
func (m *stepper) dispatchWith(stage messages.Stage, input any, p Pending) bool {
	s := m.s
	if s.Done() {
		return false
	}
	if stage.Pool() == messages.PoolLLM && overBudget(s) {
		m.finish(messages.StatusFailed, fmt.Sprintf("token budget exceeded: %d tokens used, options.token_budget is %d (stopped before the %s stage)",
			tokensUsed(s), s.Spec.Options.TokenBudget, stage))
		return false
	}
	b, err := json.Marshal(input)
	if err != nil {
		m.finish(messages.StatusErrored, "internal: marshal "+string(stage)+" input: "+err.Error())
		return false
	}
	s.NextSeq++
	seq := s.NextSeq
	p.Stage, p.Iteration, p.DispatchedAt = stage, s.Iteration, m.now.Time
	s.Pending[seq] = p
	m.cmds = append(m.cmds, Command{Dispatch: &messages.StageCommand{
		V: messages.SchemaVersion, JobID: s.JobID, Seq: seq, Stage: stage, Iteration: s.Iteration,
		Model: s.Spec.Options.Model, Cache: s.Spec.Options.Cache, Input: b,
	}})
	m.emit(messages.Event{Type: messages.EventStageStarted, Stage: stage, Seq: seq, Iteration: s.Iteration})
	return true
}

// busy reports whether a stage of the given kinds is pending for line c
// (0: the job's own line; else a candidate). Orphans do not count.
func (m *stepper) busy(c int, stages ...messages.Stage) bool {
	for _, p := range m.s.Pending {
		if p.Candidate != c || p.Orphan {
			continue
		}
		for _, st := range stages {
			if p.Stage == st {
				return true
			}
		}
	}
	return false
}

func (m *stepper) emit(e messages.Event) {
	e.V = messages.SchemaVersion
	e.JobID = m.s.JobID
	e.Time = m.now.Time
	m.cmds = append(m.cmds, Command{Emit: &e})
}

func (m *stepper) finish(status messages.JobStatus, reason string) {
	s := m.s
	if s.Done() {
		return
	}
	m.enter(PhaseDone)
	s.Status = status
	s.Error = reason
	t := m.now.Time
	s.FinishedAt = &t
	s.Pending = map[int]Pending{} // results still in flight are now stale
	s.Candidates = nil
	s.Round = nil
	res := ResultOf(*s)
	success := status == messages.StatusSucceeded
	msg := finishedMessage(s)
	if !success {
		msg = reason
	}
	m.emit(messages.Event{Type: messages.EventJobFinished, Success: &success, Message: msg})
	m.cmds = append(m.cmds, Command{Finish: &res})
}

// ResultOf builds the result object (Contract 5 (docs/contracts.md)) from a state, finished or not.
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
		UsageByStage: s.StageUsage, Notes: s.Notes, ContextUsed: s.ContextUsed, CodeMode: codeModeResult(s),
		Cancelled: s.Cancelled,
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
	if s.Agent != nil {
		agentResult(s, &r) // agent.go
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
		c := protocol.CanonicalName(p)
		if c == "" || seen[c] {
			continue
		}
		seen[c] = true
		out = append(out, strings.TrimSpace(p))
	}
	sort.Slice(out, func(i, j int) bool { return protocol.CanonicalName(out[i]) < protocol.CanonicalName(out[j]) })
	return out
}

func newPackages(have, want []string) []string {
	h := map[string]bool{}
	for _, p := range have {
		h[protocol.CanonicalName(p)] = true
	}
	var out []string
	for _, p := range want {
		if c := protocol.CanonicalName(p); c != "" && !h[c] {
			h[c] = true
			out = append(out, strings.TrimSpace(p))
		}
	}
	return out
}

func removePackages(ps, bad []string) []string {
	b := map[string]bool{}
	for _, p := range bad {
		b[protocol.CanonicalName(p)] = true
	}
	var out []string
	for _, p := range ps {
		if !b[protocol.CanonicalName(p)] {
			out = append(out, p)
		}
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
