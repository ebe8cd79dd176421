package coordinator

import "sync"

// background is the work a coordinator runs on its own goroutines: offered
// results being stepped, and its timers (delayed outbox clears and
// retries, waiting index lines) once they fire. Close waits for it, so
// nothing it started still uses the connection after the stack closes it.
type background struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// enter counts one piece of work in, unless Close has begun waiting; then
// it reports false and the caller decides (an offer is answered not taken,
// a timer's work runs untracked, as it would have).
func (b *background) enter() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.wg.Add(1)
	return true
}

// exit counts one piece of work out.
func (b *background) exit() { b.wg.Done() }

// track runs f counted in, or as it is once Close has begun.
func (b *background) track(f func()) {
	if b.enter() {
		defer b.exit()
	}
	f()
}

// closeAndWait lets no new work in and waits for the work counted in.
func (b *background) closeAndWait() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.wg.Wait()
}
