package coordinator_test

import (
	"encoding/json"
	"testing"

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
	if sum := e.summary(t, "job-i"); sum.Tokens != 42 || sum.LLMCalls != 1 || len(sum.Running) != 2 {
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
