package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/autocoder/autocoder/internal/sandbox"
)

// Files travel through the engine's archive API (PUT and GET
// /containers/{id}/archive) into and out of the container's anonymous
// volumes at /workspace, /var/inputs and /var/outputs: nothing of the
// worker's file system is mounted, so the engine may be remote.

// epoch is the mtime of every file copied in, so runs are reproducible.
var epoch = time.Unix(0, 0)

// filesTar is a tar of the workspace files, owned by the sandbox user (nil
// when there are none).
func filesTar(files map[string][]byte) ([]byte, error) {
	if len(files) == 0 {
		return nil, nil
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, filepath.ToSlash(filepath.Clean(name)))
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, name := range names {
		var parents []string
		for d := path.Dir(name); d != "." && !dirs[d]; d = path.Dir(d) {
			parents = append(parents, d)
			dirs[d] = true
		}
		for i := len(parents) - 1; i >= 0; i-- {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: parents[i] + "/", Mode: 0o755,
				Uid: sandboxUID, Gid: sandboxUID, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
				return nil, err
			}
		}
		data := files[filepath.FromSlash(name)]
		if data == nil {
			data = files[name]
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)),
			Uid: sandboxUID, Gid: sandboxUID, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// maxInputs caps what a run's inputs may add up to.
const maxInputs = 1 << 30

