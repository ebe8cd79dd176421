package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	dockerclient "github.com/docker/docker/client"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/docker"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

// BenchmarkCancel measures cancelling a job while its tests sleep 60 s, on
// each sandbox backend. ns/op is from Client.Cancel to the job's result
// read back with no process of its sandbox left (on Docker, no container of
// the job either). The baseline, measured in the same iteration on the same
// backend, is the backend alone: a Run of the same sleep whose context is
// cancelled, from the cancel to Run's return with no process of it left
// (backend-ns). cancel/backend is the ratio: what the distributed path (the
// jobs stream, the coordinator's step, the announcement on core NATS, the
// worker ending the stage, the result) adds to the sandbox's own kill.
//
// The end-to-end tests check that a cancelled job ends and leaves no
// sandbox, with generous deadlines; the figures are here (BENCHMARKS.md).
func BenchmarkCancel(b *testing.B) {
	for _, backend := range []string{"process", "docker"} {
		b.Run(backend, func(b *testing.B) { benchCancel(b, backend) })
	}
}

func benchCancel(b *testing.B, backend string) {
	r := newCancelRig(b, backend)
	var job, alone time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		alone += r.cancelRun(b, i)
		id := r.startSleepingJob(b)
		b.StartTimer()
		job += r.cancelJob(b, id)
	}
	b.StopTimer()
	b.ReportMetric(float64(alone.Nanoseconds())/float64(b.N), "backend-ns")
	b.ReportMetric(float64(job)/float64(alone), "cancel/backend")
}

// cancelRig is the stack on one backend, with a model whose tests sleep in
// a process named by marker.
type cancelRig struct {
	st      *wiring.Stack
	marker  string
	docker  *dockerclient.Client // nil on the process backend
	backend string
}

func newCancelRig(b *testing.B, backend string) *cancelRig {
	b.Helper()
	r := &cancelRig{backend: backend, marker: "autocoder-bench-cancel-" + randomHex(b)}
	cfg := config.FromEnv()
	cfg.StateDir = b.TempDir()
	cfg.NATSURL, cfg.RedisURL = "", ""
	cfg.Sandbox, cfg.Python, cfg.LogLevel, cfg.Concurrency = backend, python, "warn", 0
	switch backend {
	case "process":
		requireSandboxTools(b)
	case "docker":
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := docker.Ping(ctx, "")
		cancel()
		if err != nil {
			b.Fatalf("%v\nrun scripts/setup-docker.sh and export the DOCKER_HOST it prints (scripts/bench.sh does both)", err)
		}
		cfg.DockerBaseImage = os.Getenv("AUTOCODER_DOCKER_BASE_IMAGE")
		if cfg.DockerBaseImage == "" {
			cfg.DockerBaseImage = "autocoder-base:bookworm"
		}
		cfg.DockerPoolSize = -1 // every run in a container of its own, labelled with its job
		cfg.WorkerName = "bench-cancel-" + randomHex(b)
		if r.docker, err = docker.NewClient(""); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { r.docker.Close() })
	}
	fake := fakellm.New()
	b.Cleanup(fake.Close)
	fake.On("plan", fakellm.JSON(messages.Plan{Description: "return 42", Approach: "a function and a main block"}))
	fake.On("solution", fakellm.JSON(messages.Solution{Language: "python", Code: answerCode, Packages: []string{}, SystemPackages: []string{}}))
	fake.On("tests", fakellm.JSON(messages.Tests{Code: sleepingTests(r.marker)}))
	fake.On("packages", fakellm.JSON(messages.Packages{Packages: []string{}}))
	cfg.OpenAIBaseURL, cfg.OpenAIAPIKey = fake.URL(), "bench"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var err error
	if r.st, err = wiring.Start(ctx, wiring.Options{Config: cfg, Roles: []wiring.Role{wiring.RoleLocal}}); err != nil {
		b.Fatalf("start stack: %v", err)
	}
	b.Cleanup(func() { r.st.Close() })
	return r
}

