package client_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/bus/bustest"
	"github.com/autocoder/autocoder/pkg/client"
)

// TestPutChangedFileStoresNothing: the bytes an upload sends must be the
// bytes it hashed. A body that differs (a file written to between the hash
// and the upload), grows or shrinks fails the upload, and the object store
// keeps nothing under the hash's name: a later upload of the real content
// is not skipped as already there.
func TestPutChangedFileStoresNothing(t *testing.T) {
	t.Parallel()
	env := bustest.Start(t, bus.ProvisionConfig{MemoryStorage: true})
	hashed := []byte(strings.Repeat("a,b\n1,2\n", 40000)) // several chunks
	sum := sha256.Sum256(hashed)
	want := hex.EncodeToString(sum[:])
	changed := bytes.Clone(hashed)
	changed[len(changed)-3] = '9' // the last chunk differs
	for name, body := range map[string][]byte{
		"changed": changed, "grown": append(bytes.Clone(hashed), "3,4\n"...), "cut": hashed[:len(hashed)-1],
	} {
		r := client.HashedExactly(bytes.NewReader(body), int64(len(hashed)), want, name)
		obj := "sha256-" + want + "-" + name
		_, err := env.Resources.Samples.Put(t.Context(), jetstream.ObjectMeta{Name: obj}, r)
		if !errors.Is(err, client.ErrChangedDuringUpload) {
			t.Errorf("%s: Put: %v, want ErrChangedDuringUpload", name, err)
		}
		if _, err := env.Resources.Samples.GetInfo(t.Context(), obj); !errors.Is(err, jetstream.ErrObjectNotFound) {
			t.Errorf("%s: the store kept the object: %v", name, err)
		}
	}
	// The bytes hashed go through whole.
	r := client.HashedExactly(bytes.NewReader(hashed), int64(len(hashed)), want, "same")
	if _, err := env.Resources.Samples.Put(t.Context(), jetstream.ObjectMeta{Name: "same"}, r); err != nil {
		t.Fatalf("unchanged: %v", err)
	}
	got, err := env.Resources.Samples.GetBytes(t.Context(), "same")
	if err != nil || !bytes.Equal(got, hashed) {
		t.Fatalf("unchanged: stored %d bytes, %v", len(got), err)
	}
}
