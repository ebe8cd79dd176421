package bwrap_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/bwrap"
	"github.com/autocoder/autocoder/internal/sandbox/sandboxtest"
)

// BenchmarkWarmHumanEval runs HumanEval's test files (the canonical
// solutions, one problem per iteration, in turn) four ways, interleaved:
// bare `/usr/bin/python3 -m pytest` in a temp dir, the same in a cgroup
// with a run's limits (bare-cg: scheduled as sandbox runs are, which on a
// loaded host whose other work sits in the root cgroup gets a smaller CPU
// share), RunTests on the process backend with the warm runner off (cold),
// and with it on (warm). It reports each one's time per run and the ratios.
func BenchmarkWarmHumanEval(b *testing.B) {
	problems := sandboxtest.HumanEval(b)
	dir := sharedStateDir(b)
	cold := newBackend(b, bwrap.Config{StateDir: dir})
	warm := newBackend(b, bwrap.Config{StateDir: dir, WarmRunner: true, OnWarmFallback: func(reason string) {
		b.Errorf("warm runner fell back: %s", reason)
	}})
	env, err := cold.Build(b.Context(), sandbox.EnvSpec{})
	if err != nil {
		b.Fatal(err)
	}
	tmp := b.TempDir()
	bare := func(code, tests string) {
		for name, content := range map[string]string{"solution.py": code, "test_solution.py": tests} {
			if err := os.WriteFile(filepath.Join(tmp, name), []byte(content), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		cmd := exec.Command(testPython, "-m", "pytest", "-q", "-p", "no:cacheprovider",
			"--junitxml="+filepath.Join(tmp, ".harness", "junit.xml"), "test_solution.py")
		cmd.Dir = tmp
		cmd.Env = []string{"PATH=/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("bare pytest: %v\n%s", err, out)
		}
	}
	bareCg := func(code, tests string) {
		dirs, remove, err := bwrap.RunCgroup(cold)
		if err != nil {
			b.Fatal(err)
		}
		defer remove()
		for name, content := range map[string]string{"solution.py": code, "test_solution.py": tests} {
			if err := os.WriteFile(filepath.Join(tmp, name), []byte(content), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		join := ""
		for _, d := range dirs {
			join += "echo $$ > " + filepath.Join(d, "cgroup.procs") + " && "
		}
		cmd := exec.Command("/bin/sh", "-c", join+`exec "$@"`, "sh", testPython, "-m", "pytest", "-q", "-p", "no:cacheprovider",
			"--junitxml="+filepath.Join(tmp, ".harness", "junit.xml"), "test_solution.py")
		cmd.Dir = tmp
		cmd.Env = []string{"PATH=/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("bare pytest in a cgroup: %v\n%s", err, out)
		}
	}
	sandboxed := func(p sandbox.Backend, code, tests string) {
		rep, err := sandbox.RunTests(b.Context(), p, sandbox.TestRun{Env: env.ID, Code: code, Tests: tests})
		if err != nil || !rep.OK() || rep.Passed != 1 {
			b.Fatalf("RunTests: %v %+v", err, rep)
		}
	}
	// The first warm run starts the zygote: not part of any run's cost.
	sandboxed(warm, problems[0].Canonical(), problems[0].HiddenTests())
	var tBare, tBareCg, tCold, tWarm time.Duration
	i := 0
	for b.Loop() {
		prob := problems[i%len(problems)]
		i++
		code, tests := prob.Canonical(), prob.HiddenTests()
		start := time.Now()
		bare(code, tests)
		tBare += time.Since(start)
		start = time.Now()
		bareCg(code, tests)
		tBareCg += time.Since(start)
		start = time.Now()
		sandboxed(cold, code, tests)
		tCold += time.Since(start)
		start = time.Now()
		sandboxed(warm, code, tests)
		tWarm += time.Since(start)
	}
	n := float64(b.N)
	b.ReportMetric(float64(tBare.Microseconds())/n/1000, "bare-ms/op")
	b.ReportMetric(float64(tBareCg.Microseconds())/n/1000, "bare-cg-ms/op")
	b.ReportMetric(float64(tCold.Microseconds())/n/1000, "cold-ms/op")
	b.ReportMetric(float64(tWarm.Microseconds())/n/1000, "warm-ms/op")
	b.ReportMetric(float64(tCold)/float64(tBare), "cold-x")
	b.ReportMetric(float64(tWarm)/float64(tBare), "warm-x")
	b.ReportMetric(float64(tWarm)/float64(tCold), "warm/cold")
	b.ReportMetric(float64(tWarm)/float64(tBareCg), "warm/bare-cg")
}

// BenchmarkWarmRun is the fixed cost of a warm run: python -c pass.
func BenchmarkWarmRun(b *testing.B) {
	p := newBackend(b, bwrap.Config{WarmRunner: true})
	env, err := p.Build(b.Context(), sandbox.EnvSpec{})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		res, err := p.Run(b.Context(), sandbox.RunSpec{Env: env.ID, Argv: []string{"python", "-c", "pass"}})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("Run: %v %+v", err, res)
		}
	}
}