// inputsTar is a tar of the inputs: regular files and directories
// (following symlinks at the top only), owned by root and read-only, so the
// sandbox user can read but neither change nor remove them.
func inputsTar(inputs map[string]string) ([]byte, error) {
	names := make([]string, 0, len(inputs))
	for name := range inputs {
		names = append(names, name)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	var total int64
	for _, name := range names {
		src, err := filepath.Abs(inputs[name])
		if err != nil {
			return nil, fmt.Errorf("sandbox: input %s: %w", name, err)
		}
		if _, err := os.Stat(src); err != nil {
			return nil, fmt.Errorf("sandbox: input %s: %w", name, err)
		}
		err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(src, p)
			if err != nil {
				return err
			}
			target := path.Join(name, filepath.ToSlash(rel))
			fi, err := os.Stat(p)
			if err != nil {
				return nil // a dangling link: nothing to read
			}
			switch {
			case fi.IsDir():
				return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: target + "/", Mode: 0o555,
					ModTime: fi.ModTime(), Format: tar.FormatPAX})
			case fi.Mode().IsRegular():
				if total += fi.Size(); total > maxInputs {
					return fmt.Errorf("inputs exceed %d bytes", int64(maxInputs))
				}
				f, err := os.Open(p)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: target, Mode: 0o444,
					Size: fi.Size(), ModTime: fi.ModTime(), Format: tar.FormatPAX}); err != nil {
					return err
				}
				_, err = io.CopyN(tw, f, fi.Size())
				return err
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("sandbox: copy input %s: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// copyIn extracts a tar into dir of the container.
func (b *Backend) copyIn(ctx context.Context, id, dir string, archive []byte) error {
	if archive == nil {
		return nil
	}
	// CopyUIDGID would chown everything to the container's user (Docker and
	// Podman alike); without it the owners in the tar headers are kept.
	err := b.cli.CopyToContainer(ctx, id, dir, bytes.NewReader(archive), container.CopyToContainerOptions{})
	if err != nil {
		return fmt.Errorf("docker: copy files into %s: %w", dir, err)
	}
	return nil
}

// collectFiles reads the named workspace files: regular files only, and
// never through a symlink, whether the name's last component or a
// directory on the way (the engine would resolve those inside the
// container, where they still could reach files the run should not return).
func (b *Backend) collectFiles(ctx context.Context, id string, names []string) (map[string][]byte, error) {
	if len(names) == 0 {
		return nil, nil
	}
	out := map[string][]byte{}
	budget := int64(sandbox.MaxCollected)
	for _, name := range names {
		name = filepath.ToSlash(filepath.Clean(name))
		if !b.noLinksOnTheWay(ctx, id, name) {
			continue
		}
		data, ok, err := b.readFile(ctx, id, sandbox.WorkspaceDir+"/"+name, budget)
		if err != nil {
			return nil, err
		}
		if ok {
			budget -= int64(len(data))
			out[name] = data
		}
	}
	return out, nil
}

// noLinksOnTheWay reports whether every directory between /workspace and
// name is a real directory, and name a regular file, none of them a
// symlink. (The engine resolves symlinks inside the container, but Podman
// follows even the last one, and the container has files of its own the
// run should not return.) Nothing of the run is alive any more, so what
// this sees is what the copy will read.
func (b *Backend) noLinksOnTheWay(ctx context.Context, id, name string) bool {
	p := sandbox.WorkspaceDir
	parts := strings.Split(name, "/")
	for i, part := range parts {
		p += "/" + part
		st, err := b.cli.ContainerStatPath(ctx, id, p)
		if err != nil || st.Mode&fs.ModeSymlink != 0 || (st.LinkTarget != "" && st.LinkTarget != p) {
			return false
		}
		last := i == len(parts)-1
		if (!last && !st.Mode.IsDir()) || (last && !st.Mode.IsRegular()) {
			return false
		}
	}
	return true
}

// readFile reads one regular file of at most limit bytes from the
// container; ok is false when it is missing, not a regular file or too big.
func (b *Backend) readFile(ctx context.Context, id, p string, limit int64) (data []byte, ok bool, err error) {
	rc, _, err := b.cli.CopyFromContainer(ctx, id, p)
	if err != nil {
		if cerrdefs.IsNotFound(err) || isNoSuchPath(err) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("docker: copy %s out of the sandbox: %w", p, err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	h, err := tr.Next()
	if err != nil {
		return nil, false, nil
	}
	if h.Typeflag != tar.TypeReg || h.Size > limit {
		return nil, false, nil
	}
	data, err = io.ReadAll(io.LimitReader(tr, limit+1))
	if err != nil || int64(len(data)) > limit {
		return nil, false, nil
	}
	return data, true, nil
}

var noSuchPathRe = regexp.MustCompile(`(?i)no such file|not found|could not find`)

func isNoSuchPath(err error) bool { return noSuchPathRe.MatchString(err.Error()) }

// maxSkipped bounds how much of /var/outputs past the cap is read through
// (to list what was omitted) before the rest is cut off unread.
const maxSkipped = 256 << 20

// collectOutputs reads the regular files under /var/outputs that caps
// select, up to caps.MaxBytes in all and caps.MaxFiles entries, and lists
// its directories. With declared names, each is copied out on its own, so
// an undeclared file (however large, wherever it sorts) is never read and
// never hides a declared one. Symlinks and special files are omitted, as
// are entries past the caps.
func (b *Backend) collectOutputs(ctx context.Context, id string, caps sandbox.OutputCaps) (files map[string][]byte, dirs, omitted []string, err error) {
	c := &outputCollection{caps: caps, files: map[string][]byte{}, budget: caps.MaxBytes}
	if len(caps.Names) == 0 {
		if err := b.collectArchive(ctx, id, sandbox.OutputsDir+"/.", outputRel, c); err != nil {
			return nil, nil, nil, err
		}
		return c.files, c.dirs, c.omitted, nil
	}
	for _, name := range caps.Names {
		err := b.collectArchive(ctx, id, sandbox.OutputsDir+"/"+name, namedRel, c)
		if err != nil && !isNoSuchPath(err) {
			return nil, nil, nil, err
		}
	}
	return c.files, c.dirs, c.omitted, nil
}

// outputCollection is what collectOutputs has read so far.
type outputCollection struct {
	caps    sandbox.OutputCaps
	files   map[string][]byte
	dirs    []string
	omitted []string
	budget  int64
	skipped int64
	entries int
}

// collectArchive reads the archive of src into c; rel turns an archive
// name into a path relative to /var/outputs.
func (b *Backend) collectArchive(ctx context.Context, id, src string, rel func(string) string, c *outputCollection) error {
	rc, _, err := b.cli.CopyFromContainer(ctx, id, src)
	if err != nil {
		return fmt.Errorf("docker: copy %s out of the sandbox: %w", src, err)
	}
	defer rc.Close()
	c.skipped = 0 // each declared output may read through its own share
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("docker: read %s: %w", src, err)
		}
		r := rel(h.Name)
		if r == "" {
			continue
		}
		if c.entries++; c.entries > c.caps.MaxFiles || c.skipped > maxSkipped {
			c.omitted = append(c.omitted, r)
			if c.skipped > maxSkipped {
				top, _, _ := strings.Cut(r, "/")
				c.omitted = append(c.omitted, "... (the rest of "+top+" was not read)")
				return nil
			}
			continue
		}
		if err := c.take(tr, h, r); err != nil {
			return fmt.Errorf("docker: read %s: %w", src, err)
		}
	}
}

// take records one archive entry.
func (c *outputCollection) take(tr *tar.Reader, h *tar.Header, rel string) error {
	switch h.Typeflag {
	case tar.TypeDir:
		c.dirs = append(c.dirs, rel)
	case tar.TypeReg:
		if h.Size > c.budget {
			c.omitted = append(c.omitted, rel)
			c.skipped += h.Size
			return nil
		}
		data, err := io.ReadAll(io.LimitReader(tr, h.Size))
		if err != nil {
			return err
		}
		c.budget -= int64(len(data))
		c.files[rel] = data
	default:
		c.omitted = append(c.omitted, rel)
	}
	return nil
}

// namedRel turns a name in the archive of /var/outputs/<name> ("name" or
// "name/a/b") into that path.
func namedRel(name string) string {
	return strings.TrimPrefix(path.Clean("/"+strings.TrimSuffix(name, "/")), "/")
}

// outputRel turns a name in the archive of /var/outputs/. ("./a/b",
// "outputs/a/b" or "a/b", depending on the engine) into "a/b"; "" for the
// directory itself.
func outputRel(name string) string {
	name = strings.TrimPrefix(path.Clean("/"+strings.TrimSuffix(name, "/")), "/")
	if name == "outputs" || name == "." {
		return ""
	}
	name = strings.TrimPrefix(name, "outputs/")
	return name
}
