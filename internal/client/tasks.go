package client

import (
	"context"
	"errors"

	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/pkg/client"
	"github.com/autocoder/autocoder/pkg/messages"
)

// ErrTaskForbidden means the task belongs to another owner.
var ErrTaskForbidden = client.ErrTaskForbidden

// RegisterTask is pkg/client's RegisterTask, which asks the coordinator;
// when none answers and this client is the admin (an in-process
// connection to the store it opened, as `submit task` on the local state
// directory), it keeps the task itself with the coordinator's rules (for
// its TaskOwner, if any). A producer's client never writes the bucket.
func (c *Client) RegisterTask(ctx context.Context, name, jobID, description string, defaults *messages.RunOptions) (*messages.Task, error) {
	t, err := c.Client.RegisterTask(ctx, name, jobID, description, defaults)
	return c.registerHere(ctx, t, err, messages.TaskRequest{Name: name, JobID: jobID, Description: description, Defaults: defaults})
}

// CreateTask is pkg/client's CreateTask (a name registered already is
// refused), with RegisterTask's fallback.
func (c *Client) CreateTask(ctx context.Context, name, jobID, description string, defaults *messages.RunOptions) (*messages.Task, error) {
	t, err := c.Client.CreateTask(ctx, name, jobID, description, defaults)
	return c.registerHere(ctx, t, err, messages.TaskRequest{Name: name, JobID: jobID, Description: description, Defaults: defaults, Create: true})
}

// registerHere keeps the task itself when the coordinator's answer (t,
// err) says none answered and this client is the admin.
func (c *Client) registerHere(ctx context.Context, t *messages.Task, err error, req messages.TaskRequest) (*messages.Task, error) {
	if !c.keepsTasksHere(err) {
		return t, err
	}
	if req.Defaults.IsZero() {
		req.Defaults = nil
	}
	r := c.taskHere(ctx, messages.TaskRegister, req)
	return r.Task, client.TaskReplyError(req.Name, r)
}

// DeleteTask is pkg/client's DeleteTask, with RegisterTask's fallback.
func (c *Client) DeleteTask(ctx context.Context, name string) error {
	err := c.Client.DeleteTask(ctx, name)
	if !c.keepsTasksHere(err) {
		return err
	}
	return client.TaskReplyError(name, c.taskHere(ctx, messages.TaskDelete, messages.TaskRequest{Name: name}))
}

// keepsTasksHere: no coordinator answered and this client is the admin.
func (c *Client) keepsTasksHere(err error) bool {
	return errors.Is(err, ErrNoCoordinator) && c.Identity() == ""
}

// taskHere does a task request as the admin (or for its TaskOwner) with
// the coordinator's own rules (coordinator.RegisterTask, DeleteTask) on
// this client's stores.
func (c *Client) taskHere(ctx context.Context, op string, req messages.TaskRequest) messages.TaskReply {
	owner := c.TaskOwner()
	coord, err := coordinator.New(coordinator.Config{States: c.res.JobState, Results: c.res.JobResults, Publisher: c.pub, Resources: c.res})
	if err == nil {
		if op == messages.TaskRegister {
			var t *messages.Task
			if t, err = coord.RegisterTask(ctx, req, owner, owner == ""); err == nil {
				return messages.TaskReply{V: messages.WireVersion, Task: t}
			}
		} else {
			err = coord.DeleteTask(ctx, req.Name, owner, owner == "")
		}
	}
	return coordinator.TaskReplyOf(err)
}
