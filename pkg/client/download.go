package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/pkg/messages"
)

// A result comes off the network, and whoever can write to the results
// bucket chooses its output names and manifests. So DownloadOutputs checks
// every name and manifest entry before it writes anything, and does all its
// file system work through an os.Root opened on dir: no name, entry or
// symbolic link met on the way can resolve outside dir, and nothing is
// removed but the client's own temporary files and an earlier download of
// the same Dir output.

// DownloadOutputs writes the File and Dir outputs of a result into dir,
// as dir/<name>, from the outputs object store, and returns the paths it
// wrote. A file's content is checked against its hash. An existing file
// dir/<name> is replaced by a File output, an existing directory by a Dir
// output; anything else in the way is an error. A result with an output
// name that is not an identifier downloads nothing.
func (c *Client) DownloadOutputs(ctx context.Context, res *messages.Result, dir string) ([]string, error) {
	outs, err := downloadable(res)
	if err != nil || len(outs) == 0 {
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
	for _, o := range outs {
		if o.kind == messages.TypeFile {
			err = c.downloadFile(ctx, root, o.ref, o.name)
		} else {
			err = c.downloadDir(ctx, root, o.ref, o.name)
		}
		if err != nil {
			return written, fmt.Errorf("download output %s: %w", o.name, err)
		}
		written = append(written, filepath.Join(dir, o.name))
	}
	return written, nil
}

// output is one File or Dir output to download.
type output struct {
	name string
	kind messages.Type
	ref  messages.ObjectRef
}

// downloadable lists the File and Dir outputs of res that were stored, in
// name order, after checking every name.
func downloadable(res *messages.Result) ([]output, error) {
	if res.Spec == nil {
		return nil, nil
	}
	var outs []output
	for _, name := range slices.Sorted(maps.Keys(res.Outputs)) {
		t := res.Spec.Outputs[name]
		if t != messages.TypeFile && t != messages.TypeDir {
			continue
		}
		if !messages.ValidName(name) {
			return nil, fmt.Errorf("output %q: not an output name (a Python identifier); nothing was downloaded", name)
		}
		ref, err := objectOf(res.Outputs[name])
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", name, err)
		}
		if ref != nil { // nil: stored by no one (a worker without an outputs store)
			outs = append(outs, output{name: name, kind: t, ref: *ref})
		}
	}
	return outs, nil
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

// downloadFile writes an object of the outputs store to root/name,
// through a temporary file beside it, checking its hash.
func (c *Client) downloadFile(ctx context.Context, root *os.Root, ref messages.ObjectRef, name string) error {
	return writeFileFrom(root, name, func(f *os.File) error { return c.streamObject(ctx, ref, f) })
}

// downloadDir rebuilds a Dir output from its manifest as root/name, in a
// temporary directory renamed into place once complete.
func (c *Client) downloadDir(ctx context.Context, root *os.Root, ref messages.ObjectRef, name string) error {
	m, err := c.manifest(ctx, ref)
	if err != nil {
		return err
	}
	tmp, err := mkdirTemp(root, "."+name+".part-")
	if err != nil {
		return err
	}
	defer root.RemoveAll(tmp) // does nothing once renamed
	sub, err := root.OpenRoot(tmp)
	if err != nil {
		return err
	}
	defer sub.Close()
	for _, d := range m.Dirs {
		if err := sub.MkdirAll(filepath.FromSlash(d), 0o755); err != nil {
			return err
		}
	}
	for _, f := range m.Files {
		if err := c.writeManifestFile(ctx, sub, f); err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	if fi, err := root.Lstat(name); err == nil {
		// Only a directory, an earlier download, is replaced; a file or a
		// symbolic link there is the user's, and left alone.
		if !fi.IsDir() {
			return fmt.Errorf("%s exists and is not a directory; not replaced", name)
		}
		if err := root.RemoveAll(name); err != nil {
			return err
		}
	}
	return root.Rename(tmp, name)
}

func (c *Client) writeManifestFile(ctx context.Context, sub *os.Root, mf messages.ManifestFile) error {
	p := filepath.FromSlash(mf.Path)
	if err := sub.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := sub.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	err = c.copyObject(ctx, messages.ObjectRef{SHA256: mf.SHA256}, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// manifest fetches a Dir output's manifest and checks every entry before
// anything is written.
func (c *Client) manifest(ctx context.Context, ref messages.ObjectRef) (*messages.DirManifest, error) {
	store, err := c.stores.outputs(ctx)
	if err != nil {
		return nil, err
	}
	b, err := readObject(ctx, store, messages.ObjectStoreOutputs, ref, maxManifest)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", ref, err)
	}
	var m messages.DirManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", ref, err)
	}
	for _, d := range m.Dirs {
		if err := checkEntry(d); err != nil {
			return nil, err
		}
	}
	for _, f := range m.Files {
		if err := checkEntry(f.Path); err != nil {
			return nil, err
		}
		if _, ok := messages.ParseObjectRef("sha256:" + f.SHA256); !ok {
			return nil, fmt.Errorf("manifest file %q has no content hash", f.Path)
		}
	}
	return &m, nil
}

// checkEntry accepts a manifest path only if it is relative, clean
// ("a/b", not "a//b" or "./a") and has no ".." component.
func checkEntry(p string) error {
	if p == "" || p == "." || path.IsAbs(p) || path.Clean(p) != p || strings.ContainsRune(p, 0) {
		return fmt.Errorf("manifest path %q is outside the directory or not a clean relative path", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return fmt.Errorf("manifest path %q is outside the directory", p)
		}
	}
	return nil
}

// maxManifest bounds a Dir output's manifest.
const maxManifest = 64 << 20

// copyObject copies an object of the outputs store to f, checking its hash.
func (c *Client) copyObject(ctx context.Context, ref messages.ObjectRef, f *os.File) error {
	if err := c.streamObject(ctx, ref, f); err != nil {
		return err
	}
	return f.Chmod(0o644) // whatever the umask: a download is for reading
}

// createTemp creates a new file with a random name starting with prefix
// in root, as os.CreateTemp does in a directory.
func createTemp(root *os.Root, prefix string) (string, *os.File, error) {
	for range 10 {
		name := prefix + randomSuffix()
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			return name, f, err
		}
	}
	return "", nil, errors.New("cannot create a temporary file")
}

// mkdirTemp creates a new directory (mode 0755) with a random name
// starting with prefix in root.
func mkdirTemp(root *os.Root, prefix string) (string, error) {
	for range 10 {
		name := prefix + randomSuffix()
		err := root.Mkdir(name, 0o755)
		if err == nil {
			return name, root.Chmod(name, 0o755)
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", errors.New("cannot create a temporary directory")
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}
