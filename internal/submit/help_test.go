package submit

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestHelpIsShortOnStdoutPerCommand: --help prints the command's own usage
// on stdout and exits 0, with the connection settings but none of the
// server settings, which only a --local run lists.
func TestHelpIsShortOnStdoutPerCommand(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	for _, args := range [][]string{{"--help"}, {"status", "--help"}, {"result", "-h"}, {"events", "--help"},
		{"cancel", "--help"}, {"run", "--help"}, {"task", "--help"}, {"task", "list", "--help"}, {"status", "job-1", "--help"},
		{"help"}, {"help", "cancel"}} {
		var stdout, stderr bytes.Buffer
		code := Run(context.Background(), args, cfg, IO{Stdout: &stdout, Stderr: &stderr})
		name := args[0]
		if name == "help" && len(args) > 1 {
			name = args[1]
		}
		if strings.HasPrefix(name, "-") || name == "help" {
			name = ""
		}
		out := stdout.String()
		switch {
		case code != ExitSuccess || stderr.Len() != 0:
			t.Errorf("%q: exit %d, stderr %q; want 0 and nothing on stderr", args, code, stderr.String())
		case !strings.HasPrefix(out, strings.TrimSpace("usage: submit "+name)):
			t.Errorf("%q: help does not start with its usage line:\n%s", args, out)
		case strings.Count(out, "\n") > 40:
			t.Errorf("%q: help is %d lines, want at most 40:\n%s", args, strings.Count(out, "\n"), out)
		case strings.Contains(out, "--docker-host") || strings.Contains(out, "--sandbox ") || strings.Contains(out, "--redis-url"):
			t.Errorf("%q: help lists server settings:\n%s", args, out)
		}
	}
	var stdout bytes.Buffer
	if code := Run(context.Background(), []string{"--local", "--help"}, cfg, IO{Stdout: &stdout, Stderr: &stdout}); code != ExitSuccess ||
		!strings.Contains(stdout.String(), "--sandbox") || !strings.Contains(stdout.String(), "--docker-host") {
		t.Errorf("--local --help: exit %d, does not list the server settings:\n%s", code, stdout.String())
	}
}

// TestFlagsAfterTheJobFile: the default command parses flags that follow
// the job file (a bad one is refused by name, --help after it is help).
func TestFlagsAfterTheJobFile(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	code, _, stderr := runCLI(t, cfg, "job.yaml", "--wait", "soon")
	if code != ExitUsage || !strings.Contains(stderr, `invalid value "soon" for flag -wait`) {
		t.Errorf("a bad --wait after the job file: exit %d, stderr %q", code, stderr)
	}
	code, stdout, _ := runCLI(t, cfg, "job.yaml", "--help")
	if code != ExitSuccess || !strings.HasPrefix(stdout, "usage: submit ") {
		t.Errorf("--help after the job file: exit %d, stdout %q", code, stdout)
	}
}

// TestLookupWithoutDeployment: with no NATS URL and no --local state, a
// lookup says there is no deployment (exit 2) instead of starting an
// empty embedded server that would answer "not found".
func TestLookupWithoutDeployment(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	for _, args := range [][]string{{"status", "job-1"}, {"result", "job-1"}, {"events", "job-1"}, {"cancel", "job-1"}, {"task", "list"}} {
		code, stdout, stderr := runCLI(t, cfg, args...)
		if code != ExitUsage || stdout != "" || !strings.Contains(stderr, "no deployment configured: set AUTOCODER_NATS_URL") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
}
