package client

import (
	"context"
	"fmt"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Cancel asks the coordinator to cancel job jobID for reason, and returns
// the job's result object as it was: ErrNotFound for a job nobody knows; a
// finished one is returned as it is and nothing is sent, since it cannot be
// cancelled. The cancellation itself is asynchronous: Wait returns the
// result that says who cancelled the job and when: "nats:<user>" for a
// client with an Identity (the server vouches for it), else by
// ("cli:<user>@<host>", "http:<token name>"), believed only from
// autocoder's coordinator role.
func (c *Client) Cancel(ctx context.Context, jobID, by, reason string) (*messages.Result, error) {
	if err := checkCancel(jobID, by, reason); err != nil {
		return nil, err
	}
	res, err := c.Status(ctx, jobID)
	if err != nil || res.Status != messages.StatusRunning {
		return res, err
	}
	return res, c.SendCancel(ctx, jobID, by, reason)
}

// SendCancel publishes the request to cancel job jobID without looking at
// the job first (Cancel does): cancelling a finished or unknown job
// changes nothing.
func (c *Client) SendCancel(ctx context.Context, jobID, by, reason string) error {
	if err := checkCancel(jobID, by, reason); err != nil {
		return err
	}
	req := messages.CancelJob{V: messages.WireVersion, JobID: jobID, By: by, Reason: reason}
	subject := messages.SubjectJobsCancel
	if c.cfg.Identity != "" {
		subject, req.By = messages.CancelSubject(c.cfg.Identity), ""
	}
	if err := c.pub.PublishJSON(ctx, subject, req, messages.CancelMsgID(jobID)); err != nil {
		return fmt.Errorf("cancel job %s: %w", jobID, err)
	}
	return nil
}

func checkCancel(jobID, by, reason string) error {
	if !messages.ValidJobID(jobID) {
		return fmt.Errorf("client: invalid job id %q", jobID)
	}
	req := messages.CancelJob{JobID: jobID, By: by, Reason: reason}
	return req.Validate()
}
