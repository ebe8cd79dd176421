package bench

import (
	"os"
	"testing"
)

// TestMain removes the server binaries the fleet benchmarks built: 137 MB
// a run, left in the temp dir they filled a disk over a day of benchmarks.
func TestMain(m *testing.M) {
	code := m.Run()
	if binariesBuilt.Load() {
		if dir, err := binaries(); err == nil {
			_ = os.RemoveAll(dir)
		}
	}
	os.Exit(code)
}
