package docker_test

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/autocoder/autocoder/internal/sandbox/docker"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(sandboxWorkerChild())
	}
	goleak.VerifyTestMain(m)
}

// baseImage is the image the tests build on: scripts/setup-docker.sh
// imports it, with no registry needed.
func baseImage() string {
	if v := os.Getenv("AUTOCODER_DOCKER_BASE_IMAGE"); v != "" {
		return v
	}
	return "autocoder-base:bookworm"
}

// requireEngine fails (never skips: a suite that silently skips lies) when
// no engine answers, saying how to get one.
func requireEngine(t testing.TB) {
	t.Helper()
	engineOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := docker.Ping(ctx, ""); err != nil {
			engineErr = err.Error() + "\nrun scripts/setup-docker.sh and export the DOCKER_HOST it prints " +
				"(scripts/test.sh does both)"
		}
	})
	if engineErr != "" {
		t.Fatal(engineErr)
	}
}

var (
	engineOnce sync.Once
	engineErr  string
)

// testConfig is a backend configuration for tests: the local base image,
// no pulls, logs to t.Log.
func testConfig(t testing.TB) docker.Config {
	return docker.Config{
		BaseImage: baseImage(),
		NoPull:    true,
		Worker:    "test-" + strings.ReplaceAll(t.Name(), "/", "-"),
		Logger:    testLogger(t),
	}
}

// newBackend returns a backend, closed when the test ends.
func newBackend(t testing.TB, cfg docker.Config) *docker.Backend {
	t.Helper()
	b := newBackendFor(t, cfg)
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

// newBackendFor returns a backend the caller closes.
func newBackendFor(t testing.TB, cfg docker.Config) *docker.Backend {
	t.Helper()
	requireEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := docker.New(ctx, cfg)
	if err != nil {
		t.Fatalf("docker.New: %v", err)
	}
	return b
}

func testLogger(t testing.TB) *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("AUTOCODER_TEST_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: level}))
}

// tWriter sends log lines to t.Log, so they show only for failing tests.
type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
