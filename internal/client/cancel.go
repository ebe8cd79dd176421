package client

import (
	"context"
	"fmt"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Cancel asks the coordinator to cancel job jobID for reason, and returns
// the job's result object as it was: ErrNotFound for a job nobody knows; a
// finished one is returned as it is and nothing is sent, since it cannot be
// cancelled. The cancellation itself is asynchronous: WaitResult returns
// the result that says who cancelled the job and when. Who is this
// client's NATS identity (SetIdentity), "nats:<user>", which the server
// vouches for; without one, by (the HTTP API's "http:<token name>", a
// local run's "cli:<user>@<host>") on the coordinator role's subject.
func (c *Client) Cancel(ctx context.Context, jobID, by, reason string) (*messages.Result, error) {
	if !bus.ValidJobID(jobID) {
		return nil, fmt.Errorf("invalid job id %q", jobID)
	}
	req := messages.CancelJob{V: messages.WireVersion, JobID: jobID, By: by, Reason: reason}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	res, err := c.Status(ctx, jobID)
	if err != nil || res.Status != messages.StatusRunning {
		return res, err
	}
	subject := bus.SubjectJobsCancel
	if c.identity != "" {
		subject, req.By = bus.CancelSubject(c.identity), ""
	}
	if err := c.pub.PublishJSON(ctx, subject, req, bus.CancelMsgID(jobID)); err != nil {
		return nil, fmt.Errorf("cancel job %s: %w", jobID, err)
	}
	return res, nil
}

// WaitResult waits for job jobID's final result object until ctx ends.
func (c *Client) WaitResult(ctx context.Context, jobID string) (*messages.Result, error) {
	return c.waitResult(ctx, jobID)
}
