package stagework

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// ErrJobCancelled is the cause of a stage context ended because its job was
// cancelled (Cancels.Cancel): the handler's work is abandoned and the
// command acked, with no result, since a finished job takes none.
var ErrJobCancelled = errors.New("stagework: job cancelled")

// Cancels are the stages in flight of one worker, by job, so that a
// cancelled job's stages stop: each stage runs under a context that
// Cancel ends, which kills its sandbox or abandons its model call. The
// zero value is not usable; a nil *Cancels tracks nothing.
type Cancels struct {
	mu      sync.Mutex
	next    uint64
	running map[string]map[uint64]context.CancelCauseFunc
}

// NewCancels returns an empty Cancels.
func NewCancels() *Cancels {
	return &Cancels{running: map[string]map[uint64]context.CancelCauseFunc{}}
}

// track returns a context for a stage of job jobID that Cancel(jobID)
// ends, and the func to call when the stage is over.
func (c *Cancels) track(ctx context.Context, jobID string) (context.Context, func()) {
	if c == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	c.mu.Lock()
	c.next++
	id := c.next
	if c.running[jobID] == nil {
		c.running[jobID] = map[uint64]context.CancelCauseFunc{}
	}
	c.running[jobID][id] = cancel
	c.mu.Unlock()
	return ctx, func() {
		c.mu.Lock()
		delete(c.running[jobID], id)
		if len(c.running[jobID]) == 0 {
			delete(c.running, jobID)
		}
		c.mu.Unlock()
		cancel(nil)
	}
}

// Cancel ends the contexts of job jobID's stages in flight with
// ErrJobCancelled and returns how many there were.
func (c *Cancels) Cancel(jobID string) int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cancel := range c.running[jobID] {
		cancel(ErrJobCancelled)
	}
	return len(c.running[jobID])
}

// Running is how many stages are in flight.
func (c *Cancels) Running() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, stages := range c.running {
		n += len(stages)
	}
	return n
}

// Listen subscribes Cancels to the coordinator's cancellation notices
// (bus.SubjectCancelledAll) on nc until the subscription is drained or
// unsubscribed.
func (c *Cancels) Listen(nc *nats.Conn) (*nats.Subscription, error) {
	return nc.Subscribe(bus.SubjectCancelledAll, func(m *nats.Msg) {
		var note messages.CancelJob
		if json.Unmarshal(m.Data, &note) != nil || bus.CancelledSubject(note.JobID) != m.Subject {
			return
		}
		c.Cancel(note.JobID)
	})
}

// cancelled reports whether stage context ctx ended because its job was cancelled.
func cancelled(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), ErrJobCancelled)
}
