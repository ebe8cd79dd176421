package sandboxstages

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/pkg/messages"
)

// WorkspaceStore keeps the agent's workspace files by content hash.
type WorkspaceStore interface {
	// Put stores data and returns its reference ("sha256:<hex>").
	Put(ctx context.Context, data []byte) (string, error)
	// Get returns the bytes of a reference Put returned.
	Get(ctx context.Context, ref string) ([]byte, error)
}

// ObjectStoreWorkspace is a WorkspaceStore over a NATS Object Store (the
// outputs store, which sandbox-workers may write): objects are named as
// samples are, by their hash.
type ObjectStoreWorkspace struct{ Obj jetstream.ObjectStore }

var _ WorkspaceStore = ObjectStoreWorkspace{}

// Put implements WorkspaceStore.
func (o ObjectStoreWorkspace) Put(ctx context.Context, data []byte) (string, error) {
	ref := refOf(data)
	name := ref.ObjectName()
	if _, err := o.Obj.GetInfo(ctx, name); err == nil {
		return ref.String(), nil
	} else if !errors.Is(err, jetstream.ErrObjectNotFound) {
		return "", fmt.Errorf("store workspace file %s: %w", name, err)
	}
	if _, err := o.Obj.Put(ctx, jetstream.ObjectMeta{Name: name}, bytes.NewReader(data)); err != nil {
		return "", storeFailed("store workspace file "+name, err)
	}
	return ref.String(), nil
}

// Get implements WorkspaceStore; bytes that do not match their hash are an error.
func (o ObjectStoreWorkspace) Get(ctx context.Context, ref string) ([]byte, error) {
	r, ok := messages.ParseObjectRef(ref)
	if !ok {
		return nil, fmt.Errorf("workspace: bad object reference %q", ref)
	}
	res, err := o.Obj.Get(ctx, r.ObjectName())
	if err != nil {
		return nil, fmt.Errorf("fetch workspace file %s: %w", ref, err)
	}
	defer res.Close()
	data, err := io.ReadAll(io.LimitReader(res, maxWorkspaceBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fetch workspace file %s: %w", ref, err)
	}
	if refOf(data).SHA256 != r.SHA256 {
		return nil, fmt.Errorf("fetch workspace file %s: content does not match its hash", ref)
	}
	return data, nil
}

func refOf(data []byte) messages.ObjectRef {
	sum := sha256.Sum256(data)
	return messages.ObjectRef{SHA256: hex.EncodeToString(sum[:])}
}
