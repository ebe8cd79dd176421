package wiring

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

// TestKeepRunningStartsAStoppedWatchAgain: a watch that ends with an error
// while the stack runs (its NATS consumer could not be made again) is
// started again, and again, until the stack closes; then it is not.
func TestKeepRunningStartsAStoppedWatchAgain(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	var runs atomic.Int32
	blocked := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		keepRunning(ctx, slog.New(slog.DiscardHandler), "test watch", func(ctx context.Context) error {
			if runs.Add(1) < 3 {
				return errors.New("the job state watch stopped")
			}
			close(blocked)
			<-ctx.Done()
			return nil
		})
	}()
	select {
	case <-blocked: // the third run: started again twice, after 1 s and 2 s
	case <-time.After(time.Minute):
		t.Fatalf("%d runs: a stopped watch was not started again", runs.Load())
	}
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("keepRunning did not return once its context ended")
	}
	if n := runs.Load(); n != 3 {
		t.Errorf("%d runs, want 3", n)
	}
}
