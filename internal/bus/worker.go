package bus

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Worker defaults; see WorkerConfig.
const (
	DefaultShutdownTimeout = 30 * time.Second
	DefaultPollTimeout     = 30 * time.Second
)

const (
	// settleTimeout bounds the Ack round trip after a handler succeeded.
	settleTimeout = 5 * time.Second
	// abandonGrace is how long Run still waits, after cancelling handlers at
	// ShutdownTimeout, for handlers to return before it hands their messages
	// back and returns without them: a handler that ignores ctx must not hang
	// shutdown (its goroutine is left running).
	abandonGrace = 2 * time.Second
	// maxFetchBackoff caps the wait between failed pulls.
	maxFetchBackoff = 5 * time.Second
)

// WorkerConfig tunes a Worker. The zero value of every field means its default.
type WorkerConfig struct {
	// Name identifies this worker in logs (e.g. host and pid). Default: the
	// consumer's name.
	Name string
	// Concurrency is the number of handler slots: at most this many messages
	// are held (fetched and not yet settled) at any time. Default 1.
	Concurrency int
	// HeartbeatInterval is how often a running handler's message is marked
	// InProgress so it is not redelivered past AckWait. Default a third of
	// the consumer's AckWait; negative disables heartbeats.
	HeartbeatInterval time.Duration
	// ShutdownTimeout is how long Run waits, once ctx is cancelled, for
	// running handlers before it cancels their contexts. Default 30s.
	ShutdownTimeout time.Duration
	// PollTimeout is how long one pull request waits for messages on an idle
	// consumer before another is sent. Default 30s. It does not delay
	// shutdown: a pending pull is cancelled with ctx.
	PollTimeout time.Duration
	// RetryDelay is the redelivery delay after a handler error on delivery n
	// (1 for the first). Default DefaultRetryDelay. RetryAfter overrides it.
	RetryDelay func(numDelivered uint64) time.Duration
	// Logger receives the worker's log. Default: discard.
	Logger *slog.Logger
	// Metrics receives measurements. Default nil: none.
	Metrics Metrics
	// Claims is the claim-check store (Resources.Claims): a message whose
	// body was too large to travel is fetched from it before the handler
	// runs (claimcheck.go). Nil: such a message is terminated.
	Claims jetstream.ObjectStore
	// MaxClaim bounds a claim-checked body read from Claims. Default
	// DefaultMaxClaim.
	MaxClaim int
	// Pause, if set, is the pool's pause switch (pause.go): while it is on
	// the worker fetches nothing (a pending pull is cancelled) and what it
	// holds runs to its end. Nil: never paused.
	Pause *Pause
}

// DefaultRetryDelay is exponential backoff by delivery count: 1s after the
// first delivery, doubling up to 5m, with ±10% jitter so messages that
// failed together (a model endpoint down) do not all come back together.
func DefaultRetryDelay(numDelivered uint64) time.Duration {
	d := 5 * time.Minute
	if numDelivered < 10 { // 2^9 s > 5m already
		d = min(time.Second<<max(numDelivered, 1)>>1, d)
	}
	jitter := time.Duration((rand.Float64()*0.2 - 0.1) * float64(d))
	return d + jitter
}

// Worker pulls messages from a JetStream pull consumer and runs a Handler on
// each, like asynq's server or Temporal's poller. Many Workers, in one
// process or many, may share one durable consumer: JetStream gives each
// message to one of them.
type Worker struct {
	cons       jetstream.Consumer
	handler    Handler
	cfg        WorkerConfig
	consumer   string // durable name, the metrics label
	maxDeliver int
	log        *slog.Logger
	metrics    Metrics
	err        error // invalid configuration, reported by Run
	running    atomic.Bool
	inFlight   atomic.Int64 // messages held: fetched and not yet settled
}

// Slots is the worker's concurrency: how many messages it handles at once.
func (w *Worker) Slots() int { return w.cfg.Concurrency }

// InFlight is how many messages the worker holds now.
func (w *Worker) InFlight() int { return int(w.inFlight.Load()) }

// Paused reports whether the worker's pool is paused (WorkerConfig.Pause).
func (w *Worker) Paused() bool { return w.cfg.Pause.Paused() }

