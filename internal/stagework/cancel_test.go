package stagework_test

import (
	"context"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/bus/bustest"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestCancelledJobsStageIsAbandoned: a stage in flight whose job is
// cancelled has its context ended (the handler stops), publishes nothing,
// caches nothing and is acked (Handle returns nil), not retried. A stage
// of another job goes on.
func TestCancelledJobsStageIsAbandoned(t *testing.T) {
	t.Parallel()
	cancels := stagework.NewCancels()
	stopped := make(chan error, 1)
	h := &handler{version: "v1", fn: func(ctx context.Context, cmd *messages.StageCommand) (stagework.Output[any], error) {
		<-ctx.Done()
		stopped <- context.Cause(ctx)
		return stagework.Output[any]{}, ctx.Err() // what a killed sandbox or an abandoned model call returns
	}}
	pub := &publisher{}
	c := newMemCache()
	x := newExecutor(t, h, pub, c, func(cfg *stagework.Config) { cfg.Cancels = cancels })
	done := make(chan error, 1)
	go func() { done <- x.Handle(ctxT(t), message(t, command(messages.CacheAuto), 1)) }()
	waitUntil(t, func() bool { return h.calls.Load() == 1 })

	if n := cancels.Cancel("job-other"); n != 0 {
		t.Errorf("cancelling another job stopped %d stages", n)
	}
	if n := cancels.Cancel("job-1"); n != 1 {
		t.Errorf("Cancel stopped %d stages, want 1", n)
	}
	if cause := <-stopped; cause != stagework.ErrJobCancelled {
		t.Errorf("the stage's context ended with %v, want ErrJobCancelled", cause)
	}
	if err := <-done; err != nil {
		t.Errorf("Handle = %v, want nil (acked, not retried)", err)
	}
	if got := pub.results(); len(got) != 0 {
		t.Errorf("published %d results for a cancelled job", len(got))
	}
	if _, sets := c.stats(); sets != 0 || cancels.Running() != 0 {
		t.Errorf("cache sets %d, stages still tracked %d", sets, cancels.Running())
	}
}

// TestCancelsListen: the coordinator's announcement on core NATS reaches a
// worker's Cancels; a malformed one, or one whose job is not its subject's,
// stops nothing.
func TestCancelsListen(t *testing.T) {
	t.Parallel()
	env := bustest.Start(t, bus.ProvisionConfig{})
	cancels := stagework.NewCancels()
	sub, err := cancels.Listen(env.Conn)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	h := &handler{version: "v1", fn: func(ctx context.Context, _ *messages.StageCommand) (stagework.Output[any], error) {
		<-ctx.Done()
		return stagework.Output[any]{}, ctx.Err()
	}}
	x := newExecutor(t, h, &publisher{}, nil, func(cfg *stagework.Config) { cfg.Cancels = cancels })
	done := make(chan error, 1)
	go func() { done <- x.Handle(ctxT(t), message(t, command(messages.CacheAuto), 1)) }()
	waitUntil(t, func() bool { return cancels.Running() == 1 && h.calls.Load() == 1 })

	env.Conn.Publish(bus.CancelledSubject("job-1"), []byte("not json"))
	env.Publisher.PublishCore(bus.CancelledSubject("job-1"), messages.CancelJob{JobID: "job-2"})
	env.Conn.Flush()
	select {
	case err := <-done:
		t.Fatalf("a malformed announcement stopped the stage: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := env.Publisher.PublishCore(bus.CancelledSubject("job-1"), messages.CancelJob{JobID: "job-1"}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Handle = %v, want nil", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("the announcement did not stop the stage")
	}
}

func waitUntil(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
