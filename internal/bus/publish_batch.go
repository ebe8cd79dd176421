package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Outgoing is one message of a batch (PublishJSONBatch).
type Outgoing struct {
	Subject string
	Value   any
	MsgID   string
}

// PublishJSONBatch publishes msgs in order without waiting for each
// acknowledgement before sending the next (JetStream's async publish), and
// then waits for all of them: a batch costs about one round trip instead
// of one each. The stream stores them in the order given, as they go out
// on one connection in that order. A message the server does not
// acknowledge, and one that travels by claim check, is published again
// with PublishJSON (its retries; the Msg-Id drops a copy that did land),
// after the others: an order a failure breaks is the order of that one
// message only.
func (p *Publisher) PublishJSONBatch(ctx context.Context, msgs []Outgoing) error {
	type sent struct {
		i   int
		ack jetstream.PubAckFuture
	}
	var pending []sent
	var again []int
	for i, m := range msgs {
		data, err := json.Marshal(m.Value)
		if err != nil {
			return fmt.Errorf("bus: publish to %s: encode %T: %w", m.Subject, m.Value, err)
		}
		if len(data) > p.cfg.ClaimThreshold {
			again = append(again, i)
			continue
		}
		var opts []jetstream.PublishOpt
		if m.MsgID != "" {
			opts = append(opts, jetstream.WithMsgID(m.MsgID))
		}
		ack, err := p.js.PublishMsgAsync(&nats.Msg{Subject: m.Subject, Data: data, Header: headersFor(m.Value)}, opts...)
		if err != nil {
			again = append(again, i)
			continue
		}
		pending = append(pending, sent{i, ack})
	}
	// An acknowledgement may never come (a stream leader that stepped
	// down with the message queued answers nothing, and the connection,
	// to another server, stays up): past PublishAckWait what is unanswered is
	// published again, one by one.
	expired := time.NewTimer(p.cfg.PublishAckWait)
	defer expired.Stop()
	waiting := true
	for _, s := range pending {
		if waiting {
			select {
			case <-s.ack.Ok():
				continue
			case <-s.ack.Err():
				again = append(again, s.i)
				continue
			case <-expired.C:
				waiting = false
			case <-ctx.Done():
				return fmt.Errorf("bus: publish to %s: %w", msgs[s.i].Subject, ctx.Err())
			}
		}
		select {
		case <-s.ack.Ok():
		default:
			again = append(again, s.i)
		}
	}
	for _, i := range again {
		if err := p.PublishJSON(ctx, msgs[i].Subject, msgs[i].Value, msgs[i].MsgID); err != nil {
			return err
		}
	}
	return nil
}
