package bwrap_test

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/autocoder/autocoder/internal/sandbox/bwrap"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testPython is the interpreter the tests need: Debian's, with pytest.
const testPython = "/usr/bin/python3"

// requireHost fails (never skips: a suite that silently skips lies) when
// the host lacks what the process backend needs, saying how to fix it.
func requireHost(t testing.TB) {
	t.Helper()
	hostOnce.Do(func() {
		if _, err := exec.LookPath("bwrap"); err != nil {
			hostErr = "bubblewrap is not installed: apt-get install -y bubblewrap"
			return
		}
		out, err := exec.Command(testPython, "-c", "import pytest").CombinedOutput()
		if err != nil {
			hostErr = testPython + " cannot import pytest (" + strings.TrimSpace(string(out)) +
				"): apt-get install -y python3-pytest"
		}
	})
	if hostErr != "" {
		t.Fatal(hostErr)
	}
}

var (
	hostOnce sync.Once
	hostErr  string
)

// newBackend returns a bubblewrap backend on stateDir (a fresh one when
// empty), closed when the test ends.
func newBackend(t testing.TB, cfg bwrap.Config) *bwrap.Backend {
	t.Helper()
	requireHost(t)
	if cfg.Python == "" {
		cfg.Python = testPython
	}
	if cfg.StateDir == "" {
		cfg.StateDir = t.TempDir()
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	p, err := bwrap.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// tWriter sends log lines to t.Log, so they show only for failing tests.
type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// sharedStateDir is one state dir for a whole test, so environments are
// built once and several Backend values share them, as workers on one
// machine do.
func sharedStateDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "envs"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
