package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Request sends req (JSON) on a message API subject (docs/api.md) and
// decodes the coordinator's answer into reply, waiting at most
// Config.RequestWait when ctx has no deadline.
func (c *Client) Request(ctx context.Context, subject string, req, reply any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.RequestWait)
		defer cancel()
	}
	m, err := c.js.Conn().RequestWithContext(ctx, subject, b)
	if errors.Is(err, nats.ErrNoResponders) {
		return ErrNoCoordinator
	}
	if err != nil {
		return fmt.Errorf("request %s: %w", subject, err)
	}
	if err := json.Unmarshal(m.Data, reply); err != nil {
		return fmt.Errorf("decode the answer on %s: %w", subject, err)
	}
	return nil
}

// SubmitRequest submits req through the coordinator's API subject and
// returns its answer: the job ID, or the error naming the field. The spec's
// samples must be object references (Upload makes them).
func (c *Client) SubmitRequest(ctx context.Context, req messages.APIRequest) (messages.APIReply, error) {
	req.V = messages.WireVersion
	var r messages.APIReply
	err := c.Request(ctx, messages.SubjectAPISubmit, req, &r)
	return r, err
}

// RunTaskRequest executes a named task through the coordinator's API subject.
func (c *Client) RunTaskRequest(ctx context.Context, req messages.TaskRunRequest) (messages.APIReply, error) {
	req.V = messages.WireVersion
	var r messages.APIReply
	err := c.Request(ctx, messages.SubjectAPITaskRun, req, &r)
	return r, err
}

// ReplyError is the error of an APIReply that refused a request: Field is
// the dotted path of the field at fault ("spec.outputs.total"), Kind
// messages.ReplyInvalid (fix the request) or messages.ReplyUnavailable.
type ReplyError struct {
	Field, Kind, Msg string
}

func (e *ReplyError) Error() string { return e.Msg }

// ErrorOf is the error of a reply: nil when it accepted the request.
func ErrorOf(r messages.APIReply) error {
	if r.Error == "" {
		return nil
	}
	return &ReplyError{Field: r.Field, Kind: r.Kind, Msg: r.Error}
}

// DeadLetters returns the letters in the dead-letter stream, oldest first,
// at most limit of them (0: all).
func (c *Client) DeadLetters(ctx context.Context, limit int) ([]messages.DeadLetterEntry, error) {
	out := []messages.DeadLetterEntry{}
	stream, err := c.js.Stream(ctx, messages.StreamDLQ)
	if err != nil {
		return nil, fmt.Errorf("dead letters: %w", err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("dead letters: %w", err)
	}
	if info.State.Msgs == 0 {
		return out, nil
	}
	cons, err := c.js.OrderedConsumer(ctx, messages.StreamDLQ, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return nil, fmt.Errorf("dead letters: %w", err)
	}
	for uint64(len(out)) < info.State.Msgs && (limit <= 0 || len(out) < limit) {
		m, err := cons.Next(jetstream.FetchContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("dead letters: %w", err)
		}
		meta, err := m.Metadata()
		if err != nil {
			return nil, fmt.Errorf("dead letters: %w", err)
		}
		e := messages.DeadLetterEntry{Seq: meta.Sequence.Stream}
		if json.Unmarshal(m.Data(), &e.Letter) != nil {
			continue
		}
		out = append(out, e)
		if meta.Sequence.Stream >= info.State.LastSeq {
			break
		}
	}
	return out, nil
}

// ErrNoDeadLetter means no dead letter has that sequence.
var ErrNoDeadLetter = errors.New("client: no such dead letter")

// DeadLetter returns dead letter seq.
func (c *Client) DeadLetter(ctx context.Context, seq uint64) (*messages.DeadLetterEntry, error) {
	stream, err := c.js.Stream(ctx, messages.StreamDLQ)
	if err != nil {
		return nil, fmt.Errorf("dead letter %d: %w", seq, err)
	}
	raw, err := stream.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, fmt.Errorf("%w: %d", ErrNoDeadLetter, seq)
	}
	if err != nil {
		return nil, fmt.Errorf("dead letter %d: %w", seq, err)
	}
	e := &messages.DeadLetterEntry{Seq: seq}
	if err := json.Unmarshal(raw.Data, &e.Letter); err != nil {
		return nil, fmt.Errorf("dead letter %d: %w", seq, err)
	}
	return e, nil
}

// Replay asks the coordinator to replay dead letter seq.
func (c *Client) Replay(ctx context.Context, seq uint64) (messages.ReplayReply, error) {
	var r messages.ReplayReply
	if err := c.Request(ctx, messages.SubjectAPIDLQReplay, messages.ReplayRequest{V: messages.WireVersion, Seq: seq}, &r); err != nil {
		return r, err
	}
	if r.Error != "" {
		return r, fmt.Errorf("replay dead letter %d: %s", seq, r.Error)
	}
	return r, nil
}
