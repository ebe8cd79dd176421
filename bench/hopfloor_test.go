package bench

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkHopFloor bounds what any design of the stage hop could reach on
// this machine while a step stays durable: the least a hop must do is
// carry a result to the coordinator (a core request), store the job's
// state (one flushed compare-and-set) and carry the next command to a
// worker that reads the state before it runs it. No step function, no
// events, no outbox, no JSON. Two floors, each sample against the round
// trip of BenchmarkStageHop taken in turn with it on the same server:
//
//   - one-write: the command travels on core NATS (the state is the only
//     durable record; a design where the coordinator offers commands as
//     workers offer results);
//   - two-writes: the command is published on a file-backed work queue
//     and acknowledged, as the stack's commands are.
//
// If the one-write floor's p99 is over twice the round trip's, no layout
// of the step's writes meets issue 24's hop target here.
var floorState = flag.Int("floor.state", 16<<10, "BenchmarkHopFloor: the state's size in bytes (a first-pass job's is 13–28 KiB)")

func BenchmarkHopFloor(b *testing.B) {
	for _, mode := range []string{"one-write", "two-writes"} {
		b.Run(mode, func(b *testing.B) { benchHopFloor(b, mode) })
	}
}

func benchHopFloor(b *testing.B, mode string) {
	r := newRigSync(b, 0, instantBackend{}, *hopSync)
	js := r.st.JS
	nc := js.Conn()
	probe := newRTTProbe(b, js)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "BENCH_FLOOR", Storage: jetstream.FileStorage})
	if err != nil {
		b.Fatal(err)
	}
	state, command, result := []byte(strings.Repeat("s", *floorState)), []byte(strings.Repeat("c", 1<<10)), []byte(strings.Repeat("r", 1<<10))
	const keys = 200 // jobs in turn, so each update deletes a revision as the state bucket's do
	revs := make([]uint64, keys)
	admitted := make(chan error, 1)

	// The worker: reads the job's state before it runs the command.
	admit := func(key string) { _, err := kv.Get(ctx, key); admitted <- err }
	var send func(key string) error
	switch mode {
	case "one-write":
		sub, err := nc.Subscribe("bench.floor.command", func(m *nats.Msg) { admit(m.Header.Get("key")) })
		if err != nil {
			b.Fatal(err)
		}
		defer sub.Unsubscribe()
		send = func(key string) error {
			m := nats.NewMsg("bench.floor.command")
			m.Header.Set("key", key)
			m.Data = command
			return nc.PublishMsg(m)
		}
	case "two-writes":
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BENCH_FLOOR_COMMANDS", Subjects: []string{"bench.floor.command"},
			Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage}); err != nil {
			b.Fatal(err)
		}
		cons, err := js.CreateOrUpdateConsumer(ctx, "BENCH_FLOOR_COMMANDS", jetstream.ConsumerConfig{Durable: "floor", AckPolicy: jetstream.AckExplicitPolicy})
		if err != nil {
			b.Fatal(err)
		}
		cc, err := cons.Consume(func(m jetstream.Msg) {
			admit(m.Headers().Get("key"))
			_ = m.DoubleAck(ctx)
		})
		if err != nil {
			b.Fatal(err)
		}
		defer cc.Stop()
		send = func(key string) error {
			m := nats.NewMsg("bench.floor.command")
			m.Header.Set("key", key)
			m.Data = command
			_, err := js.PublishMsg(ctx, m)
			return err
		}
	}

	// The coordinator: takes the offered result, stores the state, sends
	// the command, answers the offer.
	step, err := nc.Subscribe("bench.floor.offer", func(m *nats.Msg) {
		key := m.Header.Get("key")
		i := 0
		fmt.Sscanf(key, "job%d", &i)
		rev, err := kv.Update(ctx, key, state, revs[i])
		if err == nil {
			revs[i] = rev
			err = send(key)
		}
		if err != nil {
			admitted <- err
		}
		_ = m.Respond(nil)
	})
	if err != nil {
		b.Fatal(err)
	}
	defer step.Unsubscribe()
	for i := range keys {
		if revs[i], err = kv.Create(ctx, fmt.Sprintf("job%d", i), state); err != nil {
			b.Fatal(err)
		}
	}

	hop := func(i int) time.Duration {
		m := nats.NewMsg("bench.floor.offer")
		m.Header.Set("key", fmt.Sprintf("job%d", i%keys))
		m.Data = result
		start := time.Now()
		if _, err := nc.RequestMsg(m, time.Minute); err != nil {
			b.Fatal(err)
		}
		select {
		case err := <-admitted:
			if err != nil {
				b.Fatal(err)
			}
		case <-ctx.Done():
			b.Fatal("floor: the command never arrived")
		}
		return time.Since(start)
	}
	for i := range 50 { // warm-up
		hop(i)
	}
	probe.take(b, 50, 0)

	var hops, rtts []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		hops = append(hops, hop(i))
		b.StopTimer()
		rtts = append(rtts, probe.take(b, 3, 0)[2:]...) // the first two share the disk with the hop's trailing writes, as BenchmarkStageHop's do
		b.StartTimer()
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	hp99, rp99 := percentile(hops, 99), percentile(rtts, 99)
	b.ReportMetric(us(percentile(hops, 50)), "floor-p50-us")
	b.ReportMetric(us(hp99), "floor-p99-us")
	b.ReportMetric(us(percentile(rtts, 50)), "rtt-p50-us")
	b.ReportMetric(us(rp99), "rtt-p99-us")
	b.ReportMetric(float64(hp99)/float64(rp99), "p99/rtt")
}
