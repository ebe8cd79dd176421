package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/submit"
	"github.com/autocoder/autocoder/pkg/messages"
)

// writeJobFile writes spec as a JSON job file (Contract 1 (docs/contracts.md)) and returns its path.
func writeJobFile(t *testing.T, spec messages.JobSpec) string {
	t.Helper()
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "job.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCLIExitsOneWhenTestsNeverPass: docs/contracts.md's Contract 4 exit 1 through the CLI —
// the job ran to its end, its tests never passed, and --json still prints
// the result object with the reason.
func TestCLIExitsOneWhenTestsNeverPass(t *testing.T) {
	t.Parallel()
	requireSandboxTools(t)
	fake := fakellm.New()
	defer fake.Close()
	scriptNeverPasses(fake)
	spec := answerSpec()
	spec.Options.MaxIterations = 2
	job := writeJobFile(t, spec)

	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	code := submit.Run(ctx, []string{"--local", "--json", job}, testConfig(t, fake), submit.IO{Stdout: &stdout, Stderr: &stderr})
	if code != submit.ExitFailed {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", code, submit.ExitFailed, stderr.String())
	}
	var res messages.Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("stdout is not a result object: %v\n%s", err, stdout.String())
	}
	if res.Success || res.Status != messages.StatusFailed || !strings.Contains(res.Error, "max_iterations") {
		t.Errorf("success %v, status %s, error %q: want a failed job that names max_iterations", res.Success, res.Status, res.Error)
	}
}

// TestCLIExitsThreeOnInfrastructureFailure: docs/contracts.md's Contract 4 exit 3 — the
// infrastructure is broken, the spec is fine. The CLI says what is wrong in
// one line, promptly, and never panics.
func TestCLIExitsThreeOnInfrastructureFailure(t *testing.T) {
	t.Parallel()
	requireSandboxTools(t)
	// An address where nothing listens.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	job := writeJobFile(t, answerSpec())

	tests := []struct {
		name    string
		args    []string
		edit    func(*config.Config)
		wantErr string
	}{
		{"NATS does not answer", []string{job}, func(c *config.Config) { c.NATSURL = "nats://" + dead }, dead},
		{"NATS does not answer for a lookup", []string{"status", "job-x"}, func(c *config.Config) { c.NATSURL = "nats://" + dead }, dead},
		{"redis does not answer", []string{"--local", job}, func(c *config.Config) { c.RedisURL = "redis://" + dead + "/0" }, dead},
		{"the sandbox interpreter is missing", []string{"--local", job}, func(c *config.Config) { c.Python = "/nonexistent/python3" }, "/nonexistent/python3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := fakellm.New()
			defer fake.Close()
			cfg := testConfig(t, fake)
			tc.edit(&cfg)
			var stdout, stderr bytes.Buffer
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			code := submit.Run(ctx, tc.args, cfg, submit.IO{Stdout: &stdout, Stderr: &stderr})
			if code != submit.ExitInfra {
				t.Fatalf("exit %d, want %d\nstderr:\n%s", code, submit.ExitInfra, stderr.String())
			}
			if ctx.Err() != nil {
				t.Fatal("the CLI waited out the test's deadline")
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, "submit: ") || !strings.Contains(last, tc.wantErr) {
				t.Errorf("last stderr line %q: want one line naming %q", last, tc.wantErr)
			}
			if n := len(fake.Requests()); n != 0 {
				t.Errorf("%d model calls on a broken stack", n)
			}
		})
	}
}
