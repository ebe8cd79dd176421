package bus

import (
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/autocoder/autocoder/pkg/messages"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Message is one delivery handed to a Handler. The handler does not ack it:
// the error it returns decides (see Permanent and RetryAfter).
type Message struct {
	msg        jetstream.Msg // nil for messages made by NewMessage
	subject    string
	data       []byte
	header     nats.Header
	meta       jetstream.MsgMetadata
	maxDeliver int
}

// newMessage wraps a JetStream delivery. maxDeliver is the consumer's
// MaxDeliver (-1 or 0: no limit).
func newMessage(jm jetstream.Msg, maxDeliver int) (*Message, error) {
	meta, err := jm.Metadata()
	if err != nil {
		return nil, fmt.Errorf("bus: message on %s has no JetStream metadata: %w", jm.Subject(), err)
	}
	header := jm.Headers()
	if header == nil {
		header = nats.Header{}
	}
	return &Message{
		msg:        jm,
		subject:    jm.Subject(),
		data:       jm.Data(),
		header:     header,
		meta:       *meta,
		maxDeliver: maxDeliver,
	}, nil
}

// NewMessage makes a Message that did not come from JetStream, for tests of
// handlers: NumDelivered is numDelivered, InProgress does nothing.
func NewMessage(subject string, data []byte, header nats.Header, numDelivered uint64) *Message {
	if header == nil {
		header = nats.Header{}
	}
	return &Message{subject: subject, data: data, header: header, meta: jetstream.MsgMetadata{NumDelivered: numDelivered}}
}

// Data is the payload.
func (m *Message) Data() []byte { return m.data }

// Subject is the subject the message was published to.
func (m *Message) Subject() string { return m.subject }

// Headers are the message headers (never nil).
func (m *Message) Headers() nats.Header { return m.header }

// JobID is the HeaderJobID header, "" if absent.
func (m *Message) JobID() string { return m.Headers().Get(HeaderJobID) }

// Stage is the HeaderStage header, "" if absent.
func (m *Message) Stage() messages.Stage { return messages.Stage(m.Headers().Get(HeaderStage)) }

// NumDelivered counts deliveries of this message, this one included (1 on
// the first).
func (m *Message) NumDelivered() uint64 { return m.meta.NumDelivered }

// LastDelivery reports whether this is the consumer's last delivery of the
// message (MaxDeliver reached): if the handler fails now, the message is
// given up to the dead letters, so a handler can publish a final failure (e.g. a StageResult
// with ErrorInfra) instead of returning the error.
func (m *Message) LastDelivery() bool {
	return m.maxDeliver > 0 && m.meta.NumDelivered >= uint64(m.maxDeliver)
}

// MaxDeliver is the consumer's MaxDeliver as the Worker knew it: -1 for no
// limit, 0 when unknown (a message made by NewMessage, or a consumer whose
// configuration was not cached).
func (m *Message) MaxDeliver() int { return m.maxDeliver }

// WithMaxDeliver returns a copy of m that came from a consumer with the
// given MaxDeliver, for tests of handlers that act on LastDelivery.
func (m *Message) WithMaxDeliver(n int) *Message {
	c := *m
	c.maxDeliver = n
	return &c
}

// Metadata is the JetStream delivery metadata (stream and consumer
// sequences, pending count, timestamp).
func (m *Message) Metadata() jetstream.MsgMetadata { return m.meta }

// InProgress tells JetStream the message is still being worked on, resetting
// its AckWait. The Worker already does this every HeartbeatInterval while
// the handler runs; call it directly only around a long step when automatic
// heartbeats are disabled.
func (m *Message) InProgress() error {
	if m.msg == nil {
		return nil
	}
	return m.msg.InProgress()
}

// DecodeJSON unmarshals the payload into v.
func (m *Message) DecodeJSON(v any) error {
	if err := json.Unmarshal(m.data, v); err != nil {
		return fmt.Errorf("bus: decode message on %s: %w", m.subject, err)
	}
	return nil
}

// logAttrs are the attributes every log line about this message carries.
func (m *Message) logAttrs() []any {
	attrs := make([]any, 0, 10)
	if id := m.JobID(); id != "" {
		attrs = append(attrs, slog.String("job_id", id))
	}
	if st := m.Stage(); st != "" {
		attrs = append(attrs, slog.String("stage", string(st)))
	}
	attrs = append(attrs,
		slog.String("subject", m.subject),
		slog.Uint64("num_delivered", m.meta.NumDelivered),
	)
	if m.meta.Sequence.Stream != 0 {
		attrs = append(attrs, slog.Uint64("stream_seq", m.meta.Sequence.Stream))
	}
	return attrs
}
