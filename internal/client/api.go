package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/objects"
	"github.com/autocoder/autocoder/pkg/messages"
)

// ErrNoCoordinator means no coordinator answered an API request.
var ErrNoCoordinator = errors.New("client: no coordinator answers the message API")

// Request sends req (JSON) on an API subject and decodes the coordinator's
// answer into reply: the message API (docs/api.md) as the HTTP API and
// `submit dlq replay` use it.
func (c *Client) Request(ctx context.Context, subject string, req, reply any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
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
// returns its answer: the job ID, or the error naming the field.
func (c *Client) SubmitRequest(ctx context.Context, req messages.APIRequest) (messages.APIReply, error) {
	req.V = messages.WireVersion
	var r messages.APIReply
	err := c.Request(ctx, bus.SubjectAPISubmit, req, &r)
	return r, err
}

// RunTaskRequest executes a named task through the coordinator's API subject.
func (c *Client) RunTaskRequest(ctx context.Context, req messages.TaskRunRequest) (messages.APIReply, error) {
	req.V = messages.WireVersion
	var r messages.APIReply
	err := c.Request(ctx, bus.SubjectAPITaskRun, req, &r)
	return r, err
}

// PutSample uploads a sample's bytes from r (at most objects.MaxObjectBytes)
// and returns its object reference; fileName's extension is kept, so the
// script finds it as /var/inputs/<name><ext>.
func (c *Client) PutSample(ctx context.Context, fileName string, r io.Reader) (messages.SampleRef, error) {
	f, err := os.CreateTemp("", "autocoder-upload-*"+filepath.Ext(filepath.Base(fileName)))
	if err != nil {
		return messages.SampleRef{}, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	n, err := io.Copy(f, io.LimitReader(r, objects.MaxObjectBytes+1))
	if err != nil {
		return messages.SampleRef{}, fmt.Errorf("sample %s: %w", fileName, err)
	}
	if n > objects.MaxObjectBytes {
		return messages.SampleRef{}, fmt.Errorf("%w: larger than %d bytes", ErrSampleTooLarge, int64(objects.MaxObjectBytes))
	}
	if err := f.Close(); err != nil {
		return messages.SampleRef{}, err
	}
	return c.samples.Put(ctx, fileName, f.Name())
}

// ErrSampleTooLarge is returned (wrapped) by PutSample past objects.MaxObjectBytes.
var ErrSampleTooLarge = errors.New("client: sample too large")

// DeadLetters returns the letters in the dead-letter stream, oldest first,
// at most limit of them (0: all).
func (c *Client) DeadLetters(ctx context.Context, limit int) ([]messages.DeadLetterEntry, error) {
	out := []messages.DeadLetterEntry{}
	info, err := c.res.DLQ.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("dead letters: %w", err)
	}
	if info.State.Msgs == 0 {
		return out, nil
	}
	cons, err := c.js.OrderedConsumer(ctx, bus.StreamDLQ, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
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
	raw, err := c.res.DLQ.GetMsg(ctx, seq)
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
	if err := c.Request(ctx, bus.SubjectAPIDLQReplay, messages.ReplayRequest{V: messages.WireVersion, Seq: seq}, &r); err != nil {
		return r, err
	}
	if r.Error != "" {
		return r, fmt.Errorf("replay dead letter %d: %s", seq, r.Error)
	}
	return r, nil
}
