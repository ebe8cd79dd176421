package docker_test

import (
	"testing"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/docker"
	"github.com/autocoder/autocoder/internal/sandbox/sandboxtest"
)

var _ sandbox.Backend = (*docker.Backend)(nil)

// TestDockerConformance runs the conformance suite, escape cases included,
// on one backend shared by every subtest, as a worker's is shared by its
// jobs: after each hostile program the same backend must serve the next run.
func TestDockerConformance(t *testing.T) {
	cfg := testConfig(t)
	cfg.DiskQuota = sandboxtest.TestDiskQuota
	shared := newBackend(t, cfg)
	sandboxtest.Run(t, func(t *testing.T) sandbox.Backend { return keepOpen{shared} })
}

// keepOpen shares a backend between subtests: the suite's Close of each
// subtest's backend is a no-op; the test closes the real one at the end.
type keepOpen struct{ *docker.Backend }

func (keepOpen) Close() error { return nil }

// TestDockerWarmConformance is the conformance and escape suite with the
// warm runner on: runs it can take (python -c, pytest) run in a fork of
// the stub that imported pytest while its container waited.
func TestDockerWarmConformance(t *testing.T) {
	cfg := testConfig(t)
	cfg.DiskQuota, cfg.WarmRunner = sandboxtest.TestDiskQuota, true
	shared := newBackend(t, cfg)
	sandboxtest.Run(t, func(t *testing.T) sandbox.Backend { return keepOpen{shared} })
}

// TestDockerWarmIsolation: consecutive warm runs share nothing.
func TestDockerWarmIsolation(t *testing.T) {
	cfg := testConfig(t)
	cfg.WarmRunner = true
	sandboxtest.WarmIsolation(t, newBackend(t, cfg))
}
