package bus_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

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
