package codemodestages_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/internal/codemodestages"
	"github.com/autocoder/autocoder/pkg/cache"
	"github.com/autocoder/autocoder/pkg/messages"
)

// recordingCache counts reads and keeps the TTLs writes asked for.
type recordingCache struct {
	cache.Cache
	gets atomic.Int64
	mu   sync.Mutex
	ttls []time.Duration
}

func (c *recordingCache) Get(ctx context.Context, key string) ([]byte, error) {
	c.gets.Add(1)
	return c.Cache.Get(ctx, key)
}

func (c *recordingCache) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	c.mu.Lock()
	c.ttls = append(c.ttls, ttl)
	c.mu.Unlock()
	return c.Cache.Set(ctx, key, value, ttl)
}

// TestExecStageCacheModeAndTTL: tool calls are stored with the configured
// TTL; the cache mode override makes every call again (no reads) and
// stores the new results; auto reads them.
func TestExecStageCacheModeAndTTL(t *testing.T) {
	t.Parallel()
	nc := natsConn(t)
	var calls atomic.Int64
	svc, err := codemode.ServeTool(nc, codemode.Tool{Name: "lookup", Params: []codemode.Param{{Name: "key", Type: codemode.TypeStr, Required: true}},
		Func: func(context.Context, map[string]any) (any, error) { return calls.Add(1), nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	dir, err := cache.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dir.Close() })
	rc := &recordingCache{Cache: dir}
	h := mux(t, codemodestages.Config{Conn: nc, Cache: rc, CacheTTL: 90 * time.Minute, Python: python(t)})
	cmd := execCommand(t, messages.CodeModeExecInput{Code: `lookup(key="x")`, Tools: []string{"lookup"}, Scope: "job-1"})
	run := func(mode messages.CacheMode) string {
		c := *cmd
		c.Cache = mode
		return string(serve[messages.CodeModeExecOutput](t, h, &c).Value)
	}
	if v := run(messages.CacheAuto); v != "1" {
		t.Fatalf("auto: %s", v)
	}
	if v := run(messages.CacheOverride); v != "2" || rc.gets.Load() != 1 {
		t.Fatalf("override: value %s after %d reads; want a new call, and no read", v, rc.gets.Load())
	}
	if v := run(messages.CacheAuto); v != "2" {
		t.Fatalf("auto after override: %s, want the overriding result", v)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.ttls) != 2 || rc.ttls[0] != 90*time.Minute || rc.ttls[1] != 90*time.Minute {
		t.Fatalf("stored with TTLs %v, want 2 of 1h30m", rc.ttls)
	}
}
