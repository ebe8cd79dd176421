package sandbox

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
)

func TestFlightGroupSharesOneCall(t *testing.T) {
	var g BuildGroup
	var calls atomic.Int32
	release := make(chan struct{})
	started := make(chan struct{})
	fn := func(context.Context) (Env, error) {
		if calls.Add(1) == 1 {
			close(started)
		}
		<-release
		return Env{ID: "x"}, nil
	}
	var wg sync.WaitGroup
	results := make([]Env, 5)
	wg.Add(1)
	go func() { defer wg.Done(); results[0], _ = g.Do(t.Context(), "k", fn) }()
	<-started
	for i := 1; i < 5; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); results[i], _ = g.Do(t.Context(), "k", fn) }()
	}
	// The waiters are blocked on the running call; let it finish.
	close(release)
	wg.Wait()
	for i, r := range results {
		if r.ID != "x" {
			t.Errorf("result %d = %+v", i, r)
		}
	}
	// Late callers may start a second call once the first is done, never a
	// concurrent one; 5 callers means at most a few calls.
	if n := calls.Load(); n < 1 || n > 5 {
		t.Errorf("calls = %d", n)
	}
}

func TestFlightGroupWaiterCancels(t *testing.T) {
	var g BuildGroup
	release := make(chan struct{})
	started := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = g.Do(context.Background(), "k", func(context.Context) (Env, error) {
			close(started)
			<-release
			return Env{ID: "x"}, nil
		})
	}()
	<-started
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := g.Do(ctx, "k", nil); err != context.Canceled {
		t.Errorf("cancelled waiter: err = %v", err)
	}
	close(release)
	<-done
}

func TestFlightGroupRetriesAfterStarterCancelled(t *testing.T) {
	var g BuildGroup
	starterCtx, cancelStarter := context.WithCancel(t.Context())
	started := make(chan struct{})
	go func() {
		_, _ = g.Do(starterCtx, "k", func(ctx context.Context) (Env, error) {
			close(started)
			<-ctx.Done()
			return Env{}, ctx.Err()
		})
	}()
	<-started
	result := make(chan Env, 1)
	go func() {
		env, _ := g.Do(t.Context(), "k", func(context.Context) (Env, error) { return Env{ID: "second"}, nil })
		result <- env
	}()
	cancelStarter()
	if env := <-result; env.ID != "second" {
		t.Errorf("waiter got %+v, want its own retry's result", env)
	}
}
