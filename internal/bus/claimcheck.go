package bus

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Claim check: a message body over the threshold does not travel on the
// subject. Publisher puts it into the ObjectStoreClaims object store under
// its content hash and publishes an empty body with HeaderClaimCheck naming
// the object; Worker fetches it back, checks the hash, and hands the
// handler the whole body. So no message autocoder publishes meets the
// broker's payload limit (1 MiB by default), whatever a stage produced,
// and handlers never see the difference. This file is the one place for
// the rule, on both sides.

// HeaderClaimCheck names the ObjectStoreClaims object that holds a
// message's body (its body on the subject is then empty).
const HeaderClaimCheck = messages.HeaderClaimCheck

const (
	// DefaultClaimThreshold is the body size above which Publisher sends
	// by claim check: half the server's default max_payload, leaving room
	// for headers and for servers configured lower.
	DefaultClaimThreshold = messages.ClaimThreshold
	// DefaultMaxClaim bounds one body sent by claim check: a message that
	// large is a bug or an attack, and every reader holds it in memory.
	DefaultMaxClaim = 64 << 20
)

// ErrPayloadTooLarge is returned (wrapped) for a message body over
// PublisherConfig.MaxClaim, or one the claim-check store cannot take:
// publishing it again gives the same answer.
var ErrPayloadTooLarge = errors.New("bus: message too large")

// claimName is the object name of body: its SHA-256, so a repeated
// publish stores one object and a reader can check what it got.
func claimName(body []byte) string {
	sum := sha256.Sum256(body)
	return "sha256-" + hex.EncodeToString(sum[:])
}

// claimStore opens ObjectStoreClaims once per Publisher.
func (p *Publisher) claimStore(ctx context.Context) (jetstream.ObjectStore, error) {
	p.claimsMu.Lock()
	defer p.claimsMu.Unlock()
	if p.claims != nil {
		return p.claims, nil
	}
	o, err := p.js.ObjectStore(ctx, ObjectStoreClaims)
	if err != nil {
		return nil, fmt.Errorf("open claim-check store %s: %w", ObjectStoreClaims, err)
	}
	p.claims = o
	return o, nil
}

// checkClaim puts body into the claim-check store when it is over the
// threshold and returns the body to publish and the header naming the
// object (unchanged for a small body).
func (p *Publisher) checkClaim(ctx context.Context, subject string, body []byte, hdr nats.Header) ([]byte, error) {
	if len(body) <= p.cfg.ClaimThreshold {
		return body, nil
	}
	if len(body) > p.cfg.MaxClaim {
		return nil, fmt.Errorf("bus: publish to %s: %w: %s, over the %s limit (PublisherConfig.MaxClaim)",
			subject, ErrPayloadTooLarge, messages.FormatBytes(int64(len(body))), messages.FormatBytes(int64(p.cfg.MaxClaim)))
	}
	store, err := p.claimStore(ctx)
	if err != nil {
		return nil, fmt.Errorf("bus: publish to %s: %w", subject, err)
	}
	name := claimName(body)
	if _, err := store.GetInfo(ctx, name); err != nil {
		if _, err := store.Put(ctx, jetstream.ObjectMeta{Name: name}, bytes.NewReader(body)); err != nil {
			return nil, fmt.Errorf("bus: publish to %s: claim check of %s: %w", subject, messages.FormatBytes(int64(len(body))), StoreFull(ObjectStoreClaims, err))
		}
	}
	hdr.Set(HeaderClaimCheck, name)
	return nil, nil
}

// redeem replaces the empty body of a claim-checked message with the
// object it names, read from store with at most maxClaim bytes and checked
// against its name. A message without the header is left as it is.
func redeem(ctx context.Context, store jetstream.ObjectStore, msg *Message, maxClaim int) error {
	name := msg.header.Get(HeaderClaimCheck)
	if name == "" {
		return nil
	}
	if store == nil {
		return Permanent(fmt.Errorf("bus: message on %s is claim-checked (%s) and this worker has no claim-check store", msg.subject, name))
	}
	obj, err := store.Get(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return Permanent(fmt.Errorf("bus: message on %s: claim-checked body %s is gone from %s", msg.subject, name, ObjectStoreClaims))
	}
	if err != nil {
		return fmt.Errorf("bus: message on %s: fetch claim-checked body %s: %w", msg.subject, name, err)
	}
	defer obj.Close()
	body, err := io.ReadAll(io.LimitReader(obj, int64(maxClaim)+1))
	if err != nil {
		return fmt.Errorf("bus: message on %s: read claim-checked body %s: %w", msg.subject, name, err)
	}
	if len(body) > maxClaim {
		return Permanent(fmt.Errorf("bus: message on %s: claim-checked body %s is over the %s limit: %w",
			msg.subject, name, messages.FormatBytes(int64(maxClaim)), ErrPayloadTooLarge))
	}
	if claimName(body) != name {
		return Permanent(fmt.Errorf("bus: message on %s: claim-checked body does not match its name %s", msg.subject, name))
	}
	msg.data = body
	return nil
}

// RedeemBody is the body of a message read outside a Worker (an ordered
// consumer, a KV watch): data itself, or, for a claim-checked message,
// the body its header names, fetched from store and checked.
func RedeemBody(ctx context.Context, store jetstream.ObjectStore, subject string, header nats.Header, data []byte) ([]byte, error) {
	m := &Message{subject: subject, data: data, header: header}
	if header == nil {
		return data, nil
	}
	if err := redeem(ctx, store, m, DefaultMaxClaim); err != nil {
		return nil, err
	}
	return m.data, nil
}
