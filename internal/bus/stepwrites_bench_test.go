package bus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
)

// BenchmarkStepWrites measures ways of storing one coordinator step's
// durable writes, a job's state (4 KiB, compare-and-set on its last
// sequence) and a stage command (1 KiB), on an embedded server that
// flushes every write (sync.go), to see whether one write per step would
// bring the stage hop near a JetStream round trip (issue 24,
// BENCHMARKS.md):
//
//	state-only  the state alone: the floor
//	in-turn     the state, then the command on a stream of its own (what a step does)
//	together    both sent at once, then both acknowledgements awaited
//	atomic      both in one atomic batch into one stream (nats-server 2.12's
//	            Nats-Batch-* headers), the state keeping its compare-and-set
//
//	go test -run '^$' -bench StepWrites -benchtime 1000x ./internal/bus
func BenchmarkStepWrites(b *testing.B) {
	for _, mode := range []string{"state-only", "in-turn", "together", "atomic"} {
		b.Run(mode, func(b *testing.B) { benchStepWrites(b, mode) })
	}
}

func benchStepWrites(b *testing.B, mode string) {
	_, js := newBusWith(b, bus.EmbeddedConfig{StoreDir: b.TempDir()})
	nc := js.Conn()
	ctx := context.Background()
	for _, cfg := range []jetstream.StreamConfig{
		{Name: "BENCH_STATE", Subjects: []string{"state.>"}, MaxMsgsPerSubject: 1, AllowAtomicPublish: true},
		{Name: "BENCH_COMMANDS", Subjects: []string{"command.>"}},
	} {
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			b.Fatal(err)
		}
	}
	state, command := []byte(strings.Repeat("s", 4<<10)), []byte(strings.Repeat("c", 1<<10))
	var last uint64 // the state's last sequence, for its compare-and-set
	stateMsg := func() *nats.Msg {
		m := nats.NewMsg("state.job")
		m.Data = state
		m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(last, 10))
		return m
	}
	commandMsg := func(subject string) *nats.Msg {
		m := nats.NewMsg(subject)
		m.Data = command
		return m
	}
	publish := func(m *nats.Msg) uint64 {
		ack, err := js.PublishMsg(ctx, m)
		if err != nil {
			b.Fatal(err)
		}
		return ack.Sequence
	}
	awaitAck := func(f jetstream.PubAckFuture) uint64 {
		select {
		case ack := <-f.Ok():
			return ack.Sequence
		case err := <-f.Err():
			b.Fatal(err)
		}
		return 0
	}
	b.ResetTimer()
	for i := range b.N {
		switch mode {
		case "state-only":
			last = publish(stateMsg())
		case "in-turn":
			last = publish(stateMsg())
			publish(commandMsg(fmt.Sprintf("command.%d", i)))
		case "together":
			fs, err := js.PublishMsgAsync(stateMsg())
			if err != nil {
				b.Fatal(err)
			}
			fc, err := js.PublishMsgAsync(commandMsg(fmt.Sprintf("command.%d", i)))
			if err != nil {
				b.Fatal(err)
			}
			last = awaitAck(fs)
			awaitAck(fc)
		case "atomic":
			id := fmt.Sprintf("step-%d", i)
			s := stateMsg()
			s.Header.Set("Nats-Batch-Id", id)
			s.Header.Set("Nats-Batch-Sequence", "1")
			if err := nc.PublishMsg(s); err != nil {
				b.Fatal(err)
			}
			c := commandMsg(fmt.Sprintf("state.command.%d", i))
			c.Header.Set("Nats-Batch-Id", id)
			c.Header.Set("Nats-Batch-Sequence", "2")
			c.Header.Set("Nats-Batch-Commit", "1")
			reply, err := nc.RequestMsg(c, 10*time.Second)
			if err != nil {
				b.Fatal(err)
			}
			var ack struct {
				Seq   uint64          `json:"seq"`
				Error json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal(reply.Data, &ack); err != nil || ack.Error != nil {
				b.Fatalf("atomic batch: %s (%v)", reply.Data, err)
			}
			last = ack.Seq - 1 // the state, before the command
		}
	}
}
