package objects

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/pkg/client"
	"github.com/autocoder/autocoder/pkg/messages"
)

// ErrBadObject marks an object that can never be fetched as asked (a bad
// reference or file name, a missing object, bytes that do not match their
// hash): retrying cannot help.
var ErrBadObject = errors.New("objects: bad object")

// MaxObjectBytes bounds one object (messages.MaxSampleBytes).
const MaxObjectBytes = messages.MaxSampleBytes

// Store moves files (samples, File and Dir inputs, documentation bundles)
// through the NATS Object Store, named by content hash, so no shared
// filesystem is needed between submitters and workers. Fetched objects
// are kept in a local content-addressed directory: a sample used by many
// stages and jobs is downloaded once per machine.
type Store struct {
	obj jetstream.ObjectStore
	dir string

	mu    sync.Mutex
	locks map[string]*objectLock // by content hash, while a fetch of it runs
}

// objectLock serialises downloads of one object within the process, so
// concurrent fetches of a sample download it once, while fetches of
// different samples go on in parallel (one large sample must not hold up
// every other stage on the worker).
type objectLock struct {
	mu   sync.Mutex
	refs int // fetches holding or waiting for mu; guarded by Store.mu
}

// New returns a store over the object store, caching downloads under dir.
func New(obj jetstream.ObjectStore, dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("samples: %w", err)
	}
	return &Store{obj: obj, dir: dir, locks: map[string]*objectLock{}}, nil
}

// lock takes the download lock of one object; the returned func releases it.
func (s *Store) lock(sha string) (unlock func()) {
	s.mu.Lock()
	l := s.locks[sha]
	if l == nil {
		l = &objectLock{}
		s.locks[sha] = l
	}
	l.refs++
	s.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		s.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(s.locks, sha)
		}
		s.mu.Unlock()
	}
}

// Put uploads the file at path (unless an object with its hash is already
// there) and returns its reference.
// A symbolic link is refused: the CLI resolves the links it allows
// (jobfile.LocalFiles) before it uploads.
func (s *Store) Put(ctx context.Context, name, path string) (messages.SampleRef, error) {
	return client.PutFile(ctx, s.obj, name, path) // the one rule of uploads, the clients' too
}

// ErrTooLarge marks an object larger than its fetch allows; it is an
// ErrBadObject (asking again cannot make it smaller).
var ErrTooLarge = fmt.Errorf("%w: too large", ErrBadObject)

// Fetch returns a local path holding the sample's bytes, downloading it
// once: FetchMax with MaxObjectBytes.
func (s *Store) Fetch(ctx context.Context, r messages.SampleRef) (string, error) {
	return s.FetchMax(ctx, r, MaxObjectBytes)
}

// FetchMax is Fetch of an object of at most maxBytes: the object store's
// size of it is checked before anything is downloaded, and the download
// stops past that size, so a reference to a huge object costs neither
// the time nor the disk of its bytes. A larger object is ErrTooLarge.
func (s *Store) FetchMax(ctx context.Context, r messages.SampleRef, maxBytes int64) (string, error) {
	ref, ok := messages.ParseObjectRef(r.Object)
	if !ok {
		return "", fmt.Errorf("sample %s: %w: bad object reference %q", r.Name, ErrBadObject, r.Object)
	}
	path := filepath.Join(s.dir, ref.SHA256)
	cached := func() (string, bool, error) {
		fi, err := os.Stat(path)
		switch {
		case err != nil:
			return "", false, nil
		case fi.Size() > maxBytes:
			return "", true, fmt.Errorf("sample %s: %w: %s, over %s", r.Name, ErrTooLarge, messages.FormatBytes(fi.Size()), messages.FormatBytes(maxBytes))
		}
		return path, true, nil
	}
	if p, ok, err := cached(); ok {
		return p, err
	}
	defer s.lock(ref.SHA256)()
	if p, ok, err := cached(); ok {
		return p, err
	}
	info, err := s.obj.GetInfo(ctx, ref.ObjectName())
	if err != nil {
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			err = fmt.Errorf("%w: %w", ErrBadObject, err)
		}
		return "", fmt.Errorf("fetch sample %s: %w", r.Name, err)
	}
	if int64(info.Size) > maxBytes {
		return "", fmt.Errorf("fetch sample %s: %w: %s, over %s", r.Name, ErrTooLarge, messages.FormatBytes(int64(info.Size)), messages.FormatBytes(maxBytes))
	}
	tmp, err := os.CreateTemp(s.dir, ref.SHA256+".part-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	n, err := s.download(ctx, ref.ObjectName(), io.MultiWriter(tmp, h), int64(info.Size))
	if err != nil {
		tmp.Close()
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			err = fmt.Errorf("%w: %w", ErrBadObject, err)
		}
		return "", fmt.Errorf("fetch sample %s: %w", r.Name, err)
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if n != int64(info.Size) {
		return "", fmt.Errorf("fetch sample %s: %w: %d bytes where the store says %d", r.Name, ErrBadObject, n, info.Size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != ref.SHA256 {
		return "", fmt.Errorf("fetch sample %s: %w: content hash %s does not match %s", r.Name, ErrBadObject, got, ref.SHA256)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", err
	}
	return path, nil
}

// download copies the object to w, at most size+1 bytes (one more than
// the store's size of it, so a longer body shows), and returns the count.
func (s *Store) download(ctx context.Context, name string, w io.Writer, size int64) (int64, error) {
	res, err := s.obj.Get(ctx, name)
	if err != nil {
		return 0, err
	}
	defer res.Close()
	return io.Copy(w, io.LimitReader(res, size+1))
}

// FetchAll fetches every sample and returns the map RunSpec.Inputs wants:
// file name under /var/inputs -> local path.
func (s *Store) FetchAll(ctx context.Context, refs []messages.SampleRef) (map[string]string, error) {
	out := make(map[string]string, len(refs))
	for _, r := range refs {
		// The name first: a sample that cannot be placed is not worth downloading.
		if r.FileName == "" || strings.ContainsAny(r.FileName, "/\\") || strings.HasPrefix(r.FileName, ".") {
			return nil, fmt.Errorf("sample %s: %w: bad file name %q", r.Name, ErrBadObject, r.FileName)
		}
		p, err := s.Fetch(ctx, r)
		if err != nil {
			return nil, err
		}
		out[r.FileName] = p
	}
	return out, nil
}
