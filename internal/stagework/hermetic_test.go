package stagework_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/internal/testredis"
	"github.com/autocoder/autocoder/pkg/cache"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestOnlyHermeticResultsAreCached: a result that depends on more than the
// command (a timeout, a killed run) or a failure is published but not
// stored, so the same command is computed again next time; a normal
// result is answered from the cache.
func TestOnlyHermeticResultsAreCached(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		out       stagework.Output[any]
		err       error
		wantCalls int32
	}{
		{"tests passed", stagework.Output[any]{Value: messages.TestReport{Passed: 1}}, nil, 1},
		{"tests failed", stagework.Output[any]{Value: messages.TestReport{Failed: 1, ExitCode: 1}}, nil, 1},
		{"test run timed out", stagework.Output[any]{Value: messages.TestReport{TimedOut: true, ExitCode: -1}}, nil, 2},
		{"test run OOM-killed", stagework.Output[any]{Value: messages.TestReport{ExitCode: 137}}, nil, 2},
		{"script timed out", stagework.Output[any]{Value: messages.AcceptanceOutput{TimedOut: true}}, nil, 2},
		{"script killed by a signal", stagework.Output[any]{Value: messages.AcceptanceOutput{ExitCode: -1}}, nil, 2},
		{"infrastructure error", stagework.Output[any]{}, errors.New("sandbox: no space left on device"), 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := &handler{version: "v1", fn: func(context.Context, *messages.StageCommand) (stagework.Output[any], error) {
				return tc.out, tc.err
			}}
			p, c := &publisher{}, newMemCache()
			r := newExecutor(t, h, p, c, nil)
			cmd := command(messages.CacheAuto)
			for range 2 {
				// The last delivery: an error becomes an infra result, published.
				if err := r.Handle(ctxT(t), message(t, cmd, 4).WithMaxDeliver(4)); err != nil {
					t.Fatalf("Handle: %v", err)
				}
			}
			if got := h.calls.Load(); got != tc.wantCalls {
				t.Errorf("handler calls = %d, want %d", got, tc.wantCalls)
			}
			if got := p.results(); len(got) != 2 {
				t.Fatalf("published %d results, want 2", len(got))
			}
			if _, sets := c.stats(); (sets == 1) != (tc.wantCalls == 1) {
				t.Errorf("cache sets = %d", sets)
			}
		})
	}
}

// TestForgedCacheEntryIsRecomputed: with a signed Redis cache, an entry
// written straight into Redis (as anyone with access to it could) is a
// miss: the stage is computed again, and the forged output never reaches
// the job.
func TestForgedCacheEntryIsRecomputed(t *testing.T) {
	t.Parallel()
	url := testredis.Start(t)
	rc, err := cache.OpenRedis(ctxT(t), url)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := cache.NewKeyring(cache.HMACKey{ID: "k1", Secret: bytes.Repeat([]byte("s"), 32)})
	if err != nil {
		t.Fatal(err)
	}
	c, err := cache.NewSigned(rc, keys, cache.SignedConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	raw := redis.NewClient(opts)
	t.Cleanup(func() { _ = raw.Close() })

	h, p := &handler{version: "v1"}, &publisher{}
	r := newExecutor(t, h, p, c, nil)
	cmd := command(messages.CacheAuto)
	run := func() messages.StageResult {
		t.Helper()
		if err := r.Handle(ctxT(t), message(t, cmd, 1)); err != nil {
			t.Fatalf("Handle: %v", err)
		}
		res := p.results()
		return res[len(res)-1].Result
	}
	run()
	if res := run(); !res.Cached || h.calls.Load() != 1 {
		t.Fatalf("second run: cached=%v after %d calls, want a hit", res.Cached, h.calls.Load())
	}

	forged := mustJSON(t, map[string]any{"output": messages.Plan{Description: "forged", Approach: "a"}})
	good, err := raw.Get(ctxT(t), mustKey(t, r, cmd)).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	// Unsigned, then a genuine signature (magic, key id "k1", MAC) in front
	// of another value.
	const header = 4 + 1 + 2 + 32
	tampered := append(append([]byte(nil), good[:header]...), forged...)
	for _, entry := range [][]byte{forged, tampered} {
		if err := raw.Set(ctxT(t), mustKey(t, r, cmd), entry, 0).Err(); err != nil {
			t.Fatal(err)
		}
		calls := h.calls.Load()
		res := run()
		var plan messages.Plan
		if err := json.Unmarshal(res.Output, &plan); err != nil {
			t.Fatal(err)
		}
		if res.Cached || plan.Description != "computed" || h.calls.Load() != calls+1 {
			t.Errorf("after a forged entry: %q cached=%v, %d calls; want a recomputation", plan.Description, res.Cached, h.calls.Load())
		}
		if res := run(); !res.Cached {
			t.Error("the recomputed result was not stored again")
		}
	}
	// Each forged entry is read twice before the recomputation: before the
	// in-flight claim and once it is taken (inflight.go).
	if c.Failures() != 4 {
		t.Errorf("signature failures = %d, want 4", c.Failures())
	}
}
