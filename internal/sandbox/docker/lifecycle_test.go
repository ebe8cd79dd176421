package docker_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/docker"
	"github.com/autocoder/autocoder/pkg/cache"
)

// childEnv names the worker when the test binary runs as a sandbox-worker
// child (TestMain); childCacheEnv is the directory of the cache it shares
// with the test (the embedded cache of one machine).
const (
	childEnv      = "AUTOCODER_DOCKER_TEST_CHILD"
	childCacheEnv = "AUTOCODER_DOCKER_TEST_CHILD_CACHE"
)

// reapDeadline is how long after the SIGKILL the reaper may take to remove
// the killed worker's containers before the test fails: a functional bound,
// under the 5 minutes the lease is checked to last, not a figure.
const reapDeadline = 3 * time.Minute

// childHeartbeat is the child's heartbeat TTL; childJob the job of its run.
const (
	childHeartbeat = 2 * time.Second
	childJob       = "job-sigkill"
)

// sandboxWorkerChild is a sandbox worker as production runs it: the warm
// pool on (the default size), a heartbeat in the shared cache. It fills
// its pool, then runs a program with a long timeout that marks its start
// and sleeps; the parent SIGKILLs it mid-run.
func sandboxWorkerChild() int {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	c, err := cache.OpenDir(os.Getenv(childCacheEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	b, err := docker.New(ctx, docker.Config{BaseImage: baseImage(), NoPull: true, Worker: os.Getenv(childEnv),
		Cache: c, HeartbeatTTL: childHeartbeat, ReapInterval: -1, Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	env, err := b.Build(ctx, sandbox.EnvSpec{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	for docker.PoolReady(b, env.ID) < docker.DefaultPoolSize {
		time.Sleep(20 * time.Millisecond) // the parent bounds the wait
	}
	fmt.Println("running")
	_, err = b.Run(ctx, sandbox.RunSpec{Env: env.ID, Timeout: 10 * time.Minute, JobID: childJob,
		Argv: []string{"python", "-c", "import time\nopen('started', 'w').close()\nwhile True: time.sleep(1)"}})
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

// runStarted reports whether the container's run has written
// /workspace/started.
func runStarted(t *testing.T, id string) bool {
	t.Helper()
	cli, err := docker.NewClient("")
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	_, err = cli.ContainerStatPath(t.Context(), id, "/workspace/started")
	return err == nil
}

// TestReaperAfterWorkerSIGKILL kills a sandbox worker with SIGKILL while a
// run, taken from its warm pool (pool on, default size), is in progress,
// and shows that another worker's reaper leaves zero containers of it,
// pooled and running, long before the 30-minute pool lease the containers
// are labelled with. The deadline (reapDeadline) is generous, for a loaded
// engine, and still well inside the lease (at least 5 minutes, checked),
// so only the heartbeat can meet it; how soon it did (about twice the TTL
// plus the reaper interval) is logged, not asserted.
func TestReaperAfterWorkerSIGKILL(t *testing.T) {
	t.Parallel()
	requireEngine(t)
	const interval = time.Second
	dir := t.TempDir()
	c, err := cache.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cfg := testConfig(t)
	cfg.ReapInterval = interval
	cfg.PoolSize = -1
	cfg.Cache = c
	cfg.HeartbeatTTL = childHeartbeat // workers sharing a cache share the TTL
	newBackend(t, cfg)                // the surviving worker, whose reaper cleans up

	worker := "test-sigkill-" + nonce(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+worker, childCacheEnv+"="+dir)
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
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
	}()
	select {
	case line := <-lines:
		if strings.TrimSpace(line) != "running" {
			t.Fatalf("child did not start its run: %q\n%s", line, stderr.String())
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("child did not fill its pool and start its run within 3m\n%s", stderr.String())
	}
	// Kill it once its run is under way in a pooled container.
	var run container.Summary
	deadline := time.Now().Add(60 * time.Second)
	for run.ID == "" {
		for _, c := range workerContainers(t, worker) {
			if c.State == "running" && runStarted(t, c.ID) {
				run = c
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child's run never started\n%s", stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if run.Labels["autocoder.role"] != "pool" {
		t.Fatalf("the run did not take a pooled container: labels %v", run.Labels)
	}
	sec, _ := strconv.ParseInt(run.Labels["autocoder.lease-expiry"], 10, 64)
	if lease := time.Until(time.Unix(sec, 0)); lease < 5*time.Minute {
		t.Fatalf("the pooled container's lease ends in %s: the lease alone would reap it (the test shows nothing)", lease)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed = true
	cmd.Wait()
	killedAt := time.Now()
	before := workerContainers(t, worker)
	if len(before) < 2 {
		t.Fatalf("%d containers of the killed worker, want its run and pooled ones", len(before))
	}
	limit := killedAt.Add(reapDeadline)
	for {
		left := workerContainers(t, worker)
		if len(left) == 0 {
			t.Logf("SIGKILLed worker's %d containers (pooled and running) gone %s after the kill",
				len(before), time.Since(killedAt).Round(time.Millisecond))
			return
		}
		if time.Now().After(limit) {
			t.Fatalf("%d containers of the killed worker remain %s after the kill (heartbeat TTL %s, reaper interval %s)",
				len(left), time.Since(killedAt).Round(time.Millisecond), childHeartbeat, interval)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestRunLabelsJob: a run's container carries its job id.
func TestRunLabelsJob(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.PoolSize = -1
	cfg.Worker = "test-joblabel-" + nonce(t)
	b := newBackend(t, cfg)
	env, err := b.Build(t.Context(), sandbox.EnvSpec{})
	if err != nil {
		t.Fatal(err)
	}
	job := "job-" + nonce(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := b.Run(ctx, sandbox.RunSpec{Env: env.ID, JobID: job, Timeout: 5 * time.Minute,
			Argv: []string{"python", "-c", "import time\nwhile True: time.sleep(1)"}})
		done <- err
	}()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var jobs []string
		for _, c := range workerContainers(t, cfg.Worker) {
			jobs = append(jobs, c.Labels["autocoder.job"])
		}
		if len(jobs) > 0 {
			if diff := cmp.Diff([]string{job}, jobs); diff != "" {
				t.Fatalf("job labels (-want +got):\n%s", diff)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the run's container never appeared")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestJobNameInImageAndLabels: an environment built for a named job is
// the same image tagged autocoder-env-<name>:<hash> (the name sanitised),
// runs of it carry the name as a label, and an unnamed job keeps the
// content name.
func TestJobNameInImageAndLabels(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.PoolSize = -1
	cfg.Worker = "test-jobname-" + nonce(t)
	b := newBackend(t, cfg)
	plain, err := b.Build(t.Context(), sandbox.EnvSpec{})
	if err != nil {
		t.Fatal(err)
	}
	// A fixed name: its one tag is reused by every run of the test, never
	// removed (removing a name of an image other tests run could take the
	// image with it on some engines).
	named, err := b.Build(t.Context(), sandbox.EnvSpec{Name: "Sales_Report.v2-e2e"})
	if err != nil {
		t.Fatal(err)
	}
	n := nonce(t)
	hash := strings.TrimPrefix(plain.ID, "autocoder-env:")
	if want := "autocoder-env-sales-report-v2-e2e:" + hash; named.ID != want || !strings.HasPrefix(plain.ID, "autocoder-env:") {
		t.Fatalf("named environment %q (plain %q), want %q", named.ID, plain.ID, want)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := b.Run(ctx, sandbox.RunSpec{Env: named.ID, JobID: "job-" + n, Timeout: 5 * time.Minute,
			Argv: []string{"python", "-c", "import time\nwhile True: time.sleep(1)"}})
		done <- err
	}()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if cs := workerContainers(t, cfg.Worker); len(cs) > 0 {
			if got := cs[0].Labels["autocoder.job-name"]; got != "sales-report-v2-e2e" {
				t.Fatalf("job name label %q", got)
			}
			if cs[0].Image != plain.ID && !strings.Contains(cs[0].Image, hash) {
				t.Errorf("container image %q, want the environment %s", cs[0].Image, plain.ID)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the run's container never appeared")
		}
		time.Sleep(50 * time.Millisecond)
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

// TestReaperSurvivesCacheLoss: the shared cache loses every key at once (a
// Redis restart without persistence, FLUSHALL, a failover to a replica that
// missed writes). Every heartbeat is missing for a moment, yet a live
// worker's containers must not be reaped: a reaper trusts a missing
// heartbeat only once it stays missing for a TTL, and live workers beat
// again well within it.
func TestReaperSurvivesCacheLoss(t *testing.T) {
	t.Parallel()
	requireEngine(t)
	const ttl = 2 * time.Second
	dir := t.TempDir()
	c, err := cache.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	live := testConfig(t)
	live.Worker += "-live"
	live.Cache, live.HeartbeatTTL, live.ReapInterval, live.PoolSize = c, ttl, -1, 1
	a := newBackend(t, live)
	reaper := testConfig(t)
	reaper.Worker += "-reaper"
	reaper.Cache, reaper.HeartbeatTTL, reaper.ReapInterval, reaper.PoolSize = c, ttl, -1, -1
	b := newBackend(t, reaper)

	env, err := a.Build(t.Context(), sandbox.EnvSpec{})
	if err != nil {
		t.Fatal(err)
	}
	waitPool(t, a, env.ID, 1)
	before := len(workerContainers(t, live.Worker))
	if before == 0 {
		t.Fatal("the live worker has no containers to lose")
	}
	// The cache loses its contents.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	// Reaper passes across two TTLs: the first sees the heartbeat missing,
	// later ones see it back.
	for end := time.Now().Add(2*ttl + time.Second); time.Now().Before(end); {
		if n := docker.Reap(t.Context(), b); n != 0 {
			t.Fatalf("a reaper pass removed %d containers of a live worker after the cache lost its keys", n)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if after := len(workerContainers(t, live.Worker)); after != before {
		t.Fatalf("the live worker had %d containers, now %d", before, after)
	}
	// The pool still serves.
	res, err := a.Run(t.Context(), sandbox.RunSpec{Env: env.ID, Argv: []string{"python", "-c", "print('ok')"}, Timeout: 30 * time.Second})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run after the cache loss: %v, %+v", err, res)
	}
}
