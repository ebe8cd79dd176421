package cache_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/autocoder/autocoder/pkg/cache"
	"github.com/autocoder/autocoder/pkg/cache/cachetest"
)

func TestDirConformance(t *testing.T) {
	t.Parallel()
	// One directory for every subtest, as one machine's workers share one.
	dir := t.TempDir()
	cachetest.Run(t, func(t *testing.T) cache.Cache {
		return openDir(t, dir)
	})
}

// Two Dirs on one directory behave as two processes sharing it would (the
// tests below use real processes too).
func TestDirInstancesShareValuesAndLocks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := openDir(t, dir), openDir(t, dir)
	ctx := t.Context()
	key := cache.Key("test", []byte("shared"))

	if err := a.Set(ctx, key, []byte("from a"), 0); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Get(ctx, key); err != nil || string(got) != "from a" {
		t.Fatalf("b.Get = (%q, %v), want \"from a\"", got, err)
	}
	if err := b.Set(ctx, key, []byte("from b"), 0); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Get(ctx, key); err != nil || string(got) != "from b" {
		t.Fatalf("a.Get = (%q, %v), want \"from b\"", got, err)
	}
	if err := b.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Get(ctx, key); !errors.Is(err, cache.ErrMiss) {
		t.Fatalf("a.Get after b.Delete: err = %v, want ErrMiss", err)
	}

	tok, err := a.TryLock(ctx, "build", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryLock(ctx, "build", time.Minute); !errors.Is(err, cache.ErrLockHeld) {
		t.Fatalf("b.TryLock while a holds it: err = %v, want ErrLockHeld", err)
	}
	if err := b.Unlock(ctx, "build", "wrong"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryLock(ctx, "build", time.Minute); !errors.Is(err, cache.ErrLockHeld) {
		t.Fatalf("b.TryLock after a wrong-token Unlock: err = %v, want ErrLockHeld", err)
	}
	if err := b.Unlock(ctx, "build", tok); err != nil { // the token is what counts, not the instance
		t.Fatal(err)
	}
	if _, err := b.TryLock(ctx, "build", time.Minute); err != nil {
		t.Fatalf("b.TryLock after release: %v", err)
	}
}

func TestDirInstancesLockExclusive(t *testing.T) {
	t.Parallel()
	const instances, goroutines = 4, 24
	dir := t.TempDir()
	dirs := make([]*cache.Dir, instances)
	for i := range dirs {
		dirs[i] = openDir(t, dir)
	}
	for round := range 5 {
		name := "round-" + strconv.Itoa(round)
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			wins int
		)
		start := make(chan struct{})
		for g := range goroutines {
			wg.Go(func() {
				<-start
				_, err := dirs[g%instances].TryLock(t.Context(), name, time.Minute)
				switch {
				case err == nil:
					mu.Lock()
					wins++
					mu.Unlock()
				case !errors.Is(err, cache.ErrLockHeld):
					t.Errorf("TryLock: %v", err)
				}
			})
		}
		close(start)
		wg.Wait()
		if wins != 1 {
			t.Fatalf("round %d: %d of %d contenders won the lock, want 1", round, wins, goroutines)
		}
	}
}

// Several processes increment one counter under one lock: any lost update
// means the lock let two processes in at once.
func TestDirProcessesSerializeUpdates(t *testing.T) {
	t.Parallel()
	const processes, increments = 3, 30
	dir := t.TempDir()
	d := openDir(t, dir)
	key := cache.Key("test", []byte("counter"))
	if err := d.Set(t.Context(), key, []byte("0"), 0); err != nil {
		t.Fatal(err)
	}
	var children []*child
	for range processes {
		children = append(children, startChild(t, "increment", dir, "counter-lock", key, strconv.Itoa(increments)))
	}
	// This process joins in too.
	for range increments {
		if err := increment(t.Context(), d, "counter-lock", key); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range children {
		c.wait(t)
	}
	got, err := d.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.Itoa((processes + 1) * increments); string(got) != want {
		t.Fatalf("counter = %s after %d processes added %d each, want %s", got, processes+1, increments, want)
	}
}

// Processes overwrite and read the same keys with values of varied sizes
// and no lock: readers must only ever see whole values.
func TestDirProcessesNeverSeeTornValues(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := openDir(t, dir)
	children := []*child{
		startChild(t, "hammer", dir, "", "", "1"),
		startChild(t, "hammer", dir, "", "", "2"),
	}
	if err := hammer(t.Context(), d, 3); err != nil {
		t.Error(err)
	}
	for _, c := range children {
		c.wait(t)
	}
}

// A lock outlives a holder that died without unlocking, for exactly its ttl:
// it is a lease, not a process lock.
func TestDirLockOutlivesCrashedHolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := openDir(t, dir)
	ctx := t.Context()

	startChild(t, "lock-and-exit", dir, "long", "", strconv.Itoa(int(time.Hour.Milliseconds()))).wait(t)
	if _, err := d.TryLock(ctx, "long", time.Minute); !errors.Is(err, cache.ErrLockHeld) {
		t.Fatalf("TryLock of a lock a dead process took for an hour: err = %v, want ErrLockHeld", err)
	}

	startChild(t, "lock-and-exit", dir, "short", "", "30").wait(t)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := d.TryLock(ctx, "short", time.Minute)
		if err == nil {
			break
		}
		if !errors.Is(err, cache.ErrLockHeld) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("lock taken with a 30ms ttl by a dead process still held after 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func openDir(t *testing.T, dir string) *cache.Dir {
	t.Helper()
	d, err := cache.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// increment adds one to the decimal counter at key under the named lock,
// waiting for the lock as long as ctx allows.
func increment(ctx context.Context, c cache.Cache, lockName, key string) error {
	for {
		tok, err := c.TryLock(ctx, lockName, time.Minute)
		if errors.Is(err, cache.ErrLockHeld) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Millisecond):
			}
			continue
		}
		if err != nil {
			return err
		}
		v, err := c.Get(ctx, key)
		if err == nil {
			var n int
			if n, err = strconv.Atoi(string(v)); err == nil {
				err = c.Set(ctx, key, []byte(strconv.Itoa(n+1)), 0)
			}
		}
		return errors.Join(err, c.Unlock(context.WithoutCancel(ctx), lockName, tok))
	}
}

