package cache_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/autocoder/autocoder/internal/testredis"
	"github.com/autocoder/autocoder/pkg/cache"
	"github.com/autocoder/autocoder/pkg/cache/cachetest"
)

// hangLimit is how long a call to a server that is down may take before the
// test calls it a hang: a safety net well above go-redis's retries with
// backoff (about 2s against a refused port), not a timing assertion.
const hangLimit = 20 * time.Second

func TestRedisConformance(t *testing.T) {
	t.Parallel()
	url := testredis.Start(t)
	cachetest.Run(t, func(t *testing.T) cache.Cache {
		return openRedis(t, url)
	})
}

// TestRedisOversizedValueIsNotRead: a value over MaxValueBytes that
// someone wrote to the Redis directly is a miss, not a load of it.
func TestRedisOversizedValueIsNotRead(t *testing.T) {
	t.Parallel()
	url := testredis.Start(t)
	c := openRedis(t, url)
	key := cache.Key("stage", []byte("forged"))
	if err := rawClient(t, url).Set(t.Context(), key, make([]byte, cache.MaxValueBytes+1), 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(t.Context(), key); !errors.Is(err, cache.ErrMiss) {
		t.Fatalf("Get of an oversized value: %d bytes, err %v; want ErrMiss", len(v), err)
	}
}

func TestRedisKeyLayout(t *testing.T) {
	t.Parallel()
	url := testredis.Start(t)
	c := openRedis(t, url)
	raw := rawClient(t, url)
	ctx := t.Context()

	key := cache.Key("stage", []byte("plan"))
	if err := c.Set(ctx, key, []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, err := raw.Get(ctx, key).Result(); err != nil || got != "v" {
		t.Fatalf("GET %s = (%q, %v), want \"v\"", key, got, err)
	}
	if ttl, err := raw.PTTL(ctx, key).Result(); err != nil || ttl <= 0 || ttl > time.Minute {
		t.Fatalf("PTTL %s = (%v, %v), want in (0, 1m]", key, ttl, err)
	}

	tok, err := c.TryLock(ctx, "build/numpy", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	const lockKey = "autocoder:v1:lock:build/numpy"
	if got, err := raw.Get(ctx, lockKey).Result(); err != nil || got != tok {
		t.Fatalf("GET %s = (%q, %v), want the token %q", lockKey, got, err, tok)
	}
	if ttl, err := raw.PTTL(ctx, lockKey).Result(); err != nil || ttl <= 0 {
		t.Fatalf("PTTL %s = (%v, %v), want a ttl", lockKey, ttl, err)
	}
	if err := c.Unlock(ctx, "build/numpy", tok); err != nil {
		t.Fatal(err)
	}
	if n, err := raw.Exists(ctx, lockKey).Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS %s after Unlock = (%d, %v), want 0", lockKey, n, err)
	}
}

func TestOpenRedisBadURL(t *testing.T) {
	t.Parallel()
	for _, url := range []string{"", "localhost:6379", "http://localhost:6379", "redis://localhost:6379/notadb"} {
		c, err := cache.OpenRedis(t.Context(), url)
		if err == nil {
			_ = c.Close()
			t.Errorf("OpenRedis(%q): err = nil, want an error", url)
			continue
		}
		if !strings.Contains(err.Error(), "cache: redis url") {
			t.Errorf("OpenRedis(%q): err = %q, want it to mention the url", url, err)
		}
	}
}

func TestOpenRedisUnreachable(t *testing.T) {
	t.Parallel()
	addr := closedPort(t)
	err := within(t, hangLimit, func() error {
		c, err := cache.OpenRedis(t.Context(), "redis://"+addr+"/0")
		if err == nil {
			_ = c.Close()
		}
		return err
	})
	if err == nil {
		t.Fatal("OpenRedis of a closed port: err = nil")
	}
	if msg := err.Error(); !strings.Contains(msg, "unreachable") || !strings.Contains(msg, addr) {
		t.Fatalf("OpenRedis of a closed port: err = %q, want it to say %s is unreachable", msg, addr)
	}
}

// A server that goes away makes every call fail promptly with an error that
// names the cache and the server; when it comes back, the same *Redis works
// again without being reopened.
func TestRedisServerGoesAway(t *testing.T) {
	t.Parallel()
	srv := testredis.StartServer(t)
	c := openRedis(t, srv.URL())
	ctx := t.Context()
	key := cache.Key("test", []byte("k"))
	if err := c.Set(ctx, key, []byte("v"), 0); err != nil {
		t.Fatal(err)
	}

	srv.Stop()
	ops := map[string]func() error{
		"Get":     func() error { _, err := c.Get(ctx, key); return err },
		"Set":     func() error { return c.Set(ctx, key, []byte("v"), 0) },
		"Delete":  func() error { return c.Delete(ctx, key) },
		"TryLock": func() error { _, err := c.TryLock(ctx, "l", time.Minute); return err },
		"Unlock":  func() error { return c.Unlock(ctx, "l", "tok") },
	}
	// Concurrently: each call spends its retries on its own.
	errs := make(map[string]error, len(ops))
	var mu sync.Mutex
	_ = within(t, hangLimit, func() error {
		var wg sync.WaitGroup
		for name, op := range ops {
			wg.Go(func() {
				err := op()
				mu.Lock()
				errs[name] = err
				mu.Unlock()
			})
		}
		wg.Wait()
		return nil
	})
	for name, err := range errs {
		if err == nil || errors.Is(err, cache.ErrMiss) || errors.Is(err, cache.ErrLockHeld) {
			t.Errorf("%s with the server down: err = %v, want a connection error", name, err)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "cache: redis") || !strings.Contains(msg, srv.Addr()) {
			t.Errorf("%s with the server down: err = %q, want it to name the cache and %s", name, msg, srv.Addr())
		}
	}

	srv.Restart()
	waitRedis(t, c)
	// The data went with the old process (persistence is off); the cache
	// just misses and fills again.
	if _, err := c.Get(ctx, key); !errors.Is(err, cache.ErrMiss) {
		t.Fatalf("Get after restart: err = %v, want ErrMiss", err)
	}
	if err := c.Set(ctx, key, []byte("again"), 0); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get(ctx, key); err != nil || string(got) != "again" {
		t.Fatalf("Get after restart = (%q, %v), want \"again\"", got, err)
	}
}

// A frozen server (accepting nothing, answering nothing) must not hold a call
// past the caller's deadline.
func TestRedisServerFrozen(t *testing.T) {
	t.Parallel()
	srv := testredis.StartServer(t)
	c := openRedis(t, srv.URL())
	key := cache.Key("test", []byte("k"))
	if err := c.Set(t.Context(), key, []byte("v"), 0); err != nil {
		t.Fatal(err)
	}

	srv.Pause()
	// The limit is under go-redis's own 5s read timeout, so only the
	// caller's context can end this call in time.
	err := within(t, 4*time.Second, func() error {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		_, err := c.Get(ctx, key)
		return err
	})
	if err == nil || errors.Is(err, cache.ErrMiss) {
		t.Fatalf("Get from a frozen server: err = %v, want a timeout", err)
	}

	srv.Resume()
	waitRedis(t, c)
	if got, err := c.Get(t.Context(), key); err != nil || string(got) != "v" {
		t.Fatalf("Get after resume = (%q, %v), want \"v\"", got, err)
	}
}

func openRedis(t *testing.T, url string) *cache.Redis {
	t.Helper()
	c, err := cache.OpenRedis(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// rawClient talks to the server directly, to check what the cache stored.
func rawClient(t *testing.T, url string) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// within runs fn and returns its error, failing the test if fn is still
// running after limit.
func within(t *testing.T, limit time.Duration, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("call still running after %v: hung", limit)
		return nil
	}
}

// waitRedis polls until c reaches its server again.
func waitRedis(t *testing.T, c cache.Cache) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	probe := cache.Key("test", []byte("probe"))
	for {
		_, err := c.Get(t.Context(), probe)
		if err == nil || errors.Is(err, cache.ErrMiss) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cache did not reconnect: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// closedPort returns a loopback address on which nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}
