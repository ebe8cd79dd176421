package client

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/sandbox"
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
		for _, name := range sortedNames(files) {
			ref, err := c.upload(ctx, name, files[name])
			if err != nil {
				return err
			}
			samples[name] = ref
		}
		req.Samples = samples
	}
	sub := messages.SubmitJob{V: messages.SchemaVersion, JobID: jobID, Run: &req}
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

// DownloadOutputs writes the File and Dir outputs of a result into dir,
// as dir/<name>, from the outputs object store, and returns the paths it
// wrote. A file's content is checked against its hash. An existing
// dir/<name> is replaced.
func (c *Client) DownloadOutputs(ctx context.Context, res *messages.Result, dir string) ([]string, error) {
	if res.Spec == nil {
		return nil, nil
	}
	var written []string
	for _, name := range sortedNames(res.Outputs) {
		t := res.Spec.Outputs[name]
		if t != messages.TypeFile && t != messages.TypeDir {
			continue
		}
		ref, err := objectOf(res.Outputs[name])
		if err != nil {
			return written, fmt.Errorf("output %s: %w", name, err)
		}
		if ref == nil {
			continue // stored by no one (a worker without an outputs store)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return written, err
		}
		dst := filepath.Join(dir, name)
		if t == messages.TypeFile {
			err = c.downloadFile(ctx, *ref, dst)
		} else {
			err = c.downloadDir(ctx, *ref, dir, name)
		}
		if err != nil {
			return written, fmt.Errorf("download output %s: %w", name, err)
		}
		written = append(written, dst)
	}
	return written, nil
}

// objectOf reads the object reference of a File or Dir output's value.
func objectOf(v any) (*messages.ObjectRef, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("value %v is not a file or directory reference", v)
	}
	s, _ := m["object"].(string)
	if s == "" {
		return nil, nil
	}
	ref, ok := messages.ParseObjectRef(s)
	if !ok {
		return nil, fmt.Errorf("bad object reference %q", s)
	}
	return &ref, nil
}

// downloadFile writes an object to dst (through a temporary file beside
// it), checking its hash.
func (c *Client) downloadFile(ctx context.Context, ref messages.ObjectRef, dst string) error {
	obj, err := c.res.Outputs.Get(ctx, ref.ObjectName())
	if err != nil {
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			return fmt.Errorf("object %s is no longer in the outputs store", ref)
		}
		return err
	}
	defer obj.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".part-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(tmp, h), obj)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != ref.SHA256 {
		return fmt.Errorf("object %s has content hash %s", ref, got)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	if fi, err := os.Lstat(dst); err == nil && fi.IsDir() {
		if err := os.RemoveAll(dst); err != nil {
			return err
		}
	}
	return os.Rename(tmp.Name(), dst)
}

// downloadDir rebuilds a Dir output from its manifest as dir/name.
func (c *Client) downloadDir(ctx context.Context, ref messages.ObjectRef, dir, name string) error {
	b, err := c.res.Outputs.GetBytes(ctx, ref.ObjectName())
	if err != nil {
		return fmt.Errorf("manifest %s: %w", ref, err)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != ref.SHA256 {
		return fmt.Errorf("manifest %s does not match its hash", ref)
	}
	var m sandbox.DirManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("manifest %s: %w", ref, err)
	}
	tmp, err := os.MkdirTemp(dir, "."+name+".part-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	local := func(rel string) (string, error) {
		clean := path.Clean(rel)
		if rel == "" || path.IsAbs(clean) || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
			return "", fmt.Errorf("manifest path %q is outside the directory", rel)
		}
		return filepath.Join(tmp, filepath.FromSlash(clean)), nil
	}
	for _, d := range m.Dirs {
		p, err := local(d)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
	}
	for _, f := range m.Files {
		p, err := local(f.Path)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := c.downloadFile(ctx, messages.ObjectRef{SHA256: f.SHA256}, p); err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	dst := filepath.Join(dir, name)
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// RegisterTask names the finished, successful job jobID as a reusable task
// (replacing a task of that name).
func (c *Client) RegisterTask(ctx context.Context, name, jobID, description string) (*messages.Task, error) {
	if !messages.ValidTaskName(name) {
		return nil, &messages.FieldError{Field: "task", Msg: fmt.Sprintf("%q is not a task name (letters, digits, '_' and '-', at most 63)", name)}
	}
	res, err := c.Result(ctx, jobID)
	if errors.Is(err, ErrNotFound) {
		return nil, &messages.FieldError{Field: "job", Msg: fmt.Sprintf("job %s is unknown or not finished", jobID)}
	}
	if err != nil {
		return nil, err
	}
	if !res.Success || res.Solution == nil || res.Spec == nil {
		return nil, &messages.FieldError{Field: "job", Msg: fmt.Sprintf("job %s did not succeed, so it has no tested script to keep", jobID)}
	}
	t := messages.Task{Name: name, JobID: jobID, Prompt: res.Spec.Prompt, Inputs: res.Spec.Inputs, Outputs: res.Spec.Outputs,
		Samples: sortedNames(res.Spec.Samples), CreatedAt: time.Now().UTC(), Description: description}
	b, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	if _, err := c.res.Tasks.Put(ctx, bus.TaskKey(name), b); err != nil {
		return nil, fmt.Errorf("register task %s: %w", name, err)
	}
	return &t, nil
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

// DeleteTask removes a task; the job it names is left alone.
func (c *Client) DeleteTask(ctx context.Context, name string) error {
	if _, err := c.Task(ctx, name); err != nil {
		return err
	}
	return c.res.Tasks.Delete(ctx, bus.TaskKey(name))
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