// sleepingTests start a 60 s sleep in a child process named by marker, so
// that the benchmark sees the sandbox run and sees it gone.
func sleepingTests(marker string) string {
	return fmt.Sprintf(`import subprocess
import sys

from solution import answer


def test_answer():
    subprocess.run([sys.executable, "-c", "import time; time.sleep(60)", %q], check=True)
    assert answer() == 42
`, marker)
}

// startSleepingJob submits a job and returns once its tests sleep.
func (r *cancelRig) startSleepingJob(b *testing.B) string {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	spec := answerSpec()
	spec.Options.Timeout = messages.Duration(2 * time.Minute)
	id := client.NewJobID()
	if err := r.st.Client.Submit(ctx, id, spec); err != nil {
		b.Fatalf("submit: %v", err)
	}
	waitUntil(b, 5*time.Minute, "the job's tests to sleep", func() bool { return len(processesWith(r.marker)) > 0 })
	return id
}

// cancelJob cancels job id and returns how long it took until its result
// says so and nothing of its sandbox is left.
func (r *cancelRig) cancelJob(b *testing.B, id string) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	if _, err := r.st.Client.Cancel(ctx, id, "bench", "stop"); err != nil {
		b.Fatalf("cancel: %v", err)
	}
	res, err := r.st.Client.WaitResult(ctx, id)
	if err != nil {
		b.Fatalf("result: %v", err)
	}
	waitUntil(b, 2*time.Minute, "the job's sandbox to be gone", func() bool { return r.gone(b, id) })
	took := time.Since(start)
	if res.Cancelled == nil {
		b.Fatalf("the job ended %s, not cancelled: %s", res.Status, res.Error)
	}
	return took
}

// cancelRun is the baseline: the same sleep run on the backend alone, its
// context cancelled once the sleep runs; it returns the time from the
// cancel to Run's return with nothing of the sandbox left.
func (r *cancelRig) cancelRun(b *testing.B, i int) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env, err := r.st.Backend.Build(ctx, sandbox.EnvSpec{})
	if err != nil {
		b.Fatalf("build: %v", err)
	}
	marker := fmt.Sprintf("%s-alone-%d", r.marker, i)
	jobID := "bench-" + marker
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := r.st.Backend.Run(runCtx, sandbox.RunSpec{Env: env.ID, JobID: jobID, Timeout: 2 * time.Minute,
			// The sleep is a child process named by marker, as in the job's
			// tests: a warm runner runs the run's own python -c in a fork
			// of its interpreter, whose command line is not the run's.
			Argv: []string{"python", "-c", "import subprocess, sys; subprocess.run([sys.executable, '-c', 'import time; time.sleep(60)', sys.argv[1]])", marker}})
		done <- err
	}()
	waitUntil(b, 2*time.Minute, "the run's sleep to start", func() bool { return len(processesWith(marker)) > 0 })
	start := time.Now()
	stop()
	<-done // a cancelled run's error says it was cancelled: not a failure here
	waitUntil(b, 2*time.Minute, "the run's sandbox to be gone", func() bool { return r.gone(b, jobID) && len(processesWith(marker)) == 0 })
	return time.Since(start)
}

// gone: no process of the job's sandbox is left, nor (Docker) a container
// labelled with the job, running or not.
func (r *cancelRig) gone(b *testing.B, jobID string) bool {
	if len(processesWith(r.marker+"\x00")) > 0 { // the job's sleep: marker is its last argument
		return false
	}
	if r.docker == nil {
		return true
	}
	list, err := r.docker.ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", "autocoder.job="+jobID))})
	if err != nil {
		b.Fatalf("list containers: %v", err)
	}
	return len(list) == 0
}

// processesWith lists the live processes whose command line contains s.
func processesWith(s string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(s)) && !zombie(e.Name()) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func zombie(pid string) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return true // gone meanwhile
	}
	_, rest, _ := bytes.Cut(stat, []byte(") "))
	return strings.HasPrefix(string(rest), "Z")
}

func waitUntil(b *testing.B, limit time.Duration, what string, ok func() bool) {
	b.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			b.Fatalf("waited %s for %s", limit, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func randomHex(b *testing.B) string {
	var x [6]byte
	if _, err := rand.Read(x[:]); err != nil {
		b.Fatal(err)
	}
	return hex.EncodeToString(x[:])
}
