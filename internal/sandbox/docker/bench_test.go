package docker_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/problemset"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/docker"
	"github.com/autocoder/autocoder/internal/sandbox/sandboxtest"
)

const benchCode = "def add(a, b):\n    return a + b\n"

// benchTests is the test file of internal/sandbox's process benchmark, so
// the ratios compare.
const benchTests = `
import pytest
from solution import add

def test_add():
    assert add(2, 3) == 5

@pytest.mark.parametrize("a", range(5))
def test_identity(a):
    assert add(a, 0) == a
`

// bareRun runs pytest with the host's /usr/bin/python3 on the same files.
func bareRun(b *testing.B) func() {
	dir := b.TempDir()
	for name, content := range map[string]string{"solution.py": benchCode, "test_solution.py": benchTests} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return func() {
		cmd := exec.Command("/usr/bin/python3", "-m", "pytest", "-q", "-p", "no:cacheprovider",
			"--junitxml="+filepath.Join(dir, ".harness", "junit.xml"), "test_solution.py")
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("bare pytest: %v\n%s", err, out)
		}
	}
}

// BenchmarkRunTests: one pytest run of a small test file, bare on the host
// and through the docker backend (RunTests: container, file copies,
// pytest, JUnit report back), with a cold container each time and with the
// warm pool (the pool is refilled between iterations, off the clock: this
// is the latency of a run that finds a warm sandbox). "compare-*" alternate
// bare and sandboxed runs and report the ratio.
func BenchmarkRunTests(b *testing.B) {
	bare := bareRun(b)
	cold := docker.Config{PoolSize: -1}
	warm := docker.Config{PoolSize: 2}
	setup := func(b *testing.B, edit docker.Config) (*docker.Backend, string) {
		cfg := testConfig(b)
		cfg.PoolSize = edit.PoolSize
		cfg.ReapInterval = -1
		be := newBackend(b, cfg)
		env, err := be.Build(b.Context(), sandbox.EnvSpec{})
		if err != nil {
			b.Fatal(err)
		}
		return be, env.ID
	}
	sandboxed := func(b *testing.B, be *docker.Backend, env string) {
		rep, err := sandbox.RunTests(b.Context(), be, sandbox.TestRun{Env: env, Code: benchCode, Tests: benchTests})
		if err != nil || !rep.OK() || rep.Passed != 6 {
			b.Fatalf("RunTests: %v %+v", err, rep)
		}
	}
	b.Run("bare", func(b *testing.B) {
		for b.Loop() {
			bare()
		}
	})
	for _, mode := range []struct {
		name string
		cfg  docker.Config
	}{{"cold", cold}, {"warm", warm}} {
		b.Run("compare-"+mode.name, func(b *testing.B) {
			be, env := setup(b, mode.cfg)
			var tBare, tBox time.Duration
			// Each run starts with the backend idle (the pool full, no
			// removal in flight), so neither side pays for the other's
			// background work on this 2-core machine.
			quiet := func() {
				b.StopTimer()
				defer b.StartTimer()
				if mode.cfg.PoolSize > 0 {
					waitPool(b, be, env, mode.cfg.PoolSize)
				}
				for docker.Removing(be) > 0 {
					time.Sleep(5 * time.Millisecond)
				}
			}
			for b.Loop() {
				quiet()
				start := time.Now()
				sandboxed(b, be, env)
				tBox += time.Since(start)
				quiet()
				start = time.Now()
				bare()
				tBare += time.Since(start)
			}
			n := float64(b.N)
			b.ReportMetric(float64(tBare.Milliseconds())/n, "bare-ms/op")
			b.ReportMetric(float64(tBox.Milliseconds())/n, "sandbox-ms/op")
			b.ReportMetric(float64(tBox)/float64(tBare), "overhead-x")
		})
	}
}

