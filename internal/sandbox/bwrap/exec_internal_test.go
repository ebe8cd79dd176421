package bwrap

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/sandbox"
)

// TestSetupFailureIsBubblewraps: a program that prints what bubblewrap
// prints when it cannot set a sandbox up, and fails, has failed itself
// (an infrastructure error would be retried: the program run again, its
// tools called again); a sandbox bubblewrap really could not set up is
// still an infrastructure error.
func TestSetupFailureIsBubblewraps(t *testing.T) {
	b, err := New(Config{Python: "/usr/bin/python3", StateDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	env, err := b.Build(t.Context(), sandbox.EnvSpec{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Run(t.Context(), sandbox.RunSpec{Env: env.ID, Timeout: time.Minute,
		Argv: []string{"python", "-c", `import os; os.write(2, b"bwrap: x\n"); os._exit(1)`}})
	if err != nil || res.ExitCode != 1 || string(res.Stderr) != "bwrap: x\n" {
		t.Errorf("a program that prints %q and exits 1: %v, exit %d, stderr %q; want its own failure", "bwrap: x", err, res.ExitCode, res.Stderr)
	}

	// An environment directory that is not there: bubblewrap cannot bind it.
	etc := filepath.Join(t.TempDir(), "etc")
	if err := writeEtc(etc, 0); err != nil {
		t.Fatal(err)
	}
	uid := b.takeUID()
	defer b.releaseUID(uid)
	_, err = b.exec(t.Context(), &sandboxSpec{argv: []string{"python", "-c", "pass"}, envDir: filepath.Join(t.TempDir(), "gone"),
		etcDir: etc, uid: uid, timeout: time.Minute, outputLimit: 1 << 16})
	if err == nil || !strings.Contains(err.Error(), "could not set up the sandbox") {
		t.Errorf("a bind of a path that does not exist: %v, want bubblewrap's setup failure", err)
	}
}
