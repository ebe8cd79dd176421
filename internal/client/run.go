package client

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/pkg/messages"
)

// ErrNoTask means no task with that name is registered.
var ErrNoTask = errors.New("client: no such task")

// Run submits jobID as a run of the finished job req.FromJob's script on
// new data (messages.SubmitJob.Run). files maps sample names and File or Dir
// input names to local paths: each file is uploaded to the samples object
// store, each directory as a tar archive, and set in req.Samples. Follow
// the run with Watch, like any job.
func (c *Client) Run(ctx context.Context, jobID string, req messages.RunRequest, files map[string]string) error {
	if !bus.ValidJobID(jobID) {
		return fmt.Errorf("invalid job id %q", jobID)
	}
	if len(files) > 0 {
		samples := map[string]string{}
		for k, v := range req.Samples {
			samples[k] = v
		}
		for _, name := range slices.Sorted(maps.Keys(files)) {
			ref, err := c.upload(ctx, name, files[name])
			if err != nil {
				return err
			}
			samples[name] = ref
		}
		req.Samples = samples
	}
	sub := messages.SubmitJob{V: messages.WireVersion, JobID: jobID, Run: &req}
	if err := c.pub.PublishJSON(ctx, bus.SubjectJobsSubmit, sub, bus.SubmitMsgID(jobID)); err != nil {
		return fmt.Errorf("submit run: %w", err)
	}
	return nil
}

// upload puts a file, or a directory as a tar archive, in the samples store.
func (c *Client) upload(ctx context.Context, name, p string) (string, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if !fi.IsDir() {
		ref, err := c.samples.Put(ctx, name, p)
		return ref.Object, err
	}
	tmp, err := os.CreateTemp("", "autocoder-dir-*.tar")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	err = tarDir(tmp, p)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	ref, err := c.samples.Put(ctx, name, tmp.Name())
	return ref.Object, err
}

// tarDir writes the directory at root as a tar archive: directories and
// regular files, in lexical order, with fixed modes and times, so the same
// tree always gives the same bytes (and the same object). Anything else
// (a symbolic link, a socket) is an error.
func tarDir(w io.Writer, root string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		name := filepath.ToSlash(rel)
		hdr := &tar.Header{Name: name, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		switch {
		case d.IsDir():
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, name+"/", 0o755
			return tw.WriteHeader(hdr)
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, 0o644, fi.Size()
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(tw, io.LimitReader(f, fi.Size()))
			return err
		}
		return fmt.Errorf("%s is not a regular file or directory", p)
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// RegisterTask names the finished, successful job jobID as a reusable
// task, replacing a task of that name this client's identity owns. The
// coordinator keeps tasks (internal/coordinator/tasks.go): a task owned by
// another is refused (ErrTaskForbidden), a bad name or job is a
// *messages.FieldError.
func (c *Client) RegisterTask(ctx context.Context, name, jobID, description string) (*messages.Task, error) {
	if !messages.ValidTaskName(name) {
		return nil, &messages.FieldError{Field: "task", Msg: fmt.Sprintf("%q is not a task name (letters, digits, '_' and '-', at most 63)", name)}
	}
	r, err := c.taskRequest(ctx, bus.TaskRegister, messages.TaskRequest{Name: name, JobID: jobID, Description: description})
	if err != nil {
		return nil, err
	}
	return r.Task, nil
}

// ErrTaskForbidden means the task belongs to another owner.
var ErrTaskForbidden = errors.New("client: the task belongs to another owner")

// taskRequest asks the coordinator to register or delete a task, as this
// client's identity, and maps its refusal to an error.
func (c *Client) taskRequest(ctx context.Context, op string, req messages.TaskRequest) (messages.TaskReply, error) {
	req.V = messages.WireVersion
	var r messages.TaskReply
	err := c.Request(ctx, bus.TaskSubject(op, c.identity), req, &r)
	if errors.Is(err, ErrNoCoordinator) && c.identity == "" {
		// No coordinator runs, and this client is the admin (an
		// in-process connection to the store it opened, as `submit task`
		// on the local state directory): keep the task itself.
		r, err = c.taskHere(ctx, op, req), nil
	}
	if err != nil {
		return r, err
	}
	switch r.Kind {
	case "":
		return r, nil
	case messages.ReplyNotFound:
		return r, fmt.Errorf("%w: %s", ErrNoTask, r.Error)
	case messages.ReplyForbidden:
		return r, fmt.Errorf("%w: %s", ErrTaskForbidden, r.Error)
	case messages.ReplyInvalid:
		return r, &messages.FieldError{Field: "task", Msg: r.Error}
	}
	return r, fmt.Errorf("task %s: %s", req.Name, r.Error)
}

// Task returns a registered task, or ErrNoTask.
func (c *Client) Task(ctx context.Context, name string) (*messages.Task, error) {
	if !messages.ValidTaskName(name) {
		return nil, ErrNoTask
	}
	e, err := c.res.Tasks.Get(ctx, bus.TaskKey(name))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, ErrNoTask
	}
	if err != nil {
		return nil, err
	}
	var t messages.Task
	if err := json.Unmarshal(e.Value(), &t); err != nil {
		return nil, fmt.Errorf("task %s: %w", name, err)
	}
	return &t, nil
}

// Tasks lists the registered tasks by name.
func (c *Client) Tasks(ctx context.Context) ([]messages.Task, error) {
	lister, err := c.res.Tasks.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	defer lister.Stop()
	var out []messages.Task
	for key := range lister.Keys() {
		t, err := c.Task(ctx, key)
		if errors.Is(err, ErrNoTask) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// DeleteTask removes a task this client's identity owns; the job it names
// is left alone.
func (c *Client) DeleteTask(ctx context.Context, name string) error {
	if !messages.ValidTaskName(name) {
		return ErrNoTask
	}
	_, err := c.taskRequest(ctx, bus.TaskDelete, messages.TaskRequest{Name: name})
	return err
}

// taskHere does a task request as the admin with the coordinator's own
// rules (coordinator.RegisterTask, DeleteTask) on this client's stores.
func (c *Client) taskHere(ctx context.Context, op string, req messages.TaskRequest) messages.TaskReply {
	coord, err := coordinator.New(coordinator.Config{States: c.res.JobState, Results: c.res.JobResults, Publisher: c.pub, Resources: c.res})
	if err == nil {
		if op == bus.TaskRegister {
			var t *messages.Task
			if t, err = coord.RegisterTask(ctx, req, "", true); err == nil {
				return messages.TaskReply{V: messages.WireVersion, Task: t}
			}
		} else {
			err = coord.DeleteTask(ctx, req.Name, "", true)
		}
	}
	return coordinator.TaskReplyOf(err)
}
