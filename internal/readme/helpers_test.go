package readme

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// blockDeadline bounds one run block: a build of the binaries (from the
// build cache the other tests fill, or from scratch) and a job or three.
const blockDeadline = 20 * time.Minute

// repoRoot is the module's root directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// checkoutFiles lists the checkout's files as a clone would have them: the
// tracked ones and new ones not ignored, as they are in the work tree.
func checkoutFiles(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = repoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files (the test copies the checkout's files): %v", err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" {
			continue
		}
		if _, err := os.Lstat(filepath.Join(cmd.Dir, f)); errors.Is(err, os.ErrNotExist) {
			continue // deleted in the work tree, not yet in git
		}
		files = append(files, f)
	}
	return files
}

// copyCheckout copies the checkout into a new directory, so a block can
// build and write there as in a clone of its own.
func copyCheckout(t *testing.T) string {
	t.Helper()
	root, dst := repoRoot(t), t.TempDir()
	for _, f := range checkoutFiles(t) {
		if err := copyFile(filepath.Join(root, f), filepath.Join(dst, f)); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func copyFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	// Held for reading while the copy is open for writing, so that no fork
	// of this process inherits the descriptor: a script copied here and
	// run at once would fail with ETXTBSY (golang.org/issue/22315).
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// blockEnv is a newcomer's environment: the PATH with Go on it, a home of
// its own, and the Go settings of this machine (its module proxy and build
// cache), but none of autocoder's settings, no model and no Docker.
func blockEnv(t *testing.T, home string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("go is not on PATH")
	}
	env := []string{
		"PATH=" + filepath.Dir(goBin) + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + home, "TMPDIR=" + home, "LANG=C.UTF-8",
	}
	return append(env, goSettings(t)...)
}

// goSettings are this machine's Go settings that reach the module proxy
// and the build cache, as NAME=value.
func goSettings(t *testing.T) []string {
	t.Helper()
	names := []string{"GOPROXY", "GOFLAGS", "GOSUMDB", "GONOSUMDB", "GONOPROXY", "GOPRIVATE", "GOINSECURE", "GOTOOLCHAIN", "GOCACHE", "GOMODCACHE", "GOPATH"}
	out, err := exec.Command("go", append([]string{"env"}, names...)...).Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	values := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	var env []string
	for i, v := range values {
		if i < len(names) && v != "" {
			env = append(env, names[i]+"="+v)
		}
	}
	return env
}

// isolation is the command prefix that gives a block a network namespace
// of its own, with only loopback: its fixed ports (NATS's 4222, the API's
// 8080) are then its own, whatever else runs here. It needs root, unshare
// and ip; without them the block shares this machine's network.
func isolation(t *testing.T) []string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Log("not root: the block runs on this machine's network (ports 4222 and 8080 must be free)")
		return nil
	}
	for _, tool := range []string{"unshare", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Logf("no %s: the block runs on this machine's network (ports 4222 and 8080 must be free)", tool)
			return nil
		}
	}
	return []string{"unshare", "--net", "--", "sh", "-c", `ip link set lo up && exec "$@"`, "isolated"}
}

// runBlock runs b's commands with bash (-e, -u, pipefail) in dir and
// returns what they printed. A failure, or the deadline, fails the test
// with the output; whatever the block left running is killed.
func runBlock(t *testing.T, dir string, b block) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "block.sh")
	if err := os.WriteFile(script, []byte("set -euo pipefail\n"+b.code), 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	argv := append(isolation(t), "bash", script)
	ctx, cancel := context.WithTimeout(context.Background(), blockDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, blockEnv(t, home)
	// A file, not a pipe: servers the block started in the background
	// keep its stdout open, and Wait would wait for them too.
	out, err := os.Create(filepath.Join(t.TempDir(), "output"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	start := time.Now()
	err = cmd.Run()
	t.Cleanup(func() { stopGroup(t, cmd.Process.Pid) })
	text := readFile(t, out.Name())
	if err != nil {
		t.Fatalf("README.md:%d (%s): %v after %s\n%s", b.line, b.section, err, time.Since(start).Round(time.Second), tail(text, 8000))
	}
	t.Logf("README.md:%d (%s) ran in %s", b.line, b.section, time.Since(start).Round(time.Second))
	return text
}

// stopGroup gives what is left of a block's process group (servers it
// stopped, still shutting down) a while to exit, then kills it.
func stopGroup(t *testing.T, pgid int) {
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			t.Logf("killing what the block left running (process group %d)", pgid)
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
