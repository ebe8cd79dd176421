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

	"github.com/autocoder/autocoder/pkg/messages"
)

// Run submits jobID as a run of the finished job req.FromJob's script on
// new data (messages.SubmitJob.Run), with req.Options over the job's
// settings. files maps sample names and File or Dir input names to local
// paths: each file is uploaded to the samples object store, each directory
// as a tar archive, and set in req.Samples. A path that is a symbolic
// link is refused (give its target), as is a link inside a directory. Follow the run with Watch,
// like any job.
func (c *Client) Run(ctx context.Context, jobID string, req messages.RunRequest, files map[string]string) error {
	if !messages.ValidJobID(jobID) {
		return fmt.Errorf("client: invalid job id %q", jobID)
	}
	if req.Options != nil {
		if err := req.Options.Validate(); err != nil {
			return err
		}
	}
	if len(files) > 0 {
		samples := maps.Clone(req.Samples)
		if samples == nil {
			samples = map[string]string{}
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
	if err := c.pub.PublishJSON(ctx, messages.SubjectJobsSubmit, sub, messages.SubmitMsgID(jobID)); err != nil {
		return fmt.Errorf("submit run: %w", err)
	}
	return nil
}

// RunTask submits jobID as a run of task name's script: Run with the task's
// defaults under opts (nil: the defaults alone).
func (c *Client) RunTask(ctx context.Context, jobID, name string, args map[string]string, files map[string]string, opts *messages.RunOptions) error {
	t, err := c.Task(ctx, name)
	if err != nil {
		return err
	}
	return c.Run(ctx, jobID, messages.RunRequest{FromJob: t.JobID, Args: args, Options: opts.Over(t.Defaults)}, files)
}

// upload puts a file, or a directory as a tar archive, in the samples store.
// A symbolic link is refused, as PutFile refuses one: a directory walk
// does not descend into a root that is a link, so it would upload an
// empty archive. Resolve links first (the CLI's jobfile.LocalFiles does,
// under --allow-outside).
func (c *Client) upload(ctx context.Context, name, p string) (string, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return "", fmt.Errorf("%s: %s is a symbolic link: give the path of its target", name, p)
	}
	if !fi.IsDir() {
		ref, err := c.PutSampleFile(ctx, name, p)
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
	ref, err := c.PutSampleFile(ctx, name, tmp.Name())
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

// RegisterTask names the finished, successful job jobID as a reusable task,
// with defaults (may be nil) as the settings of its runs. The coordinator
// keeps tasks for their owners (docs/api.md): it replaces a task of that
// name only for the identity that registered it (or the admin), and
// refuses another's with ErrTaskForbidden; a bad name, job or default is
// a *messages.FieldError; ErrNoCoordinator when none answers.
func (c *Client) RegisterTask(ctx context.Context, name, jobID, description string, defaults *messages.RunOptions) (*messages.Task, error) {
	return c.registerTask(ctx, name, jobID, description, defaults, true)
}

// CreateTask is RegisterTask that never replaces a task: a name already
// registered is ErrTaskExists (checked and written in one step, so two
// creators of one name cannot both win).
func (c *Client) CreateTask(ctx context.Context, name, jobID, description string, defaults *messages.RunOptions) (*messages.Task, error) {
	return c.registerTask(ctx, name, jobID, description, defaults, false)
}

func (c *Client) registerTask(ctx context.Context, name, jobID, description string, defaults *messages.RunOptions, replace bool) (*messages.Task, error) {
	if !messages.ValidTaskName(name) {
		return nil, &messages.FieldError{Field: "task", Msg: fmt.Sprintf("%q is not a task name (letters, digits, '_' and '-', at most 63)", name)}
	}
	if defaults != nil {
		if err := defaults.Validate(); err != nil {
			return nil, err
		}
		if defaults.IsZero() {
			defaults = nil
		}
	}
	r, err := c.TaskRequest(ctx, messages.TaskRegister, messages.TaskRequest{Name: name, JobID: jobID, Description: description, Defaults: defaults, Create: !replace})
	if err != nil {
		return nil, err
	}
	return r.Task, nil
}

// ErrTaskForbidden means the task belongs to another owner.
var ErrTaskForbidden = errors.New("client: the task belongs to another owner")

// TaskRequest asks the coordinator to register or delete (op) a task as
// this client's identity (messages.TaskSubject), and maps its refusal to
// an error: ErrNoTask, ErrTaskForbidden, a *messages.FieldError.
func (c *Client) TaskRequest(ctx context.Context, op string, req messages.TaskRequest) (messages.TaskReply, error) {
	req.V = messages.WireVersion
	if c.cfg.Identity == "" {
		req.Owner = c.owner
	}
	var r messages.TaskReply
	if err := c.Request(ctx, messages.TaskSubject(op, c.cfg.Identity), req, &r); err != nil {
		return r, err
	}
	return r, TaskReplyError(req.Name, r)
}

// TaskReplyError is the error a TaskReply reports, nil for none.
func TaskReplyError(name string, r messages.TaskReply) error {
	switch r.Kind {
	case "":
		return nil
	case messages.ReplyNotFound:
		return fmt.Errorf("%w: %s", ErrNoTask, r.Error)
	case messages.ReplyForbidden:
		return fmt.Errorf("%w: %s", ErrTaskForbidden, r.Error)
	case messages.ReplyExists:
		return fmt.Errorf("%w: %s", ErrTaskExists, r.Error)
	case messages.ReplyInvalid:
		field, msg := "task", r.Error
		if r.Field != "" {
			field = r.Field
		}
		return &messages.FieldError{Field: field, Msg: msg}
	}
	return fmt.Errorf("task %s: %s", name, r.Error)
}

// Task returns a registered task, or ErrNoTask.
func (c *Client) Task(ctx context.Context, name string) (*messages.Task, error) {
	if !messages.ValidTaskName(name) {
		return nil, ErrNoTask
	}
	kv, err := c.stores.tasks(ctx)
	if err != nil {
		return nil, err
	}
	e, err := kv.Get(ctx, messages.TaskKey(name))
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
	kv, err := c.stores.tasks(ctx)
	if err != nil {
		return nil, err
	}
	lister, err := kv.ListKeys(ctx)
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
	_, err := c.TaskRequest(ctx, messages.TaskDelete, messages.TaskRequest{Name: name})
	return err
}

func sortedNames[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
