package bus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestPublishJSONBatch: a batch is stored in order, with its job headers;
// published again, its Msg-Ids drop every copy; a message past the claim
// threshold goes by claim check, after the others.
func TestPublishJSONBatch(t *testing.T) {
	t.Parallel()
	js, res := provisioned(t, bus.ProvisionConfig{})
	pub := bus.NewPublisher(js, bus.PublisherConfig{ClaimThreshold: 4 << 10})
	var batch []bus.Outgoing
	for i := range 20 {
		ev := messages.Event{V: messages.WireVersion, JobID: "job1", Type: messages.EventStageStarted, Seq: i + 1, Stage: messages.StageCode}
		batch = append(batch, bus.Outgoing{Subject: bus.EventSubject("job1"), Value: ev, MsgID: fmt.Sprintf("ev-%d", i)})
	}
	big := messages.Event{V: messages.WireVersion, JobID: "job1", Type: messages.EventStageStarted, Seq: 99, Message: strings.Repeat("x", 8<<10)}
	batch = append(batch[:10], append([]bus.Outgoing{{Subject: bus.EventSubject("job1"), Value: big, MsgID: "ev-big"}}, batch[10:]...)...)
	for range 2 {
		if err := pub.PublishJSONBatch(ctxT(t), batch); err != nil {
			t.Fatal(err)
		}
	}
	if got := streamMsgs(t, res.Events); got != 21 {
		t.Fatalf("events stream holds %d messages, want 21 (the second batch dropped)", got)
	}
	var seqs []int
	for i := uint64(1); i <= 21; i++ {
		m, err := res.Events.GetMsg(ctxT(t), i)
		if err != nil {
			t.Fatal(err)
		}
		if m.Header.Get(bus.HeaderJobID) != "job1" {
			t.Errorf("message %d has job header %q", i, m.Header.Get(bus.HeaderJobID))
		}
		var ev messages.Event
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			seqs = append(seqs, -1) // the claim check's envelope
			continue
		}
		seqs = append(seqs, ev.Seq)
	}
	for i := range 20 {
		if seqs[i] != i+1 {
			t.Fatalf("stored order %v: want 1..20, then the claim-checked one", seqs)
		}
	}
}

// TestPublishJSONBatchAnAckThatNeverComes: a stream leader that steps
// down with a message queued answers nothing, and the connection, to
// another server, stays up. The batch does not wait for ever: past
// PublishAckWait the unanswered message is published again, one by one, and its
// failure is returned; the rest of the batch is stored. (A subscriber that
// never replies stands in for the leader.)
func TestPublishJSONBatchAnAckThatNeverComes(t *testing.T) {
	t.Parallel()
	js, res := provisioned(t, bus.ProvisionConfig{})
	blackhole, err := js.Conn().SubscribeSync("autocoder.test.blackhole")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = blackhole.Unsubscribe() })
	short, err := jetstream.New(js.Conn(), jetstream.WithDefaultTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	pub := bus.NewPublisher(short, bus.PublisherConfig{PublishAckWait: 300 * time.Millisecond, MaxAttempts: 2})
	ev := messages.Event{V: messages.WireVersion, JobID: "job1", Type: messages.EventStageStarted, Seq: 1, Stage: messages.StageCode}
	batch := []bus.Outgoing{
		{Subject: "autocoder.test.blackhole", Value: ev, MsgID: "lost-1"},
		{Subject: bus.EventSubject("job1"), Value: ev, MsgID: "ev-1"},
	}
	done := make(chan error, 1)
	go func() { done <- pub.PublishJSONBatch(context.Background(), batch) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "autocoder.test.blackhole") {
			t.Errorf("PublishJSONBatch = %v, want the unanswered message's failure", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("PublishJSONBatch still waits for an acknowledgement that never comes")
	}
	if got := streamMsgs(t, res.Events); got != 1 {
		t.Errorf("events stream holds %d messages, want the batch's other one", got)
	}
}
