package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/pkg/messages"
)

// The claim check as docs/api.md states it for producers: a body over
// messages.ClaimThreshold travels as an empty message whose header
// messages.HeaderClaimCheck names an object "sha256-<hex of the body>" of
// the claims object store. internal/bus does the same for autocoder's own
// processes; this is the producer's side, built from the documented rule
// and the names in pkg/messages only.

// maxClaim bounds a claim-checked body the client reads or writes.
const maxClaim = 64 << 20

func claimName(body []byte) string {
	sum := sha256.Sum256(body)
	return "sha256-" + hex.EncodeToString(sum[:])
}

// jsPublisher is the default Publisher: JetStream publish with a Msg-Id
// and the job's header, by claim check above the threshold.
type jsPublisher struct {
	js     jetstream.JetStream
	stores *stores
}

func (p *jsPublisher) PublishJSON(ctx context.Context, subject string, v any, msgID string) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode message for %s: %w", subject, err)
	}
	msg := nats.NewMsg(subject)
	msg.Header.Set(jetstream.MsgIDHeader, msgID)
	if id := jobOf(v); id != "" {
		msg.Header.Set(messages.HeaderJobID, id)
	}
	msg.Data = body
	if len(body) > messages.ClaimThreshold {
		if len(body) > maxClaim {
			return fmt.Errorf("publish to %s: the message is %s, over the %s a claim check takes", subject,
				messages.FormatBytes(int64(len(body))), messages.FormatBytes(maxClaim))
		}
		store, err := p.stores.claims(ctx)
		if err != nil {
			return err
		}
		name := claimName(body)
		if _, err := store.GetInfo(ctx, name); err != nil {
			if _, err := store.Put(ctx, jetstream.ObjectMeta{Name: name}, bytes.NewReader(body)); err != nil {
				return fmt.Errorf("publish to %s: claim check: %w", subject, StoreFull(messages.ObjectStoreClaims, err))
			}
		}
		msg.Header.Set(messages.HeaderClaimCheck, name)
		msg.Data = nil
	}
	if _, err := p.js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("publish to %s: %w", subject, err)
	}
	return nil
}

func jobOf(v any) string {
	switch m := v.(type) {
	case messages.SubmitJob:
		return m.JobID
	case messages.CancelJob:
		return m.JobID
	}
	return ""
}

// redeem returns a message's body: data itself, or the claim-checked body
// its header names, checked against its name.
func (c *Client) redeem(ctx context.Context, header nats.Header, data []byte) ([]byte, error) {
	name := header.Get(messages.HeaderClaimCheck)
	if name == "" {
		return data, nil
	}
	store, err := c.stores.claims(ctx)
	if err != nil {
		return nil, err
	}
	obj, err := store.Get(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("claim-checked body %s is gone from %s", name, messages.ObjectStoreClaims)
	}
	if err != nil {
		return nil, fmt.Errorf("fetch claim-checked body %s: %w", name, err)
	}
	defer obj.Close()
	body, err := io.ReadAll(io.LimitReader(obj, maxClaim+1))
	if err != nil {
		return nil, fmt.Errorf("read claim-checked body %s: %w", name, err)
	}
	if len(body) > maxClaim || claimName(body) != name {
		return nil, fmt.Errorf("claim-checked body %s is too large or does not match its name", name)
	}
	return body, nil
}
