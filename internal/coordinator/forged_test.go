package coordinator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/bus/bustest"
	"github.com/autocoder/autocoder/internal/coordinator"
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
	wrongJob := bus.ResultSubject(messages.PoolLLM, "job-other")
	tests := map[string]*bus.Message{
		"on the sandbox pool's subject": onSubject(t, bus.ResultSubject(messages.PoolSandbox, "job-f"), forged),
		"on another job's subject":      onSubject(t, wrongJob, forged),
		"on the old unpooled subject":   onSubject(t, "autocoder.results.job-f", forged),
		"for a seq not pending":         onSubject(t, bus.ResultSubject(messages.PoolLLM, "job-f"), notPending),
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
	if err := c.HandleResult(ctxT(t), onSubject(t, bus.ResultSubject(messages.PoolLLM, "job-f"), forged)); err != nil {
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

// TestForgedResultOnTheBus: a forged plan result published on the sandbox
// pool's result subject, before the real one, does not make
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
	if err := e.pub.PublishJSON(ctx, bus.ResultSubject(messages.PoolSandbox, "job-b"), forged, bus.ResultMsgID(messages.PoolSandbox, "job-b", plan.Seq)); err != nil {
		t.Fatal(err)
	}
	if err := e.pub.PublishJSON(ctx, bus.ResultSubject(messages.PoolLLM, "job-b"), answer(t, plan), bus.ResultMsgID(messages.PoolLLM, "job-b", plan.Seq)); err != nil {
		t.Fatal(err)
	}
	e.takeResults(t, c)
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

// takeResults runs c on every pool's results consumer until the test ends,
// as the stack's coordinator does.
func (e *env) takeResults(t *testing.T, c *coordinator.Coordinator) {
	t.Helper()
	for _, pool := range messages.Pools() {
		w := bus.NewWorker(e.res.ResultConsumers[pool], bus.HandlerFunc(c.HandleResult), bus.WorkerConfig{Concurrency: 1})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("%s results worker: %v", pool, err)
			}
		})
	}
}

// TestForgedMsgIDFromAnotherPool: a connection with the llm workers'
// credentials publishes, on the llm pool's own result subject (all its
// permissions allow), a result carrying the Msg-Id that the sandbox pool's
// real result of a pending stage will use. The coordinator refuses it (the
// stage is not the llm pool's), and the real result, published next with
// the sandbox workers' credentials, is not dropped by the server as a
// duplicate: each pool's results are de-duplicated in their own stream, and
// the job finishes.
func TestForgedMsgIDFromAnotherPool(t *testing.T) {
	t.Parallel()
	const job, password = "job-m", "pa55-word"
	be := bustest.StartWithUsers(t, bus.ProvisionConfig{MemoryStorage: true}, []bus.User{
		{Name: "llm", Password: password, Role: bus.RoleLLMWorker},
		{Name: "sandbox", Password: password, Role: bus.RoleSandboxWorker},
	})
	e := &env{js: be.JS, res: be.Resources, pub: be.Publisher}
	reg := prometheus.NewRegistry()
	c := e.coordinator(t, nil, nil, reg)
	e.takeResults(t, c)
	workers := map[messages.Pool]*bus.Publisher{}
	for pool, role := range map[messages.Pool]bus.Role{messages.PoolLLM: bus.RoleLLMWorker, messages.PoolSandbox: bus.RoleSandboxWorker} {
		js := be.ConnectAs(t, bus.ClientAuth{User: string(pool), Password: password, Role: role})
		workers[pool] = bus.NewPublisher(js, bus.PublisherConfig{})
	}
	ctx := ctxT(t)
	if err := c.HandleSubmit(ctx, submitMsg(t, job, answerSpec())); err != nil {
		t.Fatal(err)
	}
	publish := func(by messages.Pool, r *messages.StageResult, msgID string) {
		t.Helper()
		if err := workers[by].PublishJSON(ctx, bus.ResultSubject(by, job), r, msgID); err != nil {
			t.Fatalf("publish a result with the %s workers' credentials: %v", by, err)
		}
	}
	answered := map[int]bool{}
	forgedFor := "" // the sandbox stage whose Msg-Id the llm pool took
	for !e.finished(t, job) {
		for _, cmd := range e.commands(t) {
			if answered[cmd.Seq] {
				continue
			}
			answered[cmd.Seq] = true
			pool := messages.DefaultStages().Pool(cmd.Stage)
			if pool == messages.PoolSandbox && forgedFor == "" {
				forgedFor = fmt.Sprintf("%s (seq %d)", cmd.Stage, cmd.Seq)
				publish(messages.PoolLLM, answer(t, cmd), bus.ResultMsgID(messages.PoolSandbox, job, cmd.Seq))
			}
			publish(pool, answer(t, cmd), bus.ResultMsgID(pool, job, cmd.Seq))
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the job never finished: was the real result of %s dropped as a duplicate?", forgedFor)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if forgedFor == "" {
		t.Fatal("the job had no sandbox stage to forge a result for")
	}
	if r := e.result(t, job); !r.Success {
		t.Errorf("job %s: status %s, error %q; want success", job, r.Status, r.Error)
	}
	if n := counterValue(t, reg, "autocoder_coordinator_results_refused_total"); n != 1 {
		t.Errorf("results refused for their subject: %v, want 1 (the forgery)", n)
	}
}

// finished reports whether the job has a result object.
func (e *env) finished(t *testing.T, jobID string) bool {
	t.Helper()
	_, err := e.res.JobResults.Get(ctxT(t), bus.JobKey(jobID))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false
	}
	if err != nil {
		t.Fatalf("result of %s: %v", jobID, err)
	}
	return true
}
