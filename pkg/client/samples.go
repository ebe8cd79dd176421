package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/pkg/messages"
)

// PutFile uploads the file at path to an object store under its content
// hash (messages.ObjectRef.ObjectName), unless an object of that hash is
// there already, and returns its reference as sample name: the rule every
// uploader of samples and inputs follows, this client's and the workers'.
// A symbolic link is refused: a caller resolves the links it allows (the
// CLI's jobfile.LocalFiles) before it uploads.
func PutFile(ctx context.Context, store jetstream.ObjectStore, name, path string) (messages.SampleRef, error) {
	f, err := openNoLink(path)
	if err != nil {
		return messages.SampleRef{}, fmt.Errorf("sample %s: %w", name, err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, messages.MaxSampleBytes+1))
	if err != nil {
		return messages.SampleRef{}, fmt.Errorf("sample %s: %w", name, err)
	}
	if n > messages.MaxSampleBytes {
		return messages.SampleRef{}, fmt.Errorf("sample %s: %w: larger than %s", name, ErrSampleTooLarge, messages.FormatBytes(messages.MaxSampleBytes))
	}
	ref := messages.ObjectRef{SHA256: hex.EncodeToString(h.Sum(nil)), Ext: messages.RefExt(path)}
	if _, err := store.GetInfo(ctx, ref.ObjectName()); err != nil {
		if !errors.Is(err, jetstream.ErrObjectNotFound) {
			return messages.SampleRef{}, fmt.Errorf("sample %s: %w", name, err)
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return messages.SampleRef{}, err
		}
		// The bytes sent must be the bytes hashed: a file written to
		// meanwhile (a log still growing) would be stored under a name its
		// content does not match, refused by every worker, and never
		// uploaded again (GetInfo finds the name).
		body := &hashedExactly{r: io.LimitReader(f, n+1), h: sha256.New(), size: n, want: ref.SHA256, path: path}
		if _, err := store.Put(ctx, jetstream.ObjectMeta{Name: ref.ObjectName()}, body); err != nil {
			return messages.SampleRef{}, fmt.Errorf("upload sample %s: %w", name, StoreFull(messages.ObjectStoreSamples, err))
		}
	}
	return messages.SampleRef{Name: name, Object: ref.String(), FileName: name + ref.Ext, Size: n}, nil
}

// ErrChangedDuringUpload is PutFile's refusal of a file whose content
// changed between its hash and its upload; the partial upload is removed.
var ErrChangedDuringUpload = errors.New("changed while it was uploaded")

// hashedExactly reads r, which must give size bytes whose SHA-256 is want
// (hex); anything else fails the read at its end, before the object store
// takes the last chunk (it purges what it stored of a failed Put).
type hashedExactly struct {
	r    io.Reader
	h    hash.Hash
	size int64
	read int64
	want string
	path string
}

func (b *hashedExactly) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.h.Write(p[:n])
	b.read += int64(n)
	switch {
	case b.read > b.size:
		return 0, fmt.Errorf("%s %w: it grew past the %d bytes hashed", b.path, ErrChangedDuringUpload, b.size)
	case err == io.EOF && b.read != b.size:
		return 0, fmt.Errorf("%s %w: %d bytes, not the %d hashed", b.path, ErrChangedDuringUpload, b.read, b.size)
	case err == io.EOF && hex.EncodeToString(b.h.Sum(nil)) != b.want:
		return 0, fmt.Errorf("%s %w: its content is not what was hashed", b.path, ErrChangedDuringUpload)
	}
	return n, err
}

// ErrSymlink is PutFile's refusal of a symbolic link.
var ErrSymlink = errors.New("is a symbolic link")

// openNoLink opens path for reading unless it is a symbolic link. The
// opened file must be the one Lstat saw, so a link swapped in between is
// refused too (portable, unlike O_NOFOLLOW).
func openNoLink(path string) (*os.File, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s %w", path, ErrSymlink)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if opened, err := f.Stat(); err != nil || !os.SameFile(fi, opened) {
		f.Close()
		return nil, fmt.Errorf("%s changed while it was opened", path)
	}
	return f, nil
}

// PutSampleFile uploads a local file as sample name and returns its reference.
func (c *Client) PutSampleFile(ctx context.Context, name, path string) (messages.SampleRef, error) {
	store, err := c.stores.samples(ctx)
	if err != nil {
		return messages.SampleRef{}, err
	}
	return PutFile(ctx, store, name, path)
}

// PutSample uploads a sample's bytes from r (at most
// messages.MaxSampleBytes) and returns its object reference; fileName's
// extension is kept, so the script finds it as /var/inputs/<name><ext>.
func (c *Client) PutSample(ctx context.Context, fileName string, r io.Reader) (messages.SampleRef, error) {
	f, err := os.CreateTemp("", "autocoder-upload-*"+messages.RefExt(filepath.Base(fileName)))
	if err != nil {
		return messages.SampleRef{}, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	n, err := io.Copy(f, io.LimitReader(r, messages.MaxSampleBytes+1))
	if err != nil {
		return messages.SampleRef{}, fmt.Errorf("sample %s: %w", fileName, err)
	}
	if n > messages.MaxSampleBytes {
		return messages.SampleRef{}, fmt.Errorf("%w: larger than %s", ErrSampleTooLarge, messages.FormatBytes(messages.MaxSampleBytes))
	}
	if err := f.Close(); err != nil {
		return messages.SampleRef{}, err
	}
	return c.PutSampleFile(ctx, fileName, f.Name())
}
