package bus_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestPublishMsgIDDeduplicates(t *testing.T) {
	t.Parallel()
	js, res := provisioned(t, bus.ProvisionConfig{})
	pub := bus.NewPublisher(js, bus.PublisherConfig{})

	command(t, pub, "job1", 1)
	command(t, pub, "job1", 1) // a coordinator replay: dropped by the server
	command(t, pub, "job1", 2)
	if got := streamMsgs(t, res.Stages[messages.PoolLLM]); got != 2 {
		t.Errorf("stage stream holds %d messages, want 2 (one duplicate dropped)", got)
	}

	// Without a Msg-Id nothing is de-duplicated.
	ev := messages.Event{V: messages.WireVersion, JobID: "job1", Type: messages.EventJobStarted}
	for range 2 {
		if err := pub.PublishJSON(ctxT(t), bus.EventSubject("job1"), ev, ""); err != nil {
			t.Fatalf("publish event: %v", err)
		}
	}
	if got := streamMsgs(t, res.Events); got != 2 {
		t.Errorf("events stream holds %d messages, want 2", got)
	}
}

func TestPublishSetsJobHeaders(t *testing.T) {
	t.Parallel()
	js, res := provisioned(t, bus.ProvisionConfig{})
	pub := bus.NewPublisher(js, bus.PublisherConfig{})
	result := &messages.StageResult{V: messages.WireVersion, JobID: "job7", Seq: 4, Stage: messages.StageBuild}
	if err := pub.PublishJSON(ctxT(t), bus.ResultSubject(messages.PoolSandbox, "job7"), result, bus.ResultMsgID(messages.PoolSandbox, "job7", 4)); err != nil {
		t.Fatalf("publish: %v", err)
	}
	msg, err := res.Results[messages.PoolSandbox].GetLastMsgForSubject(ctxT(t), bus.ResultSubject(messages.PoolSandbox, "job7"))
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if msg.Header.Get(bus.HeaderJobID) != "job7" || msg.Header.Get(bus.HeaderStage) != "build" ||
		msg.Header.Get(jetstream.MsgIDHeader) != "result.sandbox.job7.4" {
		t.Errorf("headers = %v", msg.Header)
	}
}

func TestPublishRetriesUntilStreamExists(t *testing.T) {
	t.Parallel()
	_, js := newBus(t)
	logs := newLogCapture("publish failed, retrying")
	pub := bus.NewPublisher(js, bus.PublisherConfig{
		MaxAttempts: 1000, RetryWait: 10 * time.Millisecond, MaxRetryWait: 20 * time.Millisecond,
		Logger: slog.New(logs),
	})
	errc := make(chan error, 1)
	go func() {
		errc <- pub.PublishJSON(ctxT(t), bus.SubjectJobsSubmit, messages.SubmitJob{V: 1, JobID: "j"}, bus.SubmitMsgID("j"))
	}()
	recv(t, logs.matched, "a retried publish") // no stream yet: no responders

	res, err := bus.Provision(ctxT(t), js, bus.ProvisionConfig{MemoryStorage: true})
	if err != nil {
		t.Fatalf("Provision: %v", err)
	}
	if err := recv(t, errc, "publish to return"); err != nil {
		t.Fatalf("publish after the stream appeared: %v", err)
	}
	if got := streamMsgs(t, res.Jobs); got != 1 {
		t.Errorf("jobs stream holds %d messages, want 1", got)
	}
}

func TestPublishGivesUp(t *testing.T) {
	t.Parallel()
	_, js := newBus(t)

	pub := bus.NewPublisher(js, bus.PublisherConfig{MaxAttempts: 3, RetryWait: time.Millisecond})
	err := pub.PublishJSON(ctxT(t), "autocoder.nowhere", map[string]int{"a": 1}, "")
	if !errors.Is(err, jetstream.ErrNoStreamResponse) {
		t.Errorf("after MaxAttempts: err = %v, want ErrNoStreamResponse", err)
	}

	// ctx bounds the retries.
	patient := bus.NewPublisher(js, bus.PublisherConfig{MaxAttempts: 1 << 20, RetryWait: 5 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = patient.PublishJSON(ctx, "autocoder.nowhere", 1, "id")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("with a ctx deadline: err = %v, want DeadlineExceeded", err)
	}

	if err := pub.PublishJSON(ctxT(t), "autocoder.nowhere", func() {}, ""); err == nil {
		t.Error("publishing an unencodable value succeeded")
	}
}

func TestPublishCore(t *testing.T) {
	t.Parallel()
	_, js := newBus(t)
	nc := js.Conn()
	ch := make(chan *nats.Msg, 1)
	sub, err := nc.ChanSubscribe("autocoder.ping.j1", ch)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	pub := bus.NewPublisher(js, bus.PublisherConfig{})
	if err := pub.PublishCore("autocoder.ping.j1", messages.Event{JobID: "j1", Type: messages.EventJobStarted}); err != nil {
		t.Fatalf("PublishCore: %v", err)
	}
	m := recv(t, (<-chan *nats.Msg)(ch), "core message")
	if m.Header.Get(bus.HeaderJobID) != "j1" {
		t.Errorf("core message headers = %v", m.Header)
	}
}
