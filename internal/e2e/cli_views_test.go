package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/pkg/messages"
)

// TestCLIProgressAndViews runs the real submit binary on the README's
// example (the scripted model's first solution has a bug): flags after the
// job file; progress lines with each stage's own duration and the failing
// test named under the test run and the diagnosis; then lookups of the
// job with the same state dir, in the human view and with --json; and a
// lookup where no deployment is configured.
func TestCLIProgressAndViews(t *testing.T) {
	t.Parallel()
	requireSandboxTools(t)
	bin := buildSubmit(t)
	state := t.TempDir()
	env := append(cleanEnv(), "AUTOCODER_STATE_DIR="+state, "AUTOCODER_SANDBOX=process", "AUTOCODER_PYTHON="+python)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	job := filepath.Join(repoRoot(t), "examples", "sales", "job.yaml")
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "submit"), job, "--local", "--out", t.TempDir())
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("submit: %v\n%s", err, stderr.String())
	}
	progress := stderr.String()
	for _, re := range []string{
		`(?m)^  run_tests +iteration 1  3 passed, 1 failed, 0 errors  took [0-9.]+m?s( \(queued [0-9.]+m?s\))?  \[[0-9.]+m?s in all\]\n +failing: test_totals$`,
		`(?m)^  diagnose +iteration 1  ok  took [0-9.]+m?s .*\n +diagnosis: test_totals \(logic\): `,
		`(?m)^  run_tests +iteration 2  4 passed  took `,
	} {
		if !regexp.MustCompile(re).MatchString(progress) {
			t.Errorf("progress does not match %s:\n%s", re, progress)
		}
	}
	m := submittedRe.FindStringSubmatch(progress)
	if m == nil {
		t.Fatalf("no job id in:\n%s", progress)
	}
	id := m[1]

	out, err := runSubmit(ctx, bin, env, "status", id)
	if err != nil || !strings.HasPrefix(out, "job "+id+": SUCCEEDED after ") ||
		!regexp.MustCompile(`(?m)^  run_tests +iteration 1 +[0-9.]+m?s +3 passed, 1 failed`).MatchString(out) ||
		!strings.Contains(out, "total_revenue = 1485.95") || strings.Contains(out, `"conversation_history"`) {
		t.Errorf("status: %v\n%s", err, out)
	}
	out, err = runSubmit(ctx, bin, env, "result", "--json", id)
	var res messages.Result
	if err != nil || json.Unmarshal([]byte(out), &res) != nil || res.JobID != id || len(res.ConversationHistory) == 0 {
		t.Errorf("result --json: %v\n%.300s", err, out)
	}
	if out, err := runSubmit(ctx, bin, env, "events", "job-nobody"); exitCodeOf(err) != 2 || !strings.Contains(out, "not found") {
		t.Errorf("events of an unknown job: %v %q, want exit 2", err, out)
	}
	empty := append(cleanEnv(), "AUTOCODER_STATE_DIR="+t.TempDir())
	if out, err := runSubmit(ctx, bin, empty, "status", id); exitCodeOf(err) != 2 || !strings.Contains(out, "no deployment configured") {
		t.Errorf("status with no deployment: %v %q, want exit 2 saying so", err, out)
	}
}
