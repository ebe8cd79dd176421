package docker_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/docker"
)

// childEnv names the worker when the test binary runs as a sandbox-worker
// child (TestMain).
const childEnv = "AUTOCODER_DOCKER_TEST_CHILD"

// childTimeout and childMargin make the child's run lease short.
const (
	childTimeout = 4 * time.Second
	childMargin  = time.Second
)

// sandboxWorkerChild is a minimal sandbox worker: it starts a backend and
// runs a program that sleeps far past its timeout. The parent SIGKILLs it
// mid-run.
func sandboxWorkerChild() int {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	b, err := docker.New(ctx, docker.Config{BaseImage: baseImage(), NoPull: true, Worker: os.Getenv(childEnv),
		LeaseMargin: childMargin, PoolSize: -1, ReapInterval: -1, Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	env, err := b.Build(ctx, sandbox.EnvSpec{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	fmt.Println("running")
	_, err = b.Run(ctx, sandbox.RunSpec{Env: env.ID, Timeout: childTimeout,
		Argv: []string{"python", "-c", "import time\nwhile True: time.sleep(1)"}})
	fmt.Fprintln(os.Stderr, "run returned (the parent should have killed us):", err)
	return 4
}

// workerContainers lists the containers labelled with worker.
func workerContainers(t *testing.T, worker string) []container.Summary {
	t.Helper()
	cli, err := docker.NewClient("")
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	list, err := cli.ContainerList(t.Context(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", "autocoder.worker="+worker))})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// TestReaperAfterWorkerSIGKILL kills a sandbox worker with SIGKILL while
// its container runs, and shows that a reaper (here another worker's)
// leaves zero containers of it once the lease is over, within the reaper
// interval.
func TestReaperAfterWorkerSIGKILL(t *testing.T) {
	t.Parallel()
	requireEngine(t)
	const interval = time.Second
	cfg := testConfig(t)
	cfg.ReapInterval = interval
	cfg.PoolSize = -1
	newBackend(t, cfg) // the surviving worker, whose reaper cleans up

	worker := "test-sigkill-" + nonce(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+worker)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			cmd.Process.Kill()
		}
		cmd.Wait()
	})
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "running" {
		t.Fatalf("child did not start its run: %q\n%s", line, stderr.String())
	}
	// Kill it once its container runs.
	var expiry time.Time
	deadline := time.Now().Add(60 * time.Second)
	for expiry.IsZero() {
		for _, c := range workerContainers(t, worker) {
			if c.State == "running" {
				sec, _ := strconv.ParseInt(c.Labels["autocoder.lease-expiry"], 10, 64)
				expiry = time.Unix(sec, 0)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child's container never ran\n%s", stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed = true
	cmd.Wait()
	killedAt := time.Now()
	if left := workerContainers(t, worker); len(left) == 0 {
		t.Fatal("the container vanished with its worker: nothing to reap (the test shows nothing)")
	}
	// The lease is whole seconds; allow two intervals and removal time.
	limit := expiry.Add(time.Second + 2*interval + 5*time.Second)
	for {
		left := workerContainers(t, worker)
		if len(left) == 0 {
			t.Logf("SIGKILLed worker's container gone %s after the kill, %s after its lease ended",
				time.Since(killedAt).Round(time.Millisecond), time.Since(expiry).Round(time.Millisecond))
			return
		}
		if time.Now().After(limit) {
			t.Fatalf("%d containers of the killed worker remain %s after their lease ended (reaper interval %s)",
				len(left), time.Since(expiry), interval)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// recorder keeps the attributes of log records with a given message.
type recorder struct {
	next    slog.Handler
	message string
	mu      *sync.Mutex
	records *[]map[string]string
}

func newRecorder(next slog.Handler, message string) *recorder {
	return &recorder{next: next, message: message, mu: &sync.Mutex{}, records: &[]map[string]string{}}
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(ctx context.Context, rec slog.Record) error {
	if rec.Message == r.message {
		m := map[string]string{}
		rec.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
		r.mu.Lock()
		*r.records = append(*r.records, m)
		r.mu.Unlock()
	}
	if r.next.Enabled(ctx, rec.Level) {
		return r.next.Handle(ctx, rec)
	}
	return nil
}
func (r *recorder) WithAttrs(as []slog.Attr) slog.Handler {
	c := *r
	c.next = r.next.WithAttrs(as)
	return &c
}
func (r *recorder) WithGroup(g string) slog.Handler {
	c := *r
	c.next = r.next.WithGroup(g)
	return &c
}
func (r *recorder) all() []map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string]string{}, *r.records...)
}

// waitPool waits until image has n pooled sandboxes.
func waitPool(t testing.TB, b *docker.Backend, image string, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for docker.PoolReady(b, image) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the pool of %s has %d sandboxes after 2m, want %d", image, docker.PoolReady(b, image), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWarmPool: a built image gets pooled sandboxes; runs with the default
// limits take them (each used once) and the pool refills; runs with other
// limits start their own; Close removes the pool.
func TestWarmPool(t *testing.T) {
	t.Parallel()
	rec := newRecorder(testLogger(t).Handler(), "sandbox run")
	cfg := testConfig(t)
	cfg.PoolSize = 2
	cfg.Logger = slog.New(rec)
	cfg.Worker = "test-pool-" + nonce(t)
	b := newBackendFor(t, cfg)
	env, err := b.Build(t.Context(), sandbox.EnvSpec{})
	if err != nil {
		t.Fatal(err)
	}
	waitPool(t, b, env.ID, 2)
	for i := range 3 {
		res, err := b.Run(t.Context(), sandbox.RunSpec{Env: env.ID, Argv: []string{"python", "-c", "import os; print(os.getpid())"},
			Files: map[string][]byte{"x.txt": []byte("x")}})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("run %d: %v %s", i, err, res.Stderr)
		}
		waitPool(t, b, env.ID, 2)
	}
	res, err := b.Run(t.Context(), sandbox.RunSpec{Env: env.ID, Argv: []string{"python", "-c", "pass"}, Memory: 300 << 20})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run with other limits: %v %s", err, res.Stderr)
	}
	var pooled []string
	for _, r := range rec.all() {
		pooled = append(pooled, r["pooled"])
	}
	if got, want := strings.Join(pooled, " "), "true true true false"; got != want {
		t.Errorf("pooled runs: %s, want %s", got, want)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if left := workerContainers(t, cfg.Worker); len(left) != 0 {
		t.Errorf("%d containers remain after Close", len(left))
	}
}
