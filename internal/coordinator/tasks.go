package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Named tasks have an owner. A producer cannot write the tasks bucket
// (bus.PermissionsOf); it asks the coordinator on bus.TaskSubject(op,
// its name), which only it may publish on, so the subject says who asks.
// The coordinator registers the task with that owner, and replaces or
// deletes a task only for its owner, or for an admin: the coordinator
// role, which alone may publish on the subjects without a name. Every
// change is a compare-and-set on the task's revision, so two owners
// racing for a free name get it once.

// AdminOwner is the owner of a task registered on the admin subject.
const AdminOwner = "admin"

// ErrTaskNotFound and ErrTaskForbidden are the refusals of RegisterTask
// and DeleteTask that are not about a field.
var (
	ErrTaskNotFound  = errors.New("coordinator: no such task")
	ErrTaskForbidden = errors.New("coordinator: the task belongs to another owner")
	ErrTaskExists    = errors.New("coordinator: a task of that name is registered already")
)

// apiTask answers a request on a task subject.
func (c *Coordinator) apiTask(ctx context.Context, subject string, data []byte) any {
	op, owner, admin, ok := bus.ParseTaskSubject(subject)
	var req messages.TaskRequest
	err := messages.DecodeStrict(data, &req)
	forOwner := admin && req.Owner != ""
	if forOwner {
		// The coordinator role asks for someone it authenticated itself
		// (the HTTP API's "http:<token name>"): that owner's rights.
		owner, admin = req.Owner, false
	}
	switch {
	case !ok:
		err = fmt.Errorf("%q is not a task subject", subject)
	case err != nil:
	case req.Owner != "" && !forOwner:
		err = &messages.FieldError{Field: "owner", Msg: "only the coordinator role asks for another owner; a producer's subject says who it is"}
	case op == bus.TaskRegister:
		var t *messages.Task
		if t, err = c.RegisterTask(ctx, req, owner, admin); err == nil {
			return messages.TaskReply{V: messages.WireVersion, Task: t}
		}
	default:
		err = c.DeleteTask(ctx, req.Name, owner, admin)
	}
	return TaskReplyOf(err)
}

// TaskReplyOf is the TaskReply of RegisterTask's or DeleteTask's error.
func TaskReplyOf(err error) messages.TaskReply {
	r := messages.TaskReply{V: messages.WireVersion}
	if err == nil {
		return r
	}
	r.Error = err.Error()
	var fe *messages.FieldError
	switch {
	case errors.Is(err, ErrTaskNotFound):
		r.Kind = messages.ReplyNotFound
	case errors.Is(err, ErrTaskForbidden):
		r.Kind = messages.ReplyForbidden
	case errors.Is(err, ErrTaskExists):
		r.Kind = messages.ReplyExists
	case errors.As(err, &fe):
		r.Kind, r.Field, r.Error = messages.ReplyInvalid, fe.Field, fe.Msg
	default:
		r.Kind = messages.ReplyUnavailable
	}
	return r
}

