package sandbox

import (
	"context"
	"errors"
	"sync"
)

// BuildGroup runs one build per key at a time and shares its result with
// every caller that asked meanwhile (golang.org/x/sync/singleflight, plus
// per-caller cancellation, in a few lines instead of a dependency). Both
// backends use it; its zero value is ready.
type BuildGroup struct {
	mu    sync.Mutex
	calls map[string]*flightCall
}

type flightCall struct {
	done chan struct{}
	env  Env
	err  error
}

// Do runs fn for key unless a run is in flight, and waits for the result or
// for ctx. fn gets the context of the caller that started it; a waiter whose
// own context is still live retries when that caller was cancelled.
func (g *BuildGroup) Do(ctx context.Context, key string, fn func(context.Context) (Env, error)) (Env, error) {
	for {
		g.mu.Lock()
		if g.calls == nil {
			g.calls = map[string]*flightCall{}
		}
		c, running := g.calls[key]
		if !running {
			c = &flightCall{done: make(chan struct{})}
			g.calls[key] = c
		}
		g.mu.Unlock()

		if !running {
			c.env, c.err = fn(ctx)
			g.mu.Lock()
			delete(g.calls, key)
			g.mu.Unlock()
			close(c.done)
			return c.env, c.err
		}
		select {
		case <-ctx.Done():
			return Env{}, ctx.Err()
		case <-c.done:
		}
		if c.err != nil && isContextErr(c.err) && ctx.Err() == nil {
			continue // the starter gave up, not us
		}
		return c.env, c.err
	}
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
