package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"

	"github.com/docker/docker/api/types/container"
)

// A run's inputs travel through the engine's archive API (PUT
// /containers/{id}/archive) into the container's /var/inputs, owned by
// root, which the stub (the sandbox user) cannot write: nothing of the
// worker's file system is mounted, so the engine may be remote. The
// workspace files go in the stub's request, and the results come back in
// its trailer (results.go).

// epoch is the mtime of every file copied in (and of build contexts), so
// builds are reproducible.
var epoch = time.Unix(0, 0)

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
