package client

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestPutFileRefusesSymlink: an upload never follows a symbolic link (a
// sample linked to /etc/shadow would reach the model), whatever its
// target; a regular file opens.
func TestPutFileRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "data.csv")
	if err := os.WriteFile(file, []byte("a,b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.csv")
	if err := os.Symlink("/etc/passwd", link); err != nil {
		t.Fatal(err)
	}
	if _, err := openNoLink(link); !errors.Is(err, ErrSymlink) {
		t.Errorf("symlink: %v, want ErrSymlink", err)
	}
	// PutFile refuses before it touches the store.
	if _, err := PutFile(t.Context(), nil, "s", link); !errors.Is(err, ErrSymlink) {
		t.Errorf("PutFile(symlink): %v, want ErrSymlink", err)
	}
	f, err := openNoLink(file)
	if err != nil {
		t.Fatalf("regular file: %v", err)
	}
	f.Close()
}
