package codemodestages_test

import (
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/autocoder/autocoder/internal/codemode/pyexec"
	"github.com/autocoder/autocoder/internal/sandbox/bwrap"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if procBackend != nil {
		_ = procBackend.Close()
		_ = os.RemoveAll(procDir)
	}
	os.Exit(code)
}

var (
	procOnce    sync.Once
	procBackend *bwrap.Backend
	procDir     string
	procErr     error
)

// python is a Runner on one bubblewrap backend shared by the package's
// tests; it fails the test (never skips) when the host cannot run it.
func python(t testing.TB) *pyexec.Runner {
	t.Helper()
	procOnce.Do(func() {
		if _, procErr = exec.LookPath("bwrap"); procErr != nil {
			return
		}
		if procDir, procErr = os.MkdirTemp("", "codemodestages-test-"); procErr != nil {
			return
		}
		procBackend, procErr = bwrap.New(bwrap.Config{Python: "/usr/bin/python3", StateDir: procDir, Logger: slog.New(slog.DiscardHandler)})
	})
	if procErr != nil {
		t.Fatalf("process backend (apt-get install -y bubblewrap): %v", procErr)
	}
	return &pyexec.Runner{Backend: procBackend}
}
