package jobfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestReadRegularCapsBytesRead: the cap holds on the bytes read, not only on
// the size the file claims (/proc files say 0), and a file at the cap is read.
func TestReadRegularCapsBytesRead(t *testing.T) {
	t.Parallel()
	if _, err := ReadRegular("/proc/self/maps", 16); !errors.Is(err, ErrTooLarge) {
		t.Errorf("/proc/self/maps with a 16-byte cap: err = %v, want ErrTooLarge", err)
	}
	p := filepath.Join(t.TempDir(), "exact")
	if err := os.WriteFile(p, make([]byte, 1<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadRegular(p, 1<<10); err != nil || len(data) != 1<<10 {
		t.Errorf("a file of exactly the cap: %d bytes, err %v", len(data), err)
	}
	if _, err := ReadRegular(p, 1<<10-1); !errors.Is(err, ErrTooLarge) || err.Error() != "file too large: larger than 1023 bytes" {
		t.Errorf("one byte over: err = %v", err)
	}
}
