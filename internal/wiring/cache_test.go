package wiring_test

import (
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
