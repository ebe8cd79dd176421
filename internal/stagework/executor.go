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
	Handle(ctx context.Context, cmd *messages.StageCommand) (Output, error)
}

// Output is what a stage produced.
type Output struct {
	Value    any                    // the stage's output struct, sent as JSON
	Usage    messages.Usage         // model tokens and calls (LLM stages)
	Messages []messages.ChatMessage // the model conversation (LLM stages)
}

// PermanentError marks an error that retrying cannot fix.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err so the stage fails without retries.
func Permanent(err error) error { return &PermanentError{Err: err} }

// Publisher publishes JSON messages on JetStream with a de-duplication ID.
type Publisher interface {
	PublishJSON(ctx context.Context, subject string, v any, msgID string) error
}

// Config configures a Runner. Zero values mean the documented defaults.
type Config struct {
	Handler   Handler
	Publisher Publisher
	Cache     cache.Cache  // nil: no caching
	Logger    *slog.Logger // nil: discard
	Worker    string       // name on results; default "worker"
	// MaxAttempts is how many deliveries a failing stage gets before the
	// runner gives up and reports an infrastructure error to the coordinator
	// (so the job ends with a reason instead of waiting forever). Default 4.
	MaxAttempts int
	// CacheTTL is how long results are kept; zero means no expiry.
	CacheTTL time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// OnResult, if set, is called after each result is published (metrics).
	OnResult func(stage messages.Stage, cached bool, err string, d time.Duration)
}

// Runner turns stage command messages into stage results: it decodes the
// command, answers from the content-addressed cache when it can, runs the
// handler otherwise, stores the result, and publishes it to the job's result
// subject. It is a bus.Handler.
type Runner struct {
	cfg Config
	log *slog.Logger
}

// NewRunner validates cfg and returns a Runner.
func NewRunner(cfg Config) (*Runner, error) {
	if cfg.Handler == nil || cfg.Publisher == nil {
		return nil, errors.New("stagework: Handler and Publisher are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Worker == "" {
		cfg.Worker = "worker"
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 4
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Runner{cfg: cfg, log: cfg.Logger}, nil
}

// cached is what the cache stores for a stage: its output and conversation.
type cached struct {
	Output   json.RawMessage        `json:"output"`
	Messages []messages.ChatMessage `json:"messages,omitempty"`
}

// Key is the content address of a stage command: the same stage, version,
// model and input give the same key, whichever job asks.
func (r *Runner) Key(cmd *messages.StageCommand) string {
	return cache.Key("stage", []byte(cmd.Stage), []byte(r.cfg.Handler.Version(cmd.Stage)), []byte(cmd.Model), cmd.Input)
}

// Handle implements bus.Handler.
func (r *Runner) Handle(ctx context.Context, msg *bus.Message) error {
	var cmd messages.StageCommand
	if err := json.Unmarshal(msg.Data(), &cmd); err != nil {
		return bus.Permanent(fmt.Errorf("decode stage command: %w", err))
	}
	if cmd.V > messages.SchemaVersion {
		return bus.Permanent(fmt.Errorf("stage command version %d is newer than %d", cmd.V, messages.SchemaVersion))
	}
	if !bus.ValidJobID(cmd.JobID) {
		return bus.Permanent(fmt.Errorf("stage command has an invalid job id %q", cmd.JobID))
	}
	log := r.log.With("job_id", cmd.JobID, "stage", cmd.Stage, "seq", cmd.Seq)
	start := r.cfg.Now()
	res := messages.StageResult{V: messages.SchemaVersion, JobID: cmd.JobID, Seq: cmd.Seq, Stage: cmd.Stage, StartedAt: start, Worker: r.cfg.Worker}
	key := r.Key(&cmd)

	if r.cfg.Cache != nil && (cmd.Cache == "" || cmd.Cache == messages.CacheAuto) {
		if b, err := r.cfg.Cache.Get(ctx, key); err == nil {
			var c cached
			if json.Unmarshal(b, &c) == nil && len(c.Output) > 0 {
				res.Output, res.Messages, res.Cached = c.Output, c.Messages, true
				return r.publish(ctx, &res, start)
			}
		} else if !errors.Is(err, cache.ErrMiss) {
			// A cache that is down costs money, not correctness: do the work.
			log.Warn("cache read failed; computing", "err", err)
		}
	}

	out, err := r.cfg.Handler.Handle(ctx, &cmd)
	if err != nil {
		if ctx.Err() != nil {
			return err // shutting down: leave the message for another worker
		}
		var perm *PermanentError
		switch {
		case errors.As(err, &perm):
			res.Error, res.ErrorKind = err.Error(), messages.ErrorPermanent
		case !msg.LastDelivery() && msg.NumDelivered() < uint64(r.cfg.MaxAttempts):
			log.Warn("stage failed; will retry", "err", err, "attempt", msg.NumDelivered())
			return err
		default:
			res.Error, res.ErrorKind = fmt.Sprintf("%v (after %d attempts)", err, msg.NumDelivered()), messages.ErrorInfra
		}
		log.Error("stage failed", "err", res.Error, "kind", res.ErrorKind)
		res.Usage = out.Usage // a failed model call may still have been paid for
		return r.publish(ctx, &res, start)
	}
	b, err := json.Marshal(out.Value)
	if err != nil {
		res.Error, res.ErrorKind = "marshal output: "+err.Error(), messages.ErrorPermanent
		return r.publish(ctx, &res, start)
	}
	res.Output, res.Usage, res.Messages = b, out.Usage, trimMessages(out.Messages)
	if r.cfg.Cache != nil && cmd.Cache != messages.CacheDisable {
		cb, _ := json.Marshal(cached{Output: res.Output, Messages: res.Messages})
		if err := r.cfg.Cache.Set(ctx, key, cb, r.cfg.CacheTTL); err != nil {
			log.Warn("cache write failed", "err", err)
		}
	}
	return r.publish(ctx, &res, start)
}

func (r *Runner) publish(ctx context.Context, res *messages.StageResult, start time.Time) error {
	d := r.cfg.Now().Sub(start)
	res.DurationMS = d.Milliseconds()
	if err := r.cfg.Publisher.PublishJSON(ctx, bus.ResultSubject(res.JobID), res, bus.ResultMsgID(res.JobID, res.Seq)); err != nil {
		return fmt.Errorf("publish result: %w", err) // redelivered; the cache makes the retry cheap
	}
	if r.cfg.OnResult != nil {
		r.cfg.OnResult(res.Stage, res.Cached, res.Error, d)
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
