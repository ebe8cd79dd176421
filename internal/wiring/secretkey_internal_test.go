package wiring

import (
	"bytes"
	"testing"

	"github.com/autocoder/autocoder/internal/config"
)

// TestSecretKeyPartSurvivesARestart: on the embedded cache with no keys
// configured, the secret part of a stage's cache key is the same for two
// workers of one state directory (a restart), so a stage with secrets is
// answered from the cache after it; before, each process hashed under a
// key of its own and missed. Another state directory hashes otherwise.
func TestSecretKeyPartSurvivesARestart(t *testing.T) {
	t.Parallel()
	values := map[string]string{"DB_URL": "postgres://x"}
	part := func(dir string) []byte {
		t.Helper()
		cfg := config.Config{StateDir: dir}
		src, err := (&Stack{opts: Options{Config: cfg}}).secretSource()
		if err != nil {
			t.Fatal(err)
		}
		return src.KeyPart(values)
	}
	dir := t.TempDir()
	first, again, other := part(dir), part(dir), part(t.TempDir())
	if !bytes.Equal(first, again) {
		t.Errorf("two workers of one state directory hash secrets apart: %s, %s", first, again)
	}
	if bytes.Equal(first, other) {
		t.Error("two state directories hash secrets alike: the key is not the directory's")
	}
}
