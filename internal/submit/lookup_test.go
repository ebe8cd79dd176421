package submit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"

	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/pkg/messages"
)

const python = "/usr/bin/python3"

func testConfig(t *testing.T) config.Config {
	t.Helper()
	cfg := config.FromEnv()
	cfg.StateDir = t.TempDir()
	cfg.NATSURL, cfg.RedisURL = "", ""
	cfg.OpenAIBaseURL, cfg.OpenAIAPIKey = "", ""
	cfg.Sandbox, cfg.Python, cfg.LogLevel = "process", python, "warn"
	return cfg
}

// requireSandboxTools fails (never skips) when the machine lacks what a
// local job needs: scripts/setup.sh installs it.
func requireSandboxTools(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatal("bwrap not found: run scripts/setup.sh")
	}
	if out, err := exec.Command(python, "-c", "import pytest").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import pytest (%v: %s): run scripts/setup.sh", python, err, out)
	}
}

const answerCode = `import argparse
import os


def answer():
    return 6 * 7


if __name__ == "__main__":
    argparse.ArgumentParser().parse_args()
    os.makedirs("/var/outputs", exist_ok=True)
    with open("/var/outputs/answer", "w") as f:
        f.write(str(answer()))
`

const answerTests = `from solution import answer


def test_answer():
    assert answer() == 42
`

func runCLI(t *testing.T, cfg config.Config, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb strings.Builder
	code = Run(ctx, args, cfg, IO{Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

// firstPassConfig is a test configuration whose model (a fake over HTTP)
// plans, writes code and tests that pass at once.
func firstPassConfig(t *testing.T, plan, code, tests string) config.Config {
	t.Helper()
	fake := fakellm.New()
	t.Cleanup(fake.Close)
	fake.On("plan", fakellm.JSON(messages.Plan{Description: plan, Approach: "a function"}))
	fake.On("solution", fakellm.JSON(messages.Solution{Language: "python", Code: code, Packages: []string{}, SystemPackages: []string{}}))
	fake.On("tests", fakellm.JSON(messages.Tests{Code: tests}))
	cfg := testConfig(t)
	cfg.OpenAIBaseURL, cfg.OpenAIAPIKey = fake.URL(), "test-key"
	return cfg
}

// TestLookupAfterLocalJob: a job run with `submit --local --prompt ...` on
// a state dir can be looked up afterwards, with the same state dir, by
// `submit status|result|events JOB_ID`.
func TestLookupAfterLocalJob(t *testing.T) {
	t.Parallel()
	requireSandboxTools(t)
	cfg := firstPassConfig(t, "return 42", answerCode, answerTests)

	// --local runs on the embedded NATS even when a deployment's is set
	// (as after `eval "$(submit profile env)"`): it never joins it.
	joined := cfg
	joined.NATSURL = "nats://127.0.0.1:1"
	code, stdout, stderr := runCLI(t, joined, "--local", "--json", "--prompt", "Compute 42 and write it as answer.",
		"--output", "answer=int", "--option", "max_iterations=2")
	if code != ExitSuccess {
		t.Fatalf("local job: exit %d\nstderr:\n%s", code, stderr)
	}
	var job messages.Result
	if err := json.Unmarshal([]byte(stdout), &job); err != nil {
		t.Fatalf("stdout is not a result: %v\n%s", err, stdout)
	}
	if !strings.Contains(stderr, "job "+job.JobID+" submitted") {
		t.Errorf("stderr does not name the job: %s", stderr)
	}
	if job.Spec == nil || job.Spec.Options.MaxIterations != 2 || job.Spec.Outputs["answer"] != messages.TypeInt {
		t.Errorf("the flag-built spec did not reach the job: %+v", job.Spec)
	}

	for _, what := range []string{"status", "result"} {
		t.Run(what, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, cfg, what, job.JobID, "--json")
			if code != ExitSuccess {
				t.Fatalf("exit %d, stderr %s", code, stderr)
			}
			var got messages.Result
			if err := json.Unmarshal([]byte(stdout), &got); err != nil {
				t.Fatalf("stdout is not a result: %v\n%s", err, stdout)
			}
			if diff := cmp.Diff(job, got, cmpopts.EquateApproxTime(0)); diff != "" {
				t.Errorf("%s differs from the job's result (-job +%s):\n%s", what, what, diff)
			}
		})
	}
	t.Run("events", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, cfg, "events", job.JobID)
		if code != ExitSuccess {
			t.Fatalf("exit %d, stderr %s", code, stderr)
		}
		var types []messages.EventType
		sc := bufio.NewScanner(strings.NewReader(stdout))
		for sc.Scan() {
			var e messages.Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
			types = append(types, e.Type)
		}
		if len(types) < 2 || types[0] != messages.EventJobStarted || types[len(types)-1] != messages.EventJobFinished {
			t.Errorf("events %v: want job_started first and job_finished last", types)
		}
	})
	// Cancelling a finished job fails (exit 1); with --json its result is
	// on stdout, as the HTTP API's 409 has it, for a program to read.
	t.Run("cancel finished", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, cfg, "cancel", "--json", job.JobID)
		var got messages.Result
		if err := json.Unmarshal([]byte(stdout), &got); code != ExitFailed || err != nil || got.JobID != job.JobID || got.Status != job.Status {
			t.Errorf("cancel --json of a finished job: exit %d, stdout %q (%v), stderr %q; want exit 1 and its result", code, stdout, err, stderr)
		}
	})
	t.Run("unknown job", func(t *testing.T) {
		for _, what := range []string{"status", "result", "events", "cancel"} {
			code, _, stderr := runCLI(t, cfg, what, "job-nobody")
			if code != ExitUsage || !strings.Contains(stderr, "job job-nobody: not found") {
				t.Errorf("%s of an unknown job: exit %d, stderr %q", what, code, stderr)
			}
		}
	})
	t.Run("usage", func(t *testing.T) {
		for _, args := range [][]string{{"status"}, {"result", "a", "b"}} {
			code, _, stderr := runCLI(t, cfg, args...)
			if code != ExitUsage || !strings.Contains(stderr, "usage: submit "+args[0]+" JOB_ID") {
				t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
			}
		}
	})
}

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const filesCode = `import argparse
import os


def report():
    return "region,amount\nnorth,25.00\n"


if __name__ == "__main__":
    argparse.ArgumentParser().parse_args()
    os.makedirs("/var/outputs/charts/meta", exist_ok=True)
    with open("/var/outputs/report", "w") as f:
        f.write(report())
    with open("/var/outputs/charts/north.txt", "w") as f:
        f.write("25.00\n")
    with open("/var/outputs/charts/meta/count.txt", "w") as f:
        f.write("1")
    with open("/var/outputs/rows", "w") as f:
        f.write("1")
`

