package wiring

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"

	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/metrics"
	"github.com/autocoder/autocoder/pkg/cache"
)

// localCacheKeyFile is where the embedded cache's generated key is kept:
// in the state dir but outside the cache directory, so whatever copies or
// mounts the cache does not carry its key along.
const localCacheKeyFile = "cache-key"

// OpenCache opens the workers' stage cache: Redis when AUTOCODER_REDIS_URL
// is set, else the embedded cache under the state dir, signed with the
// configured keys (cache.Signed) so that an entry nobody with the key wrote
// is a miss. Without configured keys, the embedded cache gets a key of its
// own, generated once in the state dir; a Redis cache, shared by a fleet,
// needs one configured, or AUTOCODER_CACHE_UNSIGNED=true. m (may be nil)
// counts the signature failures.
//
// Only workers open the cache: the coordinator and the CLI never read it.
func OpenCache(ctx context.Context, cfg config.Config, log *slog.Logger, m *metrics.Builder) (cache.Cache, error) {
	keys, err := cfg.CacheKeyring()
	if err != nil {
		return nil, err
	}
	var inner cache.Cache
	if cfg.RedisURL != "" {
		// Connected before the missing-key check: an unreachable Redis is
		// the more useful thing to hear about first.
		r, err := cache.OpenRedisWith(ctx, cfg.RedisURL, cache.RedisOptions{CAFile: cfg.RedisTLSCA, CertFile: cfg.RedisTLSCert, KeyFile: cfg.RedisTLSKey})
		if err != nil {
			return nil, err
		}
		inner = r
	} else {
		d, err := cache.OpenDir(filepath.Join(cfg.StateDir, "cache"))
		if err != nil {
			return nil, err
		}
		go d.SweepEvery(cache.SweepInterval) // ends when the cache is closed
		inner = d
	}
	c, err := signCache(inner, keys, cfg, log, m)
	if err != nil {
		_ = inner.Close()
		return nil, err
	}
	return c, nil
}

// signCache wraps inner in a Signed cache, choosing the keys when none are
// configured (see OpenCache).
func signCache(inner cache.Cache, keys *cache.Keyring, cfg config.Config, log *slog.Logger, m *metrics.Builder) (cache.Cache, error) {
	switch {
	case keys != nil:
	case cfg.CacheUnsigned:
		log.Warn("the stage cache is not signed (AUTOCODER_CACHE_UNSIGNED=true): whoever can write to it can forge stage results")
		return inner, nil
	case cfg.RedisURL == "":
		var err error
		if keys, err = cache.LoadOrCreateKeyFile(filepath.Join(cfg.StateDir, localCacheKeyFile)); err != nil {
			return nil, err
		}
	default:
		return nil, errors.New("the Redis cache needs a signing key: set AUTOCODER_CACHE_KEY_FILE or AUTOCODER_CACHE_KEYS " +
			"(id:base64secret, e.g. from openssl rand -base64 32), or AUTOCODER_CACHE_UNSIGNED=true to trust everyone who can write to the Redis")
	}
	hook, err := m.CacheSignatures()
	if err != nil {
		return nil, err
	}
	sc := cache.SignedConfig{Logger: log, OnFailure: hook}
	return cache.NewSigned(inner, keys, sc)
}

// OpenScriptedCache opens the stage cache of a process whose model is a
// scripted transcript (fakellm.ReplayFile): always the embedded cache, in
// <state dir>/scripted, never Redis nor the cache a real model's answers
// are kept in. Stage keys name the model (gpt-4.1), not the transcript, so
// scripted answers kept beside real ones would be served to a later job as
// the real model's.
func OpenScriptedCache(ctx context.Context, cfg config.Config, log *slog.Logger, m *metrics.Builder) (cache.Cache, error) {
	cfg.RedisURL = ""
	cfg.StateDir = filepath.Join(cfg.StateDir, "scripted")
	return OpenCache(ctx, cfg, log, m)
}
