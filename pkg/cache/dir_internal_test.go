package cache

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock for Dir's TTL arithmetic.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// openDirAt opens a Dir in a fresh directory whose clock the test controls.
func openDirAt(t *testing.T) (*Dir, *fakeClock) {
	t.Helper()
	clk := &fakeClock{now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
	d, err := openDir(t.TempDir(), clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d, clk
}

// TestDirSweepRemovesEntriesExpiredUnread: RemoveExpired deletes the
// entries whose ttl has passed, which nobody reads again, and keeps the
// others.
func TestDirSweepRemovesEntriesExpiredUnread(t *testing.T) {
	t.Parallel()
	d, clk := openDirAt(t)
	ctx := t.Context()
	for key, ttl := range map[string]time.Duration{"old": time.Minute, "kept": 0, "later": time.Hour} {
		if err := d.Set(ctx, key, []byte(key), ttl); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(2 * time.Minute)
	if n := d.RemoveExpired(); n != 1 {
		t.Errorf("RemoveExpired removed %d entries, want 1", n)
	}
	if _, err := os.Stat(dirEntryPath(d.root, "old")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the expired entry's file: %v, want it gone", err)
	}
	for _, key := range []string{"kept", "later"} {
		if v, err := d.Get(ctx, key); err != nil || string(v) != key {
			t.Errorf("Get %s after the sweep: %q, %v", key, v, err)
		}
	}
}

func TestDirExpiredEntryIsRemoved(t *testing.T) {
	t.Parallel()
	d, clk := openDirAt(t)
	ctx := t.Context()
	if err := d.Set(ctx, "k", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute - time.Nanosecond)
	if _, err := d.Get(ctx, "k"); err != nil {
		t.Fatalf("Get just before expiry: %v", err)
	}
	clk.Advance(time.Nanosecond)
	if _, err := d.Get(ctx, "k"); !errors.Is(err, ErrMiss) {
		t.Fatalf("Get at expiry: err = %v, want ErrMiss", err)
	}
	if _, err := os.Stat(dirEntryPath(d.root, "k")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("expired entry file still there after a Get (stat err = %v)", err)
	}
}

func TestDirDamagedEntryIsMiss(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		damage func(b []byte) []byte
	}{
		{"empty file", func([]byte) []byte { return nil }},
		{"short header", func(b []byte) []byte { return b[:10] }},
		{"truncated value", func(b []byte) []byte { return b[:len(b)-1] }},
		{"extra bytes", func(b []byte) []byte { return append(b, 'x') }},
		{"flipped value byte", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }},
		{"wrong magic", func(b []byte) []byte { b[0] = 'X'; return b }},
		{"garbage", func(b []byte) []byte { return []byte(strings.Repeat("\xff", len(b))) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, _ := openDirAt(t)
			ctx := t.Context()
			if err := d.Set(ctx, "k", []byte("some value"), 0); err != nil {
				t.Fatal(err)
			}
			path := dirEntryPath(d.root, "k")
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tt.damage(b), 0o600); err != nil {
				t.Fatal(err)
			}
			if got, err := d.Get(ctx, "k"); !errors.Is(err, ErrMiss) {
				t.Fatalf("Get of a damaged entry = (%q, %v), want ErrMiss", got, err)
			}
			if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("damaged entry not removed (stat err = %v)", err)
			}
			// And the key works again.
			if err := d.Set(ctx, "k", []byte("new"), 0); err != nil {
				t.Fatal(err)
			}
			if got, err := d.Get(ctx, "k"); err != nil || string(got) != "new" {
				t.Fatalf("Get after rewrite = (%q, %v), want \"new\"", got, err)
			}
		})
	}
}

func TestDirLockLeaseWithClock(t *testing.T) {
	t.Parallel()
	d, clk := openDirAt(t)
	ctx := t.Context()
	old, err := d.TryLock(ctx, "l", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute - time.Nanosecond)
	if _, err := d.TryLock(ctx, "l", time.Minute); !errors.Is(err, ErrLockHeld) {
		t.Fatalf("TryLock just before expiry: err = %v, want ErrLockHeld", err)
	}
	clk.Advance(time.Nanosecond)
	cur, err := d.TryLock(ctx, "l", time.Minute)
	if err != nil {
		t.Fatalf("TryLock at expiry: %v", err)
	}
	if err := d.Unlock(ctx, "l", old); err != nil {
		t.Fatal(err)
	}
	if _, err := d.TryLock(ctx, "l", time.Minute); !errors.Is(err, ErrLockHeld) {
		t.Fatalf("expired holder's Unlock freed the new holder's lock: err = %v", err)
	}
	if err := d.Unlock(ctx, "l", cur); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dirLockPath(d.root, "l")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("lock file left behind after Unlock (stat err = %v)", err)
	}
}

// A lock file that does not parse is what a process leaves if it dies while
// writing it, before its TryLock returned: nobody holds that lock.
func TestDirUnreadableLockFileIsFree(t *testing.T) {
	t.Parallel()
	for _, content := range []string{"", "v1 abc", "v1 abc 12", "garbage\n", "v1 abc notanumber\n", "v9 abc 99999999999999999\n"} {
		d, _ := openDirAt(t)
		path := dirLockPath(d.root, "l")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := d.TryLock(t.Context(), "l", time.Minute); err != nil {
			t.Errorf("TryLock over lock file %q: %v, want success", content, err)
		}
	}
}

func TestOpenDirRemovesStaleTemps(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	d, err := OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	tmp := dirTmpPath(d.root)
	stale, fresh := filepath.Join(tmp, "set-stale"), filepath.Join(tmp, "set-fresh")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * staleTempAge)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDir(root); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale temp file kept (stat err = %v)", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("fresh temp file (maybe another process's write in flight) removed: %v", err)
	}
}

func TestDirSurvivesEmptiedDirectory(t *testing.T) {
	t.Parallel()
	d, _ := openDirAt(t)
	ctx := t.Context()
	if err := d.Set(ctx, "k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(d.root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(d.root, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Get(ctx, "k"); !errors.Is(err, ErrMiss) {
		t.Fatalf("Get after the directory was emptied: err = %v, want ErrMiss", err)
	}
	if err := d.Set(ctx, "k", []byte("v2"), 0); err != nil {
		t.Fatalf("Set after the directory was emptied: %v", err)
	}
	if _, err := d.TryLock(ctx, "l", time.Minute); err != nil {
		t.Fatalf("TryLock after the directory was emptied: %v", err)
	}
}

func TestDirLeavesNoTempFiles(t *testing.T) {
	t.Parallel()
	d, _ := openDirAt(t)
	ctx := t.Context()
	for i := range 20 {
		if err := d.Set(ctx, "k", []byte(strings.Repeat("x", i*1000)), 0); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(dirTmpPath(d.root))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("tmp/ holds %d files after Sets finished, want 0", len(entries))
	}
}

func TestOpenDirErrors(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"", file, filepath.Join(file, "sub")} {
		if _, err := OpenDir(dir); err == nil {
			t.Errorf("OpenDir(%q): err = nil, want an error", dir)
		}
	}
}
