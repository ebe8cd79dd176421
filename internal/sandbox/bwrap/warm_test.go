package bwrap_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/internal/metrics"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/bwrap"
	"github.com/autocoder/autocoder/internal/sandbox/sandboxtest"
)

// TestWarmConformance is the conformance and escape suite with the warm
// runner on: every run it can take (python -c, pytest) goes through a
// zygote's child.
func TestWarmConformance(t *testing.T) {
	dir := sharedStateDir(t)
	sandboxtest.Run(t, func(t *testing.T) sandbox.Backend {
		return newBackend(t, bwrap.Config{StateDir: dir, DiskQuota: sandboxtest.TestDiskQuota, WarmRunner: true, OnWarmFallback: func(reason string) {
			t.Errorf("warm runner fell back to a cold run: %s", reason)
		}})
	})
}

// TestWarmIsolation: consecutive warm runs of one zygote share nothing.
func TestWarmIsolation(t *testing.T) {
	p := newBackend(t, bwrap.Config{WarmRunner: true, OnWarmFallback: func(reason string) {
		t.Errorf("warm runner fell back to a cold run: %s", reason)
	}})
	sandboxtest.WarmIsolation(t, p)
}

// TestWarmFallback: a run after the zygote was killed still passes, as a
// cold run, and is counted; the one after it is warm again.
func TestWarmFallback(t *testing.T) {
	reg := prometheus.NewRegistry()
	onFallback, err := metrics.NewBuilderOn(reg).WarmFallbacks()
	if err != nil {
		t.Fatal(err)
	}
	p := newBackend(t, bwrap.Config{WarmRunner: true, OnWarmFallback: onFallback("process")})
	env, err := p.Build(t.Context(), sandbox.EnvSpec{})
	if err != nil {
		t.Fatal(err)
	}
	run := func() string {
		t.Helper()
		res, err := p.Run(t.Context(), sandbox.RunSpec{Env: env.ID, Timeout: 60 * time.Second,
			Argv: []string{"python", "-c", `import sys; print("warm" if "pytest" in sys.modules else "cold")`}})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("Run: %v %d %s", err, res.ExitCode, res.Stderr)
		}
		return strings.TrimSpace(string(res.Stdout))
	}
	if how := run(); how != "warm" {
		t.Fatalf("first run: %s", how)
	}
	if n := bwrap.KillZygotes(p); n != 1 {
		t.Fatalf("%d zygotes killed, want 1", n)
	}
	if how := run(); how != "cold" {
		t.Errorf("run after the kill: %s", how)
	}
	if got := fallbacks(t, reg); got != 1 {
		t.Errorf("fallbacks counted: %v, want 1", got)
	}
	if how := run(); how != "warm" {
		t.Errorf("run after the fallback: %s (no new zygote)", how)
	}
}

// TestWarmRunIsNotInit: a warm run's process is not pid 1 of its pid
// namespace, as in a cold run (bubblewrap's init is): a signal it sends
// itself kills it, and its orphans are reaped (zombies would count
// against the pids limit).
func TestWarmRunIsNotInit(t *testing.T) {
	p := newBackend(t, bwrap.Config{WarmRunner: true, OnWarmFallback: func(reason string) {
		t.Errorf("warm runner fell back to a cold run: %s", reason)
	}})
	env, err := p.Build(t.Context(), sandbox.EnvSpec{})
	if err != nil {
		t.Fatal(err)
	}
	run := func(code string) sandbox.RunResult {
		t.Helper()
		res, err := p.Run(t.Context(), sandbox.RunSpec{Env: env.ID, Argv: []string{"python", "-c", code}, Timeout: time.Minute})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return res
	}
	res := run(`import os, signal, sys, time
print("warm" if "pytest" in sys.modules else "cold", os.getpid(), flush=True)
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(30)
print("survived SIGTERM")`)
	if res.ExitCode != 128+int(syscall.SIGTERM) || !strings.HasPrefix(string(res.Stdout), "warm ") || strings.Contains(string(res.Stdout), "survived") {
		t.Errorf("a warm run that sends itself SIGTERM: exit %d, stdout %q; want 143, warm, killed", res.ExitCode, res.Stdout)
	}
	res = run(`import os, sys, time
print("warm" if "pytest" in sys.modules else "cold")
for _ in range(5):
    if os.fork() == 0:
        if os.fork() == 0:
            time.sleep(0.2)
            os._exit(0)  # an orphan by now: its parent exited
        os._exit(0)
    os.wait()
def others():
    # The state of every process but the run's and pid 1: the orphans
    # run, then are zombies until pid 1 reaps them.
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit() and int(p) not in (1, os.getpid()):
            try:
                out.append(open("/proc/%s/stat" % p).read().rsplit(")", 1)[1].split()[0])
            except OSError:
                pass
    return sorted(out)
deadline = time.monotonic() + 20
while others() and time.monotonic() < deadline:
    time.sleep(0.05)
print("left", others())`)
	if res.ExitCode != 0 || string(res.Stdout) != "warm\nleft []\n" {
		t.Errorf("a warm run's orphans: exit %d, stdout %q, stderr %s; want warm and no zombies left", res.ExitCode, res.Stdout, res.Stderr)
	}
}

