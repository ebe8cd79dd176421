package stack

import (
	"context"
	"fmt"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandboxstages"
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
// keyring (shared by the workers of one cache) or, without one, a key of
// this process.
func (st *Stack) secretSource() (*secretsource.Source, error) {
	kr, err := st.opts.Config.CacheKeyring()
	if err != nil {
		return nil, err
	}
	var key []byte
	if kr != nil {
		key = kr.Derive(secretLabel)
	}
	return secretsource.New(st.opts.Config.SecretsDir, key), nil
}

// offerPythons gives h, the handlers of the worker's own backend, the
// handlers of each other version of AUTOCODER_PYTHONS, each on a backend
// of the same kind opened on that version's interpreter (process) or base
// image (docker). A version whose backend runs another Python, or does not
// open, fails the start: the coordinator refuses jobs for the versions
// not offered, so every worker must have each one.
func (st *Stack) offerPythons(ctx context.Context, c cache.Cache, h *sandboxstages.Handlers,
	handlers func(sandbox.Backend) *sandboxstages.Handlers) error {
	table, err := st.opts.Config.PythonTable()
	if err != nil || table == nil {
		return err
	}
	own := versionOf(st.Backend)
	others := map[string]*sandboxstages.Handlers{}
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
		b, err := OpenBackend(ctx, cfg, st.log.With("python", v), c)
		if err != nil {
			return fmt.Errorf("AUTOCODER_PYTHONS: %s=%s: %w", v, where, err)
		}
		st.closers = append(st.closers, b.Close)
		if got := versionOf(b); got != v {
			return fmt.Errorf("AUTOCODER_PYTHONS: %s=%s runs Python %s", v, where, got)
		}
		others[v] = handlers(b)
	}
	h.WithPythons(own, others)
	return nil
}

// versionOf is a backend's Python, "3.11"; "" when it cannot say.
func versionOf(b sandbox.Backend) string {
	if v, ok := b.(sandbox.PythonVersioned); ok {
		return v.PythonVersion()
	}
	return ""
}
