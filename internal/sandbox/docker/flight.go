package docker

import (
	"context"
	"errors"
	"sync"

	"github.com/autocoder/autocoder/internal/sandbox"
)

// flightGroup runs one build per key at a time and shares its result with
// every caller that asked meanwhile (golang.org/x/sync/singleflight, plus
// per-caller cancellation).
type flightGroup struct {
	mu    sync.Mutex
	calls map[string]*flightCall
}

type flightCall struct {
	done chan struct{}
	env  sandbox.Env
	err  error
}

// do runs fn for key unless a run is in flight, and waits for the result or
// for ctx. fn gets the context of the caller that started it; a waiter whose
// own context is still live retries when that caller was cancelled.
func (g *flightGroup) do(ctx context.Context, key string, fn func(context.Context) (sandbox.Env, error)) (sandbox.Env, error) {
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
			return sandbox.Env{}, ctx.Err()
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