// NewWorker makes a Worker for cons, applying defaults to cfg. A panic in
// the handler is recovered and the message retried (handler.go). An
// invalid configuration is reported by Run.
func NewWorker(cons jetstream.Consumer, h Handler, cfg WorkerConfig) *Worker {
	w := &Worker{cons: cons, handler: h, cfg: cfg, metrics: cfg.Metrics, log: cfg.Logger}
	if w.log == nil {
		w.log = discardLogger()
	}
	if w.metrics == nil {
		w.metrics = nopMetrics{}
	}
	if w.err = checkWorker(cons, h, cfg); w.err != nil {
		return w
	}
	var ackWait time.Duration
	if info := cons.CachedInfo(); info != nil {
		w.consumer = info.Name
		w.maxDeliver = info.Config.MaxDeliver
		ackWait = info.Config.AckWait
	}
	if ackWait <= 0 {
		ackWait = 30 * time.Second // the server's default
	}
	w.cfg.Name = cmp.Or(w.cfg.Name, w.consumer)
	w.cfg.Concurrency = cmp.Or(w.cfg.Concurrency, 1)
	w.cfg.HeartbeatInterval = cmp.Or(w.cfg.HeartbeatInterval, ackWait/3)
	w.cfg.ShutdownTimeout = cmp.Or(w.cfg.ShutdownTimeout, DefaultShutdownTimeout)
	w.cfg.PollTimeout = cmp.Or(w.cfg.PollTimeout, DefaultPollTimeout)
	w.cfg.MaxClaim = cmp.Or(max(w.cfg.MaxClaim, 0), DefaultMaxClaim)
	if w.cfg.RetryDelay == nil {
		w.cfg.RetryDelay = DefaultRetryDelay
	}
	w.log = w.log.With("worker", w.cfg.Name, "consumer", w.consumer)
	return w
}

// checkWorker is what NewWorker refuses, reported by Run.
func checkWorker(cons jetstream.Consumer, h Handler, cfg WorkerConfig) error {
	switch {
	case cons == nil:
		return errors.New("bus: worker: consumer is nil")
	case h == nil:
		return errors.New("bus: worker: handler is nil")
	case cfg.Concurrency < 0 || cfg.ShutdownTimeout < 0 || cfg.PollTimeout < 0:
		return errors.New("bus: worker: Concurrency, ShutdownTimeout and PollTimeout must not be negative")
	}
	return nil
}

// run is the state of one Run call.
type run struct {
	// slots holds one token per free handler slot; a fetch takes tokens
	// before it asks for messages and each handler returns its own.
	slots    chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	inflight map[*delivery]struct{}
}

// delivery is one message being handled. settled guarantees one outcome
// even when shutdown hands the message back while its handler still runs.
type delivery struct {
	msg     jetstream.Msg
	settled atomic.Bool
}

func (d *delivery) claim() bool { return d.settled.CompareAndSwap(false, true) }

// Run pulls and handles messages until ctx is cancelled, then shuts down in
// two phases: it stops pulling, waits up to ShutdownTimeout for running
// handlers, then cancels their contexts; a message whose handler was
// cancelled is handed back (Nak) for another worker. Run returns nil after a
// shutdown, or an error if the configuration is invalid or the connection
// is closed.
//
// Why Fetch sized to free slots, and not Consume/Messages: those keep a
// buffer of PullMaxMessages on top of the messages being handled, so a busy
// worker would hold work (and let its AckWait tick) that an idle worker
// could run. Here a pull asks for exactly as many messages as there are free
// slots, and no pull is outstanding while every slot is busy, so a worker
// never holds more messages than Concurrency (Temporal's poller does the
// same). A slot freed while a pull is pending joins the next pull; the
// pending pull returns as soon as it is filled, and it is only left waiting
// when the consumer has nothing to deliver anyway.
//
// At shutdown the pending pull is cancelled at once. The server stops
// delivering to a pull whose subscriber is gone, and a message that arrives
// with it anyway is handed back; only one caught inside the client library
// at that instant waits out its AckWait.
func (w *Worker) Run(ctx context.Context) error {
	if w.err != nil {
		return w.err
	}
	if !w.running.CompareAndSwap(false, true) {
		return errors.New("bus: worker: Run is already running")
	}
	defer w.running.Store(false)

	// Handlers outlive ctx (phase 2), so their context keeps ctx's values but
	// only hardStop cancels it.
	hctx, hardStop := context.WithCancel(context.WithoutCancel(ctx))
	defer hardStop()
	r := &run{
		slots:    make(chan struct{}, w.cfg.Concurrency),
		inflight: map[*delivery]struct{}{},
	}
	for range w.cfg.Concurrency {
		r.slots <- struct{}{}
	}
	w.log.Info("worker started", "concurrency", w.cfg.Concurrency, "heartbeat_interval", w.cfg.HeartbeatInterval)
	err := w.poll(ctx, hctx, r)
	w.shutdown(r, hardStop)
	if err != nil {
		w.log.Error("worker stopped", "error", err)
		return err
	}
	w.log.Info("worker stopped")
	return nil
}