// BenchmarkBuild: an image build of a new package set (a local wheel, so
// no network: FROM the base environment image, pip install, commit), and
// a Build of an image that exists, on a running backend (the name is
// known) and on a fresh one (one ImageInspect).
func BenchmarkBuild(b *testing.B) {
	wheels := b.TempDir()
	b.Run("cold", func(b *testing.B) {
		be := newBackend(b, wheelConfig(b, wheels, nil))
		if _, err := be.Build(b.Context(), sandbox.EnvSpec{}); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			b.StopTimer()
			pkg := "acbench-" + nonce(b)
			writeWheel(b, wheels, pkg, "x")
			b.StartTimer()
			env, err := be.Build(b.Context(), sandbox.EnvSpec{Packages: []string{pkg}})
			if err != nil {
				b.Fatal(err)
			}
			removeImages(b, &env.ID)
		}
	})
	b.Run("cache-hit", func(b *testing.B) {
		be := newBackend(b, wheelConfig(b, wheels, nil))
		if _, err := be.Build(b.Context(), sandbox.EnvSpec{}); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := be.Build(b.Context(), sandbox.EnvSpec{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cache-hit-fresh-backend", func(b *testing.B) {
		cfg := wheelConfig(b, wheels, nil)
		first := newBackend(b, cfg)
		if _, err := first.Build(b.Context(), sandbox.EnvSpec{}); err != nil {
			b.Fatal(err)
		}
		var total time.Duration
		for b.Loop() {
			b.StopTimer()
			be := newBackendFor(b, cfg)
			b.StartTimer()
			start := time.Now()
			if _, err := be.Build(b.Context(), sandbox.EnvSpec{}); err != nil {
				b.Fatal(err)
			}
			total += time.Since(start)
			b.StopTimer()
			be.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "build-ms/op")
	})
}

// BenchmarkOverhead is the table's measurement: each iteration runs the
// same tests bare, in a cold container and in a warm one, in turn, each
// starting with the backends idle, and the medians are reported (on a
// shared 2-core machine the means are at the mercy of other work).
func BenchmarkOverhead(b *testing.B) {
	bare := bareRun(b)
	open := func(pool int) (*docker.Backend, string) {
		cfg := testConfig(b)
		cfg.PoolSize = pool
		cfg.ReapInterval = -1
		be := newBackend(b, cfg)
		env, err := be.Build(b.Context(), sandbox.EnvSpec{})
		if err != nil {
			b.Fatal(err)
		}
		return be, env.ID
	}
	cold, coldEnv := open(-1)
	warm, warmEnv := open(1)
	quiet := func() {
		waitPool(b, warm, warmEnv, 1)
		for docker.Removing(cold)+docker.Removing(warm) > 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	timed := func(fn func()) time.Duration {
		quiet()
		start := time.Now()
		fn()
		return time.Since(start)
	}
	run := func(be *docker.Backend, env string) func() {
		return func() {
			rep, err := sandbox.RunTests(b.Context(), be, sandbox.TestRun{Env: env, Code: benchCode, Tests: benchTests})
			if err != nil || !rep.OK() || rep.Passed != 6 {
				b.Fatalf("RunTests: %v %+v", err, rep)
			}
		}
	}
	var tBare, tCold, tWarm []time.Duration
	for b.Loop() {
		tBare = append(tBare, timed(bare))
		tCold = append(tCold, timed(run(cold, coldEnv)))
		tWarm = append(tWarm, timed(run(warm, warmEnv)))
	}
	median := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2]) / float64(time.Millisecond)
	}
	mb, mc, mw := median(tBare), median(tCold), median(tWarm)
	b.ReportMetric(mb, "bare-ms")
	b.ReportMetric(mc, "cold-ms")
	b.ReportMetric(mw, "warm-ms")
	b.ReportMetric(mc/mb, "cold-x")
	b.ReportMetric(mw/mb, "warm-x")
}

// BenchmarkWarmHumanEval runs HumanEval's test files (canonical solutions,
// one problem per iteration in turn) bare (/usr/bin/python3 -m pytest),
// through the warm pool with a cold stub (it executes a fresh python) and
// through the warm pool with the warm runner (the stub imported pytest
// while it waited), each starting with the backends idle; it reports the
// medians and their ratios to bare.
func BenchmarkWarmHumanEval(b *testing.B) {
	problems := sandboxtest.HumanEval(b)
	dir := b.TempDir()
	open := func(warmRunner bool) (*docker.Backend, string) {
		cfg := testConfig(b)
		cfg.PoolSize, cfg.ReapInterval, cfg.WarmRunner = 1, -1, warmRunner
		be := newBackend(b, cfg)
		env, err := be.Build(b.Context(), sandbox.EnvSpec{})
		if err != nil {
			b.Fatal(err)
		}
		return be, env.ID
	}
	pool, poolEnv := open(false)
	warm, warmEnv := open(true)
	quiet := func() {
		waitPool(b, pool, poolEnv, 1)
		waitPool(b, warm, warmEnv, 1)
		for docker.Removing(pool)+docker.Removing(warm) > 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	var tBare, tPool, tWarm []time.Duration
	i := 0
	for b.Loop() {
		p := problems[i%len(problems)]
		i++
		for _, c := range []struct {
			d  *[]time.Duration
			fn func()
		}{
			{&tBare, func() { bareHumanEval(b, dir, p) }},
			{&tPool, func() { sandboxHumanEval(b, pool, poolEnv, p) }},
			{&tWarm, func() { sandboxHumanEval(b, warm, warmEnv, p) }},
		} {
			quiet()
			start := time.Now()
			c.fn()
			*c.d = append(*c.d, time.Since(start))
		}
	}
	median := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2]) / float64(time.Millisecond)
	}
	mb, mp, mw := median(tBare), median(tPool), median(tWarm)
	b.ReportMetric(mb, "bare-ms")
	b.ReportMetric(mp, "pool-ms")
	b.ReportMetric(mw, "warm-ms")
	b.ReportMetric(mp/mb, "pool-x")
	b.ReportMetric(mw/mb, "warm-x")
}

func bareHumanEval(b *testing.B, dir string, p problemset.Problem) {
	for name, content := range map[string]string{"solution.py": p.Canonical(), "test_solution.py": p.HiddenTests()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cmd := exec.Command("/usr/bin/python3", "-m", "pytest", "-q", "-p", "no:cacheprovider",
		"--junitxml="+filepath.Join(dir, ".harness", "junit.xml"), "test_solution.py")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE=1"}
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("bare pytest: %v\n%s", err, out)
	}
}

func sandboxHumanEval(b *testing.B, be *docker.Backend, env string, p problemset.Problem) {
	rep, err := sandbox.RunTests(b.Context(), be, sandbox.TestRun{Env: env, Code: p.Canonical(), Tests: p.HiddenTests()})
	if err != nil || !rep.OK() || rep.Passed != 1 {
		b.Fatalf("RunTests: %v %+v", err, rep)
	}
}
