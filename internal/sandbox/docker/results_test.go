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

// TestFilesInRequest: the workspace files travel in the stub's request,
// nested ones and a large one included, owned by the sandbox user; files
// over the disk quota fail the run with a clear error before anything of
// it starts, and the backend serves the next run.
func TestFilesInRequest(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.DiskQuota = 8 << 20
	b := newBackend(t, cfg)
	env, err := b.Build(t.Context(), sandbox.EnvSpec{})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("z", 5<<20)
	res, err := b.Run(t.Context(), sandbox.RunSpec{Env: env.ID, Argv: []string{"python", "-c", `
import os
st = os.stat("a/b/c.txt")
print(open("a/b/c.txt").read(), len(open("big.txt").read()), st.st_uid, oct(st.st_mode & 0o777), int(st.st_mtime))
`}, Files: map[string][]byte{"a/b/c.txt": []byte("abc"), "big.txt": []byte(big)}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %v exit %d stderr %s", err, res.ExitCode, res.Stderr)
	}
	if got, want := strings.TrimSpace(string(res.Stdout)), "abc 5242880 10001 0o644 0"; got != want {
		t.Errorf("the files as the run saw them: %q, want %q", got, want)
	}
	res, err = b.Run(t.Context(), sandbox.RunSpec{Env: env.ID, Argv: []string{"python", "-c", "print('ran')"},
		Files: map[string][]byte{"one.txt": []byte(big), "two.txt": []byte(big)}})
	if err == nil || !strings.Contains(err.Error(), "copy files into /workspace") || strings.Contains(string(res.Stdout), "ran") {
		t.Fatalf("files over the quota: err %v, stdout %q", err, res.Stdout)
	}
	res, err = b.Run(t.Context(), sandbox.RunSpec{Env: env.ID, Argv: []string{"python", "-c", "print('ok')"}})
	if err != nil || strings.TrimSpace(string(res.Stdout)) != "ok" {
		t.Fatalf("the next run: %v %q", err, res.Stdout)
	}
}
