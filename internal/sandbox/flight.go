package sandbox

import (
	"context"
	"errors"
	"math/rand/v2"
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

// uidPool hands out distinct host uids from [base, base+count). Each
// concurrent sandbox runs as its own uid so that RLIMIT_NPROC, which the
// kernel counts per real uid, limits one run and not all of them together.
// Other processes sharing the range (another worker on the host) collide
// only by chance, and then merely share a process budget.
type uidPool struct {
	base, count uint32
	mu          sync.Mutex
	used        map[uint32]bool
}

func (p *uidPool) get() uint32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used == nil {
		p.used = map[uint32]bool{}
	}
	for {
		uid := p.base + rand.Uint32N(p.count)
		if !p.used[uid] {
			p.used[uid] = true
			return uid
		}
	}
}

func (p *uidPool) put(uid uint32) {
	p.mu.Lock()
	delete(p.used, uid)
	p.mu.Unlock()
}
