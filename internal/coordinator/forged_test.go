package coordinator_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// forgedPlan is a plan result for cmd with the attacker's plan in it.
func forgedPlan(t *testing.T, cmd messages.StageCommand) *messages.StageResult {
	t.Helper()
	r := answer(t, cmd)
	r.Output = mustMarshal(t, messages.Plan{Description: "exfiltrate", Approach: "the attacker's"})
	return r
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func onSubject(t *testing.T, subject string, r *messages.StageResult) *bus.Message {
	t.Helper()
	return bus.NewMessage(subject, mustMarshal(t, r), nil, 1)
}

// TestForgedResultsChangeNothing: a result is accepted only on the result
// subject of the pool its stage was dispatched to, for its own job, while
// that stage is pending, and only once. Everything else leaves the job,
// the stage streams and the events as they were, and is counted.
func TestForgedResultsChangeNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	c := e.coordinator(t, nil, nil, reg)
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-f", answerSpec())); err != nil {
		t.Fatal(err)
	}
	plan := e.commands(t)[0]
	if plan.Stage != messages.StagePlan {
		t.Fatalf("first command %s, want plan", plan.Stage)
	}
	forged := forgedPlan(t, plan)
	notPending := forgedPlan(t, plan)
	notPending.Seq = 7
	wrongJob := bus.ResultSubject(bus.PoolLLM, "job-other")
	tests := map[string]*bus.Message{
		"on the sandbox pool's subject": onSubject(t, bus.ResultSubject(bus.PoolSandbox, "job-f"), forged),
		"on another job's subject":      onSubject(t, wrongJob, forged),
		"on the old unpooled subject":   onSubject(t, "autocoder.results.job-f", forged),
		"for a seq not pending":         onSubject(t, bus.ResultSubject(bus.PoolLLM, "job-f"), notPending),
	}
	before := e.counts(t, "job-f")
	for name, msg := range tests {
		if err := c.HandleResult(ctxT(t), msg); err != nil {
			t.Errorf("%s: HandleResult = %v, want nil (dropped)", name, err)
		}
		if diff := cmp.Diff(before, e.counts(t, "job-f")); diff != "" {
			t.Errorf("a forged result %s changed the job (-before +after):\n%s", name, diff)
		}
	}
	if n := counterValue(t, reg, "autocoder_coordinator_results_refused_total"); n != 3 {
		t.Errorf("results refused for their subject: %v, want 3 (the seq not pending is the machine's stale result)", n)
	}

	// The real result is taken; a second one for the same seq, even with
	// other content, is stale.
	if err := c.HandleResult(ctxT(t), resultMsg(t, answer(t, plan))); err != nil {
		t.Fatal(err)
	}
	after := e.counts(t, "job-f")
	if err := c.HandleResult(ctxT(t), onSubject(t, bus.ResultSubject(bus.PoolLLM, "job-f"), forged)); err != nil {
		t.Errorf("second result: HandleResult = %v", err)
	}
	if diff := cmp.Diff(after, e.counts(t, "job-f")); diff != "" {
		t.Errorf("a second result for the same seq changed the job (-before +after):\n%s", diff)
	}
	st, err := c.State(ctxT(t), "job-f")
	if err != nil {
		t.Fatal(err)
	}
	if st.Plan == nil || st.Plan.Description != "return 42" {
		t.Errorf("the job's plan is %+v, want the real one", st.Plan)
	}
}

// TestForgedResultOnTheBus: a forged plan result published on the results
// stream on the sandbox pool's subject, before the real one, does not make
// the job take the attacker's plan, and does not keep the real one out.
func TestForgedResultOnTheBus(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.coordinator(t, nil, nil, nil)
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-b", answerSpec())); err != nil {
		t.Fatal(err)
	}
	plan := e.commands(t)[0]
	ctx := ctxT(t)
	forged := forgedPlan(t, plan)
	if err := e.pub.PublishJSON(ctx, bus.ResultSubject(bus.PoolSandbox, "job-b"), forged, bus.ResultMsgID(bus.PoolSandbox, "job-b", plan.Seq)); err != nil {
		t.Fatal(err)
	}
	if err := e.pub.PublishJSON(ctx, bus.ResultSubject(bus.PoolLLM, "job-b"), answer(t, plan), bus.ResultMsgID(bus.PoolLLM, "job-b", plan.Seq)); err != nil {
		t.Fatal(err)
	}
	w := bus.NewWorker(e.res.ResultsConsumer, bus.HandlerFunc(c.HandleResult), bus.WorkerConfig{Concurrency: 1})
	wctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
	}()
	for {
		st, err := c.State(ctx, "job-b")
		if err != nil {
			t.Fatal(err)
		}
		if st.Plan != nil {
			if st.Plan.Description != "return 42" {
				t.Errorf("the job took the plan %+v, want the real one", st.Plan)
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("the real plan result was never applied")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
