package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/sandbox/docker"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

// salesCode is the scripted solution of the Docker job: stdlib only, every
// scalar output type, a sample read from /var/inputs.
const salesCode = `import argparse
import csv
import os


def summarize(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    by_region = {}
    for r in rows:
        by_region[r["region"]] = by_region.get(r["region"], 0.0) + float(r["amount"])
    return {
        "row_count": len(rows),
        "total": round(sum(float(r["amount"]) for r in rows), 2),
        "top_region": max(by_region, key=by_region.get),
        "all_positive": all(float(r["amount"]) > 0 for r in rows),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description="sales summary")
    parser.add_argument("--sales", default="/var/inputs/sales.csv")
    args = parser.parse_args(argv)
    summary = summarize(args.sales)
    os.makedirs("/var/outputs", exist_ok=True)
    for name, value in summary.items():
        with open(os.path.join("/var/outputs", name), "w") as f:
            f.write(("true" if value else "false") if isinstance(value, bool) else str(value))


if __name__ == "__main__":
    main()
`

const salesTests = `from solution import summarize


def test_summary():
    s = summarize("/var/inputs/sales.csv")
    assert s["row_count"] == 3
    assert s["total"] == 16.75
    assert s["top_region"] == "north"
    assert s["all_positive"] is True
`

// dockerBaseImage is the base image of the Docker e2e test:
// scripts/setup-docker.sh imports it, with no registry needed.
func dockerBaseImage() string {
	if v := os.Getenv("AUTOCODER_DOCKER_BASE_IMAGE"); v != "" {
		return v
	}
	return "autocoder-base:bookworm"
}

// runLog records the job_id of the docker backend's "sandbox run" records.
type runLog struct {
	mu   *sync.Mutex
	jobs *[]string
	next slog.Handler
}

func (r runLog) Enabled(context.Context, slog.Level) bool { return true }
func (r runLog) Handle(ctx context.Context, rec slog.Record) error {
	if rec.Message == "sandbox run" {
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key == "job_id" {
				r.mu.Lock()
				*r.jobs = append(*r.jobs, a.Value.String())
				r.mu.Unlock()
			}
			return true
		})
	}
	if rec.Level >= slog.LevelWarn {
		return r.next.Handle(ctx, rec)
	}
	return nil
}
func (r runLog) WithAttrs(as []slog.Attr) slog.Handler { r.next = r.next.WithAttrs(as); return r }
func (r runLog) WithGroup(g string) slog.Handler       { r.next = r.next.WithGroup(g); return r }

// TestDockerBackendJob runs a whole first-pass job through the full stack
// (embedded NATS, coordinator, llm-worker on the fake model over HTTP, a
// sandbox-worker on the Docker backend against the engine at DOCKER_HOST,
// warm pool on as in production): the tests pass in a container, the
// acceptance run's typed outputs come back, every run carried the job id,
// and no container of that worker remains after shutdown.
func TestDockerBackendJob(t *testing.T) {
	t.Parallel()
	pctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	err := docker.Ping(pctx, "")
	cancel()
	if err != nil {
		t.Fatalf("%v\nrun scripts/setup-docker.sh and export the DOCKER_HOST it prints (scripts/test.sh does both)", err)
	}
	fake := fakellm.New()
	defer fake.Close()
	scriptWithTests(fake, salesTests, sol(salesCode))

	cfg := testConfig(t, fake)
	cfg.Sandbox = "docker"
	cfg.DockerBaseImage = dockerBaseImage()
	cfg.DockerPoolSize = 0 // the default pool, as in production
	var nb [5]byte
	rand.Read(nb[:])
	cfg.WorkerName = "e2e-docker-" + hex.EncodeToString(nb[:])

	var mu sync.Mutex
	var runJobs []string
	log := slog.New(runLog{mu: &mu, jobs: &runJobs, next: slog.New(slog.NewTextHandler(tLog{t}, nil)).Handler()})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := wiring.Start(ctx, wiring.Options{Config: cfg, Roles: []wiring.Role{wiring.RoleLocal}, Logger: log})
	if err != nil {
		t.Fatalf("start stack: %v", err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			st.Close()
		}
	})
	if st.Backend == nil || st.Backend.Name() != "docker" {
		t.Fatalf("sandbox backend = %v, want docker", st.Backend)
	}

	sample := filepath.Join(t.TempDir(), "sales.csv")
	if err := os.WriteFile(sample, []byte("region,amount\nnorth,10.5\nsouth,4.25\nnorth,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := messages.JobSpec{
		Name:    "E2E_docker.job", // the image is named after it
		Prompt:  "Summarize the sales: row count, total amount, the region with the most, whether every amount is positive.",
		Samples: map[string]string{"sales": sample},
		Outputs: map[string]messages.Type{"row_count": messages.TypeInt, "total": messages.TypeFloat,
			"top_region": messages.TypeStr, "all_positive": messages.TypeBool},
		Options: messages.Options{MaxIterations: 2},
	}
	if err := spec.Validate(); err != nil {
		t.Fatalf("spec: %v", err)
	}
	id := client.NewJobID()
	jctx, jcancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer jcancel()
	if err := st.Client.Submit(jctx, id, spec); err != nil {
		t.Fatalf("submit: %v", err)
	}
	res, err := st.Client.Watch(jctx, id, nil)
	if err != nil {
		t.Fatalf("watch %s: %v", id, err)
	}
	if !res.Success {
		t.Fatalf("job failed: %s\n%s", res.Error, res.Output)
	}
	if res.Attempts != 1 {
		t.Errorf("attempts = %d, want 1 (stages %v)", res.Attempts, stageNames(res))
	}
	if !strings.HasPrefix(res.Image, "autocoder-env-e2e-docker-job:") {
		t.Errorf("image = %q, want the environment image named after the job (autocoder-env-<name>:<hash>)", res.Image)
	}
	want := map[string]any{"row_count": float64(3), "total": 16.75, "top_region": "north", "all_positive": true}
	for name, v := range want {
		if got := res.Outputs[name]; got != v {
			t.Errorf("outputs[%s] = %#v, want %#v", name, got, v)
		}
	}
	mu.Lock()
	jobs := slices.Clone(runJobs)
	mu.Unlock()
	// The tests and the acceptance run carry the job id (a run outside
	// any job's stages, such as an environment probe, may have none).
	n := 0
	for _, j := range jobs {
		if j == id {
			n++
		}
	}
	if n < 2 || slices.ContainsFunc(jobs, func(j string) bool { return j != id && j != "" }) {
		t.Errorf("docker runs were for jobs %q, want the tests and the acceptance run of %s", jobs, id)
	}

	if err := st.Close(); err != nil {
		t.Errorf("close stack: %v", err)
	}
	closed = true
	cli, err := docker.NewClient("")
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	left, err := cli.ContainerList(t.Context(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", "autocoder.worker="+cfg.WorkerName))})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("%d containers of worker %s remain after shutdown", len(left), cfg.WorkerName)
	}
}

// tLog sends log lines to t.Log.
type tLog struct{ t testing.TB }

func (w tLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
