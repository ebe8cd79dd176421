package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/autocoder/autocoder/pkg/cache"
)

// CachedTools returns a registry of the same tools whose calls are
// content-keyed in c: the key is scope, the tool's name and its arguments
// as canonical JSON (encoding/json sorts map keys), so a program run again
// (a retried turn, a run after a crash) gets the stored result instead of
// calling the tool twice. Within one program (a run of Run or of an
// Interpreter, which marks its context with WithCallOrdinals), the n-th
// of identical calls has a key of its own: a program that polls
// (while job_status(id=j)["state"] != "done") gets the tool's new answers,
// and the same program run again gets the same answers in the same order.
// Only successful calls are stored; tools marked
// NoCache are always called. scope bounds the sharing (a job id: within
// one job; "" shares across everything using c). ttl zero keeps entries
// as long as the cache does.
func CachedTools(r *Registry, c cache.Cache, scope string, ttl time.Duration) *Registry {
	return cachedTools(r, c, scope, ttl, true)
}

// RefreshedTools is CachedTools that never reads the cache (the cache
// mode override): every call is made, and its result stored for the
// runs that read.
func RefreshedTools(r *Registry, c cache.Cache, scope string, ttl time.Duration) *Registry {
	return cachedTools(r, c, scope, ttl, false)
}

func cachedTools(r *Registry, c cache.Cache, scope string, ttl time.Duration, read bool) *Registry {
	out := NewRegistry()
	for _, name := range r.Names() {
		t, _ := r.lookup(name)
		ct := *t
		if !t.NoCache {
			ct.Func = cachedFunc(t.Name, t.Func, c, scope, ttl, read)
		}
		out.tools[name] = &ct
	}
	return out
}

// ToolCallKey is the cache key of one tool call (the first of identical
// calls in a program).
func ToolCallKey(scope, tool string, args map[string]any) (string, error) {
	return toolCallKey(scope, tool, args, 0)
}

// toolCallKey is the key of the n-th (from 0) of identical calls.
func toolCallKey(scope, tool string, args map[string]any, n int) (string, error) {
	canon, err := json.Marshal(args)
	if err != nil {
		return "", fmt.Errorf("arguments are not JSON-able: %w", err)
	}
	if n == 0 {
		return cache.Key("toolcall", []byte(scope), []byte(tool), canon), nil
	}
	return cache.Key("toolcall", []byte(scope), []byte(tool), canon, []byte("#"+strconv.Itoa(n))), nil
}

// callOrdinals counts a program's identical calls, by key.
type callOrdinals struct {
	mu   sync.Mutex
	seen map[string]int
}

type callOrdinalsKey struct{}

// WithCallOrdinals marks ctx as one program's run: the cached tools
// (CachedTools) called with it number identical calls. Run does it; an
// Interpreter does it for each program.
func WithCallOrdinals(ctx context.Context) context.Context {
	return context.WithValue(ctx, callOrdinalsKey{}, &callOrdinals{seen: map[string]int{}})
}

// ordinal is the number of calls of key made before in ctx's program (0
// outside one).
func ordinal(ctx context.Context, key string) int {
	co, ok := ctx.Value(callOrdinalsKey{}).(*callOrdinals)
	if !ok {
		return 0
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	n := co.seen[key]
	co.seen[key] = n + 1
	return n
}

func cachedFunc(name string, f ToolFunc, c cache.Cache, scope string, ttl time.Duration, read bool) ToolFunc {
	return func(ctx context.Context, args map[string]any) (any, error) {
		key, err := ToolCallKey(scope, name, args)
		if err != nil {
			return f(ctx, args)
		}
		if n := ordinal(ctx, key); n > 0 {
			key, _ = toolCallKey(scope, name, args, n)
		}
		if read {
			if b, err := c.Get(ctx, key); err == nil {
				var v any
				if decodeJSON(b, &v) == nil {
					return v, nil
				}
			} else if !errors.Is(err, cache.ErrMiss) && ctx.Err() != nil {
				return nil, err
			}
		}
		res, err := f(ctx, args)
		if err != nil {
			return nil, err
		}
		if b, merr := MarshalResult(res); merr == nil {
			_ = c.Set(ctx, key, b, ttl) // a store that fails costs a repeat call, not the result
		}
		return res, nil
	}
}
