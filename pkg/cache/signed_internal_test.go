package cache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"testing"
)

// TestSignedDirFileEdited: an entry file edited in place, its checksum
// fixed up so the Dir itself accepts it, is a miss under Signed.
func TestSignedDirFileEdited(t *testing.T) {
	t.Parallel()
	d, err := OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	keys, err := NewKeyring(HMACKey{ID: "k1", Secret: bytes.Repeat([]byte("k"), 32)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSigned(d, keys, SignedConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	key := Key("stage", []byte("edited"))
	if err := s.Set(ctx, key, []byte(`{"output":"pass"}`), 0); err != nil {
		t.Fatal(err)
	}
	path := dirEntryPath(d.root, key)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("pass"), []byte("fail"), 1)
	binary.BigEndian.PutUint32(b[20:24], entryChecksum(b[entryHeaderLen:]))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if raw, err := d.Get(ctx, key); err != nil || !bytes.Contains(raw, []byte("fail")) {
		t.Fatalf("the Dir does not see the edit: (%q, %v)", raw, err)
	}
	if v, err := s.Get(ctx, key); !errors.Is(err, ErrMiss) {
		t.Fatalf("Get of an edited entry = (%q, %v), want ErrMiss", v, err)
	}
	if s.Failures() != 1 {
		t.Errorf("Failures() = %d, want 1", s.Failures())
	}
}
