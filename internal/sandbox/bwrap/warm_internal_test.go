package bwrap

import (
	"errors"
	"log/slog"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/autocoder/autocoder/internal/sandbox"
)

// TestZygoteKillAfterItsDeath: a zygote killed from outside is killed
// again by the paths that find it dead (a spare made after its run, its
// eviction, Close). By then its pidfd's number may be another process's
// pidfd (another run's sandbox): that process must not be signalled.
func TestZygoteKillAfterItsDeath(t *testing.T) {
	b := newWarmBackend(t)
	env, err := b.Build(t.Context(), sandbox.EnvSpec{})
	if err != nil {
		t.Fatal(err)
	}
	run := func() {
		t.Helper()
		res, err := b.Run(t.Context(), sandbox.RunSpec{Env: env.ID, Argv: []string{"python", "-c", "pass"}, Timeout: time.Minute})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("Run: %v, exit %d\n%s", err, res.ExitCode, res.Stderr)
		}
	}
	run()
	z := oneZygote(t, b)
	waitSpareMade(t, z) // nothing of the backend opens descriptors after this

	// Another process, with a pidfd of its own, as another sandbox has.
	other := exec.Command("sleep", "600")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	otherFd, err := unix.PidfdOpen(other.Process.Pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(otherFd)

	z.proc.mu.Lock()
	oldFd := z.proc.pidfd
	z.proc.mu.Unlock()
	if oldFd < 0 {
		t.Fatal("the zygote has no pidfd")
	}
	if err := syscall.Kill(z.proc.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-z.dead
	if _, err := unix.FcntlInt(uintptr(oldFd), unix.F_GETFD, 0); err != unix.EBADF {
		t.Fatalf("the dead zygote's pidfd %d is still open (or reused already): %v", oldFd, err)
	}
	if err := unix.Dup3(otherFd, oldFd, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(oldFd)

	b.makeSpare(z)  // a run of the dead zygote that ends
	b.dropSpares(z) // waits for that spare's making, if any
	z.kill()        // its eviction
	run()           // falls back to a cold run and starts another zygote
	b.Close()       // kills the new zygote only
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PIDFD, otherFd, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	if info.Signo != 0 {
		t.Fatal("a process whose pidfd took the dead zygote's number was killed")
	}
}

func oneZygote(t *testing.T, b *Backend) *zygote {
	t.Helper()
	b.warm.mu.Lock()
	defer b.warm.mu.Unlock()
	for _, slot := range b.warm.zygotes {
		<-slot.ready
		if slot.z != nil {
			return slot.z
		}
	}
	t.Fatal("no zygote")
	return nil
}

func waitSpareMade(t *testing.T, z *zygote) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		z.spares.mu.Lock()
		made := z.spares.spare != nil || !z.spares.making
		z.spares.mu.Unlock()
		if made {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the spare was not made")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestNewZygoteInFlightWhenReady: a zygote's first run holds it from the
// moment its start ends. Whoever takes warm.mu then (as an eviction for
// another environment does) finds it in flight, not idle with no last
// use: the least recently used, stopped before it ran anything.
func TestNewZygoteInFlightWhenReady(t *testing.T) {
	b := newWarmBackend(t)
	envDir := baseEnvDir(t, b)
	got := make(chan *zygote, 1)
	go func() {
		z, err := b.zygoteFor(envDir)
		if err != nil {
			t.Errorf("zygoteFor: %v", err)
		}
		got <- z
	}()
	var slot *zygoteSlot
	for slot == nil {
		b.warm.mu.Lock()
		if slot = b.warm.zygotes[envDir]; slot == nil {
			b.warm.mu.Unlock()
			time.Sleep(time.Millisecond)
		}
	}
	// Holding warm.mu, as evictLocked does.
	select {
	case <-slot.ready:
	case <-time.After(2 * time.Minute):
		b.warm.mu.Unlock()
		t.Fatal("the zygote did not start")
	}
	if slot.z == nil {
		b.warm.mu.Unlock()
		t.Fatalf("start failed: %v", slot.err)
	}
	inflight, lastUsed := slot.z.inflight.Load(), slot.z.lastUsed
	b.warm.mu.Unlock()
	if z := <-got; z != nil {
		z.inflight.Add(-1)
	}
	if inflight != 1 || lastUsed.IsZero() {
		t.Errorf("a started zygote before its first run: %d in flight, last used %v; an eviction would stop it", inflight, lastUsed)
	}
}

// TestZygoteStartRetryCountedAsStart: the retry of a start that failed
// (once warmRetryAfter has passed) is a fallback for reason start, not
// dead: no zygote died.
func TestZygoteStartRetryCountedAsStart(t *testing.T) {
	b := newWarmBackend(t)
	envDir := filepath.Join(t.TempDir(), "no-such-env") // bubblewrap cannot bind it: the start fails
	if _, err := b.zygoteFor(envDir); err == nil {
		t.Fatal("a zygote started on an environment that does not exist")
	}
	b.warm.mu.Lock()
	slot := b.warm.zygotes[envDir]
	slot.failed = slot.failed.Add(-2 * warmRetryAfter)
	b.warm.mu.Unlock()
	_, err := b.zygoteFor(envDir)
	var fb *warmFallback
	if !errors.As(err, &fb) || fb.reason != WarmFallbackStart {
		t.Errorf("retrying a failed start: %v, want a fallback for reason %q", err, WarmFallbackStart)
	}
	b.warm.mu.Lock()
	retry := b.warm.zygotes[envDir]
	b.warm.mu.Unlock()
	<-retry.ready
}

func newWarmBackend(t *testing.T) *Backend {
	t.Helper()
	b, err := New(Config{Python: "/usr/bin/python3", StateDir: t.TempDir(), WarmRunner: true,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func baseEnvDir(t *testing.T, b *Backend) string {
	t.Helper()
	env, err := b.Build(t.Context(), sandbox.EnvSpec{})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := b.envDir(env.ID)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
