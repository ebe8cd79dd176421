package bwrap_test

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/bwrap"
)

// TestWarmSpares: after a warm run, a spare child waits in a cgroup of its
// own; a run with other limits leaves it for the next default run, which
// takes it (and answers as any run does); Close removes the spare's
// cgroup. Isolation between runs that take spares is TestWarmIsolation's.
func TestWarmSpares(t *testing.T) {
	p := newBackend(t, bwrap.Config{WarmRunner: true, OnWarmFallback: func(reason string) {
		t.Errorf("warm runner fell back to a cold run: %s", reason)
	}})
	env, err := p.Build(t.Context(), sandbox.EnvSpec{})
	if err != nil {
		t.Fatal(err)
	}
	run := func(spec sandbox.RunSpec) string {
		t.Helper()
		spec.Env, spec.Timeout = env.ID, time.Minute
		if spec.Argv == nil {
			spec.Argv = []string{"python", "-c", "import sys; print('warm' if 'pytest' in sys.modules else 'cold')"}
		}
		res, err := p.Run(t.Context(), spec)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("Run: %v, exit %d\n%s", err, res.ExitCode, res.Stderr)
		}
		return string(res.Stdout)
	}
	waitSpare := func() []string {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			if dirs := bwrap.SpareCgroup(p); dirs != nil {
				return dirs
			}
			if time.Now().After(deadline) {
				t.Fatal("no spare after a warm run")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if out := run(sandbox.RunSpec{}); out != "warm\n" {
		t.Fatalf("first run: %q", out)
	}
	spare := waitSpare()
	for _, dir := range spare {
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("the spare's cgroup %s: %v", dir, err)
		}
	}
	if out := run(sandbox.RunSpec{Memory: 256 << 20}); out != "warm\n" {
		t.Fatalf("run with other limits: %q", out)
	}
	if got := bwrap.SpareCgroup(p); !slices.Equal(got, spare) {
		t.Fatalf("a run with other limits took the spare (%v, then %v)", spare, got)
	}
	if out := run(sandbox.RunSpec{}); out != "warm\n" {
		t.Fatalf("run on the spare: %q", out)
	}
	next := waitSpare()
	if slices.Equal(next, spare) {
		t.Fatal("the default run did not take the spare")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for _, dir := range append(spare, next...) {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("cgroup %s left behind after Close (stat: %v)", dir, err)
		}
	}
}
