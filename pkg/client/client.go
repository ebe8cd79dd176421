package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Errors a caller tells apart with errors.Is.
var (
	// ErrNotFound means no job with that ID is known (or, from Result, it
	// has not finished).
	ErrNotFound = errors.New("client: job not found")
	// ErrNoTask means no task with that name is registered.
	ErrNoTask = errors.New("client: no such task")
	// ErrTaskExists is CreateTask given a name that is registered already.
	ErrTaskExists = errors.New("client: a task of that name is registered already")
	// ErrNoCoordinator means no coordinator answered a message API request.
	ErrNoCoordinator = errors.New("client: no coordinator answers the message API")
	// ErrSampleTooLarge is returned (wrapped) for a sample over messages.MaxSampleBytes.
	ErrSampleTooLarge = errors.New("client: sample too large")
)

// Publisher publishes v as JSON on a JetStream subject with a
// de-duplication ID (Nats-Msg-Id). The submit CLI passes autocoder's own.
type Publisher interface {
	PublishJSON(ctx context.Context, subject string, v any, msgID string) error
}

// Config tunes a Client. The zero value works.
type Config struct {
	// Publisher publishes submissions and cancellations; nil: a publisher
	// over the JetStream handle that sends a body over
	// messages.ClaimThreshold by claim check (docs/api.md).
	Publisher Publisher
	// Stores are handles already open; those left nil are opened by name.
	Stores Stores
	// LoadContext reads a spec's context paths (files or folders of
	// documentation) into a bundle to upload; nil: a spec's context must
	// be object references already.
	LoadContext func(paths []string) (messages.ContextBundle, error)
	// Identity is the NATS user name the connection is logged in as,
	// for a producer: it cancels jobs and keeps tasks on the subjects
	// that end with it, the only ones a producer may publish on
	// (identity.go). "": the coordinator role's subjects.
	Identity string
	// PollInterval is how soon Wait asks for a result again at first; the
	// pause then doubles, up to MaxPollInterval, so a job just finished is
	// seen at once and one that runs for minutes costs a read a second.
	// 0: 20ms.
	PollInterval time.Duration
	// RequestWait bounds a request to the coordinators (Request) whose
	// context has no deadline: one that took it and stopped, or a request
	// NATS refused, is never answered. 0: DefaultRequestWait.
	RequestWait time.Duration
}

// DefaultRequestWait is Config.RequestWait's default.
const DefaultRequestWait = 30 * time.Second

// Client submits jobs and follows them. It is safe for concurrent use.
type Client struct {
	js     jetstream.JetStream
	cfg    Config
	pub    Publisher
	stores *stores
	// owner is who an admin client keeps tasks for (ForOwner).
	owner string
}

// New returns a client over a JetStream handle.
func New(js jetstream.JetStream, cfg Config) *Client {
	c := &Client{js: js, cfg: cfg, pub: cfg.Publisher, stores: &stores{js: js, s: cfg.Stores}}
	if c.pub == nil {
		c.pub = &jsPublisher{js: js, stores: c.stores}
	}
	if c.cfg.PollInterval <= 0 {
		c.cfg.PollInterval = 20 * time.Millisecond
	}
	if c.cfg.RequestWait <= 0 {
		c.cfg.RequestWait = DefaultRequestWait
	}
	return c
}

// JetStream is the handle the client was made with.
func (c *Client) JetStream() jetstream.JetStream { return c.js }

// NewJobID returns a fresh job ID: time-ordered, then random.
func NewJobID() string { return messages.NewJobID() }

// Submit uploads the spec's sample files (and its context, with
// Config.LoadContext) to the object store, replaces their paths with
// object references, and publishes the job as jobID. The coordinator
// checks the spec when it takes the job: an invalid one finishes failed
// with the reason (SubmitRequest checks first and answers at once).
func (c *Client) Submit(ctx context.Context, jobID string, spec messages.JobSpec) error {
	if !messages.ValidJobID(jobID) {
		return fmt.Errorf("client: invalid job id %q", jobID)
	}
	wire, err := c.Upload(ctx, spec)
	if err != nil {
		return err
	}
	sub := messages.SubmitJob{V: messages.WireVersion, JobID: jobID, Spec: wire}
	if err := c.pub.PublishJSON(ctx, messages.SubjectJobsSubmit, sub, messages.SubmitMsgID(jobID)); err != nil {
		return fmt.Errorf("submit job: %w", err)
	}
	return nil
}

