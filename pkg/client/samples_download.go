package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/autocoder/autocoder/pkg/messages"
)

// OriginalSamplesDir is the folder under Download's dir that holds the
// samples a job was generated from: not an identifier, so no output's name
// can take it.
const OriginalSamplesDir = "original-samples"

// Download writes what a result names to dir: its File and Dir outputs as
// dir/<name> (DownloadOutputs), and the samples it was generated from as
// dir/original-samples/<file_name> (DownloadSamples). It returns the
// paths it wrote.
func (c *Client) Download(ctx context.Context, res *messages.Result, dir string) ([]string, error) {
	written, err := c.DownloadOutputs(ctx, res, dir)
	if err != nil {
		return written, err
	}
	samples, err := c.DownloadSamples(ctx, res, filepath.Join(dir, OriginalSamplesDir))
	return append(written, samples...), err
}

// OriginalSamples are the samples of a result, by name: its
// original_samples, or those its spec names (a result stored before the
// field existed). Each name is checked; an entry that is not a sample of
// the job's, or not a plain file, is left out.
func OriginalSamples(res *messages.Result) ([]messages.SampleRef, error) {
	var out []messages.SampleRef
	if res.Spec == nil {
		return nil, nil
	}
	if len(res.OriginalSamples) == 0 {
		for _, name := range sortedNames(res.Spec.Samples) {
			out = append(out, messages.SampleRef{Name: name, Object: res.Spec.Samples[name]})
		}
	} else {
		out = append(out, res.OriginalSamples...)
	}
	for i, s := range out {
		if !messages.ValidName(s.Name) {
			return nil, fmt.Errorf("sample %q: not a sample name (a Python identifier); nothing was downloaded", s.Name)
		}
		ref, ok := messages.ParseObjectRef(s.Object)
		if !ok || s.Dir {
			return nil, fmt.Errorf("sample %s: %q is not an object reference of a file", s.Name, s.Object)
		}
		out[i].FileName = s.Name + ref.Ext
	}
	return out, nil
}

// DownloadSamples writes the samples a job was generated from
// (OriginalSamples) into dir as dir/<name><ext>, from the samples object
// store, each checked against its hash, and returns the paths it wrote. An
// existing file of that name is replaced; a directory there is an error.
func (c *Client) DownloadSamples(ctx context.Context, res *messages.Result, dir string) ([]string, error) {
	samples, err := OriginalSamples(res)
	if err != nil || len(samples) == 0 {
		return nil, err
	}
	store, err := c.stores.samples(ctx)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var written []string
	for _, s := range samples {
		ref, _ := messages.ParseObjectRef(s.Object)
		if err := writeFileFrom(root, s.FileName, func(f *os.File) error {
			return copyChecked(ctx, store, messages.ObjectStoreSamples, ref, f)
		}); err != nil {
			return written, fmt.Errorf("download sample %s: %w", s.Name, err)
		}
		written = append(written, filepath.Join(dir, s.FileName))
	}
	return written, nil
}

// writeFileFrom writes root/name through a temporary file beside it,
// filled by fill, renamed into place once complete; a directory at name is
// not replaced.
func writeFileFrom(root *os.Root, name string, fill func(*os.File) error) error {
	tmp, f, err := createTemp(root, "."+name+".part-")
	if err != nil {
		return err
	}
	defer root.Remove(tmp) // fails harmlessly once renamed
	err = fill(f)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if fi, err := root.Lstat(name); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory; not replaced by a file", name)
	}
	return root.Rename(tmp, name)
}

// ErrNoSample means a result names no original sample of that name.
var ErrNoSample = errors.New("client: no such original sample")

// WriteSample writes the original sample name of res (OriginalSamples) to
// w, checked against its hash, for a download over HTTP. It returns the
// sample's file name (name plus its extension) through fileName before
// writing anything; an object whose content does not match its hash is an
// error after the bytes were written (the caller must then abort).
func (c *Client) WriteSample(ctx context.Context, res *messages.Result, name string, fileName func(string), w io.Writer) error {
	samples, err := OriginalSamples(res)
	if err != nil {
		return err
	}
	for _, s := range samples {
		if s.Name != name {
			continue
		}
		store, err := c.stores.samples(ctx)
		if err != nil {
			return err
		}
		ref, _ := messages.ParseObjectRef(s.Object)
		fileName(s.FileName)
		return copyChecked(ctx, store, messages.ObjectStoreSamples, ref, w)
	}
	return ErrNoSample
}
