package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/submit"
	"github.com/autocoder/autocoder/pkg/messages"
)

// holdCode reads the sales sample, and can hold mb MiB and sleep a while
// first: what a run's memory and timeout settings are seen to bound.
const holdCode = `import argparse
import csv
import os
import time


def total(path):
    with open(path, newline="") as f:
        return sum(float(row["amount"]) for row in csv.DictReader(f))


def main(argv=None):
    p = argparse.ArgumentParser(description="sum the sales")
    p.add_argument("--sales", default="/var/inputs/sales.csv")
    p.add_argument("--mb", type=int, default=0)
    p.add_argument("--sleep", type=float, default=0)
    a = p.parse_args(argv)
    block = bytearray(a.mb << 20)
    for i in range(0, len(block), 4096):
        block[i] = 1
    time.sleep(a.sleep)
    os.makedirs("/var/outputs", exist_ok=True)
    with open("/var/outputs/total", "w") as f:
        f.write(str(total(a.sales)))
    with open("/var/outputs/held_mb", "w") as f:
        f.write(str(len(block) >> 20))


if __name__ == "__main__":
    main()
`

const holdTests = `from solution import total


def test_total(tmp_path):
    p = tmp_path / "s.csv"
    p.write_text("amount\n1.5\n2\n")
    assert total(str(p)) == 3.5
`

const holdCSV = "region,amount\nnorth,10.5\nsouth,4.5\n"

// holdJob scripts fake for the sales job and writes its job file and
// sample to dir; it returns the job file.
func holdJob(t *testing.T, fake *fakellm.Server, dir string) string {
	t.Helper()
	fake.On("plan", fakellm.JSON(messages.Plan{Description: "sum the sales", Approach: "total(path); main writes the outputs"}))
	fake.On("solution", fakellm.JSON(sol(holdCode)))
	fake.On("tests", fakellm.JSON(messages.Tests{Code: holdTests}))
	fake.On("packages", fakellm.JSON(messages.Packages{Packages: []string{}}))
	if err := os.WriteFile(filepath.Join(dir, "sales.csv"), []byte(holdCSV), 0o644); err != nil {
		t.Fatal(err)
	}
	job := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(job, []byte(`name: Sales_Summary.v1
prompt: Sum the amount column of the sales CSV into total; hold mb MiB and sleep sleep seconds first; write held_mb.
samples: {sales: sales.csv}
inputs: {mb: int, sleep: float}
outputs: {total: float, held_mb: int}
options: {max_iterations: 2}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return job
}

// TestRunSettingsOnTheCLI is issue 22's run settings on the CLI: `submit
// result --out` downloads the samples the job came from and the result
// names them; `submit run --timeout 2s` stops a script that sleeps; a task
// registered with --memory 256Mi runs with that limit (a script holding
// 400 MiB fails, one holding 50 MiB runs), and `task run --memory 1Gi`
// lays its own setting over the task's.
func TestRunSettingsOnTheCLI(t *testing.T) {
	t.Parallel()
	requireSandboxTools(t)
	fake := fakellm.New()
	defer fake.Close()
	dir := t.TempDir()
	job := holdJob(t, fake, dir)
	cfg := testConfig(t, fake)

	code, stdout, stderr := cli(t, cfg, "--local", "--json", job)
	if code != submit.ExitSuccess {
		t.Fatalf("exit %d\nstderr:\n%s\nstdout:\n%s", code, stderr, stdout)
	}
	res := decodeResult(t, stdout)
	if res.Outputs["total"] != 15.0 || len(res.OriginalSamples) != 1 || res.OriginalSamples[0].FileName != "sales.csv" {
		t.Fatalf("outputs %v, original samples %+v", res.Outputs, res.OriginalSamples)
	}

	// submit result --out: the script, the result, and the original sample.
	out := filepath.Join(dir, "out")
	if code, _, stderr := cli(t, cfg, "result", res.JobID, "--out", out); code != submit.ExitSuccess {
		t.Fatalf("submit result --out: exit %d: %s", code, stderr)
	}
	if got := readFile(t, filepath.Join(out, "original-samples", "sales.csv")); got != holdCSV {
		t.Errorf("downloaded original sample %q", got)
	}
	if !strings.Contains(readFile(t, filepath.Join(out, "result.json")), `"original_samples"`) {
		t.Error("result.json does not name the original samples")
	}

	// submit run --timeout 2s stops a script that would sleep a minute.
	start := time.Now()
	code, stdout, stderr = cli(t, cfg, "run", res.JobID, "--local", "--json", "--timeout", "2s", "--input", "sleep=60")
	if code != submit.ExitFailed {
		t.Fatalf("run with --timeout 2s: exit %d, want %d\nstderr:\n%s", code, submit.ExitFailed, stderr)
	}
	run := decodeResult(t, stdout)
	if took := time.Since(start); took > 50*time.Second || run.Spec.Options.Timeout.Std() != 2*time.Second ||
		!strings.Contains(strings.ToLower(run.Error+run.Output), "timed out") {
		t.Errorf("the run took %s; timeout %s; error %q output %q", took, run.Spec.Options.Timeout.Std(), run.Error, run.Output)
	}

	// A task with memory 256Mi: 400 MiB does not fit, 50 MiB does.
	if code, stdout, stderr := cli(t, cfg, "task", "register", "small-sales", res.JobID, "--memory", "256Mi", "--env", "REGION=north"); code != submit.ExitSuccess {
		t.Fatalf("task register: exit %d: %s %s", code, stdout, stderr)
	}
	code, stdout, stderr = cli(t, cfg, "task", "run", "small-sales", "--local", "--json", "--input", "mb=400")
	if code != submit.ExitFailed {
		t.Fatalf("task run holding 400 MiB in 256Mi: exit %d, want %d\nstderr:\n%s\nstdout:\n%s", code, submit.ExitFailed, stderr, stdout)
	}
	if run := decodeResult(t, stdout); run.Spec.Options.Resources.Memory != "256Mi" {
		t.Errorf("the task's run had memory %q", run.Spec.Options.Resources.Memory)
	}
	code, stdout, stderr = cli(t, cfg, "task", "run", "small-sales", "--local", "--json", "--input", "mb=50")
	if code != submit.ExitSuccess {
		t.Fatalf("task run holding 50 MiB in 256Mi: exit %d\nstderr:\n%s\nstdout:\n%s", code, stderr, stdout)
	}
	if run := decodeResult(t, stdout); run.Outputs["held_mb"] != 50.0 || run.Spec.Options.EnvVars["REGION"] != "north" {
		t.Errorf("run outputs %v, env %v", run.Outputs, run.Spec.Options.EnvVars)
	}
	code, stdout, stderr = cli(t, cfg, "task", "run", "small-sales", "--local", "--json", "--memory", "1Gi", "--input", "mb=400")
	if code != submit.ExitSuccess {
		t.Fatalf("task run --memory 1Gi holding 400 MiB: exit %d\nstderr:\n%s\nstdout:\n%s", code, stderr, stdout)
	}
	if run := decodeResult(t, stdout); run.Outputs["held_mb"] != 400.0 || run.Spec.Options.Resources.Memory != "1Gi" {
		t.Errorf("run outputs %v, memory %q", run.Outputs, run.Spec.Options.Resources.Memory)
	}
	// A bad setting is refused before anything starts, naming it.
	if code, _, stderr := cli(t, cfg, "task", "run", "small-sales", "--local", "--memory", "lots"); code != submit.ExitUsage || !strings.Contains(stderr, "options.resources.memory") {
		t.Errorf("--memory lots: exit %d: %s", code, stderr)
	}
}
