package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/internal/objects"
	"github.com/autocoder/autocoder/pkg/messages"
)

// ErrNotFound means no job with that ID is known.
var ErrNotFound = errors.New("client: job not found")

// Publisher publishes JSON on JetStream with a de-duplication ID.
type Publisher interface {
	PublishJSON(ctx context.Context, subject string, v any, msgID string) error
}

// Client submits jobs and follows them, as the submit CLI and tests do.
type Client struct {
	js      jetstream.JetStream
	res     *bus.Resources
	pub     Publisher
	samples *objects.Store
	// identity is the NATS user this client asks as (SetIdentity): ""
	// asks on the coordinator role's subjects, as the HTTP API and a
	// local run do.
	identity string
}

// SetIdentity makes the client ask as NATS user name (bus.ClientAuth's
// Identity) where the coordinator must know who asks: cancellations and
// tasks go on subjects that end with it, which the server lets only that
// user publish on. A producer's client needs it; without one the client
// asks on the coordinator role's subjects.
func (c *Client) SetIdentity(name string) { c.identity = name }

// AsAdmin is a copy of the client that asks as the admin (the coordinator
// role's subjects): it may replace or delete any task, if its NATS user
// may publish there.
func (c *Client) AsAdmin() *Client {
	cp := *c
	cp.identity = ""
	return &cp
}

// New returns a client over provisioned resources. sampleDir caches downloads.
func New(js jetstream.JetStream, res *bus.Resources, pub Publisher, sampleDir string) (*Client, error) {
	st, err := objects.New(res.Samples, sampleDir)
	if err != nil {
		return nil, err
	}
	return &Client{js: js, res: res, pub: pub, samples: st}, nil
}

// NewJobID returns a fresh job ID: time-ordered, then random.
func NewJobID() string { return bus.NewJobID() }

// Submit uploads the spec's sample files to the object store, replaces their
// paths with object references, and publishes the job. The spec must be valid.
func (c *Client) Submit(ctx context.Context, jobID string, spec messages.JobSpec) error {
	if !bus.ValidJobID(jobID) {
		return fmt.Errorf("invalid job id %q", jobID)
	}
	if err := checkBound(jobID, spec); err != nil { // bound.go
		return err
	}
	wire := spec
	wire.Samples = map[string]string{}
	for name, path := range spec.Samples {
		if _, isRef := messages.ParseObjectRef(path); isRef {
			wire.Samples[name] = path
			continue
		}
		ref, err := c.samples.Put(ctx, name, path)
		if err != nil {
			return err
		}
		wire.Samples[name] = ref.Object
	}
	if len(spec.Context) > 0 {
		refs, err := c.uploadContext(ctx, spec.Context) // context.go
		if err != nil {
			return err
		}
		wire.Context = refs
	}
	sub := messages.SubmitJob{V: messages.WireVersion, JobID: jobID, Spec: wire}
	if err := c.pub.PublishJSON(ctx, bus.SubjectJobsSubmit, sub, bus.SubmitMsgID(jobID)); err != nil {
		return fmt.Errorf("submit job: %w", err)
	}
	return nil
}

// Result returns a finished job's result, or ErrNotFound while it runs or if
// it is unknown.
func (c *Client) Result(ctx context.Context, jobID string) (*messages.Result, error) {
	e, err := c.res.JobResults.Get(ctx, bus.JobKey(jobID))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	var r messages.Result
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return nil, fmt.Errorf("decode result: %w", err)
	}
	return &r, nil
}

// Status returns the result object of a job so far: the stored result when
// it is finished, else one built from its running state.
func (c *Client) Status(ctx context.Context, jobID string) (*messages.Result, error) {
	if r, err := c.Result(ctx, jobID); err == nil || !errors.Is(err, ErrNotFound) {
		return r, err
	}
	s, err := coordinator.LoadState(ctx, c.res.JobState, jobID)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	r := machine.ResultOf(s)
	return &r, nil
}

// Watch calls fn for each progress event of the job, from the first, until
// the job finishes (then it returns the result), fn returns an error, or ctx ends.
func (c *Client) Watch(ctx context.Context, jobID string, fn func(messages.Event) error) (*messages.Result, error) {
	return c.WatchFrom(ctx, jobID, 0, func(_ uint64, e messages.Event) error {
		if fn == nil {
			return nil
		}
		return fn(e)
	})
}

func (c *Client) waitResult(ctx context.Context, jobID string) (*messages.Result, error) {
	for {
		r, err := c.Result(ctx, jobID)
		if !errors.Is(err, ErrNotFound) {
			return r, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
