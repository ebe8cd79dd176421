package machine

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/pkg/messages"
)

// replayLog folds a recorded event log through Step and NoteIteration, as
// the coordinator does, and returns the final state and iteration log.
func replayLog(t *testing.T, path string) (State, []messages.Iteration) {
	t.Helper()
	var s State
	var log []messages.Iteration
	for _, in := range readLog(t, path) {
		next, _ := Step(s, in)
		log = NoteIteration(log, s, next, in)
		s = next
	}
	return s, log
}

// TestNoteIterationRepair: the recorded repair job (a test patch that does
// not help, then a code fix with a package) has one entry per test run,
// each with the code and tests it ran, its report, and the diagnosis and
// routes that followed, the reclassification included.
func TestNoteIterationRepair(t *testing.T) {
	t.Parallel()
	final, log := replayLog(t, "testdata/repair.events.jsonl")
	if got, want := len(log), final.Iteration; got != want {
		t.Fatalf("%d iterations logged, want %d", got, want)
	}
	type row struct {
		Iteration     int
		Tests, Code   string
		Passed        int
		Failed        int
		Diagnosed     []messages.ErrorType
		Routes, Flips []string
	}
	var got []row
	for _, it := range log {
		r := row{Iteration: it.Iteration, Tests: firstLine(it.Tests), Code: firstLine(it.Code)}
		if it.Report != nil {
			r.Passed, r.Failed = it.Report.Passed, it.Report.Failed
		}
		if it.Diagnosis != nil {
			for _, f := range it.Diagnosis.Failures {
				r.Diagnosed = append(r.Diagnosed, f.ErrorType)
			}
		}
		for _, rt := range it.Routes {
			r.Routes = append(r.Routes, rt.Test+":"+rt.Route)
			r.Flips = append(r.Flips, rt.Flips...)
		}
		got = append(got, r)
	}
	want := []row{
		{Iteration: 1, Tests: "from solution import f", Code: "def f():", Passed: 1, Failed: 1,
			Diagnosed: []messages.ErrorType{messages.ErrorTestError}, Routes: []string{"test_f:patch"}},
		{Iteration: 2, Tests: "patched", Code: "def f():", Passed: 1, Failed: 1,
			Diagnosed: []messages.ErrorType{messages.ErrorLogic}, Routes: []string{"test_f:fix"}, Flips: []string{"test_error->logic"}},
		{Iteration: 3, Tests: "patched", Code: "import pandas", Passed: 3},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("iteration log (-want +got):\n%s", diff)
	}
	if log[2].Acceptance == nil || !log[2].Acceptance.OK {
		t.Errorf("the last iteration has no acceptance run: %+v", log[2].Acceptance)
	}
}

// TestNoteIterationBounded: a long job keeps its last maxIterationRecords
// iterations within iterationLogBudget, each text trimmed, and never fewer
// than two (a diff needs both).
func TestNoteIterationBounded(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x = 1\n", 20000) // 120 KB of code
	var log []messages.Iteration
	prev := State{}
	for i := 1; i <= 3*maxIterationRecords; i++ {
		next := State{Job: Job{JobID: "j", Iteration: i, Phase: PhaseTesting},
			Artifacts: Artifacts{Solution: &messages.Solution{Code: big + strings.Repeat("y", i)}, Tests: &messages.Tests{Code: big}}}
		log = NoteIteration(log, prev, next, Input{})
		prev = next
		if n := encodedSize(log); n > iterationLogBudget && len(log) > 2 {
			t.Fatalf("iteration %d: the log is %d bytes, over %d", i, n, iterationLogBudget)
		}
		if len(log) > maxIterationRecords {
			t.Fatalf("iteration %d: %d entries", i, len(log))
		}
	}
	last := log[len(log)-1]
	if last.Iteration != 3*maxIterationRecords || !last.Trimmed || len(last.Code) > iterationCodeBudget+100 {
		t.Errorf("last entry: iteration %d, trimmed %v, code %d bytes", last.Iteration, last.Trimmed, len(last.Code))
	}
	if len(log) < 2 {
		t.Errorf("%d entries kept, want at least 2", len(log))
	}
}

// TestSummaryOf: a job's index line names the stages in flight, in
// dispatch order, and leaves out orphans; the prompt is trimmed.
func TestSummaryOf(t *testing.T) {
	t.Parallel()
	s := State{Job: Job{JobID: "j", Spec: messages.JobSpec{Name: "n", Prompt: strings.Repeat("p", 2000)}, Phase: PhaseGenerating, Iteration: 2,
		Pending: map[int]Pending{7: {Stage: messages.StageTests}, 5: {Stage: messages.StageCode}, 6: {Stage: messages.StageBuild, Orphan: true}}},
		Ledger:  Ledger{Usage: messages.Usage{InputTokens: 10, OutputTokens: 5, Calls: 2}, CacheHits: 1},
		Outcome: Outcome{Status: messages.StatusRunning}}
	sum := SummaryOf(s)
	if diff := cmp.Diff([]messages.Stage{messages.StageCode, messages.StageTests}, sum.Running); diff != "" {
		t.Errorf("running (-want +got):\n%s", diff)
	}
	if sum.Tokens != 15 || sum.LLMCalls != 2 || sum.CacheHits != 1 || sum.Iterations != 2 || sum.Phase != "generating" || sum.Name != "n" {
		t.Errorf("summary %+v", sum)
	}
	if len(sum.Prompt) > summaryTextBudget+50 {
		t.Errorf("prompt of %d bytes, not trimmed", len(sum.Prompt))
	}
}
