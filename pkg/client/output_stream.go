package client

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/pkg/messages"
)

// ErrNoOutput means a result has no stored File or Dir output of that name.
var ErrNoOutput = errors.New("client: no such File or Dir output")

// WriteOutput writes the File or Dir output name of res to w, for a
// download over HTTP: a File's content, or a Dir as a tar archive rebuilt
// from its manifest. It returns the output's type before writing
// anything, through kind, so a caller can set headers; an object whose
// content does not match its hash is an error after the bytes were
// written (the caller must then abort the response).
func (c *Client) WriteOutput(ctx context.Context, res *messages.Result, name string, kind func(messages.Type), w io.Writer) error {
	outs, err := downloadable(res)
	if err != nil {
		return err
	}
	for _, o := range outs {
		if o.name != name {
			continue
		}
		if o.kind == messages.TypeFile {
			kind(o.kind)
			return c.streamObject(ctx, o.ref, w)
		}
		m, err := c.manifest(ctx, o.ref)
		if err != nil {
			return err
		}
		kind(o.kind)
		tw := tar.NewWriter(w)
		for _, d := range m.Dirs {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/" + d + "/", Mode: 0o755, ModTime: time.Unix(0, 0)}); err != nil {
				return err
			}
		}
		for _, f := range m.Files {
			hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name + "/" + f.Path, Size: f.Size, Mode: 0o644, ModTime: time.Unix(0, 0)}
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			if err := c.streamObject(ctx, messages.ObjectRef{SHA256: f.SHA256}, tw); err != nil {
				return fmt.Errorf("%s: %w", f.Path, err)
			}
		}
		return tw.Close()
	}
	return ErrNoOutput
}

// streamObject copies an object of the outputs store to w, checking its hash.
func (c *Client) streamObject(ctx context.Context, ref messages.ObjectRef, w io.Writer) error {
	store, err := c.stores.outputs(ctx)
	if err != nil {
		return err
	}
	return copyChecked(ctx, store, messages.ObjectStoreOutputs, ref, w)
}

// copyChecked copies an object of store to w, checking its content hash.
func copyChecked(ctx context.Context, store jetstream.ObjectStore, storeName string, ref messages.ObjectRef, w io.Writer) error {
	obj, err := store.Get(ctx, ref.ObjectName())
	if err != nil {
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			return fmt.Errorf("object %s is no longer in the %s store (%s)", ref, strings.TrimPrefix(storeName, "autocoder_"), storeName)
		}
		return err
	}
	defer obj.Close()
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(w, h), obj); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != ref.SHA256 {
		return fmt.Errorf("object %s has content hash %s", ref, got)
	}
	return nil
}

// readObject reads a small object of store whole, at most limit bytes,
// checking its content hash.
func readObject(ctx context.Context, store jetstream.ObjectStore, storeName string, ref messages.ObjectRef, limit int64) ([]byte, error) {
	var buf limitedBuffer
	buf.limit = limit
	if err := copyChecked(ctx, store, storeName, ref, &buf); err != nil {
		return nil, err
	}
	return buf.b, nil
}

// limitedBuffer is a buffer that refuses to grow past limit bytes.
type limitedBuffer struct {
	b     []byte
	limit int64
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if int64(len(l.b)+len(p)) > l.limit {
		return 0, fmt.Errorf("larger than %s", messages.FormatBytes(l.limit))
	}
	l.b = append(l.b, p...)
	return len(p), nil
}
