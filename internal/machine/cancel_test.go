package machine

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/pkg/messages"
)

// TestCancelSaysWhoAndWhen: a cancelled job's result says who cancelled it,
// when (the input's time) and why, and its job_finished event says so too.
func TestCancelSaysWhoAndWhen(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.Normalize("")
	s, _ := Step(State{}, Input{Kind: InputSubmitted, Time: t0, Submit: &Submission{JobID: "j", Spec: spec}})
	at := t0.Add(90 * time.Second)
	s, cmds := Step(s, Input{Kind: InputCancel, Time: at, By: "http:ops", Reason: "wrong data"})
	var res *messages.Result
	var finished *messages.Event
	for _, c := range cmds {
		if c.Finish != nil {
			res = c.Finish
		}
		if c.Emit != nil && c.Emit.Type == messages.EventJobFinished {
			finished = c.Emit
		}
	}
	if res == nil || finished == nil {
		t.Fatalf("cancel gave no result or no job_finished: %+v", cmds)
	}
	want := &messages.Cancellation{By: "http:ops", At: at, Reason: "wrong data"}
	if diff := cmp.Diff(want, res.Cancelled); diff != "" {
		t.Errorf("result's cancellation (-want +got):\n%s", diff)
	}
	if res.Status != messages.StatusCancelled || res.Error != "cancelled by http:ops: wrong data" || !res.FinishedAt.Equal(at) {
		t.Errorf("status %s, error %q, finished %v", res.Status, res.Error, res.FinishedAt)
	}
	if finished.Message != res.Error || len(s.Pending) != 0 {
		t.Errorf("job_finished message %q, pending %v", finished.Message, s.Pending)
	}
	if got := ResultOf(s).Cancelled; got == nil || got.By != "http:ops" {
		t.Errorf("ResultOf the state: cancelled %+v", got)
	}
}

// TestStageNotes: a test run's stage_finished names the failing tests; a
// diagnosis names each failure's test, type and root cause.
func TestStageNotes(t *testing.T) {
	t.Parallel()
	report, _ := json.Marshal(messages.TestReport{Passed: 1, Failed: 1, Errors: 1, Cases: []messages.TestCase{
		{Name: "test_ok", Outcome: messages.OutcomePassed}, {Name: "test_total", Outcome: messages.OutcomeFailed},
		{Name: "test_load", Outcome: messages.OutcomeError}}})
	diag, _ := json.Marshal(messages.Diagnosis{Failures: []messages.Failure{
		{TestName: "test_total", ErrorType: messages.ErrorLogic, RootCause: "sums the wrong column\nmore"}}})
	for _, tc := range []struct {
		r    messages.StageResult
		want string
	}{
		{messages.StageResult{Stage: messages.StageRunTests, Output: report}, "failing: test_total; test_load"},
		{messages.StageResult{Stage: messages.StageDiagnose, Output: diag}, "diagnosis: test_total (logic): sums the wrong column"},
		{messages.StageResult{Stage: messages.StagePlan, Output: json.RawMessage(`{}`)}, ""},
		{messages.StageResult{Stage: messages.StageRunTests, Error: "boom"}, ""},
	} {
		if got := stageNote(&tc.r); got != tc.want {
			t.Errorf("%s: note %q, want %q", tc.r.Stage, got, tc.want)
		}
	}
	if got := listNote("x: ", strings.Fields("a b c d e f g")); got != "x: a; b; c; d; e; and 2 more" {
		t.Errorf("long list: %q", got)
	}
}

