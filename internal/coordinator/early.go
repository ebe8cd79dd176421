package coordinator

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/pkg/messages"
)

// A stage result reaches the coordinator twice. A worker publishes it on
// its pool's result subject, where the pool's result stream stores it
// (flushed to disk) and then delivers it: that durable copy is what
// HandleResult takes, acknowledged once applied, so no result is lost.
// The same publish also reaches core NATS subscribers at once, before the
// stream has stored it; HandleEarlyResult takes that early copy, so the
// next hop does not wait for the result's write to the disk (about one
// JetStream round trip of the two or three a hop costs). Applying it is
// safe because the job's state only moves by compare-and-set, and a
// result applies once (the machine ignores a seq no longer pending).
// When the early copy is applied, the durable one is acknowledged without
// a second step; when it is not (lost, dropped because too many are in
// hand, or its step failed), the durable copy is applied as before.

// maxEarlyInFlight bounds the early copies being applied at once; past it
// an early copy is dropped, and its durable copy does the work.
const maxEarlyInFlight = 16

// maxEarlyApplied bounds the results remembered as taken early whose
// durable copy has not come yet (it normally follows within milliseconds).
const maxEarlyApplied = 4096

// early remembers the results taken from their early copies, applied or
// being applied.
type early struct {
	mu    sync.Mutex
	taken map[earlyKey]*earlyStep
	slots chan struct{}
}

type earlyKey struct {
	jobID string
	seq   int
	stage messages.Stage
}

// earlyStep is the step of one early copy: done closes when it ends, and
// then applied says whether it stepped the job (or found it had nothing
// to do with the result).
type earlyStep struct {
	done    chan struct{}
	applied bool
}

func keyOf(res *messages.StageResult) earlyKey {
	return earlyKey{res.JobID, res.Seq, res.Stage}
}

// begin notes that res's early copy is being applied; nil when it already
// was (a copy heard twice).
func (e *early) begin(res *messages.StageResult) *earlyStep {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.taken == nil {
		e.taken = map[earlyKey]*earlyStep{}
	}
	k := keyOf(res)
	if e.taken[k] != nil {
		return nil
	}
	if len(e.taken) >= maxEarlyApplied {
		for k, s := range e.taken { // a durable copy that never came: forget one that is over
			select {
			case <-s.done:
				delete(e.taken, k)
			default:
				continue
			}
			break
		}
	}
	s := &earlyStep{done: make(chan struct{})}
	e.taken[k] = s
	return s
}

// end ends an early step.
func (s *earlyStep) end(applied bool) {
	s.applied = applied
	close(s.done)
}

// take reports whether res was applied from its early copy, waiting for
// an early step in progress, and forgets it.
func (e *early) take(ctx context.Context, res *messages.StageResult) (bool, error) {
	k := keyOf(res)
	e.mu.Lock()
	s := e.taken[k]
	e.mu.Unlock()
	if s == nil {
		return false, nil
	}
	select {
	case <-s.done:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	e.mu.Lock()
	delete(e.taken, k)
	e.mu.Unlock()
	return s.applied, nil
}

// HandleEarlyResult takes a stage result as its worker publishes it (a
// core NATS subscription to the result subjects, in a queue group of the
// coordinators). It never blocks the subscription: the step runs on its
// own goroutine, at most maxEarlyInFlight at once. A claim-checked result
// (its body in the claims store) and one that fails any check or step are
// left to the durable copy, which reports them.
func (c *Coordinator) HandleEarlyResult(ctx context.Context, msg *bus.Message) {
	if msg.Headers().Get(bus.HeaderClaimCheck) != "" {
		return
	}
	select {
	case c.early.slots <- struct{}{}:
	default:
		return // busy: the durable copy does it
	}
	var res messages.StageResult
	if json.Unmarshal(msg.Data(), &res) != nil || !bus.ValidJobID(res.JobID) || c.fromItsPool(msg.Subject(), &res) != nil {
		<-c.early.slots
		return
	}
	// Noted before the step starts, so a durable copy that comes first
	// waits for it rather than stepping the job a second time.
	step := c.early.begin(&res)
	if step == nil {
		<-c.early.slots
		return
	}
	go func() {
		defer func() { <-c.early.slots }()
		err := c.apply(ctx, res.JobID, machine.Input{Kind: machine.InputStageResult, Time: c.cfg.Now(), Result: &res})
		if err != nil {
			c.log.Debug("early result not applied; its durable copy will be", "job_id", res.JobID, "stage", res.Stage, "seq", res.Seq, "err", err)
		} else {
			c.cfg.Metrics.ResultTaken(CopyEarly)
		}
		step.end(err == nil)
	}()
}
