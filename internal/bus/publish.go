package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/autocoder/autocoder/pkg/messages"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// PublisherConfig tunes a Publisher. The zero value of every field means its
// default.
type PublisherConfig struct {
	// MaxAttempts bounds the tries of one publish that JetStream does not
	// answer. Default 6 (about 3s of waiting with the default waits).
	MaxAttempts int
	// RetryWait is the wait after the first failed try; it doubles up to
	// MaxRetryWait. Defaults 100ms and 2s.
	RetryWait    time.Duration
	MaxRetryWait time.Duration
	// Logger receives retries (Warn) and dropped duplicates (Debug). Default: discard.
	Logger *slog.Logger
	// ClaimThreshold is the body size above which a message travels by
	// claim check (claimcheck.go). Default DefaultClaimThreshold.
	ClaimThreshold int
	// MaxClaim bounds a body sent by claim check; a larger one is an
	// error wrapping ErrPayloadTooLarge. Default DefaultMaxClaim.
	MaxClaim int
	// OfferWait bounds how long OfferJSON waits for a coordinator's
	// answer. Default DefaultOfferWait.
	OfferWait time.Duration
	// PublishAckWait bounds how long PublishJSONBatch waits for its
	// acknowledgements before it publishes the unanswered again. Default
	// DefaultPublishAckWait.
	PublishAckWait time.Duration
}

// DefaultPublishAckWait is PublisherConfig.PublishAckWait's default: nats.go's wait for
// a synchronous publish.
const DefaultPublishAckWait = 5 * time.Second

// Publisher publishes JSON messages to JetStream (and core NATS).
type Publisher struct {
	js  jetstream.JetStream
	cfg PublisherConfig
	log *slog.Logger

	claimsMu sync.Mutex
	claims   jetstream.ObjectStore // ObjectStoreClaims, opened on first use
}

// NewPublisher makes a Publisher on js, applying defaults to cfg.
func NewPublisher(js jetstream.JetStream, cfg PublisherConfig) *Publisher {
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 6
	}
	if cfg.RetryWait <= 0 {
		cfg.RetryWait = 100 * time.Millisecond
	}
	if cfg.MaxRetryWait <= 0 {
		cfg.MaxRetryWait = 2 * time.Second
	}
	if cfg.ClaimThreshold <= 0 {
		cfg.ClaimThreshold = DefaultClaimThreshold
	}
	if cfg.MaxClaim <= 0 {
		cfg.MaxClaim = DefaultMaxClaim
	}
	if cfg.OfferWait <= 0 {
		cfg.OfferWait = DefaultOfferWait
	}
	if cfg.PublishAckWait <= 0 {
		cfg.PublishAckWait = DefaultPublishAckWait
	}
	log := cfg.Logger
	if log == nil {
		log = discardLogger()
	}
	return &Publisher{js: js, cfg: cfg, log: log}
}

// PublishJSON marshals v and publishes it to subject, waiting for the
// stream's acknowledgement. With msgID != "" it sets Nats-Msg-Id, so a
// publish repeated within the stream's duplicate window is stored once (see
// SubmitMsgID, StageMsgID, ResultMsgID); a dropped duplicate is a success.
//
// For messages.SubmitJob, StageCommand, StageResult and Event (or pointers
// to them) it sets HeaderJobID and HeaderStage, which workers log.
//
// "No responders" (no stream is there yet, or a cluster is electing a
// leader) is retried with backoff up to MaxAttempts; so is a timed-out try
// when msgID is set, since the server drops the copy if the first try did
// land. Without a msgID a timeout is returned: retrying could store the
// message twice. ctx bounds the whole call.
//
// A body over ClaimThreshold travels by claim check (claimcheck.go); one
// over MaxClaim is an error wrapping ErrPayloadTooLarge.
func (p *Publisher) PublishJSON(ctx context.Context, subject string, v any, msgID string) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("bus: publish to %s: encode %T: %w", subject, v, err)
	}
	hdr := headersFor(v)
	if data, err = p.checkClaim(ctx, subject, data, hdr); err != nil {
		return err
	}
	opts := []jetstream.PublishOpt{jetstream.WithRetryAttempts(0)} // we retry, with backoff
	if msgID != "" {
		opts = append(opts, jetstream.WithMsgID(msgID))
	}
	wait := p.cfg.RetryWait
	for attempt := 1; ; attempt++ {
		m := &nats.Msg{Subject: subject, Data: data, Header: cloneHeader(hdr)}
		ack, err := p.js.PublishMsg(ctx, m, opts...)
		if err == nil {
			if ack.Duplicate {
				p.log.Debug("duplicate publish dropped by server", "subject", subject, "msg_id", msgID)
			}
			return nil
		}
		if ctx.Err() != nil || attempt >= p.cfg.MaxAttempts || !p.retryable(err, msgID) {
			return fmt.Errorf("bus: publish to %s (attempt %d): %w", subject, attempt, err)
		}
		p.log.Warn("publish failed, retrying", "subject", subject, "attempt", attempt, "retry_in", wait, "error", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("bus: publish to %s (attempt %d): %w (last error: %v)", subject, attempt, ctx.Err(), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, p.cfg.MaxRetryWait)
	}
}

func (p *Publisher) retryable(err error, msgID string) bool {
	if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) {
		return true // nothing stored it, so trying again cannot duplicate
	}
	timedOut := errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded)
	return timedOut && msgID != ""
}

// PublishCore publishes v as JSON on core NATS: fire and forget, not stored,
// seen only by current subscribers. For ephemeral notifications (e.g. "a new
// event is in the stream"), never for work.
func (p *Publisher) PublishCore(subject string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("bus: publish to %s: encode %T: %w", subject, v, err)
	}
	m := &nats.Msg{Subject: subject, Data: data, Header: headersFor(v)}
	if err := p.js.Conn().PublishMsg(m); err != nil {
		return fmt.Errorf("bus: publish to %s: %w", subject, err)
	}
	return nil
}

// headersFor returns HeaderJobID and HeaderStage for the wire messages that
// carry them.
func headersFor(v any) nats.Header {
	var jobID string
	var stage messages.Stage
	switch m := v.(type) {
	case messages.SubmitJob:
		jobID = m.JobID
	case *messages.SubmitJob:
		if m != nil {
			jobID = m.JobID
		}
	case messages.StageCommand:
		jobID, stage = m.JobID, m.Stage
	case *messages.StageCommand:
		if m != nil {
			jobID, stage = m.JobID, m.Stage
		}
	case messages.StageResult:
		jobID, stage = m.JobID, m.Stage
	case *messages.StageResult:
		if m != nil {
			jobID, stage = m.JobID, m.Stage
		}
	case messages.Event:
		jobID, stage = m.JobID, m.Stage
	case *messages.Event:
		if m != nil {
			jobID, stage = m.JobID, m.Stage
		}
	}
	hdr := nats.Header{}
	if jobID != "" {
		hdr.Set(HeaderJobID, jobID)
	}
	if stage != "" {
		hdr.Set(HeaderStage, string(stage))
	}
	return hdr
}

// cloneHeader copies hdr: PublishMsg adds Nats-Msg-Id to the header it is
// given, and each try gets a fresh message.
func cloneHeader(hdr nats.Header) nats.Header {
	c := make(nats.Header, len(hdr))
	for k, v := range hdr {
		c[k] = append([]string(nil), v...)
	}
	return c
}
