package cache

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// FailedRuns is the negative cache: (code, tests) pairs whose test run
// failed, kept in a Cache under their content key, so any worker of any
// job can tell that a proposed fix was already tested and failed. The
// sandbox-worker remembers each failing run with the packages it ran with;
// the fix stage checks the code the model proposes against it before the
// loop tests it again. Its zero Cache remembers nothing.
type FailedRuns struct {
	Cache Cache
	// TTL is how long a failure is remembered (the workers give it the
	// stage results' lifetime, AUTOCODER_CACHE_TTL); zero: no expiry.
	TTL time.Duration
}

// RunEnv is the package set a test run ran with: code that failed for want
// of a package has not failed in an environment that has it. Names are
// compared as given: give each in one normal form (PEP 503's, for pip's).
type RunEnv struct {
	Packages       []string `json:"packages,omitempty"`
	SystemPackages []string `json:"system_packages,omitempty"`
}

// failedRunValue is what a remembered failure holds: the environment it
// failed in. Entries of older workers hold legacyFailedRun, a failure in an
// environment not recorded.
type failedRunValue struct {
	Env RunEnv `json:"env"`
}

var legacyFailedRun = []byte("failed")

// FailedRunKey is the content key of a (code, tests) pair.
func FailedRunKey(code, tests string) string {
	return Key("failed-run", []byte(code), []byte(tests))
}

// Remember records that code failed its tests in env. A later failure of
// the same pair replaces it.
func (f FailedRuns) Remember(ctx context.Context, code, tests string, env RunEnv) error {
	if f.Cache == nil {
		return nil
	}
	b, err := json.Marshal(failedRunValue{Env: env})
	if err != nil {
		return fmt.Errorf("remember failed run: %w", err)
	}
	if err := f.Cache.Set(ctx, FailedRunKey(code, tests), b, f.TTL); err != nil {
		return fmt.Errorf("remember failed run: %w", err)
	}
	return nil
}

// Failed reports whether code was already tested with tests and failed in
// an environment that had every package of env, the least the next run
// will have. A run that will have a package the failed one lacked is not
// known to fail: testing it again costs a sandbox run, where calling it a
// failure would cost a model call and tell the model something untrue.
func (f FailedRuns) Failed(ctx context.Context, code, tests string, env RunEnv) (bool, error) {
	if f.Cache == nil {
		return false, nil
	}
	b, err := f.Cache.Get(ctx, FailedRunKey(code, tests))
	switch {
	case errors.Is(err, ErrMiss):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("look up failed run: %w", err)
	case bytes.Equal(b, legacyFailedRun):
		return true, nil
	}
	var v failedRunValue
	if err := json.Unmarshal(b, &v); err != nil {
		return false, nil // not ours to read: no claim either way
	}
	return covers(v.Env.Packages, env.Packages) && covers(v.Env.SystemPackages, env.SystemPackages), nil
}

// covers reports whether every package of want is in have.
func covers(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
