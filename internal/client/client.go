package client

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/internal/docsearch"
	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/pkg/client"
	"github.com/autocoder/autocoder/pkg/messages"
)

// The errors of pkg/client, for this package's callers.
var (
	ErrNotFound       = client.ErrNotFound
	ErrNoTask         = client.ErrNoTask
	ErrTaskExists     = client.ErrTaskExists
	ErrNoCoordinator  = client.ErrNoCoordinator
	ErrSampleTooLarge = client.ErrSampleTooLarge
	ErrNoDeadLetter   = client.ErrNoDeadLetter
	ErrNoPauseSwitch  = client.ErrNoPauseSwitch
	ErrNoOutput       = client.ErrNoOutput
	ErrNoSample       = client.ErrNoSample
	ErrNoFile         = client.ErrNoFile
)

// Publisher publishes JSON on JetStream with a de-duplication ID.
type Publisher = client.Publisher

// Client is pkg/client's Client over autocoder's own provisioned
// resources and publisher, plus the readers of the coordinator's internal
// records that a program outside autocoder has no business with: a running
// job's state (Status, Running), its iterations and the job list.
type Client struct {
	*client.Client
	res *bus.Resources
	pub Publisher
}

// New returns a client over provisioned resources. Context paths of a
// spec are loaded with docsearch.Load.
func New(js jetstream.JetStream, res *bus.Resources, pub Publisher) *Client {
	c := client.New(js, client.Config{
		Publisher:   pub,
		LoadContext: docsearch.Load,
		Stores: client.Stores{Results: res.JobResults, Index: res.JobIndex, Tasks: res.Tasks,
			Samples: res.Samples, Outputs: res.Outputs, Claims: res.Claims},
	})
	return &Client{Client: c, res: res, pub: pub}
}

// NewJobID returns a fresh job ID: time-ordered, then random.
func NewJobID() string { return client.NewJobID() }

// AsUser is a copy of the client that asks as NATS user name where the
// coordinator must know who asks (pkg/client's identity.go).
func (c *Client) AsUser(name string) *Client {
	return &Client{Client: c.Client.AsUser(name), res: c.res, pub: c.pub}
}

// AsAdmin is a copy of the client that asks as the admin.
func (c *Client) AsAdmin() *Client {
	return &Client{Client: c.Client.AsAdmin(), res: c.res, pub: c.pub}
}

// ForOwner is a copy of an admin client that keeps tasks for owner
// (pkg/client's ForOwner): the HTTP API's "http:<token name>".
func (c *Client) ForOwner(owner string) *Client {
	return &Client{Client: c.Client.ForOwner(owner), res: c.res, pub: c.pub}
}

// Submit is pkg/client's Submit after checkBound: a job the coordinator
// could not store is refused here, before anything is uploaded or queued.
func (c *Client) Submit(ctx context.Context, jobID string, spec messages.JobSpec) error {
	if !bus.ValidJobID(jobID) {
		return errors.New("client: invalid job id " + messages.QuoteName(jobID))
	}
	if err := checkBound(jobID, spec); err != nil { // bound.go
		return err
	}
	return c.Client.Submit(ctx, jobID, spec)
}

// Status returns the result object of a job so far: the stored result when
// it is finished, else one built from its running state (with its spec,
// stages and notes, which the job index does not hold).
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

// Cancel is client.Client.Cancel with the job's status read from its state.
func (c *Client) Cancel(ctx context.Context, jobID, by, reason string) (*messages.Result, error) {
	if !bus.ValidJobID(jobID) {
		return nil, errors.New("client: invalid job id " + messages.QuoteName(jobID))
	}
	req := messages.CancelJob{JobID: jobID, By: by, Reason: reason}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	res, err := c.Status(ctx, jobID)
	if err != nil || res.Status != messages.StatusRunning {
		return res, err
	}
	return res, c.SendCancel(ctx, jobID, by, reason)
}

// WaitResult waits for job jobID's final result object until ctx ends.
func (c *Client) WaitResult(ctx context.Context, jobID string) (*messages.Result, error) {
	return c.Wait(ctx, jobID)
}
