package coordinator_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/pkg/messages"
)

func (e *env) summary(t *testing.T, jobID string) messages.JobSummary {
	t.Helper()
	entry, err := e.res.JobIndex.Get(ctxT(t), bus.JobKey(jobID))
	if err != nil {
		t.Fatalf("index line of %s: %v", jobID, err)
	}
	var s messages.JobSummary
	if err := json.Unmarshal(entry.Value(), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// summaryWithin waits up to wait for the job's index line to satisfy ok
// and returns it.
func (e *env) summaryWithin(t *testing.T, jobID string, wait time.Duration, ok func(messages.JobSummary) bool) messages.JobSummary {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		sum := e.summary(t, jobID)
		if ok(sum) || time.Now().After(deadline) {
			return sum
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestIndexLineOfARunningJobWaits: a running job's changed line waits for
// the delay, a finished job's is written at once in the step that ends it
// (replacing the waiting one, which is not written after it), and Close
// writes the lines still waiting.
func TestIndexLineOfARunningJobWaits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.indexDelay = time.Hour
	c := e.coordinator(t, nil, nil, nil)
	for _, id := range []string{"job-ends", "job-runs"} {
		if err := c.HandleSubmit(ctxT(t), submitMsg(t, id, answerSpec())); err != nil {
			t.Fatal(err)
		}
	}
	for _, cmd := range e.commands(t) {
		if err := c.HandleResult(ctxT(t), resultMsg(t, answer(t, cmd))); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"job-ends", "job-runs"} {
		if sum := e.summary(t, id); len(sum.Running) != 1 || sum.Running[0] != messages.StagePlan {
			t.Errorf("%s: line %+v written before its delay, want the first (the plan running)", id, sum)
		}
	}
	if err := c.Cancel(ctxT(t), "job-ends", "enough"); err != nil {
		t.Fatal(err)
	}
	if sum := e.summary(t, "job-ends"); sum.Status != messages.StatusCancelled || sum.FinishedAt == nil {
		t.Errorf("a cancelled job's line: %+v, want it finished at once", sum)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if sum := e.summary(t, "job-runs"); len(sum.Running) != 2 {
		t.Errorf("after Close: %+v, want the waiting line (code and tests running)", sum)
	}
	if sum := e.summary(t, "job-ends"); sum.Status != messages.StatusCancelled {
		t.Errorf("after Close: %+v, want the cancelled job's line kept", sum)
	}
}

// TestIndex: the coordinator writes a job's index line as it changes (the
// stages in flight, the tokens), a rejected submission gets one too, and
// BackfillIndex restores a line that is missing.
func TestIndex(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.coordinator(t, nil, nil, nil)
	spec := answerSpec()
	spec.Name = "answer"
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-i", spec)); err != nil {
		t.Fatal(err)
	}
	sum := e.summary(t, "job-i")
	if sum.Status != messages.StatusRunning || sum.Name != "answer" || !sum.SubmittedAt.Equal(t0) {
		t.Errorf("a new job's line: %+v", sum)
	}
	if diff := cmp.Diff([]messages.Stage{messages.StagePlan}, sum.Running); diff != "" {
		t.Errorf("running (-want +got):\n%s", diff)
	}
	plan := answer(t, e.commands(t)[0])
	plan.Usage = messages.Usage{InputTokens: 30, OutputTokens: 12, Calls: 1}
	if err := c.HandleResult(ctxT(t), resultMsg(t, plan)); err != nil {
		t.Fatal(err)
	}
	// A running job's line waits its delay (DefaultIndexDelay).
	if sum := e.summaryWithin(t, "job-i", 10*time.Second, func(s messages.JobSummary) bool { return s.Tokens == 42 }); sum.LLMCalls != 1 || len(sum.Running) != 2 {
		t.Errorf("after the plan: %+v, want 42 tokens, 1 call, code and tests running", sum)
	}
	if its, err := coordinator.LoadIterations(ctxT(t), e.res.JobState, "job-i"); err != nil || len(its) != 0 {
		t.Errorf("iterations before a test run: %v, %v", its, err)
	}

	bad := bus.NewMessage(bus.SubjectJobsSubmit, []byte(`{"v":1,"job_id":"job-bad","spec":{"prompt":" "}}`), nil, 1)
	if err := c.HandleSubmit(ctxT(t), bad); err != nil {
		t.Fatal(err)
	}
	if sum := e.summary(t, "job-bad"); sum.Status != messages.StatusFailed || sum.Error == "" || sum.FinishedAt == nil {
		t.Errorf("a rejected submission's line: %+v", sum)
	}

	if err := e.res.JobIndex.Delete(ctxT(t), bus.JobKey("job-i")); err != nil {
		t.Fatal(err)
	}
	if err := c.BackfillIndex(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if sum := e.summary(t, "job-i"); sum.JobID != "job-i" || sum.Tokens != 42 {
		t.Errorf("backfilled line: %+v", sum)
	}
}