// TestQueuedThenStarted: a dispatched stage is queued (stage_queued) until
// its worker's notice marks it started (stage_started, with the worker);
// the notice changes nothing else, and a duplicate, a notice for another
// stage or one after the result change nothing at all. The stage's record
// has when it was dispatched, started and finished.
func TestQueuedThenStarted(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.Normalize("")
	s, cmds := Step(State{}, Input{Kind: InputSubmitted, Time: t0, Submit: &Submission{JobID: "j", Spec: spec}})
	if got := eventTypes(cmds); !cmp.Equal(got, []messages.EventType{messages.EventJobStarted, messages.EventStageQueued}) {
		t.Fatalf("events of the submission: %v", got)
	}
	seq, p := onlyPending(t, s)
	if got := SummaryOf(s); len(got.Queued) != 1 || len(got.Running) != 1 {
		t.Errorf("summary of a queued stage: queued %v running %v", got.Queued, got.Running)
	}
	startedAt := t0.Add(5 * time.Second)
	notice := &messages.StageStarted{V: 1, JobID: "j", Seq: seq, Stage: p.Stage, Worker: "llm-1", StartedAt: startedAt}
	s2, cmds := Step(s, Input{Kind: InputStageStarted, Time: t0.Add(6 * time.Second), Started: notice})
	if len(cmds) != 1 || cmds[0].Emit == nil || cmds[0].Emit.Type != messages.EventStageStarted || cmds[0].Emit.Worker != "llm-1" || cmds[0].Emit.Seq != seq ||
		!cmds[0].Emit.Time.Equal(startedAt) {
		t.Fatalf("notice: commands %+v, want one stage_started event", cmds)
	}
	if p2 := s2.Pending[seq]; p2.StartedAt == nil || !p2.StartedAt.Equal(startedAt) || p2.Worker != "llm-1" {
		t.Errorf("pending after the notice: %+v", p2)
	}
	if got := SummaryOf(s2); len(got.Queued) != 0 || len(got.Running) != 1 {
		t.Errorf("summary of a started stage: queued %v running %v", got.Queued, got.Running)
	}
	for name, n := range map[string]*messages.StageStarted{
		"duplicate":   notice,
		"wrong stage": {V: 1, JobID: "j", Seq: seq, Stage: messages.StageBuild, StartedAt: startedAt},
		"unknown seq": {V: 1, JobID: "j", Seq: seq + 7, Stage: p.Stage, StartedAt: startedAt},
		"nil":         nil,
	} {
		if s3, c := Step(s2, Input{Kind: InputStageStarted, Time: t0, Started: n}); c != nil || !equalJSON(s2, s3) {
			t.Errorf("%s notice changed the state or emitted %v", name, c)
		}
	}
	out, _ := json.Marshal(messages.Plan{Description: "d", Approach: "a"})
	res := &messages.StageResult{V: 1, JobID: "j", Seq: seq, Stage: p.Stage, Output: out, StartedAt: startedAt, DurationMS: 1500, Worker: "llm-1"}
	s4, _ := Step(s2, Input{Kind: InputStageResult, Time: t0.Add(7 * time.Second), Result: res})
	rec := s4.Stages[len(s4.Stages)-1]
	if !rec.DispatchedAt.Equal(t0) || !rec.StartedAt.Equal(startedAt) || !rec.FinishedAt.Equal(startedAt.Add(1500*time.Millisecond)) {
		t.Errorf("stage record: dispatched %v started %v finished %v", rec.DispatchedAt, rec.StartedAt, rec.FinishedAt)
	}
	if _, c := Step(s4, Input{Kind: InputStageStarted, Time: t0, Started: notice}); c != nil {
		t.Errorf("a notice after the result emitted %v", c)
	}
}

// TestCancelRecordsStagesInFlight: the stages in flight when a job is
// cancelled are in its stage list as cancelled, one that had started
// with how long it ran, and each gets a stage_finished event.
func TestCancelRecordsStagesInFlight(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.Normalize("")
	s, _ := Step(State{}, Input{Kind: InputSubmitted, Time: t0, Submit: &Submission{JobID: "j", Spec: spec}})
	seq, p := onlyPending(t, s)
	s, _ = Step(s, Input{Kind: InputStageStarted, Time: t0, Started: &messages.StageStarted{JobID: "j", Seq: seq, Stage: p.Stage, Worker: "w", StartedAt: t0.Add(time.Second)}})
	at := t0.Add(11 * time.Second)
	s, cmds := Step(s, Input{Kind: InputCancel, Time: at, By: "cli:me"})
	want := messages.StageRecord{Name: p.Stage, Seq: seq, Outcome: "cancelled", Worker: "w", DispatchedAt: t0,
		StartedAt: t0.Add(time.Second), DurationMS: 10000, FinishedAt: at}
	if diff := cmp.Diff([]messages.StageRecord{want}, s.Stages); diff != "" {
		t.Errorf("stage list after the cancel (-want +got):\n%s", diff)
	}
	if got := eventTypes(cmds); !cmp.Equal(got, []messages.EventType{messages.EventStageFinished, messages.EventJobFinished}) {
		t.Errorf("events of the cancel: %v", got)
	}
	if r := ResultOf(s); r.Status != messages.StatusCancelled || r.Success || len(r.Stages) != 1 {
		t.Errorf("result: status %s, %d stages", r.Status, len(r.Stages))
	}
}

func eventTypes(cmds []Command) []messages.EventType {
	var out []messages.EventType
	for _, c := range cmds {
		if c.Emit != nil {
			out = append(out, c.Emit.Type)
		}
	}
	return out
}

// onlyPending is the one pending stage of s.
func onlyPending(t *testing.T, s State) (int, Pending) {
	t.Helper()
	if len(s.Pending) != 1 {
		t.Fatalf("%d stages pending, want 1", len(s.Pending))
	}
	for seq, p := range s.Pending {
		return seq, p
	}
	return 0, Pending{}
}
