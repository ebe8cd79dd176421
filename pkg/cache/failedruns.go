package cache

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// FailedRuns is the negative cache: (code, tests) pairs whose test run
// failed, kept in a Cache under their content key, so any worker of any
// job can tell that a proposed fix was already tested and failed. The
// sandbox-worker remembers each failing run; the fix stage checks the code
// the model proposes against it before the loop tests it again. Its zero
// Cache remembers nothing.
type FailedRuns struct {
	Cache Cache
	// TTL is how long a failure is remembered (the workers give it the
	// stage results' lifetime, AUTOCODER_CACHE_TTL); zero: no expiry.
	TTL time.Duration
}

// failedRunValue is what a remembered failure holds: its presence is the
// fact.
var failedRunValue = []byte("failed")

// FailedRunKey is the content key of a (code, tests) pair.
func FailedRunKey(code, tests string) string {
	return Key("failed-run", []byte(code), []byte(tests))
}

// Remember records that code failed its tests.
func (f FailedRuns) Remember(ctx context.Context, code, tests string) error {
	if f.Cache == nil {
		return nil
	}
	if err := f.Cache.Set(ctx, FailedRunKey(code, tests), failedRunValue, f.TTL); err != nil {
		return fmt.Errorf("remember failed run: %w", err)
	}
	return nil
}

// Failed reports whether code was already tested with tests and failed.
func (f FailedRuns) Failed(ctx context.Context, code, tests string) (bool, error) {
	if f.Cache == nil {
		return false, nil
	}
	_, err := f.Cache.Get(ctx, FailedRunKey(code, tests))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrMiss):
		return false, nil
	}
	return false, fmt.Errorf("look up failed run: %w", err)
}
