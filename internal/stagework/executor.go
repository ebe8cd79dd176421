package stagework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/cache"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Handler does the stages of one worker pool.
type Handler interface {
	// Version names the implementation of a stage (prompt version, builder
	// version): it is part of the cache key, so a change invalidates old results.
	Version(stage messages.Stage) string
	// Handle does one stage. Errors wrapped with Permanent fail the job's
	// stage at once; other errors are retried by redelivery.
	// The markers and what each does are in policy.go.
	Handle(ctx context.Context, cmd *messages.StageCommand) (Output, error)
}

// Output is what a stage produced.
type Output struct {
	Value    any                    // the stage's output struct, sent as JSON
	Usage    messages.Usage         // model tokens and calls (LLM stages)
	Messages []messages.ChatMessage // the model conversation (LLM stages)
}

// Hermetic is implemented by stage outputs that can say whether they follow
// from the command alone. One that does not (a run that timed out or was
// killed, which says as much about the machine's load that moment as about
// the code) is published but never cached, so the next identical command
// runs again. Failed stages (errors) are never cached either.
type Hermetic interface {
	Hermetic() bool
}

func hermetic(v any) bool {
	h, ok := v.(Hermetic)
	return !ok || h.Hermetic()
}

// Publisher publishes JSON messages on JetStream with a de-duplication ID.
type Publisher interface {
	PublishJSON(ctx context.Context, subject string, v any, msgID string) error
}

// Config configures an Executor. Zero values mean the documented defaults.
type Config struct {
	Handler   Handler
	Publisher Publisher
	// Pool is the pool whose stages the executor does; its results go to
	// the pool's result subject (bus.ResultSubject). Required.
	Pool bus.Pool
	// Jobs is where commands are checked against what the coordinator
	// dispatched (admit.go), normally KVJobs on the job-state bucket.
	// Required: a worker runs nothing it cannot check.
	Jobs Jobs
	// ConfirmWait is how long a command that is not (yet) pending is
	// looked up again before it is refused. Default DefaultConfirmWait.
	ConfirmWait time.Duration
	// OnRefused, if set, is called for each refused command (metrics,
	// NewRefusalMetrics); reason is one of the Refused constants.
	OnRefused func(stage messages.Stage, reason string)
	Cache     cache.Cache  // nil: no caching
	Logger    *slog.Logger // nil: discard
	Worker    string       // name on results; default "worker"
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
	// OnResult, if set, is called after each result is published (metrics).
	OnResult func(stage messages.Stage, cached bool, err string, d time.Duration)
	// Cancels, if set, stops the stages of a cancelled job (cancel.go);
	// nil: they run to their end and their results are stale.
	Cancels *Cancels
}

// Executor is the stage executor: it turns stage command messages into
// stage results. It decodes the command, checks that the coordinator sent
// it (admit.go) and refuses it otherwise, answers from the content-addressed
// cache when it can, runs the handler otherwise, applies the failure policy
// (policy.go) to its error, stores the result, and publishes it on the
// result subject of its pool and the job. It is a bus.Handler.
type Executor struct {
	cfg Config
	log *slog.Logger
}

// NewExecutor validates cfg and returns an Executor.
func NewExecutor(cfg Config) (*Executor, error) {
	if cfg.Handler == nil || cfg.Publisher == nil || cfg.Jobs == nil {
		return nil, errors.New("stagework: Handler, Publisher and Jobs are required")
	}
	if !knownPool(cfg.Pool) {
		return nil, fmt.Errorf("stagework: Pool %q is not one of %v", cfg.Pool, bus.Pools())
	}
	if cfg.ConfirmWait <= 0 {
		cfg.ConfirmWait = DefaultConfirmWait
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Worker == "" {
		cfg.Worker = "worker"
	}
	if cfg.RetryDelay == nil {
		cfg.RetryDelay = DefaultRetryDelay
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ClaimLease <= 0 {
		cfg.ClaimLease = DefaultClaimLease
	}
	if cfg.ClaimPoll <= 0 {
		cfg.ClaimPoll = DefaultClaimPoll
	}
	return &Executor{cfg: cfg, log: cfg.Logger}, nil
}

// cached is what the cache stores for a stage: its output and conversation.
type cached struct {
	Output   json.RawMessage        `json:"output"`
	Messages []messages.ChatMessage `json:"messages,omitempty"`
}

// Key is the content address of a stage command: the same stage, version,
// model and input give the same key, whichever job asks.
func (e *Executor) Key(cmd *messages.StageCommand) string {
	return cache.Key("stage", []byte(cmd.Stage), []byte(e.cfg.Handler.Version(cmd.Stage)), []byte(cmd.Model), cmd.Input)
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
	res := messages.StageResult{V: messages.SchemaVersion, JobID: cmd.JobID, Seq: cmd.Seq, Stage: cmd.Stage, StartedAt: start, Worker: e.cfg.Worker}
	key := e.Key(cmd)
	if e.fromCache(ctx, cmd, key, &res) {
		return e.publish(ctx, msg, &res, start)
	}
	if e.cacheable(cmd) {
		claim, done, err := e.claimOrWait(ctx, cmd, key, &res)
		switch {
		case err != nil:
			return err // shutting down: another worker takes the command
		case done:
			return e.publish(ctx, msg, &res, start)
		}
		defer claim.release() // after the store below: waiters then find it
	}
	out, err := e.handle(stageCtx, cmd)
	if cancelled(stageCtx) {
		e.log.Info("stage stopped: job cancelled", "job_id", cmd.JobID, "stage", cmd.Stage, "seq", cmd.Seq,
			"after", e.cfg.Now().Sub(start))
		return nil // acked: a finished job takes no result
	}
	if err == nil {
		res.Output, err = encodeOutput(out.Value)
	}
	res.Usage = out.Usage // a failed model call may still have been paid for
	if err != nil {
		if retry := e.onFailure(ctx, msg, err, &res); retry != nil {
			return retry
		}
		return e.publish(ctx, msg, &res, start)
	}
	res.Messages = trimMessages(out.Messages)
	if hermetic(out.Value) {
		e.store(ctx, cmd, key, &res)
	}
	return e.publish(ctx, msg, &res, start)
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

// cacheable reports whether cmd may be answered from the cache.
func (e *Executor) cacheable(cmd *messages.StageCommand) bool {
	return e.cfg.Cache != nil && (cmd.Cache == "" || cmd.Cache == messages.CacheAuto)
}

// store keeps a computed result in the cache unless the command disables it.
func (e *Executor) store(ctx context.Context, cmd *messages.StageCommand, key string, res *messages.StageResult) {
	if e.cfg.Cache == nil || cmd.Cache == messages.CacheDisable {
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
	if e.cfg.OnResult != nil {
		e.cfg.OnResult(res.Stage, res.Cached, res.Error, d)
	}
	return nil
}

// MaxMessageBytes bounds each conversation message kept on results, so job
// state stays well under the KV value limit.
const MaxMessageBytes = 16 << 10

func trimMessages(ms []messages.ChatMessage) []messages.ChatMessage {
	out := make([]messages.ChatMessage, len(ms))
	for i, m := range ms {
		if len(m.Content) > MaxMessageBytes {
			half := MaxMessageBytes / 2
			m.Content = m.Content[:half] + "\n...[trimmed]...\n" + m.Content[len(m.Content)-half:]
		}
		out[i] = m
	}
	return out
}

func knownPool(p bus.Pool) bool {
	for _, q := range bus.Pools() {
		if p == q {
			return true
		}
	}
	return false
}