// poll is phase 1: pull as many messages as there are free slots, until ctx
// is cancelled.
func (w *Worker) poll(ctx, hctx context.Context, r *run) error {
	var backoff time.Duration
	for {
		if !w.waitUnpaused(ctx) {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.slots:
		}
		n := 1
	free:
		for n < w.cfg.Concurrency {
			select {
			case <-r.slots:
				n++
			default:
				break free
			}
		}
		used, err := w.fetch(ctx, hctx, r, n)
		for range n - used {
			r.slots <- struct{}{}
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, nats.ErrConnectionClosed):
			return fmt.Errorf("bus: worker %s: %w", w.cfg.Name, err)
		case err != nil:
			backoff = min(max(2*backoff, 100*time.Millisecond), maxFetchBackoff)
			w.log.Warn("pull failed, retrying", "retry_in", backoff, "error", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
		default:
			backoff = 0
		}
	}
}

// waitUnpaused returns once the pool is not paused (at once, mostly), or
// false when ctx ends first.
func (w *Worker) waitUnpaused(ctx context.Context) bool {
	logged := false
	for {
		on, changed := w.cfg.Pause.state()
		if !on {
			if logged {
				w.log.Info("pool resumed: fetching again")
			}
			return true
		}
		if !logged {
			w.log.Info("pool paused: fetching nothing until it is resumed", "in_flight", w.InFlight())
			logged = true
		}
		select {
		case <-ctx.Done():
			return false
		case <-changed:
		}
	}
}

// fetch sends one pull request for up to n messages and starts a handler for
// each that arrives. It returns how many slots it used. A pool paused
// while the pull waits cancels it.
func (w *Worker) fetch(ctx, hctx context.Context, r *run, n int) (int, error) {
	pctx, cancel := context.WithTimeout(ctx, w.cfg.PollTimeout)
	defer cancel()
	if _, changed := w.cfg.Pause.state(); changed != nil {
		go func() {
			select {
			case <-changed:
				cancel()
			case <-pctx.Done():
			}
		}()
	}
	batch, err := w.cons.Fetch(n, jetstream.FetchContext(pctx))
	if err != nil {
		return 0, err
	}
	used := 0
	for jm := range batch.Messages() {
		if ctx.Err() != nil || w.Paused() {
			// Stopping, or paused: a message that raced the cancelled pull
			// goes back at once rather than waiting out its AckWait.
			if err := jm.Nak(); err != nil {
				w.log.Warn("hand back message", "subject", jm.Subject(), "error", err)
			}
			continue
		}
		used++
		w.inFlight.Add(1)
		d := &delivery{msg: jm}
		r.mu.Lock()
		r.inflight[d] = struct{}{}
		r.mu.Unlock()
		r.wg.Add(1)
		go w.process(hctx, r, d)
	}
	err = batch.Error()
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		err = nil // the pull's own timeout, or shutdown
	}
	return used, err
}

// process runs the handler on one delivery and settles it.
func (w *Worker) process(hctx context.Context, r *run, d *delivery) {
	defer func() {
		w.inFlight.Add(-1)
		r.mu.Lock()
		delete(r.inflight, d)
		r.mu.Unlock()
		r.slots <- struct{}{}
		r.wg.Done()
	}()
	msg, err := newMessage(d.msg, w.maxDeliver)
	if err != nil {
		// Not a JetStream delivery: nothing can handle it.
		if d.claim() {
			w.log.Error("terminating message", "error", err)
			_ = d.msg.Term()
			w.metrics.MessageSettled(w.consumer, OutcomeTerm)
		}
		return
	}
	mctx, cancel := context.WithCancel(hctx)
	defer cancel()

	w.metrics.HandleStarted(w.consumer)
	start := time.Now()
	stopHeartbeat := w.heartbeat(mctx, msg)
	herr := redeem(mctx, w.cfg.Claims, msg, w.cfg.MaxClaim)
	if herr == nil {
		herr = w.handle(mctx, msg)
	}
	stopHeartbeat()
	w.metrics.HandleDone(w.consumer, time.Since(start))

	if d.claim() {
		w.settle(hctx, msg, herr)
	}
}

