package submit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/jobfile"
)

// TestRunRefusesUnboundedFiles: a job file, sample or transcript that is a
// device, a FIFO, a directory or too large exits 2 at once, with one line
// naming the file and the reason. Each run has a deadline, so a regression
// (reading /dev/zero forever, blocking on a FIFO's open) fails the test
// instead of hanging it.
func TestRunRefusesUnboundedFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "job.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("prompt: "+strings.Repeat("x", jobfile.MaxSpecBytes)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	job := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(job, []byte("prompt: p\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"dev zero", []string{"--local", "/dev/zero"}, "job file /dev/zero: not a regular file (a character device)"},
		{"fifo", []string{"--local", fifo}, "job file " + fifo + ": not a regular file (a FIFO)"},
		{"symlink to a fifo", []string{"--local", link}, "job file " + link + ": not a regular file (a FIFO)"},
		{"directory", []string{"--local", dir}, "job file " + dir + ": not a regular file (a directory)"},
		{"oversized", []string{"--local", big}, "job file " + big + ": file too large: larger than 1 MiB"},
		{"fifo sample", []string{"--local", "--allow-outside", "--prompt", "p", "--sample", "s=" + fifo}, fifo + " is not a regular file"},
		{"dev zero sample", []string{"--local", "--allow-outside", "--prompt", "p", "--sample", "s=/dev/zero"}, "/dev/zero is not a regular file"},
		{"fifo transcript", []string{"--local", "--transcript", fifo, job}, "transcript " + fifo + ": not a regular file (a FIFO)"},
		{"dev zero transcript", []string{"--local", "--transcript", "/dev/zero", job}, "transcript /dev/zero: not a regular file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			var stdout, stderr strings.Builder
			done := make(chan int, 1)
			go func() { done <- Run(ctx, tc.args, cfg, IO{Stdout: &stdout, Stderr: &stderr}) }()
			var code int
			select {
			case code = <-done:
			case <-ctx.Done():
				t.Fatalf("submit %s did not return within the deadline", strings.Join(tc.args, " "))
			}
			msg := strings.TrimSpace(stderr.String())
			if code != ExitUsage || strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) {
				t.Errorf("exit %d, stderr %q: want exit 2 and one line with %q", code, msg, tc.want)
			}
		})
	}
}
