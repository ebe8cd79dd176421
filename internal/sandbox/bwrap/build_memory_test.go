package bwrap_test

import (
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/bwrap"
	"github.com/autocoder/autocoder/internal/sandbox/sandboxtest"
)

// TestBuildCodeHasAMemoryCap: pip runs a package's build code (setup.py of
// an sdist) and the package names come from the model, so a build runs in
// a cgroup with a memory cap like any other sandbox run. A setup.py that
// takes 600 MiB fails the build under a 256 MiB cap, and the same package
// builds with no cap: the cap, nothing else, stopped it.
func TestBuildCodeHasAMemoryCap(t *testing.T) {
	// Build isolation would fetch setuptools from an index; the venv sees
	// the system's (Debian's python3-setuptools) instead. Not parallel:
	// t.Setenv.
	t.Setenv("PIP_NO_BUILD_ISOLATION", "0") // pip reads "0" as "off", i.e. --no-build-isolation
	wheels := t.TempDir()
	sandboxtest.WriteSdist(t, wheels, "memhog", "blob = b'x' * (600 << 20)  # filled, so every page is touched")

	for _, c := range []struct {
		name    string
		memory  int64
		wantErr bool
	}{
		{"capped at 256 MiB", 256 << 20, true},
		{"no cap", -1, false},
	} {
		p := newBackend(t, bwrap.Config{PipFindLinks: []string{wheels}, BuildMemory: c.memory})
		if len(p.Limits().CgroupLimits) == 0 {
			t.Fatal("no cgroup limits in force here: the worker needs root or a delegated cgroup")
		}
		_, err := p.Build(t.Context(), sandbox.EnvSpec{Packages: []string{"memhog"}})
		if (err != nil) != c.wantErr {
			t.Errorf("%s: Build error %v, want an error: %v", c.name, err, c.wantErr)
		}
	}
}

// TestBuildCodeHasADiskCap: a build's writes to the worker's disk (its
// venv and its /tmp) are capped: a setup.py that writes 48 files of 1 MiB,
// a little at a time, fails the build under a 16 MiB cap, and the same
// package builds with no cap. A single file over the cap fails at once
// (RLIMIT_FSIZE).
func TestBuildCodeHasADiskCap(t *testing.T) {
	// Not parallel: t.Setenv (build isolation off, as above).
	t.Setenv("PIP_NO_BUILD_ISOLATION", "0")
	wheels := t.TempDir()
	sandboxtest.WriteSdist(t, wheels, "diskhog", `import os, tempfile, time
d = tempfile.mkdtemp()
for i in range(48):
    with open(os.path.join(d, "f%d" % i), "wb") as f:
        f.write(os.urandom(1 << 20))
    time.sleep(0.05)`)
	sandboxtest.WriteSdist(t, wheels, "bigfile", `import os, tempfile
with open(os.path.join(tempfile.mkdtemp(), "big"), "wb") as f:
    for _ in range(32):
        f.write(b"x" * (1 << 20))`)
	for _, c := range []struct {
		name, pkg string
		disk      int64
		wantErr   string // "": none; "cap": one naming the disk cap; "any"
	}{
		{"many files, capped at 16 MiB", "diskhog", 16 << 20, "cap"},
		{"one big file, capped at 16 MiB", "bigfile", 16 << 20, "any"},
		{"many files, no cap", "diskhog", -1, ""},
	} {
		p := newBackend(t, bwrap.Config{PipFindLinks: []string{wheels}, BuildDisk: c.disk})
		_, err := p.Build(t.Context(), sandbox.EnvSpec{Packages: []string{c.pkg}})
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s: Build error %v, want none", c.name, err)
		case c.wantErr != "" && err == nil:
			t.Errorf("%s: Build succeeded, want an error", c.name)
		case c.wantErr == "cap" && !strings.Contains(err.Error(), "cap (BuildDisk)"):
			t.Errorf("%s: Build error %v, want one naming the disk cap", c.name, err)
		}
	}
}