// heartbeat marks msg InProgress every HeartbeatInterval until the returned
// stop is called (which waits for it to finish) or ctx is cancelled.
func (w *Worker) heartbeat(ctx context.Context, msg *Message) (stop func()) {
	if w.cfg.HeartbeatInterval < 0 {
		return func() {}
	}
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(w.cfg.HeartbeatInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if err := msg.InProgress(); err != nil {
					w.log.Warn("heartbeat failed", append(msg.logAttrs(), "error", err)...)
				}
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

// settle maps the handler's error to what JetStream does with the message.
// It is the only place that acks, naks or terminates a handled message.
func (w *Worker) settle(hctx context.Context, msg *Message, herr error) {
	jm := msg.msg
	var (
		outcome Outcome
		err     error
	)
	switch {
	case herr == nil:
		outcome = OutcomeAck
		// A confirmed ack: in a work queue an unconfirmed ack that is lost
		// means the stage runs twice.
		actx, cancel := context.WithTimeout(context.WithoutCancel(hctx), settleTimeout)
		err = jm.DoubleAck(actx)
		cancel()
	case hctx.Err() != nil && errors.Is(herr, context.Canceled):
		outcome = OutcomeShutdown
		w.log.Warn("handler cancelled by shutdown; message handed back", msg.logAttrs()...)
		err = jm.Nak() // no delay: another worker should take it now
	case IsPermanent(herr):
		outcome = OutcomeTerm
		w.log.Error("message failed permanently; terminated", append(msg.logAttrs(), "error", herr)...)
		err = jm.TermWithReason(termReason(herr))
	case msg.LastDelivery():
		// Handed back, not terminated: the server then gives the message
		// up itself, with the max-deliveries advisory a coordinator turns
		// into a dead letter and a failed stage or submission
		// (coordinator/deadletters.go). A terminated message of a work
		// queue is simply gone: a submission or a result lost without a
		// word, its job waiting for ever or for its stage deadline.
		outcome = OutcomeExhausted
		w.log.Error("message failed on its last delivery; handed back for the dead letters",
			append(msg.logAttrs(), "max_deliver", w.maxDeliver, "error", herr)...)
		err = jm.Nak()
	default:
		outcome = OutcomeRetry
		delay, ok := RetryDelayOf(herr)
		if !ok {
			delay = w.cfg.RetryDelay(msg.NumDelivered())
		}
		w.log.Debug("message will be retried", append(msg.logAttrs(), "retry_in", delay, "error", herr)...)
		err = jm.NakWithDelay(delay)
	}
	if err != nil {
		w.log.Warn("settle message", append(msg.logAttrs(), "outcome", string(outcome), "error", err)...)
	}
	w.metrics.MessageSettled(w.consumer, outcome)
}

// termReason is the reason sent with Term (it shows in the server's
// terminated-message advisory), kept short.
func termReason(err error) string {
	const maxLen = 256
	s := err.Error()
	if len(s) > maxLen {
		s = s[:maxLen]
	}
	return s
}

// shutdown is phases 2 and 3: wait for running handlers up to
// ShutdownTimeout, then cancel them; give up on handlers that ignore the
// cancellation after abandonGrace.
func (w *Worker) shutdown(r *run, hardStop context.CancelFunc) {
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	r.mu.Lock()
	n := len(r.inflight)
	r.mu.Unlock()
	if n > 0 {
		w.log.Info("waiting for running handlers", "in_flight", n, "timeout", w.cfg.ShutdownTimeout)
	}
	soft := time.NewTimer(w.cfg.ShutdownTimeout)
	defer soft.Stop()
	select {
	case <-done:
		return
	case <-soft.C:
	}
	r.mu.Lock()
	n = len(r.inflight)
	r.mu.Unlock()
	w.log.Warn("shutdown timeout: cancelling running handlers", "in_flight", n)
	hardStop()

	grace := time.NewTimer(abandonGrace)
	defer grace.Stop()
	select {
	case <-done:
		return
	case <-grace.C:
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for d := range r.inflight {
		if d.claim() {
			_ = d.msg.Nak()
			w.metrics.MessageSettled(w.consumer, OutcomeShutdown)
		}
	}
	w.log.Error("handlers ignored cancellation; their messages were handed back and their goroutines left running",
		"count", len(r.inflight))
}
