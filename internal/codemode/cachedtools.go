package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/autocoder/autocoder/pkg/cache"
)

// CachedTools returns a registry of the same tools whose calls are
// content-keyed in c: the key is scope, the tool's name and its arguments
// as canonical JSON (encoding/json sorts map keys), so a program run again
// (a retried turn, a run after a crash) gets the stored result instead of
// calling the tool twice. Only successful calls are stored; tools marked
// NoCache are always called. scope bounds the sharing (a job id: within
// one job; "" shares across everything using c). ttl zero keeps entries
// as long as the cache does.
func CachedTools(r *Registry, c cache.Cache, scope string, ttl time.Duration) *Registry {
	out := NewRegistry()
	for _, name := range r.Names() {
		t, _ := r.lookup(name)
		ct := *t
		if !t.NoCache {
			ct.Func = cachedFunc(t.Name, t.Func, c, scope, ttl)
		}
		out.tools[name] = &ct
	}
	return out
}

// ToolCallKey is the cache key of one tool call.
func ToolCallKey(scope, tool string, args map[string]any) (string, error) {
	canon, err := json.Marshal(args)
	if err != nil {
		return "", fmt.Errorf("arguments are not JSON-able: %w", err)
	}
	return cache.Key("toolcall", []byte(scope), []byte(tool), canon), nil
}

func cachedFunc(name string, f ToolFunc, c cache.Cache, scope string, ttl time.Duration) ToolFunc {
	return func(ctx context.Context, args map[string]any) (any, error) {
		key, err := ToolCallKey(scope, name, args)
		if err != nil {
			return f(ctx, args)
		}
		if b, err := c.Get(ctx, key); err == nil {
			var v any
			if decodeJSON(b, &v) == nil {
				return v, nil
			}
		} else if !errors.Is(err, cache.ErrMiss) && ctx.Err() != nil {
			return nil, err
		}
		res, err := f(ctx, args)
		if err != nil {
			return nil, err
		}
		if b, merr := json.Marshal(res); merr == nil {
			_ = c.Set(ctx, key, b, ttl) // a store that fails costs a repeat call, not the result
		}
		return res, nil
	}
}
