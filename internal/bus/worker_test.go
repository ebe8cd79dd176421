package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// llmWorkers returns a publisher and the llm-workers consumer on a fresh server.
func llmWorkers(t *testing.T, cfg bus.ProvisionConfig) (*bus.Publisher, *bus.Resources) {
	t.Helper()
	js, res := provisioned(t, cfg)
	return bus.NewPublisher(js, bus.PublisherConfig{}), res
}

func TestWorkerRoundTrip(t *testing.T) {
	t.Parallel()
	pub, res := llmWorkers(t, bus.ProvisionConfig{})
	type seen struct {
		cmd          messages.StageCommand
		jobID, stage string
		numDelivered uint64
		last         bool
	}
	got := make(chan seen, 1)
	metrics := newRecMetrics()
	startWorker(t, res.StageConsumers[messages.PoolLLM], bus.HandlerFunc(func(_ context.Context, m *bus.Message) error {
		var s seen
		if err := m.DecodeJSON(&s.cmd); err != nil {
			return bus.Permanent(err)
		}
		s.jobID, s.stage, s.numDelivered, s.last = m.JobID(), string(m.Stage()), m.NumDelivered(), m.LastDelivery()
		got <- s
		return nil
	}), bus.WorkerConfig{Metrics: metrics})

	sent := command(t, pub, "roundtrip", 1)
	s := recv(t, got, "the command")
	want := seen{cmd: sent, jobID: "roundtrip", stage: "plan", numDelivered: 1}
	if diff := cmp.Diff(want, s, cmp.AllowUnexported(seen{})); diff != "" {
		t.Errorf("handler saw (-want +got):\n%s", diff)
	}
	if o := recv(t, metrics.settled, "settle"); o != bus.OutcomeAck {
		t.Errorf("outcome = %s, want ack", o)
	}
	// Acked: gone from the work queue.
	if n := streamMsgs(t, res.Stages[messages.PoolLLM]); n != 0 {
		t.Errorf("stream holds %d messages after ack, want 0", n)
	}
}

func TestWorkerPermanentTerminates(t *testing.T) {
	t.Parallel()
	pub, res := llmWorkers(t, bus.ProvisionConfig{MaxDeliver: 5})
	var calls atomic.Int32
	metrics := newRecMetrics()
	startWorker(t, res.StageConsumers[messages.PoolLLM], bus.HandlerFunc(func(context.Context, *bus.Message) error {
		calls.Add(1)
		return fmt.Errorf("bad input: %w", bus.Permanent(errors.New("no prompt")))
	}), bus.WorkerConfig{Metrics: metrics, RetryDelay: func(uint64) time.Duration { return 0 }})

	command(t, pub, "perm", 1)
	if o := recv(t, metrics.settled, "settle"); o != bus.OutcomeTerm {
		t.Fatalf("outcome = %s, want term", o)
	}
	// Terminated messages leave the work queue, so they cannot come back.
	waitFor(t, "the terminated message to leave the stream", func() bool {
		return streamMsgs(t, res.Stages[messages.PoolLLM]) == 0
	})
	info, err := res.StageConsumers[messages.PoolLLM].Info(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if info.NumAckPending != 0 || info.NumPending != 0 || calls.Load() != 1 {
		t.Errorf("after Term: ack pending %d, pending %d, handler calls %d; want 0, 0, 1",
			info.NumAckPending, info.NumPending, calls.Load())
	}
}

func TestWorkerRetryAfterRedeliversAfterDelay(t *testing.T) {
	t.Parallel()
	pub, res := llmWorkers(t, bus.ProvisionConfig{})
	const delay = 300 * time.Millisecond
	got := make(chan delivery, 2)
	startWorker(t, res.StageConsumers[messages.PoolLLM], bus.HandlerFunc(func(_ context.Context, m *bus.Message) error {
		got <- delivery{numDelivered: m.NumDelivered(), at: time.Now()}
		if m.NumDelivered() == 1 {
			return bus.RetryAfter(errors.New("rate limited"), delay)
		}
		return nil
	}), bus.WorkerConfig{RetryDelay: func(uint64) time.Duration { return time.Hour }})

	command(t, pub, "retry-after", 1)
	first := recv(t, got, "first delivery")
	second := recv(t, got, "redelivery")
	if second.numDelivered != 2 {
		t.Errorf("redelivery NumDelivered = %d, want 2", second.numDelivered)
	}
	if gap := second.at.Sub(first.at); gap < delay {
		t.Errorf("redelivered after %s, want at least %s", gap, delay)
	}
}

func TestWorkerErrorRedeliversWithBackoff(t *testing.T) {
	t.Parallel()
	pub, res := llmWorkers(t, bus.ProvisionConfig{MaxDeliver: 5})
	var mu sync.Mutex
	var asked []uint64
	backoff := func(n uint64) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, n)
		return time.Duration(n) * 150 * time.Millisecond
	}
	got := make(chan delivery, 3)
	metrics := newRecMetrics()
	startWorker(t, res.StageConsumers[messages.PoolLLM], bus.HandlerFunc(func(_ context.Context, m *bus.Message) error {
		got <- delivery{numDelivered: m.NumDelivered(), at: time.Now()}
		if m.NumDelivered() < 3 {
			return errors.New("model endpoint down")
		}
		return nil
	}), bus.WorkerConfig{RetryDelay: backoff, Metrics: metrics})

	command(t, pub, "backoff", 1)
	var ds []delivery
	for i := range 3 {
		ds = append(ds, recv(t, got, fmt.Sprintf("delivery %d", i+1)))
		if ds[i].numDelivered != uint64(i+1) {
			t.Errorf("delivery %d: NumDelivered = %d", i+1, ds[i].numDelivered)
		}
	}
	for i, want := range []time.Duration{150 * time.Millisecond, 300 * time.Millisecond} {
		if gap := ds[i+1].at.Sub(ds[i].at); gap < want {
			t.Errorf("delivery %d came %s after the previous one, want at least %s", i+2, gap, want)
		}
	}
	for _, want := range []bus.Outcome{bus.OutcomeRetry, bus.OutcomeRetry, bus.OutcomeAck} {
		if o := recv(t, metrics.settled, "settle"); o != want {
			t.Errorf("outcome = %s, want %s", o, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]uint64{1, 2}, asked); diff != "" {
		t.Errorf("RetryDelay called with (-want +got):\n%s", diff)
	}
}

