package wiring

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/secretsource"
	"github.com/autocoder/autocoder/pkg/cache"
)

// The sandbox-worker's side of the per-job sandbox settings: the secret
// source its runs resolve a job's secrets from, and a backend per Python
// version of AUTOCODER_PYTHONS.

// secretLabel names the key the cache keyring derives for the HMAC of
// secret values in stage cache keys (secretsource.Source.KeyPart).
const secretLabel = "autocoder:v1:secret-values"

// secretSource is the worker's secret source: AUTOCODER_SECRETS_DIR and
// AUTOCODER_SECRET_<NAME>, hashed under a key derived from the cache
// keyring (shared by the workers of one cache), the embedded cache's key
// file without one, or a key of this process on a Redis without keys.
func (st *Stack) secretSource() (*secretsource.Source, error) {
	cfg := st.opts.Config
	kr, err := cfg.CacheKeyring()
	if err == nil && kr == nil && cfg.RedisURL == "" {
		// The embedded cache's own key, kept in the state directory (as
		// signCache does): a key made up per process would give every
		// stage with secrets a new cache key at each restart.
		kr, err = cache.LoadOrCreateKeyFile(filepath.Join(cfg.StateDir, localCacheKeyFile))
	}
	if err != nil {
		return nil, err
	}
	var key []byte
	if kr != nil {
		key = kr.Derive(secretLabel)
	}
	return secretsource.New(st.opts.Config.SecretsDir, key), nil
}

// pythonBackends are the Python version of the worker's own backend and a
// backend for each other version of AUTOCODER_PYTHONS, of the same kind,
// opened on that version's interpreter (process) or base image (docker).
// A version whose backend runs another Python, or does not open, fails
// the start: the coordinator takes jobs for every version of the table,
// so every sandbox worker must have each one.
func (st *Stack) pythonBackends(ctx context.Context, c cache.Cache) (string, map[string]sandbox.Backend, error) {
	table, err := st.opts.Config.PythonTable()
	if err != nil || table == nil {
		return "", nil, err
	}
	own := versionOf(st.Backend)
	others := map[string]sandbox.Backend{}
	for v, where := range table {
		if v == own {
			continue // the worker's own backend serves its version
		}
		cfg := st.opts.Config
		cfg.Sandbox = st.Backend.Name()
		if cfg.Sandbox == "docker" {
			cfg.DockerBaseImage = where
		} else {
			cfg.Python = where
		}
		b, err := OpenBackend(ctx, cfg, st.log.With("python", v), c, st.onWarmFallback)
		if err != nil {
			return "", nil, fmt.Errorf("AUTOCODER_PYTHONS: %s=%s: %w", v, where, err)
		}
		st.closers = append(st.closers, b.Close)
		if got := versionOf(b); got != v {
			return "", nil, fmt.Errorf("AUTOCODER_PYTHONS: %s=%s runs Python %s", v, where, got)
		}
		others[v] = b
	}
	return own, others, nil
}

// versionOf is a backend's Python, "3.11"; "" when it cannot say.
func versionOf(b sandbox.Backend) string {
	if v, ok := b.(sandbox.PythonVersioned); ok {
		return v.PythonVersion()
	}
	return ""
}
