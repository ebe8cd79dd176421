package bwrap_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/bwrap"
	"github.com/autocoder/autocoder/internal/sandbox/sandboxtest"
)

// TestBuildIsConfined: a package's build code (setup.py of an sdist from an
// index that wants a password) reaches none of the host's loopback
// listener, redis-server and NATS server, directly or through the build's
// proxy; the password is in neither what the build code can see (its
// environment, any visible process's argv) nor the environment; and the
// build records what it fetched.
func TestBuildIsConfined(t *testing.T) {
	t.Parallel()
	bait := sandboxtest.NewBait(t)
	state := t.TempDir()
	// --no-build-isolation: setuptools comes from the system, not an index.
	p := newBackend(t, bwrap.Config{StateDir: state, PipIndexURL: bait.IndexURL, PipIsolated: true,
		PipExtraArgs: []string{"--no-build-isolation"}})
	env, err := p.Build(t.Context(), sandbox.EnvSpec{Packages: []string{bait.Package}})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	dir := filepath.Join(state, "envs", env.ID)
	seen, err := os.ReadFile(filepath.Join(dir, sandboxtest.SeenFile))
	if err != nil {
		t.Fatalf("the build code left no trace: %v\nlog:\n%s", err, env.Log)
	}
	bait.Check(t, string(seen))
	if !strings.Contains(env.Log, "egress proxy refused") {
		t.Errorf("the build log does not show the refusals:\n%s", env.Log)
	}
	bait.NoSecret(t, "the build log", env.Log)
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			data, _ := os.ReadFile(path)
			bait.NoSecret(t, path, string(data))
		}
		return nil
	})
	var sdist *sandbox.Artifact
	for i, a := range env.Provenance {
		if strings.HasSuffix(a.URL, "/files/"+bait.Package+"-1.0.tar.gz") {
			sdist = &env.Provenance[i]
		}
	}
	if sdist == nil || len(sdist.SHA256) != 64 || sdist.Bytes == 0 {
		t.Errorf("provenance %+v: want the sdist with its SHA-256 and size", env.Provenance)
	}
}
