package coordinator_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// countingKV counts the reads of the state bucket.
type countingKV struct {
	jetstream.KeyValue
	gets atomic.Int64
}

func (k *countingKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	k.gets.Add(1)
	return k.KeyValue.Get(ctx, key)
}

// TestKeptStatesAreNotRead: a coordinator that runs a job from its
// submission to its end, one event at a time, steps every event on the
// state it kept: it never reads the state bucket, and the job ends as it
// would. (Events of one job taken at once race on the kept copy as two
// coordinators do: the loser reads the stored state; drive does that.)
func TestKeptStatesAreNotRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	kv := &countingKV{KeyValue: e.res.JobState}
	c := e.coordinator(t, kv, nil, nil)
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-kept", answerSpec())); err != nil {
		t.Fatal(err)
	}
	for done := 0; done < len(e.commands(t)); done++ {
		if done > 50 {
			t.Fatal("still dispatching after 50 stages")
		}
		if err := c.HandleResult(ctxT(t), resultMsg(t, answer(t, e.commands(t)[done]))); err != nil {
			t.Fatal(err)
		}
	}
	if r := e.result(t, "job-kept"); !r.Success {
		t.Fatalf("status %s: %s", r.Status, r.Error)
	}
	if n := kv.gets.Load(); n != 0 {
		t.Errorf("%d reads of the state bucket, want none", n)
	}
	assertExactlyOnce(t, e, "job-kept")
}

// TestStaleKeptStateIsReloaded: another coordinator moves a job this one
// keeps; this one's next store conflicts, it reads the stored state and
// steps again, and nothing is lost or done twice.
func TestStaleKeptStateIsReloaded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	kv := &countingKV{KeyValue: e.res.JobState}
	mine, other := e.coordinator(t, kv, nil, nil), e.coordinator(t, nil, nil, nil)
	if err := mine.HandleSubmit(ctxT(t), submitMsg(t, "job-stale", answerSpec())); err != nil {
		t.Fatal(err)
	}
	plan := e.commands(t)[0]
	if err := other.HandleResult(ctxT(t), resultMsg(t, answer(t, plan))); err != nil { // mine's copy is now stale
		t.Fatal(err)
	}
	gen := e.commands(t)[1:]
	if len(gen) != 2 {
		t.Fatalf("after the plan: %+v, want code and tests", gen)
	}
	if err := mine.HandleResult(ctxT(t), resultMsg(t, answer(t, gen[0]))); err != nil {
		t.Fatal(err)
	}
	if n := kv.gets.Load(); n != 1 {
		t.Errorf("%d reads of the state bucket, want 1 (after the conflict)", n)
	}
	st, err := mine.State(ctxT(t), "job-stale")
	if err != nil {
		t.Fatal(err)
	}
	if st.Plan == nil || (st.Solution == nil && st.Tests == nil) {
		t.Fatalf("a result was lost: plan %v, solution %v, tests %v", st.Plan != nil, st.Solution != nil, st.Tests != nil)
	}
	drive(t, e, []*coordinatorPair{{mine, other}}, "job-stale")
	assertExactlyOnce(t, e, "job-stale")
}

// TestResubmissionIsOneJob: the same submission twice (a client's retry,
// here to a second coordinator that keeps nothing) starts the job once,
// though the second is taken for a new job without a read.
func TestResubmissionIsOneJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.coordinator(t, nil, nil, nil)
	fresh := e.coordinator(t, nil, nil, nil)
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-twice", answerSpec())); err != nil {
		t.Fatal(err)
	}
	if err := fresh.HandleSubmit(ctxT(t), submitMsg(t, "job-twice", answerSpec())); err != nil {
		t.Fatal(err)
	}
	if n := len(e.commands(t)); n != 1 {
		t.Errorf("%d stage commands after two submissions, want 1", n)
	}
}
