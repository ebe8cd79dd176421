package stagework

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/trim"
	"github.com/autocoder/autocoder/pkg/cache"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Publisher publishes JSON messages on JetStream with a de-duplication ID.
type Publisher interface {
	PublishJSON(ctx context.Context, subject string, v any, msgID string) error
}

// Offerer offers a result to the coordinators before it is published
// (bus.Publisher.OfferJSON): taken, it need not be published.
type Offerer interface {
	OfferJSON(ctx context.Context, subject string, v any) (taken bool)
}

// Metrics receives the executor's measurements; internal/metrics has the
// Prometheus one (Builder.Stages).
type Metrics interface {
	// StageDone is called after each result is published.
	StageDone(stage messages.Stage, cached, failed bool, d time.Duration)
	// CommandRefused is called for each refused command; reason is one of
	// the Refused constants.
	CommandRefused(stage messages.Stage, reason string)
}

type noMetrics struct{}

func (noMetrics) StageDone(messages.Stage, bool, bool, time.Duration) {}
func (noMetrics) CommandRefused(messages.Stage, string)               {}

// Config configures an Executor. Zero values mean the documented defaults.
type Config struct {
	// Mux has the stage handlers. Required.
	Mux *Mux
	// Pool is the pool whose stages the executor does, by the mux's stage
	// table; its results go to the pool's result subject
	// (bus.ResultSubject). Required.
	Pool      messages.Pool
	Publisher Publisher
	// Offers, if set, offers each result to the coordinators first
	// (bus.OfferSubject); one no coordinator takes is published on the
	// result stream. nil: results go to the stream only.
	Offers Offerer
	// Jobs is where commands are checked against what the coordinator
	// dispatched (admit.go), normally KVJobs on the job-state bucket.
	// Required: a worker runs nothing it cannot check.
	Jobs Jobs
	// ConfirmWait is how long a command that is not (yet) pending is
	// looked up again before it is refused. Default DefaultConfirmWait.
	ConfirmWait time.Duration
	// Metrics counts results and refused commands; nil: none.
	Metrics Metrics
	Cache   cache.Cache  // nil: no caching
	Logger  *slog.Logger // nil: discard
	Worker  string       // name on results; default "worker"
	// RetryDelay is the wait before delivery n+1 of a stage that failed on
	// delivery n (see policy.go). Default DefaultRetryDelay. How many
	// deliveries a stage gets is the consumer's MaxDeliver, not a setting here.
	RetryDelay func(numDelivered uint64) time.Duration
	// CacheTTL is how long results are kept; zero means no expiry.
	CacheTTL time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// ClaimLease is the lease of a stage's in-flight claim (inflight.go),
	// renewed every third of it while the stage runs: how long a crashed
	// holder delays the identical stages waiting on it. Default
	// DefaultClaimLease (15s, the stage streams' AckWait).
	ClaimLease time.Duration
	// ClaimPoll is how often a waiting executor looks for the holder's
	// result. Default DefaultClaimPoll.
	ClaimPoll time.Duration
	// Cancels, if set, stops the stages of a cancelled job (cancel.go);
	// nil: they run to their end and their results are stale.
	Cancels *Cancels
	// Announce, if set, is told of each stage the executor starts (after
	// admission, when the cache does not answer it) that is still running
	// AnnounceAfter later, with the time it started. The stack publishes it
	// as the stage's StageStarted notice (bus.AnnounceStarted), which tells
	// its wait in the queue from its run. It is called on a goroutine of
	// its own, at most once per stage.
	Announce func(ctx context.Context, n messages.StageStarted)
	// AnnounceAfter is how long a stage runs before it is announced: a
	// stage done sooner is not, so the coordinator takes no extra step for
	// the quick ones (its result says when it started anyway), and a live
	// view shows a stage queued for at most that much longer than it was.
	// Default DefaultAnnounceAfter; negative: at once.
	AnnounceAfter time.Duration
}

// DefaultAnnounceAfter is Config.AnnounceAfter's default.
const DefaultAnnounceAfter = 250 * time.Millisecond

// Executor is the stage executor: it turns stage command messages into
// stage results. It decodes the command, checks that the coordinator sent
// it (admit.go) and refuses it otherwise, answers from the content-addressed
// cache when it can, runs the stage's handler on the mux otherwise, applies
// the failure policy (policy.go) to its error, stores the result, and
// publishes it on the result subject of its pool and the job. It is a
// bus.Handler.
type Executor struct {
	cfg Config
	mux *Mux
	log *slog.Logger
}

