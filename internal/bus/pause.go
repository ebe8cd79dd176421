package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Pausing a pool (River's paused queues): an operator switches the pool's
// entry in BucketPools (SetPoolPause); every worker of the pool watches it
// (WatchPause) into a Pause, and a Worker with that Pause fetches nothing
// while it is on. What the workers hold already runs to its end; new
// stage commands wait in the pool's queue until the pool is resumed.

// Pause is a pool's pause switch as one process sees it.
type Pause struct {
	mu      sync.Mutex
	on      bool
	changed chan struct{} // closed, and replaced, at every change
}

// NewPause returns a switch that is off.
func NewPause() *Pause { return &Pause{changed: make(chan struct{})} }

// Set turns the switch on (paused) or off.
func (p *Pause) Set(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.on == on {
		return
	}
	p.on = on
	close(p.changed)
	p.changed = make(chan struct{})
}

// Paused reports whether the switch is on; a nil Pause is never on.
func (p *Pause) Paused() bool {
	on, _ := p.state()
	return on
}

// state is the switch and a channel closed at its next change; a nil
// Pause is off for good.
func (p *Pause) state() (bool, <-chan struct{}) {
	if p == nil {
		return false, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.on, p.changed
}

// SetPoolPause switches pool's pause (p.Pool) in kv (Resources.Pools).
func SetPoolPause(ctx context.Context, kv jetstream.KeyValue, p messages.PoolPause) error {
	if !ValidPool(messages.Pool(p.Pool)) {
		return &messages.FieldError{Field: "pool", Msg: fmt.Sprintf("%q is not a pool (%v)", p.Pool, messages.Pools())}
	}
	p.V = messages.WireVersion
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if _, err := kv.Put(ctx, PoolKey(messages.Pool(p.Pool)), b); err != nil {
		return fmt.Errorf("bus: switch the pause of pool %s: %w", p.Pool, err)
	}
	return nil
}

// PoolPauseOf reads pool's pause switch from kv; nil when it was never
// switched.
func PoolPauseOf(ctx context.Context, kv jetstream.KeyValue, pool messages.Pool) (*messages.PoolPause, error) {
	e, err := kv.Get(ctx, PoolKey(pool))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("bus: read the pause of pool %s: %w", pool, err)
	}
	return decodePause(e.Value())
}

func decodePause(b []byte) (*messages.PoolPause, error) {
	var p messages.PoolPause
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("bus: a pool's pause switch does not decode: %w", err)
	}
	return &p, nil
}

// WatchPause keeps p in step with pool's switch in kv until ctx ends. A
// watch that breaks (NATS restarting) is opened again, and p keeps its
// last known value meanwhile: a paused pool stays paused, a running one
// runs.
func WatchPause(ctx context.Context, kv jetstream.KeyValue, pool messages.Pool, p *Pause, log *slog.Logger) {
	if log == nil {
		log = discardLogger()
	}
	wait := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := watchPauseOnce(ctx, kv, pool, p, log)
		if ctx.Err() != nil {
			return
		}
		log.Warn("watch the pool's pause switch: watching again", "pool", pool, "retry_in", wait, "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

func watchPauseOnce(ctx context.Context, kv jetstream.KeyValue, pool messages.Pool, p *Pause, log *slog.Logger) error {
	w, err := kv.Watch(ctx, PoolKey(pool))
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			switch {
			case !ok:
				return errors.New("the watch ended")
			case e == nil: // the current value has been delivered
			case e.Operation() != jetstream.KeyValuePut:
				p.Set(false) // deleted or purged: never paused
			default:
				pp, err := decodePause(e.Value())
				if err != nil {
					log.Warn("pool's pause switch ignored", "pool", pool, "error", err)
					continue
				}
				if pp.Paused != p.Paused() {
					log.Info("pool pause switched", "pool", pool, "paused", pp.Paused, "by", pp.By, "reason", pp.Reason)
				}
				p.Set(pp.Paused)
			}
		}
	}
}