// hammer overwrites and reads a few fixed keys with self-checking values.
func hammer(ctx context.Context, c cache.Cache, seed int) error {
	const iterations, numKeys = 150, 3
	for i := range iterations {
		key := cache.Key("test", []byte("hammer"), []byte{byte(i % numKeys)})
		if i%2 == 0 {
			size := (seed*7919 + i*104729) % (512 << 10)
			body := bytes.Repeat([]byte{byte(seed), byte(i)}, size/2+1)[:size]
			sum := sha256.Sum256(body)
			if err := c.Set(ctx, key, append(sum[:], body...), 0); err != nil {
				return err
			}
			continue
		}
		v, err := c.Get(ctx, key)
		if errors.Is(err, cache.ErrMiss) {
			continue
		}
		if err != nil {
			return err
		}
		if len(v) < sha256.Size {
			return fmt.Errorf("torn value: %d bytes", len(v))
		}
		if sum := sha256.Sum256(v[sha256.Size:]); !bytes.Equal(sum[:], v[:sha256.Size]) {
			return fmt.Errorf("torn value: checksum mismatch over %d bytes", len(v))
		}
	}
	return nil
}

// Child processes: this test binary, re-run with childModeEnv set, does one
// job (see TestMain) on the directory given in the environment.
const (
	childModeEnv = "AUTOCODER_CACHE_TEST_CHILD"
	childDirEnv  = "AUTOCODER_CACHE_TEST_DIR"
	childNameEnv = "AUTOCODER_CACHE_TEST_NAME"
	childKeyEnv  = "AUTOCODER_CACHE_TEST_KEY"
	childArgEnv  = "AUTOCODER_CACHE_TEST_ARG"
)

type child struct {
	cmd *exec.Cmd
	out *bytes.Buffer
}

func startChild(t *testing.T, mode, dir, name, key, arg string) *child {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0])
	cmd.Env = append(os.Environ(),
		childModeEnv+"="+mode, childDirEnv+"="+dir,
		childNameEnv+"="+name, childKeyEnv+"="+key, childArgEnv+"="+arg)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child process: %v", err)
	}
	c := &child{cmd: cmd, out: out}
	// Reaped even if the test fails first; wait() normally gets there earlier.
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			_ = c.cmd.Process.Kill()
			_ = c.cmd.Wait()
		}
	})
	return c
}

func (c *child) wait(t *testing.T) {
	t.Helper()
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("child process %s: %v\n%s", strings.Join(c.cmd.Env[len(c.cmd.Env)-5:], " "), err, c.out)
	}
}

// runChild is the body of a child process; it returns the exit code.
func runChild(mode string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, err := cache.OpenDir(os.Getenv(childDirEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	name, key := os.Getenv(childNameEnv), os.Getenv(childKeyEnv)
	arg, _ := strconv.Atoi(os.Getenv(childArgEnv))
	switch mode {
	case "increment":
		for range arg {
			if err := increment(ctx, d, name, key); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
	case "hammer":
		if err := hammer(ctx, d, arg); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	case "lock-and-exit":
		// Exits holding the lock, as a crashed worker would.
		if _, err := d.TryLock(ctx, name, time.Duration(arg)*time.Millisecond); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	default:
		fmt.Fprintf(os.Stderr, "unknown child mode %q\n", mode)
		return 2
	}
	_ = d.Close()
	return 0
}
