package e2e

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSubmitBinaryRefusesEndlessJobFiles: the real submit binary, given
// /dev/zero or a FIFO as its job file, exits 2 at once with one line
// naming the file (before, /dev/zero took it to 24 GB and a FIFO hung it,
// deaf to SIGTERM). The deadline turns a regression into a failure, not a
// hang.
func TestSubmitBinaryRefusesEndlessJobFiles(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(buildCommands(t, "./cmd/submit"), "submit")
	fifo := filepath.Join(t.TempDir(), "job.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, want string }{
		{"/dev/zero", "job file /dev/zero: not a regular file (a character device)"},
		{fifo, "job file " + fifo + ": not a regular file (a FIFO)"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, bin, "--local", tc.file)
		cmd.Env = append(cleanEnv(), "AUTOCODER_STATE_DIR="+t.TempDir())
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		timedOut := ctx.Err() != nil
		cancel()
		if timedOut {
			t.Fatalf("submit %s did not exit within 30s", tc.file)
		}
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Errorf("submit %s: %v, want exit 2", tc.file, err)
		}
		if msg := strings.TrimSpace(stderr.String()); strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) {
			t.Errorf("submit %s: stderr %q, want one line with %q", tc.file, msg, tc.want)
		}
	}
}
