package bus

import (
	"context"
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go"
)

// A stage result is offered before it is published. The worker sends it
// to the coordinators as a core NATS request (OfferSubject, a queue group
// of the coordinators: one hears it); the coordinator that takes it steps
// the job with it and answers OfferTaken once the step is done: the new
// state stored, the next stage's commands and the step's events out. The job's state is
// then the result's durable copy, and the result stream is not used: no
// write of the result, no delivery of it, no acknowledgement that deletes
// it, all of which stood on the stage hop's path or beside it (each a
// write flushed to disk). Any other outcome (no coordinator listening, no
// answer within OfferWait, an answer that is not OfferTaken: the result
// was claim-checked, too many offers in hand, its step failed) and the
// worker publishes the result on its result stream as before, where a
// coordinator takes it. A result is never lost between the two: the
// worker acknowledges its command only after one of them took the result.
// One taken and published both (the answer came after OfferWait) applies
// once: the state machine ignores a result whose stage is no longer
// pending.

// DefaultOfferWait is PublisherConfig.OfferWait's default: a coordinator
// answers within milliseconds; the wait only matters when one stopped
// while it held an offer.
const DefaultOfferWait = 5 * time.Second

// OfferTaken is a coordinator's answer to an offer it took.
const OfferTaken = "taken"

// OfferJSON offers v, as JSON, on subject (an OfferSubject) and reports
// whether a coordinator took it. A body over the claim-check threshold is
// not offered (it travels by claim check on the stream); nor is anything
// when ctx ends first.
func (p *Publisher) OfferJSON(ctx context.Context, subject string, v any) (taken bool) {
	data, err := json.Marshal(v)
	if err != nil || len(data) > p.cfg.ClaimThreshold {
		return false
	}
	octx, cancel := context.WithTimeout(ctx, p.cfg.OfferWait)
	defer cancel()
	reply, err := p.js.Conn().RequestMsgWithContext(octx, &nats.Msg{Subject: subject, Data: data, Header: headersFor(v)})
	if err != nil {
		if ctx.Err() == nil {
			p.log.Debug("offer not answered; publishing", "subject", subject, "error", err)
		}
		return false
	}
	return string(reply.Data) == OfferTaken
}
