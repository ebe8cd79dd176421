package coordinator_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/bus/bustest"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestDeadLetteredSubmission: a submission that no coordinator could take
// in MaxDeliver deliveries is dead-lettered; its job fails with the reason
// at once, and a replay queues the submission again, which then starts
// the job.
func TestDeadLetteredSubmission(t *testing.T) {
	t.Parallel()
	be := bustest.Start(t, bus.ProvisionConfig{MemoryStorage: true, MaxDeliver: 1})
	e := &env{js: be.JS, res: be.Resources, pub: be.Publisher}
	c := e.apiCoordinator(t)
	const id = "job-dead-submission"
	sub := messages.SubmitJob{V: messages.WireVersion, JobID: id, Spec: answerSpec()}
	if err := e.pub.PublishJSON(ctxT(t), bus.SubjectJobsSubmit, sub, bus.SubmitMsgID(id)); err != nil {
		t.Fatal(err)
	}
	// A coordinator that takes it and dies: the one delivery is used up,
	// and the next pull makes the server give it up.
	m, err := e.res.JobsConsumer.Next(jetstream.FetchMaxWait(testTimeout))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Nak(); err != nil {
		t.Fatal(err)
	}
	if m, err := e.res.JobsConsumer.Next(jetstream.FetchMaxWait(time.Second)); err == nil {
		t.Fatalf("delivered past MaxDeliver: %s", m.Subject())
	}

	res := waitResult(t, e, id)
	if res.Status != messages.StatusFailed || !strings.Contains(res.Error, "the submission was dead-lettered: 1 deliveries to coordinator") {
		t.Fatalf("job after the dead letter: %s %q", res.Status, res.Error)
	}
	letters, _ := streamMsgs(t, e.res.DLQ)
	if len(letters) != 1 {
		t.Fatalf("%d dead letters, want 1", len(letters))
	}
	var l messages.DeadLetter
	if err := json.Unmarshal(letters[0].data, &l); err != nil || l.JobID != id || l.Stream != bus.StreamJobs || l.Subject != bus.SubjectJobsSubmit {
		t.Fatalf("dead letter %+v (%v)", l, err)
	}
	if jobs, _ := streamMsgs(t, e.res.Jobs); len(jobs) != 0 {
		t.Errorf("the jobs stream still holds %d messages", len(jobs))
	}

	r, err := c.Replay(ctxT(t), 1)
	if err != nil || !r.Reopened || r.JobID != id {
		t.Fatalf("replay: %+v %v", r, err)
	}
	if _, err := e.res.JobResults.Get(ctxT(t), bus.JobKey(id)); err == nil {
		t.Error("the failed result is still there after the replay")
	}
	m, err = e.res.JobsConsumer.Next(jetstream.FetchMaxWait(testTimeout))
	if err != nil {
		t.Fatalf("the replayed submission is not on the jobs stream: %v", err)
	}
	if err := c.HandleSubmit(ctxT(t), bus.NewMessage(m.Subject(), m.Data(), nil, 1)); err != nil {
		t.Fatal(err)
	}
	if st, err := c.State(ctxT(t), id); err != nil || st.Done() || len(st.Pending) == 0 {
		t.Errorf("job after the replayed submission: %+v %v, want it running", st.Phase, err)
	}
	// The job has started: the submission's letter is not replayed again.
	if _, err := c.Replay(ctxT(t), 1); err == nil || !strings.Contains(err.Error(), "not replayed") {
		t.Errorf("second replay: %v", err)
	}
}

func waitResult(t *testing.T, e *env, id string) *messages.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	for ctx.Err() == nil {
		if _, err := e.res.JobResults.Get(ctx, bus.JobKey(id)); err == nil {
			return e.result(t, id)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("job %s has no result", id)
	return nil
}

// TestDeadLetteredResultReopensTheJob: a stage result the coordinators
// could not take in MaxDeliver deliveries is dead-lettered and fails its
// stage (the job errors with the reason); its replay re-opens the job
// with the stage pending, and the replayed result moves the job on.
func TestDeadLetteredResultReopensTheJob(t *testing.T) {
	t.Parallel()
	be := bustest.Start(t, bus.ProvisionConfig{MemoryStorage: true, MaxDeliver: 1})
	e := &env{js: be.JS, res: be.Resources, pub: be.Publisher}
	c := e.apiCoordinator(t)
	const id = "job-dead-result"
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, id, answerSpec())); err != nil {
		t.Fatal(err)
	}
	cmds := e.commands(t)
	if len(cmds) != 1 {
		t.Fatalf("commands %+v, want the first stage", cmds)
	}
	first := cmds[0]
	pool := messages.DefaultStages().Pool(first.Stage)
	if err := e.pub.PublishJSON(ctxT(t), bus.ResultSubject(pool, id), answer(t, first), bus.ResultMsgID(pool, id, first.Seq)); err != nil {
		t.Fatal(err)
	}
	results := e.res.ResultConsumers[pool]
	m, err := results.Next(jetstream.FetchMaxWait(testTimeout))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Nak(); err != nil { // a coordinator that died on it
		t.Fatal(err)
	}
	if m, err := results.Next(jetstream.FetchMaxWait(time.Second)); err == nil {
		t.Fatalf("delivered past MaxDeliver: %s", m.Subject())
	}

	res := waitResult(t, e, id)
	if res.Status != messages.StatusErrored || !strings.Contains(res.Error, "the result of stage "+string(first.Stage)) {
		t.Fatalf("job after the dead letter: %s %q", res.Status, res.Error)
	}
	r, err := c.Replay(ctxT(t), 1)
	if err != nil || !r.Reopened || r.Subject != bus.ResultSubject(pool, id) {
		t.Fatalf("replay: %+v %v", r, err)
	}
	if st, err := c.State(ctxT(t), id); err != nil || st.Done() {
		t.Fatalf("job after the replay: %v done %v, want running", err, st.Done())
	}
	m, err = results.Next(jetstream.FetchMaxWait(testTimeout))
	if err != nil {
		t.Fatalf("the replayed result is not on the results stream: %v", err)
	}
	if err := c.HandleResult(ctxT(t), bus.NewMessage(m.Subject(), m.Data(), nil, 1)); err != nil {
		t.Fatal(err)
	}
	st, err := c.State(ctxT(t), id)
	if err != nil || st.Done() || st.NextSeq <= first.Seq+1 {
		t.Errorf("job after the replayed result: done %v next seq %d (%v), want it moved on", st.Done(), st.NextSeq, err)
	}
}
