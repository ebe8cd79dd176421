package sandboxstages

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/pkg/messages"
)

// OutputStore keeps the files of File and Dir outputs by content hash.
type OutputStore interface {
	// Put stores data as the object of its sha256 (hex), unless that
	// object is already there.
	Put(ctx context.Context, sha256Hex string, data []byte) error
}

// ObjectStoreOutputs is an OutputStore over a NATS Object Store (the
// outputs store, bus.ObjectStoreOutputs). Objects are named as samples are
// (messages.ObjectRef.ObjectName); the reference in an output value is
// "sha256:<hex>".
type ObjectStoreOutputs struct{ Obj jetstream.ObjectStore }

var _ OutputStore = ObjectStoreOutputs{}

// Put implements OutputStore.
func (o ObjectStoreOutputs) Put(ctx context.Context, sha256Hex string, data []byte) error {
	name := messages.ObjectRef{SHA256: sha256Hex}.ObjectName()
	if _, err := o.Obj.GetInfo(ctx, name); err == nil {
		return nil
	} else if !errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("store output %s: %w", name, err)
	}
	if _, err := o.Obj.Put(ctx, jetstream.ObjectMeta{Name: name}, bytes.NewReader(data)); err != nil {
		return storeFailed("store output "+name, err)
	}
	return nil
}

// storeOutputs puts the bytes of every File and Dir output among values in
// o and records the objects in the values: a File as its content, a Dir as
// its files plus a manifest (sandbox.DirManifest) that lists them.
func storeOutputs(ctx context.Context, o OutputStore, values map[string]any, res sandbox.RunResult) error {
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	sort.Strings(names)
	put := func(data []byte) (string, error) {
		sum := sha256.Sum256(data)
		h := hex.EncodeToString(sum[:])
		if err := o.Put(ctx, h, data); err != nil {
			return "", err
		}
		return h, nil
	}
	for _, name := range names {
		switch v := values[name].(type) {
		case sandbox.FileValue:
			h, err := put(res.Outputs[name])
			if err != nil {
				return err
			}
			v.Object = messages.ObjectRef{SHA256: h}.String()
			values[name] = v
		case sandbox.DirValue:
			m := sandbox.DirManifest{Files: []sandbox.ManifestFile{}}
			prefix := name + "/"
			for p, data := range res.Outputs {
				rel, ok := strings.CutPrefix(p, prefix)
				if !ok {
					continue
				}
				h, err := put(data)
				if err != nil {
					return err
				}
				m.Files = append(m.Files, sandbox.ManifestFile{Path: rel, Size: int64(len(data)), SHA256: h})
			}
			for _, d := range res.OutputDirs {
				if rel, ok := strings.CutPrefix(d, prefix); ok && rel != "" {
					m.Dirs = append(m.Dirs, rel)
				}
			}
			sort.Slice(m.Files, func(i, j int) bool { return m.Files[i].Path < m.Files[j].Path })
			sort.Strings(m.Dirs)
			b, err := json.Marshal(m)
			if err != nil {
				return err
			}
			h, err := put(b)
			if err != nil {
				return err
			}
			v.Object = messages.ObjectRef{SHA256: h}.String()
			values[name] = v
		}
	}
	return nil
}

// Limits on a Dir input's archive.
const (
	maxDirInputBytes   = 1 << 30
	maxDirInputEntries = 100_000
)

// unpackDirs unpacks the tar archives of Dir inputs (refs with Dir set)
// into temporary directories and points inputs at them; cleanup removes them.
func unpackDirs(refs []messages.SampleRef, inputs map[string]string) (map[string]string, func(), error) {
	var tmp []string
	cleanup := func() {
		for _, d := range tmp {
			os.RemoveAll(d)
		}
	}
	for _, r := range refs {
		if !r.Dir {
			continue
		}
		dir, err := os.MkdirTemp("", "autocoder-input-*")
		if err != nil {
			cleanup()
			return nil, func() {}, err
		}
		tmp = append(tmp, dir)
		// Readable by the sandbox's user, as sample files are.
		if err := os.Chmod(dir, 0o755); err != nil {
			cleanup()
			return nil, func() {}, err
		}
		dst := filepath.Join(dir, r.FileName)
		if err := untar(inputs[r.FileName], dst); err != nil {
			cleanup()
			return nil, func() {}, bus.Permanent(fmt.Errorf("input %s: %w", r.Name, err))
		}
		inputs[r.FileName] = dst
	}
	return inputs, cleanup, nil
}

// untar unpacks the archive at src into a new directory dst: directories
// and regular files only, every path inside dst.
func untar(src, dst string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	tr := tar.NewReader(f)
	var total int64
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read directory archive: %w", err)
		}
		if n >= maxDirInputEntries {
			return fmt.Errorf("directory archive has more than %d entries", maxDirInputEntries)
		}
		name := path.Clean(strings.TrimPrefix(hdr.Name, "./"))
		if name == "." {
			continue
		}
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") || strings.ContainsRune(name, 0) {
			return fmt.Errorf("directory archive entry %q is outside the directory", hdr.Name)
		}
		target := filepath.Join(dst, filepath.FromSlash(name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if total += hdr.Size; total > maxDirInputBytes {
				return fmt.Errorf("directory archive is larger than %d bytes", int64(maxDirInputBytes))
			}
			if err := createFile(target, tr, hdr.Size); err != nil {
				return err
			}
		default:
			return fmt.Errorf("directory archive entry %q is not a file or directory", hdr.Name)
		}
	}
}

// createFile writes the next size bytes of r to a new file at target (its
// parent directories made), refusing to replace anything already there.
func createFile(target string, r io.Reader, size int64) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, io.LimitReader(r, size))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// storeFailed is the error of an upload to the outputs store: a store at
// its bound fails the stage at once with the reason (retrying would only
// delay the job's end), anything else is retried.
func storeFailed(what string, err error) error {
	err = fmt.Errorf("%s: %w", what, bus.StoreFull(bus.ObjectStoreOutputs, err))
	if errors.Is(err, bus.ErrStoreFull) {
		return bus.Permanent(err)
	}
	return err
}
