package client

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUploadRefusesLinks: a File or Dir path that is a symbolic link is
// refused before anything is uploaded. A linked directory was archived
// empty (the walk does not descend into a root that is a link), so the
// script ran on an empty folder.
func TestUploadRefusesLinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(data, "a.csv"), []byte("a\n1\n"), 0o644)
	for _, target := range []string{data, filepath.Join(data, "a.csv")} {
		link := target + ".link"
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		// The zero Client has no store: the refusal must come first.
		_, err := (&Client{}).upload(t.Context(), "data", link)
		if err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
			t.Errorf("upload(%s) = %v, want a refusal of the link", link, err)
		}
	}
}
