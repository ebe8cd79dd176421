package machine

import (
	"encoding/json"
	"reflect"

	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/internal/trim"
	"github.com/autocoder/autocoder/pkg/messages"
)

// The iteration log keeps, for the web UI, what each test run of the job's
// own line ran and what came of it: the state itself keeps only the latest
// code, report and diagnosis. It is not part of State (the coordinator
// stores it beside the state, in the same record), so Step and its replays
// are unchanged; NoteIteration derives it from two consecutive states.

// NoteIteration returns the iteration log after the step that took in
// from prev to next: a new entry when a test run starts (the code and
// tests it runs), its report, diagnosis, repair routes and acceptance run
// as they arrive.
// The log is bounded (maxIterationRecords entries, iterationLogBudget
// bytes, each text trimmed); the oldest entries go first. log is not
// modified.
func NoteIteration(log []messages.Iteration, prev, next State, in Input) []messages.Iteration {
	if next.Iteration == 0 {
		return log // no test run yet (a rerun never has one)
	}
	out := append([]messages.Iteration(nil), log...)
	if next.Iteration > prev.Iteration {
		if e := entryOf(out, prev.Iteration); e != nil {
			e.Routes = routesOf(next.Tracks) // the round's repairs, now marked applied or not
		}
		out = append(out, newIteration(&next))
	}
	e := entryOf(out, next.Iteration)
	if e == nil {
		return log // an iteration that started before the log was kept
	}
	noteResult(e, ownResult(prev, in), &next)
	if !reflect.DeepEqual(prev.Tracks, next.Tracks) {
		if rs := routesOf(next.Tracks); rs != nil {
			e.Routes = rs
		}
	}
	return boundIterations(out)
}

// noteResult puts on the iteration's entry e what the result of stage
// (of the job's own line) brought: its test report, diagnosis or
// acceptance run.
func noteResult(e *messages.Iteration, stage messages.Stage, next *State) {
	switch {
	case stage == messages.StageRunTests && next.LastReport != nil:
		rep := trimIterationReport(*next.LastReport)
		e.Report = &rep
	case stage == messages.StageDiagnose && next.Diagnosis != nil:
		e.Diagnosis = trimIterationDiagnosis(*next.Diagnosis)
	case stage == messages.StageAcceptance && next.Acceptance != nil:
		acc := *next.Acceptance
		acc.Output = trim.Middle(acc.Output, iterationOutputBudget)
		e.Acceptance = &acc
	}
}

// ownResult is the stage of in when it is a successful result of a stage
// of the job's own line (not a candidate's, not an orphan's) that prev
// was waiting for; "" otherwise. Two runs may report the same thing, so
// what arrived is told by the input, not by comparing states.
func ownResult(prev State, in Input) messages.Stage {
	r := in.Result
	if in.Kind != InputStageResult || r == nil || r.Error != "" {
		return ""
	}
	p, ok := prev.Pending[r.Seq]
	if !ok || p.Stage != r.Stage || p.Candidate != 0 || p.Orphan {
		return ""
	}
	return r.Stage
}

func entryOf(log []messages.Iteration, n int) *messages.Iteration {
	for i := range log {
		if log[i].Iteration == n {
			return &log[i]
		}
	}
	return nil
}

func newIteration(s *State) messages.Iteration {
	it := messages.Iteration{Iteration: s.Iteration, Tests: testsOf(s), Packages: append([]string(nil), s.Packages...)}
	if s.Solution != nil {
		it.Code = s.Solution.Code
	}
	code, tests := trim.Middle(it.Code, iterationCodeBudget), trim.Middle(it.Tests, iterationCodeBudget)
	it.Trimmed = code != it.Code || tests != it.Tests
	it.Code, it.Tests = code, tests
	return it
}

// routesOf lists the repairs the tracks were given (tests not routed yet
// are left out); nil when there are none.
func routesOf(tracks []Track) []messages.RepairRoute {
	var out []messages.RepairRoute
	for _, t := range tracks {
		if t.Repair == "" {
			continue
		}
		out = append(out, messages.RepairRoute{Test: t.Test, Class: t.Class, Route: string(t.Repair),
			Flips: append([]string(nil), t.Flips...), Applied: t.Applied})
	}
	return out
}

// trimIterationReport keeps a report small for the log: pytest's output
// cut harder than on the state, the first failing cases with a short
// traceback, every other case by name and a short message.
func trimIterationReport(r messages.TestReport) messages.TestReport {
	r.Output = trim.Middle(r.Output, iterationOutputBudget)
	cases := make([]messages.TestCase, 0, min(len(r.Cases), iterationCases))
	detailed := 0
	for _, c := range r.Cases {
		if len(cases) == iterationCases {
			break
		}
		c.Message = trim.Middle(c.Message, iterationCaseBudget)
		if protocol.Failing(c) && detailed < detailedCases/2 {
			c.Details = trim.Middle(c.Details, iterationDetailsBudget)
			detailed++
		} else {
			c.Details = ""
		}
		cases = append(cases, c)
	}
	r.Cases = cases
	return r
}

func trimIterationDiagnosis(d messages.Diagnosis) *messages.Diagnosis {
	fs := d.Failures
	if len(fs) > iterationFailures {
		fs = fs[:iterationFailures]
	}
	out := make([]messages.Failure, len(fs))
	for i, f := range fs {
		t := func(s string) string { return trim.Middle(s, iterationCaseBudget) }
		f.ErrorMessage, f.ExpectedBehavior, f.ActualBehavior = t(f.ErrorMessage), t(f.ExpectedBehavior), t(f.ActualBehavior)
		f.RootCause, f.SuggestedFix = t(f.RootCause), t(f.SuggestedFix)
		out[i] = f
	}
	d.Failures = out
	return &d
}

// boundIterations drops the oldest entries beyond maxIterationRecords or
// iterationLogBudget bytes, always keeping the last two (a diff needs both).
func boundIterations(log []messages.Iteration) []messages.Iteration {
	for len(log) > 2 && (len(log) > maxIterationRecords || encodedSize(log) > iterationLogBudget) {
		log = log[1:]
	}
	return log
}

func encodedSize(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(b)
}
