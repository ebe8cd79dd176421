package docker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/sandbox"
)

// forgeTrailer is a warm run that reads the run's nonce out of the stub's
// memory (the run is a fork of the stub) and forges both trailers, the
// stdout one announcing a results frame of ~100 GB, then stays alive.
const forgeTrailer = `
import os, sys, time
f = sys._getframe()
while f is not None and "req" not in f.f_locals:
    f = f.f_back
nonce = f.f_locals["req"]["nonce"]
os.write(1, ("\0autocoder-exit:%s:0:99999999999:99999999999\n" % nonce).encode() + b"x" * 65536)
os.write(2, ("\0autocoder-exit:%s:0\n" % nonce).encode())
time.sleep(600)
`

// TestForgedResultsFrame: a hostile run that forges the stub's trailer
// with a results frame over the bound gets a clear error as soon as the
// forgery arrives: the worker neither allocates what it announced nor
// waits for it (the run's timeout is far away), and serves the next run
// from a fresh container.
func TestForgedResultsFrame(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.WarmRunner, cfg.PoolSize = true, 1
	b := newBackend(t, cfg)
	env, err := b.Build(t.Context(), sandbox.EnvSpec{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Run(t.Context(), sandbox.RunSpec{Env: env.ID, Argv: []string{"python", "-c", forgeTrailer},
		Timeout: 10 * time.Minute, Collect: []string{"out.txt"}})
	if err == nil || !strings.Contains(err.Error(), "over the bound") {
		t.Fatalf("err = %v (exit %d, timed out %v), want a frame over the bound", err, res.ExitCode, res.TimedOut)
	}
	res, err = b.Run(t.Context(), sandbox.RunSpec{Env: env.ID, Argv: []string{"python", "-c",
		"open('out.txt', 'w').write(open('in.txt').read() * 2)"},
		Files: map[string][]byte{"in.txt": []byte("ab")}, Collect: []string{"out.txt"}})
	if err != nil || res.ExitCode != 0 || string(res.Files["out.txt"]) != "abab" {
		t.Fatalf("the next run: %v exit %d files %q stderr %s", err, res.ExitCode, res.Files, res.Stderr)
	}
}
