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
// this machine while a step stays durable, and what each thing a step
// does on top of that costs. The least a hop does is carry a result to the
// coordinator (a core request), store the job's state (one flushed
// compare-and-set) and carry the next command to a worker that reads the
// state before it runs it: no step function, no JSON. Each sample is
// taken in turn with a round trip of BenchmarkStageHop's on the same
// server. The rungs, each adding to the one before:
//
//   - one-write: the command travels on core NATS (the state is the only
//     durable record; a design where the coordinator offers commands as
//     workers offer results);
//   - two-writes: the command is published on a file-backed work queue, as
//     the stack's are;
//   - index: then the job's index line is put (a flushed KV write), as a
//     step does when the job's summary changes;
//   - events: then two progress events are published on a stream flushed
//     asynchronously, their acknowledgements awaited together;
//   - ack: the worker that offered the result acknowledges its command
//     once the offer is answered, as the stack's workers do.
//
// If the one-write floor's p99 is over twice the round trip's, no layout
// of the step's writes meets issue 24's hop target here.
var floorState = flag.Int("floor.state", 4<<10, "BenchmarkHopFloor: the stored state's size in bytes (a first-pass job's is 13–28 KiB of JSON, 3–5 KiB compressed as stored)")

func BenchmarkHopFloor(b *testing.B) {
	for _, mode := range []string{"one-write", "two-writes", "index", "events", "ack"} {
		b.Run(mode, func(b *testing.B) { benchHopFloor(b, mode) })
	}
}

// floorRung reports whether a benchmark of mode does what rung adds.
func floorRung(mode, rung string) bool {
	order := map[string]int{"one-write": 0, "two-writes": 1, "index": 2, "events": 3, "ack": 4}
	return order[mode] >= order[rung]
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
	index, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "BENCH_FLOOR_INDEX", Storage: jetstream.FileStorage})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BENCH_FLOOR_EVENTS", Subjects: []string{"bench.floor.events.>"},
		Storage: jetstream.FileStorage, PersistMode: jetstream.AsyncPersistMode}); err != nil {
		b.Fatal(err)
	}
	state, command, result := []byte(strings.Repeat("s", *floorState)), []byte(strings.Repeat("c", 1<<10)), []byte(strings.Repeat("r", 1<<10))
	line, event := []byte(strings.Repeat("i", 300)), []byte(strings.Repeat("e", 200))
	const keys = 200 // jobs in turn, so each update deletes a revision as the state bucket's do
	revs := make([]uint64, keys)
	admitted := make(chan error, 1)
	toAck := make(chan jetstream.Msg, 1) // the command the next offer answers

	// The worker: reads the job's state before it runs the command.
	admit := func(key string) { _, err := kv.Get(ctx, key); admitted <- err }
	commandMsg := func(key string) *nats.Msg {
		m := nats.NewMsg("bench.floor.command")
		m.Header.Set("key", key)
		m.Data = command
		return m
	}
	var send func(key string) error
	if mode == "one-write" {
		sub, err := nc.Subscribe("bench.floor.command", func(m *nats.Msg) { admit(m.Header.Get("key")) })
		if err != nil {
			b.Fatal(err)
		}
		defer sub.Unsubscribe()
		send = func(key string) error { return nc.PublishMsg(commandMsg(key)) }
	} else {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BENCH_FLOOR_COMMANDS", Subjects: []string{"bench.floor.command"},
			Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage}); err != nil {
			b.Fatal(err)
		}
		cons, err := js.CreateOrUpdateConsumer(ctx, "BENCH_FLOOR_COMMANDS", jetstream.ConsumerConfig{Durable: "floor", AckPolicy: jetstream.AckExplicitPolicy})
		if err != nil {
			b.Fatal(err)
		}
		cc, err := cons.Consume(func(m jetstream.Msg) {
			if floorRung(mode, "ack") {
				toAck <- m // acknowledged once this command's result is taken
				admit(m.Headers().Get("key"))
				return
			}
			admit(m.Headers().Get("key"))
			_ = m.DoubleAck(ctx) // after the hop, which ends with the admission read
		})
		if err != nil {
			b.Fatal(err)
		}
		defer cc.Stop()
		send = func(key string) error {
			_, err := js.PublishMsg(ctx, commandMsg(key))
			return err
		}
	}
	announce := func(key string) error {
		if floorRung(mode, "index") {
			if _, err := index.Put(ctx, key, line); err != nil {
				return err
			}
		}
		if floorRung(mode, "events") {
			var acks []jetstream.PubAckFuture
			for range 2 {
				f, err := js.PublishAsync("bench.floor.events."+key, event)
				if err != nil {
					return err
				}
				acks = append(acks, f)
			}
			for _, f := range acks {
				select {
				case <-f.Ok():
				case err := <-f.Err():
					return err
				}
			}
		}
		return nil
	}

	// The coordinator: takes the offered result, stores the state, sends
	// the command and the rest, answers the offer.
	step, err := nc.Subscribe("bench.floor.offer", func(m *nats.Msg) {
		key := m.Header.Get("key")
		i := 0
		_, _ = fmt.Sscanf(key, "job%d", &i)
		rev, err := kv.Update(ctx, key, state, revs[i])
		if err == nil {
			revs[i] = rev
			err = send(key)
		}
		if err == nil {
			err = announce(key)
		}
		if err != nil {
			b.Error(err)
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

	var held jetstream.Msg // the command whose result the next hop offers
	hop := func(i int) time.Duration {
		m := nats.NewMsg("bench.floor.offer")
		m.Header.Set("key", fmt.Sprintf("job%d", i%keys))
		m.Data = result
		start := time.Now()
		if _, err := nc.RequestMsg(m, time.Minute); err != nil {
			b.Fatal(err)
		}
		if held != nil {
			go func(m jetstream.Msg) { _ = m.DoubleAck(ctx) }(held) // as the worker's own goroutine does, beside the next command's delivery
		}
		select {
		case err := <-admitted:
			if err != nil {
				b.Fatal(err)
			}
		case <-ctx.Done():
			b.Fatal("floor: the command never arrived")
		}
		d := time.Since(start)
		if floorRung(mode, "ack") {
			held = <-toAck
		}
		return d
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
	if held != nil {
		_ = held.DoubleAck(ctx)
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	hp99, rp99 := percentile(hops, 99), percentile(rtts, 99)
	b.ReportMetric(us(percentile(hops, 50)), "floor-p50-us")
	b.ReportMetric(us(hp99), "floor-p99-us")
	b.ReportMetric(us(percentile(rtts, 50)), "rtt-p50-us")
	b.ReportMetric(us(rp99), "rtt-p99-us")
	b.ReportMetric(float64(hp99)/float64(rp99), "p99/rtt")
}
