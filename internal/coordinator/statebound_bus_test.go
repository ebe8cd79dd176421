package coordinator_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestOversizedSubmissionIsFinished: a submission published on the jobs
// stream whose state would be over the bound (a 980 KB prompt) is not
// dropped: its job ID resolves to a failed result that says why. Before,
// the step was a permanent error and the job never existed.
func TestOversizedSubmissionIsFinished(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.coordinator(t, nil, nil, nil)
	spec := answerSpec()
	spec.Prompt = strings.Repeat("a long prompt ", 70_000)
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-huge", spec)); err != nil {
		t.Fatalf("HandleSubmit = %v, want nil (the job is finished, not dropped)", err)
	}
	res := e.result(t, "job-huge")
	if res.Status != messages.StatusFailed || !strings.Contains(res.Error, "over the 1008 KiB bound of one stored job") {
		t.Errorf("result: status %s, error %q", res.Status, res.Error)
	}
	if cmds := e.commands(t); len(cmds) != 0 {
		t.Errorf("an oversized job dispatched %d commands", len(cmds))
	}
}

// TestStepOverTheBoundEndsTheJob: a 600 KB solution fits the state, but
// the step that carries it to the next stages does not (the state and the
// commands both hold it). The job ends failed with a reason naming the
// bound, its result and job_finished event are out, and its stored state is
// finished and within the bound. Before, the step and the stage's failure
// were both refused and the job stayed running forever.
func TestStepOverTheBoundEndsTheJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.coordinator(t, nil, nil, nil)
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-big", answerSpec())); err != nil {
		t.Fatal(err)
	}
	big := "# " + strings.Repeat("padding ", 75_000) + "\ndef f():\n    return 42\n"
	answered := map[int]bool{}
	for round := 0; round < 30; round++ {
		progressed := false
		for _, cmd := range e.commands(t) {
			if answered[cmd.Seq] {
				continue
			}
			answered[cmd.Seq], progressed = true, true
			r := answer(t, cmd)
			if cmd.Stage == messages.StageCode || cmd.Stage == messages.StageFix {
				r.Output, _ = json.Marshal(messages.Solution{Language: "python", Code: big, Packages: []string{}, SystemPackages: []string{}})
			}
			if err := c.HandleResult(ctxT(t), resultMsg(t, r)); err != nil {
				t.Fatalf("HandleResult %s: %v, want nil (the job ends, the result is not dropped)", cmd.Stage, err)
			}
		}
		if !progressed {
			break
		}
	}
	e.waitSettled(t, "job-big")
	res := e.result(t, "job-big")
	if res.Status != messages.StatusFailed || !strings.Contains(res.Error, "job state over its bound") ||
		!strings.Contains(res.Error, "over the 1008 KiB one stored job may hold") {
		t.Fatalf("result: status %s, error %q", res.Status, res.Error)
	}
	en, err := e.res.JobState.Get(ctxT(t), bus.JobKey("job-big"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		State struct {
			Phase  string `json:"phase"`
			Status string `json:"status"`
		} `json:"state"`
	}
	if err := decodeStored(en.Value(), &rec); err != nil || rec.State.Phase != "done" || rec.State.Status != "failed" {
		t.Errorf("stored state: %+v (%v)", rec.State, err)
	}
	if len(en.Value()) > 1<<20 {
		t.Errorf("stored state is %d bytes", len(en.Value()))
	}
}

// TestStaleKeptStateIsNotEndedOverTheBound: a step over the state bound
// ends the job, and publishes its end before the compare-and-set. On a
// copy another coordinator has moved on from, that would end a job that
// goes on: the step is decided on the stored state instead, where the
// input (a failed plan whose error is over the bound) is no longer news.
func TestStaleKeptStateIsNotEndedOverTheBound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mine, other := e.coordinator(t, nil, nil, nil), e.coordinator(t, nil, nil, nil)
	if err := mine.HandleSubmit(ctxT(t), submitMsg(t, "job-stale-big", answerSpec())); err != nil {
		t.Fatal(err)
	}
	plan := e.commands(t)[0]
	if err := other.HandleResult(ctxT(t), resultMsg(t, answer(t, plan))); err != nil { // mine's copy is now stale
		t.Fatal(err)
	}
	failed := answer(t, plan)
	failed.Output, failed.ErrorKind = nil, messages.ErrorInfra
	failed.Error = strings.Repeat("the model's endpoint said no. ", 40_000) // over 1 MiB
	if err := mine.HandleResult(ctxT(t), resultMsg(t, failed)); err != nil {
		t.Fatal(err)
	}
	for _, ev := range e.events(t, "job-stale-big") {
		if ev.Type == messages.EventJobFinished {
			t.Fatalf("a step on a stale copy ended the job: %+v", ev)
		}
	}
	if _, err := e.res.JobResults.Get(ctxT(t), bus.JobKey("job-stale-big")); err == nil {
		t.Fatal("a step on a stale copy stored the job's result")
	}
	st, err := other.State(ctxT(t), "job-stale-big")
	if err != nil || st.Plan == nil || st.Phase == "done" {
		t.Fatalf("the job after a stale failure over the bound: %+v (%v), want it running past its plan", st, err)
	}
}
