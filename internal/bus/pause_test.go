package bus_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestPausedPoolFetchesNothingAndFinishesWhatItHolds: a worker whose pool
// is paused while it runs a command finishes that command, stops pulling
// (no pull request waits on the consumer), leaves new commands in the
// queue, and takes them once the pool is resumed.
func TestPausedPoolFetchesNothingAndFinishesWhatItHolds(t *testing.T) {
	t.Parallel()
	pub, res := llmWorkers(t, bus.ProvisionConfig{})
	pause := bus.NewPause()
	ctx, cancel := context.WithCancel(ctxT(t))
	watched := make(chan struct{})
	go func() { defer close(watched); bus.WatchPause(ctx, res.Pools, messages.PoolLLM, pause, nil) }()
	t.Cleanup(func() { cancel(); <-watched })

	started := make(chan struct{}, 1)
	release := make(chan struct{})
	var handled atomic.Int32
	metrics := newRecMetrics()
	w := bus.NewWorker(res.StageConsumers[messages.PoolLLM], bus.HandlerFunc(func(_ context.Context, m *bus.Message) error {
		if m.JobID() == "first" {
			started <- struct{}{}
			<-release
		}
		handled.Add(1)
		return nil
	}), bus.WorkerConfig{Concurrency: 2, Pause: pause, Metrics: metrics, PollTimeout: testTimeout})
	stopped := make(chan error, 1)
	wctx, wcancel := context.WithCancel(context.Background())
	go func() { stopped <- w.Run(wctx) }()
	t.Cleanup(func() { wcancel(); <-stopped })

	command(t, pub, "first", 1)
	recv(t, started, "the first command to start")
	switchPause(t, res, true)
	waitFor(t, "the worker to see the pause", func() bool { return w.Paused() })
	waitFor(t, "no pull waiting on the consumer", func() bool { return consumerInfo(t, res).NumWaiting == 0 })
	for i := 2; i <= 4; i++ {
		command(t, pub, "later", i)
	}
	if w.InFlight() != 1 || w.Slots() != 2 {
		t.Errorf("paused with one command running: in flight %d of %d slots, want 1 of 2", w.InFlight(), w.Slots())
	}
	close(release)
	if o := recv(t, metrics.settled, "the running command to finish"); o != bus.OutcomeAck {
		t.Errorf("the command running at the pause: %s, want ack", o)
	}
	// The consumer counts new messages in its own loop, so its pending
	// count may lag the publishes a moment (it read 0 once, under load).
	waitFor(t, "the three later commands pending on the consumer", func() bool { return consumerInfo(t, res).NumPending >= 3 })
	if info := consumerInfo(t, res); info.NumPending != 3 || info.NumWaiting != 0 || handled.Load() != 1 {
		t.Fatalf("paused: %d pending, %d pulls waiting, %d handled; want 3, 0, 1", info.NumPending, info.NumWaiting, handled.Load())
	}
	switchPause(t, res, false)
	waitFor(t, "the queued commands after the resume", func() bool { return handled.Load() == 4 })
}

// TestPauseSwitchReadBack: the switch is stored with who and why, read
// back, refused for a pool that does not exist, and absent until set.
func TestPauseSwitchReadBack(t *testing.T) {
	t.Parallel()
	_, res := provisioned(t, bus.ProvisionConfig{})
	if p, err := bus.PoolPauseOf(ctxT(t), res.Pools, messages.PoolSandbox); p != nil || err != nil {
		t.Errorf("a pool never switched: %+v %v, want nothing", p, err)
	}
	at := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	if err := bus.SetPoolPause(ctxT(t), res.Pools, messages.PoolPause{Pool: "sandbox", Paused: true, By: "http:ops", Reason: "provider outage", At: at}); err != nil {
		t.Fatal(err)
	}
	p, err := bus.PoolPauseOf(ctxT(t), res.Pools, messages.PoolSandbox)
	if err != nil || p == nil || !p.Paused || p.By != "http:ops" || p.Reason != "provider outage" || !p.At.Equal(at) || p.V != messages.WireVersion {
		t.Errorf("read back: %+v %v", p, err)
	}
	if err := bus.SetPoolPause(ctxT(t), res.Pools, messages.PoolPause{Pool: "gpu", Paused: true}); err == nil {
		t.Error("a pool that does not exist was switched")
	}
}

// TestRosterAdvertisesAndLeaves: a worker's beat is in the roster at once,
// under the pool of its key whatever its body says, and gone when the
// worker stops.
func TestRosterAdvertisesAndLeaves(t *testing.T) {
	t.Parallel()
	_, res := provisioned(t, bus.ProvisionConfig{WorkerBeatTTL: 3 * time.Second})
	ctx, cancel := context.WithCancel(ctxT(t))
	done := make(chan struct{})
	go func() {
		defer close(done)
		bus.Advertise(ctx, res.Workers, messages.PoolSandbox, "abc123", func() messages.WorkerBeat {
			return messages.WorkerBeat{Pool: "llm", Worker: "box-1", Instance: "abc123", Slots: 3, InFlight: 1}
		}, nil)
	}()
	var beats []messages.WorkerBeat
	waitFor(t, "the beat in the roster", func() bool {
		var err error
		beats, err = bus.Roster(ctxT(t), res.Workers)
		return err == nil && len(beats) == 1
	})
	if b := beats[0]; b.Pool != "sandbox" || b.Worker != "box-1" || b.Slots != 3 || b.InFlight != 1 {
		t.Errorf("roster: %+v, want the sandbox pool's box-1 with 3 slots, 1 in flight", b)
	}
	cancel()
	<-done
	if beats, err := bus.Roster(ctxT(t), res.Workers); err != nil || len(beats) != 0 {
		t.Errorf("roster after the worker stopped: %+v %v, want empty", beats, err)
	}
}

func switchPause(t *testing.T, res *bus.Resources, paused bool) {
	t.Helper()
	if err := bus.SetPoolPause(ctxT(t), res.Pools, messages.PoolPause{Pool: string(messages.PoolLLM), Paused: paused, By: "test"}); err != nil {
		t.Fatal(err)
	}
}

func consumerInfo(t *testing.T, res *bus.Resources) *jetstream.ConsumerInfo {
	t.Helper()
	info, err := res.StageConsumers[messages.PoolLLM].Info(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return info
}
