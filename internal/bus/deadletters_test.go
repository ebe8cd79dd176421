package bus_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestProvisionDeadLetters: Provision makes the dead-letter stream (kept
// by age, capturing autocoder.dlq only) and the reply_to bucket; Open
// finds both.
func TestProvisionDeadLetters(t *testing.T) {
	t.Parallel()
	_, js := newBus(t)
	res, err := bus.Provision(ctxT(t), js, bus.ProvisionConfig{DLQMaxAge: 48 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	c := res.DLQ.CachedInfo().Config
	if c.Name != bus.StreamDLQ || c.Retention != jetstream.LimitsPolicy || c.MaxAge != 48*time.Hour ||
		len(c.Subjects) != 1 || c.Subjects[0] != bus.SubjectDLQ {
		t.Errorf("dead-letter stream config = %+v", c)
	}
	if res.ReplyTo == nil || res.ReplyTo.Bucket() != bus.BucketReplyTo {
		t.Errorf("reply_to bucket = %v", res.ReplyTo)
	}
	opened, err := bus.Open(ctxT(t), js)
	if err != nil || opened.DLQ == nil || opened.ReplyTo == nil {
		t.Fatalf("Open: %v %+v", err, opened)
	}
	if _, err := bus.Provision(ctxT(t), js, bus.ProvisionConfig{DLQMaxAge: -time.Hour}); err == nil {
		t.Error("a negative DLQMaxAge was accepted")
	}
}

// TestDeadLetterNames: one letter per message of a stream, and a replay
// Msg-Id that is never the original's.
func TestDeadLetterNames(t *testing.T) {
	t.Parallel()
	if a, b := bus.DeadLetterMsgID(bus.StreamJobs, 7), bus.DeadLetterMsgID(bus.StageStream(messages.PoolLLM), 7); a == b {
		t.Errorf("letters of two streams share a Msg-Id: %s", a)
	}
	if id := bus.ReplayMsgID(7); id == bus.StageMsgID("j", 7) || id == bus.SubmitMsgID("j") {
		t.Errorf("a replay reuses an original Msg-Id: %s", id)
	}
	if !bus.ValidJobID(bus.NewJobID()) {
		t.Error("NewJobID is not a valid job id")
	}
}