// RegisterTask names the finished, successful job req.JobID as task
// req.Name, owned by owner (admin: owned by AdminOwner, and free to
// replace a task of any owner).
func (c *Coordinator) RegisterTask(ctx context.Context, req messages.TaskRequest, owner string, admin bool) (*messages.Task, error) {
	if c.cfg.Resources == nil {
		return nil, ErrNoAPI
	}
	if !messages.ValidTaskName(req.Name) {
		return nil, &messages.FieldError{Field: "name", Msg: fmt.Sprintf("%q is not a task name (letters, digits, '_' and '-', at most 63)", req.Name)}
	}
	e, err := c.cfg.Results.Get(ctx, bus.JobKey(req.JobID))
	if errors.Is(err, jetstream.ErrKeyNotFound) || !bus.ValidJobID(req.JobID) {
		return nil, &messages.FieldError{Field: "job_id", Msg: fmt.Sprintf("job %s is unknown or not finished", req.JobID)}
	}
	if err != nil {
		return nil, fmt.Errorf("load job %s: %w", req.JobID, err)
	}
	var res messages.Result
	if err := json.Unmarshal(e.Value(), &res); err != nil {
		return nil, fmt.Errorf("job %s: corrupt result: %w", req.JobID, err)
	}
	if !res.Success || res.Solution == nil || res.Spec == nil {
		return nil, &messages.FieldError{Field: "job_id", Msg: fmt.Sprintf("job %s did not succeed, so it has no tested script to keep", req.JobID)}
	}
	if req.Defaults != nil {
		if err := req.Defaults.Validate(); err != nil {
			return nil, err // its fields are options.*, as a run names them
		}
		if req.Defaults.IsZero() {
			req.Defaults = nil
		}
	}
	if admin {
		owner = AdminOwner
	}
	t := messages.Task{Name: req.Name, JobID: req.JobID, Prompt: res.Spec.Prompt, Inputs: res.Spec.Inputs, Outputs: res.Spec.Outputs,
		Samples: slices.Sorted(maps.Keys(res.Spec.Samples)), CreatedAt: c.cfg.Now().UTC(), Description: req.Description, Owner: owner, Defaults: req.Defaults}
	b, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	if req.Create {
		_, err = c.cfg.Resources.Tasks.Create(ctx, bus.TaskKey(req.Name), b)
		if errors.Is(err, jetstream.ErrKeyExists) {
			return nil, fmt.Errorf("%w: %s", ErrTaskExists, req.Name)
		}
		if err != nil {
			return nil, err
		}
		return &t, nil
	}
	rev, err := c.ownedTask(ctx, req.Name, owner, admin)
	switch {
	case errors.Is(err, ErrTaskNotFound):
		_, err = c.cfg.Resources.Tasks.Create(ctx, bus.TaskKey(req.Name), b)
	case err == nil:
		_, err = c.cfg.Resources.Tasks.Update(ctx, bus.TaskKey(req.Name), b, rev)
	}
	if errors.Is(err, jetstream.ErrKeyExists) {
		return nil, fmt.Errorf("%w: task %s changed meanwhile; ask again", ErrTaskForbidden, req.Name)
	}
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// DeleteTask removes task name for its owner (or an admin); the job it
// names is left alone.
func (c *Coordinator) DeleteTask(ctx context.Context, name, owner string, admin bool) error {
	if c.cfg.Resources == nil {
		return ErrNoAPI
	}
	if !messages.ValidTaskName(name) {
		return fmt.Errorf("%w: %q", ErrTaskNotFound, name)
	}
	rev, err := c.ownedTask(ctx, name, owner, admin)
	if err != nil {
		return err
	}
	err = c.cfg.Resources.Tasks.Delete(ctx, bus.TaskKey(name), jetstream.LastRevision(rev))
	if errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("%w: task %s changed meanwhile; ask again", ErrTaskForbidden, name)
	}
	return err
}

// ownedTask returns the revision of task name when owner may change it:
// ErrTaskNotFound when there is none, ErrTaskForbidden when another owns
// it. A task from before owners has none: only an admin changes it.
func (c *Coordinator) ownedTask(ctx context.Context, name, owner string, admin bool) (uint64, error) {
	e, err := c.cfg.Resources.Tasks.Get(ctx, bus.TaskKey(name))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, fmt.Errorf("%w: %q", ErrTaskNotFound, name)
	}
	if err != nil {
		return 0, fmt.Errorf("load task %s: %w", name, err)
	}
	var t messages.Task
	if err := json.Unmarshal(e.Value(), &t); err != nil && !admin {
		return 0, fmt.Errorf("task %s: corrupt: %w", name, err)
	}
	if !admin && t.Owner != owner {
		holder := t.Owner
		if holder == "" {
			holder = "nobody (registered before tasks had owners; an admin may change it)"
		}
		return 0, fmt.Errorf("%w: task %s is owned by %s", ErrTaskForbidden, name, holder)
	}
	return e.Revision(), nil
}
