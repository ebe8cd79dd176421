package client

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestTarDir: the same tree gives the same archive (so the same object),
// whatever the files' times; only files and directories are taken.
func TestTarDir(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "sub", "empty"), 0o700)
	os.WriteFile(filepath.Join(root, "b.txt"), []byte("B"), 0o600)
	os.WriteFile(filepath.Join(root, "sub", "a.txt"), []byte("AA"), 0o600)
	var first, second bytes.Buffer
	if err := tarDir(&first, root); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	os.Chtimes(filepath.Join(root, "b.txt"), later, later)
	if err := tarDir(&second, root); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Error("the archive depends on file times")
	}
	var got []string
	tr := tar.NewReader(&first)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		got = append(got, h.Name+"="+string(body))
	}
	if diff := cmp.Diff([]string{"b.txt=B", "sub/=", "sub/a.txt=AA", "sub/empty/="}, got); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := tarDir(io.Discard, root); err == nil {
		t.Error("a symbolic link was archived")
	}
}