// Upload returns spec as it goes on the wire: its sample files uploaded
// and named by object reference, its context paths loaded and uploaded
// (references given already are kept).
func (c *Client) Upload(ctx context.Context, spec messages.JobSpec) (messages.JobSpec, error) {
	wire := spec
	wire.Samples = map[string]string{}
	for _, name := range sortedNames(spec.Samples) {
		path := spec.Samples[name]
		if _, isRef := messages.ParseObjectRef(path); isRef {
			wire.Samples[name] = path
			continue
		}
		ref, err := c.PutSampleFile(ctx, name, path)
		if err != nil {
			return wire, err
		}
		wire.Samples[name] = ref.Object
	}
	if len(spec.Context) > 0 {
		refs, err := c.uploadContext(ctx, spec.Context) // context.go
		if err != nil {
			return wire, err
		}
		wire.Context = refs
	}
	return wire, nil
}

// Result returns a finished job's result, or ErrNotFound while it runs or
// if it is unknown.
func (c *Client) Result(ctx context.Context, jobID string) (*messages.Result, error) {
	return getJob[messages.Result](ctx, jobID, "result", c.stores.results)
}

// Summary returns a job's line in the job index: where a running job is
// (its phase, stages in flight, iterations, tokens), or how a finished
// one ended; ErrNotFound for a job the coordinator has not taken.
func (c *Client) Summary(ctx context.Context, jobID string) (*messages.JobSummary, error) {
	return getJob[messages.JobSummary](ctx, jobID, "summary", c.stores.index)
}

// getJob reads and decodes job jobID's entry of the bucket open returns
// (what names it in errors); ErrNotFound for an invalid ID or no entry.
func getJob[T any](ctx context.Context, jobID, what string, open func(context.Context) (jetstream.KeyValue, error)) (*T, error) {
	if !messages.ValidJobID(jobID) {
		return nil, ErrNotFound
	}
	kv, err := open(ctx)
	if err != nil {
		return nil, err
	}
	e, err := kv.Get(ctx, messages.JobKey(jobID))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	var v T
	if err := json.Unmarshal(e.Value(), &v); err != nil {
		return nil, fmt.Errorf("decode %s of job %s: %w", what, jobID, err)
	}
	return &v, nil
}

// Status returns the result object of a job so far: the stored result when
// it has finished, else one made from its summary (status, attempts,
// calls, cache hits, error), ErrNotFound for a job nobody knows.
func (c *Client) Status(ctx context.Context, jobID string) (*messages.Result, error) {
	if r, err := c.Result(ctx, jobID); !errors.Is(err, ErrNotFound) {
		return r, err
	}
	s, err := c.Summary(ctx, jobID)
	if err != nil {
		return nil, err
	}
	return &messages.Result{V: messages.WireVersion, JobID: s.JobID, Status: s.Status, Attempts: s.Iterations,
		Error: s.Error, LLMCalls: s.LLMCalls, CacheHits: s.CacheHits, SubmittedAt: s.SubmittedAt,
		FinishedAt: s.FinishedAt, Outputs: map[string]any{}, Stages: []messages.StageRecord{}}, nil
}

// Wait waits for job jobID's result until ctx ends. Each look is bounded
// (watchStallAfter), so an answer lost while NATS fails over is asked
// again rather than waited for until ctx ends.
func (c *Client) Wait(ctx context.Context, jobID string) (*messages.Result, error) {
	pause := c.cfg.PollInterval
	for {
		tctx, cancel := context.WithTimeout(ctx, watchStallAfter)
		r, err := c.Result(tctx, jobID)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			err = ErrNotFound // no answer in time: look again
		}
		if !errors.Is(err, ErrNotFound) {
			return r, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, max(MaxPollInterval, c.cfg.PollInterval))
	}
}

// MaxPollInterval is the longest pause of Wait between two looks.
const MaxPollInterval = time.Second