// NewExecutor validates cfg and returns an Executor.
func NewExecutor(cfg Config) (*Executor, error) {
	if cfg.Mux == nil || cfg.Publisher == nil || cfg.Jobs == nil {
		return nil, errors.New("stagework: Mux, Publisher and Jobs are required")
	}
	if err := cfg.Mux.Err(); err != nil {
		return nil, err
	}
	if !slices.Contains(messages.Pools(), cfg.Pool) {
		return nil, fmt.Errorf("stagework: Pool %q is not one of %v", cfg.Pool, messages.Pools())
	}
	// A negative duration means its default, as zero does.
	cfg.ConfirmWait = cmp.Or(max(cfg.ConfirmWait, 0), DefaultConfirmWait)
	cfg.ClaimLease = cmp.Or(max(cfg.ClaimLease, 0), DefaultClaimLease)
	cfg.ClaimPoll = cmp.Or(max(cfg.ClaimPoll, 0), DefaultClaimPoll)
	cfg.Worker = cmp.Or(cfg.Worker, "worker")
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	cfg.Metrics = cmp.Or[Metrics](cfg.Metrics, noMetrics{})
	if cfg.RetryDelay == nil {
		cfg.RetryDelay = DefaultRetryDelay
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.AnnounceAfter == 0 { // negative: at once
		cfg.AnnounceAfter = DefaultAnnounceAfter
	}
	return &Executor{cfg: cfg, mux: cfg.Mux, log: cfg.Logger}, nil
}

// cached is what the cache stores for a stage: its output and conversation.
type cached struct {
	Output   json.RawMessage        `json:"output"`
	Messages []messages.ChatMessage `json:"messages,omitempty"`
}

// Key is the content address of a stage command: the same stage, version
// (Mux.Version), model, input and settings (messages.StageSettings) give
// the same key, whichever job asks, followed by what the stage's KeyPart
// adds (a job's secrets, hashed on the worker).
func (e *Executor) Key(ctx context.Context, cmd *messages.StageCommand) (string, error) {
	parts := [][]byte{[]byte(cmd.Stage), []byte(e.mux.Version(cmd.Stage)), []byte(cmd.Model), cmd.Input}
	if cmd.Settings != nil { // a job's model or sandbox settings; absent, the key is what it was before them
		b, err := json.Marshal(cmd.Settings)
		if err != nil {
			return "", err
		}
		parts = append(parts, b)
	}
	if r := e.mux.routes[cmd.Stage]; r != nil && r.keyPart != nil {
		extra, err := r.keyPart(ctx, cmd)
		if err != nil {
			return "", err
		}
		parts = append(parts, extra)
	}
	return cache.Key("stage", parts...), nil
}

// Handle implements bus.Handler.
func (e *Executor) Handle(ctx context.Context, msg *bus.Message) error {
	cmd, err := decodeCommand(msg)
	if err != nil {
		return err
	}
	// Tracked before admission: a cancellation announced after the check
	// read the job as running still reaches this stage.
	stageCtx, done := e.cfg.Cancels.track(ctx, cmd.JobID)
	defer done()
	switch r, err := e.admit(ctx, cmd); {
	case err != nil:
		return fmt.Errorf("check stage command: %w", err)
	case r != nil:
		e.refuse(cmd, r)
		return nil
	}
	start := e.cfg.Now()
	res := messages.StageResult{V: messages.WireVersion, JobID: cmd.JobID, Seq: cmd.Seq, Stage: cmd.Stage, StartedAt: start, Worker: e.cfg.Worker}
	key, err := e.Key(ctx, cmd)
	if err != nil {
		return e.failed(ctx, msg, err, &res, start)
	}
	if e.fromCache(ctx, cmd, key, &res) {
		return e.publish(ctx, msg, &res, start)
	}
	defer e.announce(ctx, cmd, start)()
	claim, answered, err := e.claimOrWait(ctx, cmd, key, &res)
	switch {
	case err != nil:
		return err // shutting down: another worker takes the command
	case answered:
		return e.publish(ctx, msg, &res, start)
	}
	defer claim.release() // after the store below: waiters then find it
	out, storable, err := e.run(stageCtx, cmd)
	if cancelled(stageCtx) {
		e.log.Info("stage stopped: job cancelled", "job_id", cmd.JobID, "stage", cmd.Stage, "seq", cmd.Seq,
			"after", e.cfg.Now().Sub(start))
		return nil // acked: a finished job takes no result
	}
	e.logNotes(cmd, out.Notes)
	res.Usage = out.Usage // a failed model call may still have been paid for
	if err != nil {
		return e.failed(ctx, msg, err, &res, start)
	}
	res.Output, res.Messages = out.Value, trimMessages(out.Messages)
	// The result goes out first (the next hop waits on it), then into the
	// cache, before the claim is released: a waiter finds it there.
	err = e.publish(ctx, msg, &res, start)
	if storable {
		e.store(ctx, cmd, key, &res)
	}
	return err
}

// logNotes logs what a handler changed in a model's reply.
func (e *Executor) logNotes(cmd *messages.StageCommand, notes []string) {
	for _, note := range notes {
		e.log.Info("normalised model reply", "job_id", cmd.JobID, "stage", cmd.Stage, "seq", cmd.Seq, "note", note)
	}
}

// failed applies the failure policy to err: the command goes back to the
// bus, or its failure is published.
func (e *Executor) failed(ctx context.Context, msg *bus.Message, err error, res *messages.StageResult, start time.Time) error {
	if retry := e.onFailure(ctx, msg, err, res); retry != nil {
		return retry
	}
	return e.publish(ctx, msg, res, start)
}

// announce tells Config.Announce of a stage that has run AnnounceAfter
// since start, unless the returned stop is called first.
func (e *Executor) announce(ctx context.Context, cmd *messages.StageCommand, start time.Time) (stop func()) {
	if e.cfg.Announce == nil {
		return func() {}
	}
	n := messages.StageStarted{V: messages.WireVersion, JobID: cmd.JobID, Seq: cmd.Seq, Stage: cmd.Stage, Worker: e.cfg.Worker, StartedAt: start}
	t := time.AfterFunc(max(e.cfg.AnnounceAfter, 0), func() { e.cfg.Announce(context.WithoutCancel(ctx), n) })
	return func() { t.Stop() }
}

// fromCache fills res from the cache when the command allows it and the
// cache has the stage; it reports whether it did.
func (e *Executor) fromCache(ctx context.Context, cmd *messages.StageCommand, key string, res *messages.StageResult) bool {
	if !e.cacheable(cmd) {
		return false
	}
	b, err := e.cfg.Cache.Get(ctx, key)
	if err != nil {
		if !errors.Is(err, cache.ErrMiss) {
			// A cache that is down costs money, not correctness: do the work.
			e.log.Warn("cache read failed; computing", "job_id", cmd.JobID, "stage", cmd.Stage, "seq", cmd.Seq, "err", err)
		}
		return false
	}
	var c cached
	if json.Unmarshal(b, &c) != nil || len(c.Output) == 0 {
		return false
	}
	res.Output, res.Messages, res.Cached = c.Output, c.Messages, true
	return true
}

// cacheable reports whether cmd may be answered from the cache: the
// executor has one, the stage's row says it is cached, and the command's
// cache mode reads it.
func (e *Executor) cacheable(cmd *messages.StageCommand) bool {
	return e.stored(cmd) && (cmd.Cache == "" || cmd.Cache == messages.CacheAuto)
}

// stored reports whether cmd's result may be written to the cache.
func (e *Executor) stored(cmd *messages.StageCommand) bool {
	row, _ := e.mux.stages.Row(cmd.Stage)
	return e.cfg.Cache != nil && row.Cached && cmd.Cache != messages.CacheDisable
}

// store keeps a computed result in the cache unless the command or the
// stage's row says not to.
func (e *Executor) store(ctx context.Context, cmd *messages.StageCommand, key string, res *messages.StageResult) {
	if !e.stored(cmd) {
		return
	}
	cb, _ := json.Marshal(cached{Output: res.Output, Messages: res.Messages})
	if err := e.cfg.Cache.Set(ctx, key, cb, e.cfg.CacheTTL); err != nil {
		e.log.Warn("cache write failed", "job_id", cmd.JobID, "stage", cmd.Stage, "seq", cmd.Seq, "err", err)
	}
}

func (e *Executor) publish(ctx context.Context, msg *bus.Message, res *messages.StageResult, start time.Time) error {
	d := e.cfg.Now().Sub(start)
	res.DurationMS = d.Milliseconds()
	if err := e.publishOrFail(ctx, msg, res); err != nil {
		return fmt.Errorf("publish result: %w", err)
	}
	e.cfg.Metrics.StageDone(res.Stage, res.Cached, res.Error != "", d)
	return nil
}

// MaxMessageBytes bounds each conversation message kept on results, so job
// state stays well under the KV value limit.
const MaxMessageBytes = 16 << 10

// trimMessages keeps the head and tail of each message longer than
// MaxMessageBytes (trim.Middle: cut between characters).
func trimMessages(ms []messages.ChatMessage) []messages.ChatMessage {
	out := make([]messages.ChatMessage, len(ms))
	for i, m := range ms {
		m.Content = trim.Middle(m.Content, MaxMessageBytes)
		out[i] = m
	}
	return out
}
