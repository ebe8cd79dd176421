package coordinator_test

import (
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestStartedNoticeMarksTheStage: a worker's notice on core NATS, from the
// pool of its stage, becomes the job's stage_started event with the
// worker's name, and the pending stage is started in the stored state; a
// notice from the wrong pool, for another job's subject or of a stage that
// is not pending changes nothing.
func TestStartedNoticeMarksTheStage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.apiCoordinator(t)
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-1", answerSpec())); err != nil {
		t.Fatal(err)
	}
	cmd := e.commands(t)[0] // the plan, on the llm pool
	announce := func(pool messages.Pool, n messages.StageStarted) {
		t.Helper()
		n.V, n.StartedAt = messages.WireVersion, t0.Add(3*time.Second)
		if err := bus.AnnounceStarted(e.js.Conn(), pool, n); err != nil {
			t.Fatal(err)
		}
	}
	// Refused ones first; then the real one, whose event says they were dropped.
	announce(messages.PoolSandbox, messages.StageStarted{JobID: "job-1", Seq: cmd.Seq, Stage: cmd.Stage, Worker: "intruder"})
	announce(messages.PoolLLM, messages.StageStarted{JobID: "job-1", Seq: cmd.Seq + 5, Stage: cmd.Stage, Worker: "stale"})
	if err := e.js.Conn().Publish(bus.StartedSubject(messages.PoolLLM, "job-2"), []byte(`{"job_id":"job-1","seq":1,"stage":"plan","worker":"forged"}`)); err != nil {
		t.Fatal(err)
	}
	announce(messages.PoolLLM, messages.StageStarted{JobID: "job-1", Seq: cmd.Seq, Stage: cmd.Stage, Worker: "llm-1"})
	var started []messages.Event
	deadline := time.Now().Add(testTimeout)
	for len(started) == 0 && time.Now().Before(deadline) {
		for _, ev := range e.events(t, "job-1") {
			if ev.Type == messages.EventStageStarted {
				started = append(started, ev)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(started) != 1 || started[0].Worker != "llm-1" || started[0].Seq != cmd.Seq || started[0].Stage != cmd.Stage {
		t.Fatalf("stage_started events: %+v, want one, from llm-1", started)
	}
	s, err := coordinator.LoadState(ctxT(t), e.res.JobState, "job-1")
	if err != nil {
		t.Fatal(err)
	}
	p := s.Pending[cmd.Seq]
	if p.StartedAt == nil || !p.StartedAt.Equal(t0.Add(3*time.Second)) || p.Worker != "llm-1" {
		t.Errorf("the stored pending stage: %+v", p)
	}
}
