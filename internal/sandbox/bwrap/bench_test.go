package bwrap_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/bwrap"
)

const benchCode = "def add(a, b):\n    return a + b\n"

const benchTests = `
import pytest
from solution import add

def test_add():
    assert add(2, 3) == 5

@pytest.mark.parametrize("a", range(5))
def test_identity(a):
    assert add(a, 0) == a
`

// BenchmarkRunTests compares pytest run directly by the host interpreter in
// a temp dir with the same run through the process backend (RunTests:
// sandbox setup, pytest, JUnit parsing, cleanup). "compare" alternates
// the two and reports both and their ratio.
func BenchmarkRunTests(b *testing.B) {
	p := newBackend(b, bwrap.Config{})
	env, err := p.Build(b.Context(), sandbox.EnvSpec{})
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	for name, content := range map[string]string{"solution.py": benchCode, "test_solution.py": benchTests} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	bare := func(b *testing.B) {
		cmd := exec.Command(testPython, "-m", "pytest", "-q", "-p", "no:cacheprovider",
			"--junitxml="+filepath.Join(dir, ".harness", "junit.xml"), "test_solution.py")
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("bare pytest: %v\n%s", err, out)
		}
	}
	sandboxed := func(b *testing.B) {
		rep, err := sandbox.RunTests(b.Context(), p, sandbox.TestRun{Env: env.ID, Code: benchCode, Tests: benchTests})
		if err != nil || !rep.OK() || rep.Passed != 6 {
			b.Fatalf("RunTests: %v %+v", err, rep)
		}
	}
	b.Run("bare", func(b *testing.B) {
		for b.Loop() {
			bare(b)
		}
	})
	b.Run("process", func(b *testing.B) {
		for b.Loop() {
			sandboxed(b)
		}
	})
	b.Run("compare", func(b *testing.B) {
		var tBare, tSandbox time.Duration
		for b.Loop() {
			start := time.Now()
			bare(b)
			tBare += time.Since(start)
			start = time.Now()
			sandboxed(b)
			tSandbox += time.Since(start)
		}
		n := float64(b.N)
		b.ReportMetric(float64(tBare.Milliseconds())/n, "bare-ms/op")
		b.ReportMetric(float64(tSandbox.Milliseconds())/n, "sandbox-ms/op")
		b.ReportMetric(float64(tSandbox)/float64(tBare), "overhead-x")
	})
}

// BenchmarkRun measures the fixed cost of a sandbox: an interpreter that
// does nothing, bare and through the process backend.
func BenchmarkRun(b *testing.B) {
	p := newBackend(b, bwrap.Config{})
	env, err := p.Build(b.Context(), sandbox.EnvSpec{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("bare", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command(testPython, "-c", "pass").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("process", func(b *testing.B) {
		for b.Loop() {
			res, err := p.Run(b.Context(), sandbox.RunSpec{Env: env.ID, Argv: []string{"python", "-c", "pass"}})
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("Run: %v %+v", err, res)
			}
		}
	})
}
