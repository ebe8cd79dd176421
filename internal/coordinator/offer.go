package coordinator

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/pkg/messages"
)

// A worker offers each stage result to the coordinators before it
// publishes it (bus/offer.go): HandleOffer takes the offer, steps the job
// with it and answers taken once that step is done, the new state stored
// and the next stage's commands and the step's events out. The job's
// state is then the result's durable copy, and the result never goes to
// the result stream, so the hop waits on no write of the result. An offer
// this coordinator cannot take (claim-checked, malformed, from the wrong
// pool, too many in hand, or its step failed) is answered not taken, and
// the worker publishes the result on the stream, where HandleResult takes
// it. A result published after all while its offer's step still runs
// (the worker stopped waiting for the answer) waits for that step, so the
// job is stepped once.

// maxOffersInHand bounds the offers being stepped at once; past it an
// offer is answered not taken, and the result comes by the stream.
const maxOffersInHand = 16

// offers are the offers being stepped.
type offers struct {
	mu     sync.Mutex
	inHand map[offerKey]*offerStep
	slots  chan struct{}
}

type offerKey struct {
	jobID string
	seq   int
	stage messages.Stage
}

func keyOf(res *messages.StageResult) offerKey {
	return offerKey{res.JobID, res.Seq, res.Stage}
}

// offerStep is the step of one offer: done closes when it ends, and then
// taken says whether it stepped the job (or found the result was already
// applied).
type offerStep struct {
	done  chan struct{}
	taken bool
}

// begin notes that res's offer is being stepped; nil when an offer of the
// same result already is.
func (o *offers) begin(res *messages.StageResult) *offerStep {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.inHand == nil {
		o.inHand = map[offerKey]*offerStep{}
	}
	k := keyOf(res)
	if o.inHand[k] != nil {
		return nil
	}
	s := &offerStep{done: make(chan struct{})}
	o.inHand[k] = s
	return s
}

// end ends the step of res's offer.
func (o *offers) end(res *messages.StageResult, s *offerStep, taken bool) {
	o.mu.Lock()
	delete(o.inHand, keyOf(res))
	o.mu.Unlock()
	s.taken = taken
	close(s.done)
}

// wait waits for the step of an offer of res in hand, if there is one,
// and reports whether it took res.
func (o *offers) wait(ctx context.Context, res *messages.StageResult) (bool, error) {
	o.mu.Lock()
	s := o.inHand[keyOf(res)]
	o.mu.Unlock()
	if s == nil {
		return false, nil
	}
	select {
	case <-s.done:
		return s.taken, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// HandleOffer takes a stage result a worker offers (a core NATS request on
// bus.OfferSubject, heard by one coordinator of bus.QueueResultOffers) and
// calls answer once, with whether it took it. It never blocks the
// subscription: the step runs on its own goroutine, at most
// maxOffersInHand at once.
func (c *Coordinator) HandleOffer(ctx context.Context, msg *bus.Message, answer func(taken bool)) {
	var res messages.StageResult
	switch {
	case msg.Headers().Get(bus.HeaderClaimCheck) != "", json.Unmarshal(msg.Data(), &res) != nil, !bus.ValidJobID(res.JobID):
		answer(false) // the stream's copy is checked, and reported, in full
		return
	case c.fromItsPool(msg.Subject(), bus.ParseOfferSubject, &res) != nil:
		answer(false)
		return
	}
	select {
	case c.offers.slots <- struct{}{}:
	default:
		answer(false) // busy: the stream's copy does it
		return
	}
	if !c.bg.enter() { // closing: the stream's copy does it, for the next coordinator
		<-c.offers.slots
		answer(false)
		return
	}
	step := c.offers.begin(&res)
	if step == nil {
		c.bg.exit()
		<-c.offers.slots
		answer(false)
		return
	}
	go func() {
		defer func() { <-c.offers.slots; c.bg.exit() }()
		err := c.apply(ctx, res.JobID, machine.Input{Kind: machine.InputStageResult, Time: c.cfg.Now(), Result: &res})
		if err != nil {
			c.log.Debug("offered result not taken; the worker publishes it", "job_id", res.JobID, "stage", res.Stage, "seq", res.Seq, "err", err)
		} else {
			c.cfg.Metrics.ResultTaken(CopyOffer)
		}
		c.offers.end(&res, step, err == nil)
		answer(err == nil)
	}()
}