const filesTests = `from solution import report


def test_report():
    assert report().startswith("region,amount")
`

// TestResultOut: `submit result JOB_ID --out DIR`, after the job has
// ended (and the CLI that ran it has exited), writes what `submit --out`
// does: the script, its tests, result.json, and the File and Dir outputs
// downloaded from the object store.
func TestResultOut(t *testing.T) {
	t.Parallel()
	requireSandboxTools(t)
	cfg := firstPassConfig(t, "a report", filesCode, filesTests)

	code, stdout, stderr := runCLI(t, cfg, "--local", "--json", "--prompt", "Write a report (File), charts (Dir) and rows.",
		"--output", "report=File", "--output", "charts=Dir", "--output", "rows=int", "--option", "max_iterations=2")
	if code != ExitSuccess {
		t.Fatalf("local job: exit %d\nstderr:\n%s", code, stderr)
	}
	var job messages.Result
	if err := json.Unmarshal([]byte(stdout), &job); err != nil {
		t.Fatalf("stdout is not a result: %v\n%s", err, stdout)
	}

	// The flag after the job id, and before it.
	for i, args := range [][]string{
		{"result", "--json", job.JobID, "--out", filepath.Join(t.TempDir(), "out")},
		{"result", "--out", filepath.Join(t.TempDir(), "nested", "out"), job.JobID, "--json"},
	} {
		dir := args[len(args)-1]
		if i == 1 {
			dir = args[2]
		}
		code, stdout, stderr := runCLI(t, cfg, args...)
		if code != ExitSuccess {
			t.Fatalf("%v: exit %d, stderr %s", args, code, stderr)
		}
		var got messages.Result
		if err := json.Unmarshal([]byte(stdout), &got); err != nil || got.JobID != job.JobID {
			t.Fatalf("%v: stdout is not the job's result: %v\n%s", args, err, stdout)
		}
		for name, want := range map[string]string{
			"report":                "region,amount\nnorth,25.00\n",
			"charts/north.txt":      "25.00\n",
			"charts/meta/count.txt": "1",
			"solution.py":           filesCode,
			"test_solution.py":      job.Tests,
		} {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil || string(b) != want {
				t.Errorf("%v: %s = %q, %v; want %q", args, name, b, err, want)
			}
		}
		var saved messages.Result
		if b, err := os.ReadFile(filepath.Join(dir, "result.json")); err != nil || json.Unmarshal(b, &saved) != nil || saved.JobID != job.JobID {
			t.Errorf("%v: result.json: %v", args, err)
		}
		if !strings.Contains(stderr, "downloaded "+filepath.Join(dir, "report")) {
			t.Errorf("%v: stderr does not list the download: %s", args, stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "rows")); err == nil {
			t.Errorf("%v: a scalar output was written as a file", args)
		}
	}

	t.Run("bad usage", func(t *testing.T) {
		for _, args := range [][]string{
			{"result", job.JobID, "--out"},
			{"status", job.JobID, "--out", t.TempDir()},
			{"result", "--out", t.TempDir()},
			{"result", "job-nobody", "--out", t.TempDir()},
		} {
			code, stdout, stderr := runCLI(t, cfg, args...)
			if code != ExitUsage || stdout != "" || stderr == "" {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and a message", args, code, stdout, stderr)
			}
		}
	})
}

// TestBadJobIDIsUsage: an argument no job can have as its id is exit 2
// with one line, before anything connects (it was exit 3, an
// "infrastructure failure", from the KV lookup).
func TestBadJobIDIsUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"status", "bad id"}, {"result", "../x"}, {"events", "job.1"}, {"run", "bad\x1b[31mid"},
		{"task", "register", "report", "bad id"}, {"cancel", "job 1"}, {"cancel", "--reason", "x", "a.b"},
	} {
		var stdout, stderr bytes.Buffer
		code := Run(t.Context(), args, config.Config{}, IO{Stdout: &stdout, Stderr: &stderr})
		if code != ExitUsage || !strings.Contains(stderr.String(), "is not a job id") || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and one line saying it is not a job id", args, code, stderr.String(), ExitUsage)
		}
		if strings.Contains(stderr.String(), "\x1b") {
			t.Errorf("%q: stderr shows a raw escape: %q", args, stderr.String())
		}
	}
}
