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
	if res.Status != messages.StatusFailed || res.Error != "cancelled by http:ops: wrong data" || !res.FinishedAt.Equal(at) {
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
