package coordinator_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/internal/metrics"
	"github.com/autocoder/autocoder/pkg/messages"
)

// watchDeadlines runs c.WatchDeadlines until the test ends.
func watchDeadlines(t *testing.T, c *coordinator.Coordinator) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.WatchDeadlines(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("WatchDeadlines: %v", err)
		}
	})
}

// waitResult waits for the job's result object to be stored.
func (e *env) waitResult(t *testing.T, jobID string) *messages.Result {
	t.Helper()
	w, err := e.res.JobResults.Watch(ctxT(t), bus.JobKey(jobID))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop() }()
	for en := range w.Updates() {
		if en != nil {
			return e.result(t, jobID)
		}
	}
	t.Fatalf("job %s: no result within %s", jobID, testTimeout)
	return nil
}

// TestTerminatedStageEndsAtItsDeadline: a worker terminates the plan
// command (no result will ever come); the job does not wait forever but
// ends with the deadline's reason, and the real result that comes late is
// stale.
func TestTerminatedStageEndsAtItsDeadline(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c, err := coordinator.New(coordinator.Config{States: e.res.JobState, Results: e.res.JobResults, Publisher: e.pub,
		DefaultModel: "test-model", SweepEvery: 20 * time.Millisecond,
		StageDeadlines: map[messages.Stage]time.Duration{messages.StagePlan: 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	watchDeadlines(t, c)
	ctx := ctxT(t)
	if err := c.HandleSubmit(ctx, submitMsg(t, "job-dl", answerSpec())); err != nil {
		t.Fatal(err)
	}

	msg, err := e.res.StageConsumers[messages.PoolLLM].Next(jetstream.FetchMaxWait(testTimeout))
	if err != nil {
		t.Fatalf("no stage command: %v", err)
	}
	var cmd messages.StageCommand
	if err := json.Unmarshal(msg.Data(), &cmd); err != nil {
		t.Fatal(err)
	}
	if cmd.Stage != messages.StagePlan {
		t.Fatalf("first command is %s, want plan", cmd.Stage)
	}
	if err := msg.Term(); err != nil {
		t.Fatal(err)
	}

	r := e.waitResult(t, "job-dl")
	if r.Status != messages.StatusErrored || !strings.Contains(r.Error, "stage plan missed its deadline of 300ms") {
		t.Fatalf("result: status %s, error %q; want errored with the deadline's reason", r.Status, r.Error)
	}

	e.waitSettled(t, "job-dl") // the result is stored before the events go out
	before := e.counts(t, "job-dl")
	if err := c.HandleResult(ctx, resultMsg(t, answer(t, cmd))); err != nil {
		t.Fatalf("late result: %v", err)
	}
	if after := e.counts(t, "job-dl"); after != before {
		t.Errorf("a late result changed the job: %+v -> %+v", before, after)
	}
	if got := e.result(t, "job-dl"); got.Error != r.Error || got.Status != r.Status {
		t.Errorf("a late result changed the result to %s %q", got.Status, got.Error)
	}
}

// TestDeadlineOnInjectedClock: the sweep runs on the injected ticks and
// clock: nothing is failed before the default deadline, and the stage is
// failed after it.
func TestDeadlineOnInjectedClock(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var now atomic.Pointer[time.Time]
	setNow := func(tm time.Time) { now.Store(&tm) }
	setNow(t0)
	ticks := make(chan time.Time)
	c, err := coordinator.New(coordinator.Config{States: e.res.JobState, Results: e.res.JobResults, Publisher: e.pub,
		DefaultModel: "test-model", Now: func() time.Time { return *now.Load() }, Ticks: ticks})
	if err != nil {
		t.Fatal(err)
	}
	watchDeadlines(t, c)
	ctx := ctxT(t)
	if err := c.HandleSubmit(ctx, submitMsg(t, "job-clock", answerSpec())); err != nil {
		t.Fatal(err)
	}
	rev := e.counts(t, "job-clock").StateRev

	setNow(t0.Add(coordinator.DefaultStepDeadline - time.Second))
	for range 5 {
		ticks <- time.Time{}
	}
	if got := e.counts(t, "job-clock").StateRev; got != rev {
		t.Fatalf("the job changed before its stage's deadline (revision %d -> %d)", rev, got)
	}

	setNow(t0.Add(coordinator.DefaultStepDeadline))
	w, err := e.res.JobResults.Watch(ctx, bus.JobKey("job-clock"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case en := <-w.Updates():
			if en == nil {
				continue
			}
			r := e.result(t, "job-clock")
			if r.Status != messages.StatusErrored || !strings.Contains(r.Error, "stage plan missed its deadline of 10m") {
				t.Fatalf("result: status %s, error %q; want errored with the deadline's reason", r.Status, r.Error)
			}
			return
		case ticks <- time.Time{}:
		case <-ctx.Done():
			t.Fatal("no result")
		}
	}
}

func TestStageDeadline(t *testing.T) {
	t.Parallel()
	opts := messages.Options{Timeout: messages.Duration(2 * time.Minute)}
	overrides := map[messages.Stage]time.Duration{messages.StageBuild: 45 * time.Minute, messages.StageRunTests: 12 * time.Minute}
	tests := []struct {
		stage     messages.Stage
		opts      messages.Options
		overrides map[messages.Stage]time.Duration
		want      time.Duration
	}{
		{messages.StagePlan, opts, nil, coordinator.DefaultStepDeadline},
		{messages.StageFix, opts, overrides, coordinator.DefaultStepDeadline},
		{messages.StageBuild, opts, nil, coordinator.DefaultBuildDeadline},
		{messages.StageBuild, opts, overrides, 45 * time.Minute},
		{messages.StageProfile, opts, nil, coordinator.DefaultStepDeadline},
		{messages.StageRunTests, opts, nil, 2*time.Minute + coordinator.DefaultRunSlack},
		{messages.StageRunTests, opts, overrides, 12 * time.Minute},
		{messages.StageAcceptance, messages.Options{}, nil, messages.DefaultTimeout + coordinator.DefaultRunSlack},
		{messages.StageRun, opts, overrides, 2*time.Minute + coordinator.DefaultRunSlack},
	}
	for _, tc := range tests {
		if got := coordinator.StageDeadline(messages.DefaultStages(), tc.stage, tc.opts, tc.overrides); got != tc.want {
			t.Errorf("StageDeadline(%s, timeout %s, %v) = %s, want %s", tc.stage, tc.opts.Timeout.Std(), tc.overrides, got, tc.want)
		}
	}
}

func TestNewRejectsBadDeadlines(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for name, cfg := range map[string]coordinator.Config{
		"zero deadline":  {StageDeadlines: map[messages.Stage]time.Duration{messages.StageBuild: 0}},
		"negative sweep": {SweepEvery: -time.Second},
	} {
		cfg.States, cfg.Results, cfg.Publisher = e.res.JobState, e.res.JobResults, e.pub
		if _, err := coordinator.New(cfg); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}

// TestDeadlineOfConcurrentStages: code and tests are pending together and
// both miss their deadline; the first failure ends the job, and the other
// is neither failed nor counted after that.
func TestDeadlineOfConcurrentStages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var now atomic.Pointer[time.Time]
	setNow := func(tm time.Time) { now.Store(&tm) }
	setNow(t0)
	ticks := make(chan time.Time)
	reg := prometheus.NewRegistry()
	m, err := metrics.NewBuilderOn(reg).Coordinator(e.res)
	if err != nil {
		t.Fatal(err)
	}
	c, err := coordinator.New(coordinator.Config{States: e.res.JobState, Results: e.res.JobResults, Publisher: e.pub,
		DefaultModel: "test-model", Now: func() time.Time { return *now.Load() }, Ticks: ticks, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	if err := c.HandleSubmit(ctx, submitMsg(t, "job-two", answerSpec())); err != nil {
		t.Fatal(err)
	}
	plan := e.commands(t)[0]
	if err := c.HandleResult(ctx, resultMsg(t, answer(t, plan))); err != nil {
		t.Fatal(err)
	}
	if s, err := c.State(ctx, "job-two"); err != nil || len(s.Pending) != 2 {
		t.Fatalf("pending %v (err %v), want code and tests", s.Pending, err)
	}
	watchDeadlines(t, c)
	// The watch counts the job as running once it has seen its state (each
	// tick ends with the gauge set).
	for gaugeValue(t, reg, "autocoder_jobs_running") != 1 {
		select {
		case ticks <- time.Time{}:
		case <-ctx.Done():
			t.Fatal("jobs running never became 1")
		}
	}

	setNow(t0.Add(time.Hour))
	w, err := e.res.JobResults.Watch(ctx, bus.JobKey("job-two"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop() }()
	for done := false; !done; {
		select {
		case en := <-w.Updates():
			done = en != nil
		case ticks <- time.Time{}:
		case <-ctx.Done():
			t.Fatal("no result")
		}
	}
	r := e.result(t, "job-two")
	if r.Status != messages.StatusErrored || !strings.Contains(r.Error, "stage code missed its deadline of 10m") {
		t.Fatalf("result: status %s, error %q; want errored by the code stage's deadline", r.Status, r.Error)
	}
	ticks <- time.Time{} // one more sweep: nothing is left to fail
	ticks <- time.Time{}
	if got := counterValue(t, reg, "autocoder_stage_deadlines_missed_total"); got != 1 {
		t.Errorf("deadlines missed = %v, want 1", got)
	}
	if got := gaugeValue(t, reg, "autocoder_jobs_running"); got != 0 {
		t.Errorf("jobs running after the job ended = %v, want 0", got)
	}
}

// gaugeValue is a gauge's value in reg (its first series).
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

// counterValue sums a counter's series in reg.
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// sweptCoordinator is a coordinator of e whose deadlines are watched, on a
// clock set by setNow (t0 at first) and swept at each send on ticks.
func sweptCoordinator(t *testing.T, e *env) (c *coordinator.Coordinator, setNow func(time.Time), ticks chan time.Time) {
	t.Helper()
	var now atomic.Pointer[time.Time]
	setNow = func(tm time.Time) { now.Store(&tm) }
	setNow(t0)
	ticks = make(chan time.Time)
	c, err := coordinator.New(coordinator.Config{States: e.res.JobState, Results: e.res.JobResults, Publisher: e.pub,
		DefaultModel: "test-model", Now: func() time.Time { return *now.Load() }, Ticks: ticks, Resources: e.res, JS: e.js})
	if err != nil {
		t.Fatal(err)
	}
	watchDeadlines(t, c)
	return c, setNow, ticks
}

// TestPausedPoolStopsTheDeadlineOfQueuedStages: the plan of a job waits in
// the paused llm pool's queue past its deadline and is not failed; once
// the pool is resumed its deadline counts from the resume, and it is
// failed only a deadline after that.
func TestPausedPoolStopsTheDeadlineOfQueuedStages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c, setNow, ticks := sweptCoordinator(t, e)
	ctx := ctxT(t)
	pause := func(paused bool, at time.Time) {
		t.Helper()
		if err := bus.SetPoolPause(ctx, e.res.Pools, messages.PoolPause{Pool: "llm", Paused: paused, By: "test", At: at}); err != nil {
			t.Fatal(err)
		}
	}
	pause(true, t0)
	if err := c.HandleSubmit(ctx, submitMsg(t, "job-paused", answerSpec())); err != nil {
		t.Fatal(err)
	}
	rev := e.counts(t, "job-paused").StateRev
	setNow(t0.Add(3 * coordinator.DefaultStepDeadline))
	for range 5 {
		ticks <- time.Time{}
	}
	if got := e.counts(t, "job-paused").StateRev; got != rev {
		t.Fatalf("a queued stage of a paused pool was failed (revision %d -> %d)", rev, got)
	}
	resumed := t0.Add(3 * coordinator.DefaultStepDeadline)
	pause(false, resumed)
	setNow(resumed.Add(coordinator.DefaultStepDeadline - time.Second))
	for range 5 {
		ticks <- time.Time{}
	}
	if got := e.counts(t, "job-paused").StateRev; got != rev {
		t.Fatalf("the stage was failed before a deadline from the resume (revision %d -> %d)", rev, got)
	}
	setNow(resumed.Add(coordinator.DefaultStepDeadline))
	w, err := e.res.JobResults.Watch(ctx, bus.JobKey("job-paused"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case en := <-w.Updates():
			if en == nil {
				continue
			}
			if r := e.result(t, "job-paused"); r.Status != messages.StatusErrored || !strings.Contains(r.Error, "missed its deadline") {
				t.Fatalf("result: %s %q, want the deadline's error", r.Status, r.Error)
			}
			return
		case ticks <- time.Time{}:
		case <-ctx.Done():
			t.Fatal("no result")
		}
	}
}

// TestUnreadablePauseHoldsTheDeadlineOfQueuedStages: a pool's pause switch
// that does not decode counts as paused: the queued plan of a job past its
// deadline is not failed while it cannot be read, and is failed once the
// switch reads again, running.
func TestUnreadablePauseHoldsTheDeadlineOfQueuedStages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c, setNow, ticks := sweptCoordinator(t, e)
	ctx := ctxT(t)
	if _, err := e.res.Pools.Put(ctx, bus.PoolKey(messages.PoolLLM), []byte("{not a pause")); err != nil {
		t.Fatal(err)
	}
	if err := c.HandleSubmit(ctx, submitMsg(t, "job-unread", answerSpec())); err != nil {
		t.Fatal(err)
	}
	rev := e.counts(t, "job-unread").StateRev
	setNow(t0.Add(3 * coordinator.DefaultStepDeadline))
	for range 5 {
		ticks <- time.Time{}
	}
	if got := e.counts(t, "job-unread").StateRev; got != rev {
		t.Fatalf("a queued stage was failed while its pool's switch could not be read (revision %d -> %d)", rev, got)
	}
	if err := bus.SetPoolPause(ctx, e.res.Pools, messages.PoolPause{Pool: string(messages.PoolLLM), Paused: false, By: "test", At: t0}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(testTimeout); ; {
		select {
		case ticks <- time.Time{}:
		case <-ctx.Done():
			t.Fatal("no result")
		}
		if _, err := e.res.JobResults.Get(ctx, bus.JobKey("job-unread")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stage was not failed once the switch read again")
		}
	}
	if r := e.result(t, "job-unread"); r.Status != messages.StatusErrored || !strings.Contains(r.Error, "missed its deadline") {
		t.Fatalf("result: %s %q, want the deadline's error", r.Status, r.Error)
	}
}
