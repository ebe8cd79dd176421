package docker_test

import (
	"testing"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/sandboxtest"
)

// TestBuildCodeHasAMemoryCap: pip runs a package's build code (setup.py of
// an sdist) and the package names come from the model, so the container pip
// runs in has a memory cap, as every run's has: a setup.py that takes
// 600 MiB fails its build under a 256 MiB cap, and the same package builds
// with no cap, so the cap, nothing else, stopped it. The same holds when
// pip runs in the image build (BuildNetwork).
func TestBuildCodeHasAMemoryCap(t *testing.T) {
	t.Parallel()
	for _, network := range []string{"", "none"} {
		for _, c := range []struct {
			name    string
			memory  int64
			wantErr bool
		}{
			{"capped at 256 MiB", 256 << 20, true},
			{"no cap", -1, false},
		} {
			t.Run(c.name+", build network "+network, func(t *testing.T) {
				t.Parallel()
				wheels := t.TempDir()
				pkg := "memhog-" + nonce(t)
				sandboxtest.WriteSdist(t, wheels, pkg, "blob = b'x' * (600 << 20)  # filled, so every page is touched")
				cfg := wheelConfig(t, wheels, nil)
				cfg.BuildMemory, cfg.BuildNetwork = c.memory, network
				// The image's setuptools builds the sdist: isolation would
				// fetch its own from an index there is not.
				cfg.PipExtraArgs = []string{"--no-build-isolation"}
				b := newBackend(t, cfg)
				_, err := b.Build(t.Context(), sandbox.EnvSpec{Packages: []string{pkg}})
				if (err != nil) != c.wantErr {
					t.Errorf("Build error %v, want an error: %v", err, c.wantErr)
				}
			})
		}
	}
}
