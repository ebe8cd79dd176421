package submit

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
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

// TestLookupAfterLocalJob: a job run with `submit --local --prompt ...` on
// a state dir can be looked up afterwards, with the same state dir, by
// `submit status|result|events JOB_ID`.
func TestLookupAfterLocalJob(t *testing.T) {
	t.Parallel()
	requireSandboxTools(t)
	fake := fakellm.New()
	t.Cleanup(fake.Close)
	fake.On("plan", fakellm.JSON(messages.Plan{Description: "return 42", Approach: "a function"}))
	fake.On("solution", fakellm.JSON(messages.Solution{Language: "python", Code: answerCode, Packages: []string{}, SystemPackages: []string{}}))
	fake.On("tests", fakellm.JSON(messages.Tests{Code: answerTests}))
	cfg := testConfig(t)
	cfg.OpenAIBaseURL, cfg.OpenAIAPIKey = fake.URL(), "test-key"

	code, stdout, stderr := runCLI(t, cfg, "--local", "--json", "--prompt", "Compute 42 and write it as answer.",
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
			code, stdout, stderr := runCLI(t, cfg, what, job.JobID)
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
	t.Run("unknown job", func(t *testing.T) {
		for _, what := range []string{"status", "result"} {
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
