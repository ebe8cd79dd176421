package wiring_test

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/metrics"
	"github.com/autocoder/autocoder/internal/testredis"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/cache"
)

// TestOpenCacheKeys: the embedded cache signs with a key generated once in
// the state dir; a Redis cache needs a configured key, or an explicit
// AUTOCODER_CACHE_UNSIGNED=true.
func TestOpenCacheKeys(t *testing.T) {
	t.Parallel()
	url := testredis.Start(t)
	log := slog.New(slog.DiscardHandler)
	open := func(cfg config.Config) (cache.Cache, error) {
		c, err := wiring.OpenCache(t.Context(), cfg, log, metrics.NewBuilderOn(prometheus.NewRegistry()))
		if err == nil {
			t.Cleanup(func() { _ = c.Close() })
		}
		return c, err
	}

	state := t.TempDir()
	c, err := open(config.Config{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(*cache.Signed); !ok {
		t.Errorf("embedded cache is a %T, want *cache.Signed", c)
	}
	if fi, err := os.Stat(filepath.Join(state, "cache-key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("generated key file: %v (mode %v), want 0600", err, fi.Mode())
	}

	_, err = open(config.Config{StateDir: t.TempDir(), RedisURL: url})
	if err == nil || !strings.Contains(err.Error(), "AUTOCODER_CACHE_KEY_FILE") {
		t.Errorf("Redis without a key: err = %v, want one naming AUTOCODER_CACHE_KEY_FILE", err)
	}
	if c, err := open(config.Config{StateDir: t.TempDir(), RedisURL: url, CacheUnsigned: true}); err != nil {
		t.Error(err)
	} else if _, ok := c.(*cache.Signed); ok {
		t.Error("AUTOCODER_CACHE_UNSIGNED=true still signs")
	}
	keys := "fleet:" + strings.Repeat("QUFB", 8)
	if c, err := open(config.Config{StateDir: t.TempDir(), RedisURL: url, CacheKeys: keys}); err != nil {
		t.Error(err)
	} else if _, ok := c.(*cache.Signed); !ok {
		t.Errorf("Redis with a key is a %T, want *cache.Signed", c)
	}
}

// TestScriptedCacheIsApart: a scripted model's stage cache is the embedded
// one under <state dir>/scripted, even where a Redis is configured, and
// what it holds is not in the cache real answers are kept in.
func TestScriptedCacheIsApart(t *testing.T) {
	t.Parallel()
	url := testredis.Start(t)
	log := slog.New(slog.DiscardHandler)
	state := t.TempDir()
	keys := "fleet:" + strings.Repeat("QUFB", 8)
	cfg := config.Config{StateDir: state, RedisURL: url, CacheKeys: keys}
	scripted, err := wiring.OpenScriptedCache(t.Context(), cfg, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer scripted.Close()
	if err := scripted.Set(t.Context(), "stage/plan", []byte("a scripted plan"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(state, "scripted", "cache")); err != nil {
		t.Errorf("no embedded cache under the state dir's scripted/: %v", err)
	}
	for name, c := range map[string]config.Config{"the Redis": cfg, "the embedded cache": {StateDir: state, CacheKeys: keys}} {
		real, err := wiring.OpenCache(t.Context(), c, log, nil)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := real.Get(t.Context(), "stage/plan"); !errors.Is(err, cache.ErrMiss) {
			t.Errorf("%s of real answers has the scripted entry: %q, %v", name, v, err)
		}
		real.Close()
	}
}