// TestWorkerGivesUpToTheDeadLettersOnLastDelivery: a message whose handler
// still fails on its last delivery is handed back, not terminated, so the
// server gives it up with the max-deliveries advisory a coordinator turns
// into a dead letter; the message stays in its stream for that
// coordinator to copy. Terminated, it was gone without a word.
func TestWorkerGivesUpToTheDeadLettersOnLastDelivery(t *testing.T) {
	t.Parallel()
	srv, js := newBus(t)
	res, err := bus.Provision(ctxT(t), js, bus.ProvisionConfig{MemoryStorage: true, MaxDeliver: 2})
	if err != nil {
		t.Fatal(err)
	}
	pub := bus.NewPublisher(js, bus.PublisherConfig{})
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	advisories := make(chan *nats.Msg, 4)
	if _, err := nc.ChanSubscribe(bus.AdvisoryMaxDeliveries, advisories); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	got := make(chan delivery, 3)
	metrics := newRecMetrics()
	startWorker(t, res.StageConsumers[messages.PoolLLM], bus.HandlerFunc(func(_ context.Context, m *bus.Message) error {
		got <- delivery{numDelivered: m.NumDelivered(), last: m.LastDelivery()}
		return errors.New("still failing")
	}), bus.WorkerConfig{Metrics: metrics, RetryDelay: func(uint64) time.Duration { return 0 }})

	command(t, pub, "exhaust", 1)
	if d := recv(t, got, "first delivery"); d.last {
		t.Error("first of two deliveries reported LastDelivery")
	}
	if d := recv(t, got, "second delivery"); !d.last || d.numDelivered != 2 {
		t.Errorf("second delivery: NumDelivered %d LastDelivery %v; want 2 true", d.numDelivered, d.last)
	}
	for _, want := range []bus.Outcome{bus.OutcomeRetry, bus.OutcomeExhausted} {
		if o := recv(t, metrics.settled, "settle"); o != want {
			t.Errorf("outcome = %s, want %s", o, want)
		}
	}
	select {
	case m := <-advisories:
		var adv struct {
			Stream     string `json:"stream"`
			StreamSeq  uint64 `json:"stream_seq"`
			Deliveries uint64 `json:"deliveries"`
		}
		if err := json.Unmarshal(m.Data, &adv); err != nil || adv.Stream != bus.StageStream(messages.PoolLLM) || adv.StreamSeq != 1 || adv.Deliveries != 2 {
			t.Errorf("advisory %s (%v): want stream %s, seq 1, 2 deliveries", m.Data, err, bus.StageStream(messages.PoolLLM))
		}
	case <-time.After(testTimeout):
		t.Fatal("no max-deliveries advisory: nothing would dead-letter the message")
	}
	if n := streamMsgs(t, res.Stages[messages.PoolLLM]); n != 1 {
		t.Errorf("%d messages in the stream, want the given-up one kept for its dead letter", n)
	}
	select {
	case d := <-got:
		t.Errorf("delivered again past MaxDeliver: %+v", d)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestWorkerRecoversPanic(t *testing.T) {
	t.Parallel()
	pub, res := llmWorkers(t, bus.ProvisionConfig{})
	got := make(chan uint64, 2)
	metrics := newRecMetrics()
	logs := newLogCapture("")
	h := bus.HandlerFunc(func(_ context.Context, m *bus.Message) error {
		got <- m.NumDelivered()
		if m.NumDelivered() == 1 {
			var cmd *messages.StageCommand
			_ = cmd.JobID // nil dereference
		}
		return nil
	})
	startWorker(t, res.StageConsumers[messages.PoolLLM], h, bus.WorkerConfig{
		Metrics: metrics, RetryDelay: func(uint64) time.Duration { return 0 }, Logger: slog.New(logs),
	})

	command(t, pub, "panic", 1)
	recv(t, got, "the delivery that panics")
	if o := recv(t, metrics.settled, "settle"); o != bus.OutcomeRetry {
		t.Errorf("outcome of the panic = %s, want retry", o)
	}
	if n := recv(t, got, "the redelivery"); n != 2 {
		t.Errorf("redelivery NumDelivered = %d, want 2", n)
	}
	if o := recv(t, metrics.settled, "settle"); o != bus.OutcomeAck {
		t.Errorf("outcome of the redelivery = %s, want ack", o)
	}
	attrs, ok := logs.find("bus handler panic")
	if !ok || attrs["job_id"] != "panic" || attrs["stage"] != "plan" || attrs["stack"] == "" {
		t.Errorf("panic log = %v, %v; want job_id, stage and stack", attrs, ok)
	}
}

func TestWorkerPanicWithoutRecoverMiddleware(t *testing.T) {
	t.Parallel()
	pub, res := llmWorkers(t, bus.ProvisionConfig{})
	metrics := newRecMetrics()
	startWorker(t, res.StageConsumers[messages.PoolLLM], bus.HandlerFunc(func(context.Context, *bus.Message) error {
		panic("handler bug")
	}), bus.WorkerConfig{Metrics: metrics, RetryDelay: func(uint64) time.Duration { return time.Hour }})
	command(t, pub, "bare-panic", 1)
	if o := recv(t, metrics.settled, "settle"); o != bus.OutcomeRetry {
		t.Errorf("outcome = %s, want retry", o)
	}
}

func TestWorkerConcurrencyNeverExceedsSlots(t *testing.T) {
	t.Parallel()
	pub, res := llmWorkers(t, bus.ProvisionConfig{})
	const slots, total = 3, 20
	for seq := 1; seq <= total; seq++ {
		command(t, pub, "slots", seq)
	}
	var running, peak atomic.Int32
	started := make(chan struct{}, total)
	release := make(chan struct{})
	done := make(chan int, total)
	cons := res.StageConsumers[messages.PoolLLM]
	startWorker(t, cons, bus.HandlerFunc(func(_ context.Context, m *bus.Message) error {
		n := running.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		started <- struct{}{}
		<-release
		running.Add(-1)
		done <- seqOf(t, m)
		return nil
	}), bus.WorkerConfig{Concurrency: slots})

	for range slots {
		recv(t, started, "a handler to start")
	}
	// The server's view: the worker holds exactly as many messages as it has
	// slots, and the rest wait on the server, not in the worker's buffers
	// (a message the worker took would be ack pending). Under load a pull
	// may expire with a message on its way, which then waits for
	// redelivery rather than in NumPending: so pending is at most the rest.
	info, err := cons.Info(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if info.NumAckPending != slots || info.NumPending > total-slots {
		t.Errorf("with all slots busy: ack pending %d, pending %d; want %d, at most %d",
			info.NumAckPending, info.NumPending, slots, total-slots)
	}
	close(release)
	seen := map[int]bool{}
	for range total {
		seen[recv(t, done, "a handler to finish")] = true
	}
	if len(seen) != total {
		t.Errorf("handled %d distinct messages, want %d", len(seen), total)
	}
	if p := peak.Load(); p > slots {
		t.Errorf("%d handlers ran at once, want at most %d", p, slots)
	}
}

func TestWorkersShareOneConsumer(t *testing.T) {
	t.Parallel()
	pub, res := llmWorkers(t, bus.ProvisionConfig{})
	const perWorker, total = 2, 40
	cons := res.StageConsumers[messages.PoolLLM]

	// The first 2*perWorker handlers wait for each other: they can only all
	// run at once if both workers have taken work.
	var barrier sync.WaitGroup
	barrier.Add(2 * perWorker)
	var gate atomic.Int32
	got := make(chan delivery, total)
	handler := func(name string) bus.Handler {
		return bus.HandlerFunc(func(_ context.Context, m *bus.Message) error {
			if gate.Add(1) <= 2*perWorker {
				barrier.Done()
				barrier.Wait()
			}
			got <- delivery{seq: seqOf(t, m), numDelivered: m.NumDelivered(), worker: name}
			return nil
		})
	}
	startWorker(t, cons, handler("a"), bus.WorkerConfig{Name: "a", Concurrency: perWorker})
	startWorker(t, cons, handler("b"), bus.WorkerConfig{Name: "b", Concurrency: perWorker})
	for seq := 1; seq <= total; seq++ {
		command(t, pub, "share", seq)
	}

	count := map[int]int{}
	byWorker := map[string]int{}
	for range total {
		d := recv(t, got, "a message")
		count[d.seq]++
		byWorker[d.worker]++
		if d.numDelivered != 1 {
			t.Errorf("message %d delivered %d times", d.seq, d.numDelivered)
		}
	}
	for seq := 1; seq <= total; seq++ {
		if count[seq] != 1 {
			t.Errorf("message %d handled %d times, want 1", seq, count[seq])
		}
	}
	if byWorker["a"] == 0 || byWorker["b"] == 0 {
		t.Errorf("work split %v: both workers should have handled messages", byWorker)
	}
}

func TestWorkerShutdownWaitsForRunningHandler(t *testing.T) {
	t.Parallel()
	pub, res := llmWorkers(t, bus.ProvisionConfig{})
	started := make(chan struct{})
	release := make(chan struct{})
	ctxErr := make(chan error, 1)
	metrics := newRecMetrics()
	stop := startWorker(t, res.StageConsumers[messages.PoolLLM], bus.HandlerFunc(func(ctx context.Context, _ *bus.Message) error {
		close(started)
		<-release
		ctxErr <- ctx.Err()
		return nil
	}), bus.WorkerConfig{ShutdownTimeout: testTimeout, Metrics: metrics})

	command(t, pub, "graceful", 1)
	recv(t, started, "the handler to start")
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	select {
	case <-stopped:
		t.Fatal("Run returned while a handler was still running")
	default:
	}
	close(release)
	if err := recv(t, stopped, "Run to return"); err != nil {
		t.Errorf("Run: %v", err)
	}
	if err := recv(t, ctxErr, "handler ctx"); err != nil {
		t.Errorf("a handler that finished within ShutdownTimeout saw ctx.Err() = %v", err)
	}
	if o := recv(t, metrics.settled, "settle"); o != bus.OutcomeAck {
		t.Errorf("outcome = %s, want ack", o)
	}
}

func TestWorkerShutdownCancelsHandlerAndRedelivers(t *testing.T) {
	t.Parallel()
	pub, res := llmWorkers(t, bus.ProvisionConfig{})
	cons := res.StageConsumers[messages.PoolLLM]
	started := make(chan struct{})
	cancelled := make(chan error, 1)
	metrics := newRecMetrics()
	stop := startWorker(t, cons, bus.HandlerFunc(func(ctx context.Context, _ *bus.Message) error {
		close(started)
		<-ctx.Done()
		cancelled <- ctx.Err()
		return fmt.Errorf("build image: %w", ctx.Err())
	}), bus.WorkerConfig{ShutdownTimeout: 200 * time.Millisecond, Metrics: metrics})

	command(t, pub, "cancel", 1)
	recv(t, started, "the handler to start")
	if err := stop(); err != nil {
		t.Errorf("Run: %v", err)
	}
	if err := recv(t, cancelled, "the handler's ctx to be cancelled"); !errors.Is(err, context.Canceled) {
		t.Errorf("handler ctx.Err() = %v, want Canceled", err)
	}
	if o := recv(t, metrics.settled, "settle"); o != bus.OutcomeShutdown {
		t.Errorf("outcome = %s, want shutdown", o)
	}

	// Handed back at once: a new worker gets it without waiting out AckWait (60s).
	got := make(chan uint64, 1)
	startWorker(t, cons, bus.HandlerFunc(func(_ context.Context, m *bus.Message) error {
		got <- m.NumDelivered()
		return nil
	}), bus.WorkerConfig{})
	if n := recv(t, got, "the redelivery to a new worker"); n != 2 {
		t.Errorf("NumDelivered = %d, want 2", n)
	}
}

func TestWorkerShutdownAbandonsHandlerIgnoringCtx(t *testing.T) {
	t.Parallel()
	pub, res := llmWorkers(t, bus.ProvisionConfig{})
	cons := res.StageConsumers[messages.PoolLLM]
	started := make(chan struct{})
	release := make(chan struct{})
	returned := make(chan struct{})
	metrics := newRecMetrics()
	stop := startWorker(t, cons, bus.HandlerFunc(func(context.Context, *bus.Message) error {
		defer close(returned)
		close(started)
		<-release // ignores ctx
		return nil
	}), bus.WorkerConfig{ShutdownTimeout: 50 * time.Millisecond, Metrics: metrics})

	command(t, pub, "stuck", 1)
	recv(t, started, "the handler to start")
	if err := stop(); err != nil {
		t.Errorf("Run: %v", err)
	}
	if o := recv(t, metrics.settled, "settle"); o != bus.OutcomeShutdown {
		t.Errorf("outcome = %s, want shutdown", o)
	}
	got := make(chan uint64, 1)
	startWorker(t, cons, bus.HandlerFunc(func(_ context.Context, m *bus.Message) error {
		got <- m.NumDelivered()
		return nil
	}), bus.WorkerConfig{})
	if n := recv(t, got, "the redelivery to a new worker"); n != 2 {
		t.Errorf("NumDelivered = %d, want 2", n)
	}
	// The stuck handler finally returns; its result is ignored (already handed back).
	close(release)
	recv(t, returned, "the stuck handler to return")
	select {
	case o := <-metrics.settled:
		t.Errorf("a handed-back message was settled again: %s", o)
	case <-time.After(50 * time.Millisecond):
	}
}

func TestWorkerHeartbeatPreventsRedelivery(t *testing.T) {
	t.Parallel()
	const ackWait = time.Second
	pub, res := llmWorkers(t, bus.ProvisionConfig{AckWait: ackWait})
	cons := res.StageConsumers[messages.PoolLLM]
	done := make(chan uint64, 1)
	metrics := newRecMetrics()
	startWorker(t, cons, bus.HandlerFunc(func(_ context.Context, m *bus.Message) error {
		// Longer than AckWait: only the heartbeats keep the message ours.
		time.Sleep(5 * ackWait / 2)
		done <- m.NumDelivered()
		return nil
	}), bus.WorkerConfig{Concurrency: 2, Metrics: metrics})

	command(t, pub, "heartbeat", 1)
	if n := recv(t, done, "the long handler"); n != 1 {
		t.Errorf("NumDelivered = %d, want 1", n)
	}
	if o := recv(t, metrics.settled, "settle"); o != bus.OutcomeAck {
		t.Errorf("outcome = %s, want ack", o)
	}
	info, err := cons.Info(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	// With a free second slot, a redelivery would have been handled too.
	metrics.mu.Lock()
	handled := metrics.handled
	metrics.mu.Unlock()
	if info.NumRedelivered != 0 || handled != 1 {
		t.Errorf("redelivered %d, handled %d; want 0, 1", info.NumRedelivered, handled)
	}
}

func TestWorkerWithoutHeartbeatLosesMessageAfterAckWait(t *testing.T) {
	t.Parallel()
	// The control for the test above: with heartbeats off, AckWait expires
	// and JetStream gives the message to another worker.
	pub, res := llmWorkers(t, bus.ProvisionConfig{AckWait: time.Second})
	cons := res.StageConsumers[messages.PoolLLM]
	got := make(chan uint64, 2)
	release := make(chan struct{})
	startWorker(t, cons, bus.HandlerFunc(func(_ context.Context, m *bus.Message) error {
		got <- m.NumDelivered()
		if m.NumDelivered() == 1 {
			<-release
		}
		return nil
	}), bus.WorkerConfig{Concurrency: 2, HeartbeatInterval: -1})

	command(t, pub, "no-heartbeat", 1)
	if n := recv(t, got, "first delivery"); n != 1 {
		t.Errorf("NumDelivered = %d, want 1", n)
	}
	if n := recv(t, got, "redelivery after AckWait"); n != 2 {
		t.Errorf("NumDelivered = %d, want 2", n)
	}
	close(release)
}

func TestWorkerConfigErrors(t *testing.T) {
	t.Parallel()
	_, res := provisioned(t, bus.ProvisionConfig{})
	cons := res.StageConsumers[messages.PoolLLM]
	h := bus.HandlerFunc(func(context.Context, *bus.Message) error { return nil })
	for name, w := range map[string]*bus.Worker{
		"nil consumer":         bus.NewWorker(nil, h, bus.WorkerConfig{}),
		"nil handler":          bus.NewWorker(cons, nil, bus.WorkerConfig{}),
		"negative concurrency": bus.NewWorker(cons, h, bus.WorkerConfig{Concurrency: -1}),
	} {
		if err := w.Run(ctxT(t)); err == nil {
			t.Errorf("%s: Run succeeded", name)
		}
	}

	// Run twice at once is refused.
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	logs := newLogCapture("worker started")
	w := bus.NewWorker(cons, h, bus.WorkerConfig{Logger: slog.New(logs)})
	go func() { errc <- w.Run(ctx) }()
	recv(t, logs.matched, "the worker to start")
	if err := w.Run(ctxT(t)); err == nil {
		t.Error("a second concurrent Run succeeded")
	}
	cancel()
	if err := recv(t, errc, "Run to return"); err != nil {
		t.Errorf("Run: %v", err)
	}
}

func TestNewMessageForHandlerTests(t *testing.T) {
	t.Parallel()
	m := bus.NewMessage(bus.StageSubject(messages.DefaultStages().Pool(messages.StageFix), messages.StageFix), []byte(`{"seq":3}`), nil, 2)
	m.Headers().Set(bus.HeaderJobID, "j")
	var cmd messages.StageCommand
	if err := m.DecodeJSON(&cmd); err != nil || cmd.Seq != 3 {
		t.Errorf("DecodeJSON: %v, %+v", err, cmd)
	}
	if m.JobID() != "j" || m.NumDelivered() != 2 || m.LastDelivery() || m.InProgress() != nil {
		t.Errorf("NewMessage accessors: job %q delivered %d last %v", m.JobID(), m.NumDelivered(), m.LastDelivery())
	}
}

func TestWorkerStopsWhenConnectionCloses(t *testing.T) {
	t.Parallel()
	srv, js := newBus(t)
	if _, err := bus.Provision(ctxT(t), js, bus.ProvisionConfig{MemoryStorage: true}); err != nil {
		t.Fatal(err)
	}
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	wjs, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := wjs.Consumer(ctxT(t), bus.StageStream(messages.PoolLLM), bus.StageConsumer(messages.PoolLLM))
	if err != nil {
		t.Fatal(err)
	}
	w := bus.NewWorker(cons, bus.HandlerFunc(func(context.Context, *bus.Message) error { return nil }),
		bus.WorkerConfig{PollTimeout: 300 * time.Millisecond})
	errc := make(chan error, 1)
	go func() { errc <- w.Run(context.Background()) }()
	nc.Close()
	if err := recv(t, errc, "Run to return after the connection closed"); !errors.Is(err, nats.ErrConnectionClosed) {
		t.Errorf("Run = %v, want ErrConnectionClosed", err)
	}
}