// fallbacks is the sum of the warm fallback counter's series.
func fallbacks(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == metrics.SandboxWarmFallbacksTotal {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// TestWarmZygotesBounded: one zygote per environment, at most MaxZygotes;
// past the bound the least recently used idle one is stopped, and every
// run is still warm.
func TestWarmZygotesBounded(t *testing.T) {
	p := newBackend(t, bwrap.Config{WarmRunner: true, PipDisabled: true, OnWarmFallback: func(reason string) {
		t.Errorf("warm runner fell back to a cold run: %s", reason)
	}})
	// Packages the base interpreter has (Debian's): distinct environments, no index.
	for i, pkg := range []string{"pytest", "pluggy", "packaging", "iniconfig", "numpy", "pytest"} {
		env, err := p.Build(t.Context(), sandbox.EnvSpec{Packages: []string{pkg}})
		if err != nil {
			t.Fatalf("Build(%s): %v", pkg, err)
		}
		res, err := p.Run(t.Context(), sandbox.RunSpec{Env: env.ID, Timeout: 60 * time.Second,
			Argv: []string{"python", "-c", `import sys; print("warm" if "pytest" in sys.modules else "cold")`}})
		if err != nil || strings.TrimSpace(string(res.Stdout)) != "warm" {
			t.Fatalf("run %d in %s: %v %q %s", i, pkg, err, res.Stdout, res.Stderr)
		}
		if n := bwrap.Zygotes(p); n > bwrap.MaxZygotes {
			t.Fatalf("after run %d: %d zygotes, over the bound %d", i, n, bwrap.MaxZygotes)
		}
	}
}

// TestWarmStdioZygoteDies: a run with a stdio bridge whose zygote dies
// under it is an infrastructure error, counted as crashed, and not run
// again (its bridge is called once): not an exit code of the program's.
func TestWarmStdioZygoteDies(t *testing.T) {
	var mu sync.Mutex
	var reasons []string
	p := newBackend(t, bwrap.Config{WarmRunner: true, OnWarmFallback: func(reason string) {
		mu.Lock()
		defer mu.Unlock()
		reasons = append(reasons, reason)
	}})
	env, err := p.Build(t.Context(), sandbox.EnvSpec{})
	if err != nil {
		t.Fatal(err)
	}
	bridges := 0
	res, err := p.Run(t.Context(), sandbox.RunSpec{Env: env.ID, Timeout: time.Minute,
		Argv: []string{"python", "-c", `import sys; print("warm" if "pytest" in sys.modules else "cold", flush=True); sys.stdin.read()`},
		Stdio: func(_ context.Context, stdin io.WriteCloser, stdout io.Reader) error {
			bridges++
			r := bufio.NewReader(stdout)
			if line, err := r.ReadString('\n'); err != nil || line != "warm\n" {
				return fmt.Errorf("first line %q, %v: want a warm run", line, err)
			}
			bwrap.KillZygotes(p)
			_, err := io.ReadAll(r)
			return err
		}})
	if err == nil {
		t.Errorf("Run: no error, exit %d: the zygote's death looks like the program's result", res.ExitCode)
	}
	if bridges != 1 {
		t.Errorf("the bridge was called %d times, want 1 (no second run)", bridges)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(reasons, []string{bwrap.WarmFallbackCrashed}) {
		t.Errorf("fallbacks counted: %q, want [crashed]", reasons)
	}
}
