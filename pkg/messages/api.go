package messages

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// The message API for producers in any language (docs/api.md): requests
// sent with NATS request-reply to the coordinator, which answers at once
// with the job ID or the error that names the field, and the dead letters
// of messages that exhausted their deliveries.

// APIRequest submits a job, or a run of a finished job's script on new data,
// on the API submit subject; it is SubmitJob with the job ID optional and a
// subject for the result.
type APIRequest struct {
	V int `json:"v"`
	// JobID is the job's ID; empty: the coordinator makes one. A request
	// with the ID of an existing job is answered with that job (the same
	// request sent twice submits once).
	JobID string `json:"job_id,omitempty"`
	// Spec is the job (Contract 1 (docs/contracts.md)); its samples must be
	// object references (sha256:<hex>[.ext]) into the samples object store.
	Spec *JobSpec `json:"spec,omitempty"`
	// Run, instead of Spec, runs the script of a finished job on new data.
	Run *RunRequest `json:"run,omitempty"`
	// ReplyTo is a NATS subject under autocoder.replies. (ReplyToPrefix) where the coordinator
	// publishes the result object (Result) once the job finishes.
	ReplyTo string `json:"reply_to,omitempty"`
}

// TaskRunRequest executes a named task (Task) on new data, on the API task
// subject: a run of the task's job with these args and samples.
type TaskRunRequest struct {
	V       int               `json:"v"`
	Task    string            `json:"task"`
	JobID   string            `json:"job_id,omitempty"`
	Args    map[string]string `json:"args,omitempty"`
	Samples map[string]string `json:"samples,omitempty"`
	ReplyTo string            `json:"reply_to,omitempty"`
	// Options are the run's settings over the task's defaults (Task.Defaults).
	Options *RunOptions `json:"options,omitempty"`
}

// APIReply answers an APIRequest or a TaskRunRequest: the job ID of the
// accepted job, or the error, with the field it is about when it is one.
type APIReply struct {
	V     int    `json:"v"`
	JobID string `json:"job_id,omitempty"`
	Error string `json:"error,omitempty"`
	Field string `json:"field,omitempty"` // dotted path, e.g. "spec.outputs.total"
	// Kind is ReplyInvalid for a request that is wrong (fix it; do not
	// retry as is) and ReplyUnavailable for a failure of autocoder's own
	// (retry later).
	Kind string `json:"kind,omitempty"`
}

// Kinds of APIReply errors.
const (
	ReplyInvalid     = "invalid"
	ReplyUnavailable = "unavailable"
)

// ReplyToPrefix is where results asked for with reply_to are published:
// the producer names the rest of the subject. Only this prefix is allowed,
// so a request cannot make the coordinator publish on autocoder's own
// subjects.
const ReplyToPrefix = "autocoder.replies."

// MaxSubjectLen bounds a reply_to subject.
const MaxSubjectLen = 256

// CheckReplyTo reports what is wrong with a reply_to subject, as a
// *FieldError; "" is fine (no reply).
func CheckReplyTo(subject string) error {
	rest, ok := strings.CutPrefix(subject, ReplyToPrefix)
	switch {
	case subject == "":
		return nil
	case !ok || rest == "":
		return &FieldError{"reply_to", "must be a subject under " + ReplyToPrefix + " (e.g. " + ReplyToPrefix + "myapp)"}
	case len(subject) > MaxSubjectLen:
		return &FieldError{"reply_to", "longer than 256 bytes"}
	case strings.ContainsAny(subject, "*> \t\r\n\x00"):
		return &FieldError{"reply_to", "must be a plain subject: no wildcards or whitespace"}
	}
	for _, tok := range strings.Split(rest, ".") {
		if tok == "" {
			return &FieldError{"reply_to", "has an empty token (two dots in a row or a dot at the end)"}
		}
	}
	return nil
}

// DecodeAPIRequest decodes an APIRequest strictly: unknown fields and
// wrong types are *FieldError naming the field, and the spec is checked
// as DecodeJobSpecJSON checks a job file.
func DecodeAPIRequest(data []byte) (*APIRequest, error) {
	var raw struct {
		V       int             `json:"v"`
		JobID   string          `json:"job_id"`
		Spec    json.RawMessage `json:"spec"`
		Run     json.RawMessage `json:"run"`
		ReplyTo string          `json:"reply_to"`
	}
	if err := DecodeStrict(data, &raw); err != nil {
		return nil, err
	}
	req := &APIRequest{V: raw.V, JobID: raw.JobID, ReplyTo: raw.ReplyTo}
	if err := CheckReplyTo(raw.ReplyTo); err != nil {
		return nil, err
	}
	hasSpec, hasRun := present(raw.Spec), present(raw.Run)
	switch {
	case hasSpec && hasRun:
		return nil, &FieldError{"run", "give spec or run, not both"}
	case hasRun:
		var run RunRequest
		if err := DecodeStrict(raw.Run, &run); err != nil {
			return nil, PrefixField("run", err)
		}
		if run.Options != nil {
			if err := run.Options.Validate(); err != nil {
				return nil, PrefixField("run", err)
			}
		}
		req.Run = &run
	case hasSpec:
		spec, err := DecodeJobSpecJSON(raw.Spec)
		if err != nil {
			return nil, PrefixField("spec", err)
		}
		req.Spec = spec
	default:
		return nil, &FieldError{"spec", "missing: a request needs a spec (a job) or a run"}
	}
	return req, nil
}

// DecodeTaskRunRequest decodes a TaskRunRequest strictly.
func DecodeTaskRunRequest(data []byte) (*TaskRunRequest, error) {
	var req TaskRunRequest
	if err := DecodeStrict(data, &req); err != nil {
		return nil, err
	}
	if !ValidTaskName(req.Task) {
		return nil, &FieldError{"task", "must be a task name: 1 to 63 letters, digits, '_' or '-'"}
	}
	if err := CheckReplyTo(req.ReplyTo); err != nil {
		return nil, err
	}
	if req.Options != nil {
		if err := req.Options.Validate(); err != nil {
			return nil, err
		}
	}
	return &req, nil
}

func present(raw json.RawMessage) bool {
	return len(raw) > 0 && string(bytes.TrimSpace(raw)) != "null"
}

// DecodeStrict decodes one JSON object into v, refusing unknown fields,
// trailing data and text that is not UTF-8; its errors are *FieldError.
func DecodeStrict(data []byte, v any) error {
	if err := checkText(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeFieldError(err)
	}
	if dec.More() {
		return &FieldError{"", "trailing data after the JSON object"}
	}
	return nil
}

func checkText(data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return &FieldError{"", "empty request: want a JSON object"}
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return &FieldError{"", "request is not UTF-8 text"}
	}
	return nil
}

// decodeFieldError names the field of a json decoding error.
func decodeFieldError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		return &FieldError{field, "must be " + goTypeWord(te.Type.Kind().String()) + ", not " + te.Value}
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return &FieldError{strings.Trim(f, `"`), "unknown field"}
	}
	return &FieldError{"", "malformed JSON: " + msg}
}

// PrefixField puts prefix before the field of a *FieldError.
func PrefixField(prefix string, err error) error {
	var fe *FieldError
	if !errors.As(err, &fe) {
		return err
	}
	field := prefix
	if fe.Field != "" {
		field += "." + fe.Field
	}
	return &FieldError{field, fe.Msg}
}

// ReplyOf is the APIReply for err (nil: accepted jobID).
func ReplyOf(jobID string, err error) APIReply {
	if err == nil {
		return APIReply{V: WireVersion, JobID: jobID}
	}
	r := APIReply{V: WireVersion, JobID: jobID, Error: err.Error(), Kind: ReplyUnavailable}
	var fe *FieldError
	if errors.As(err, &fe) {
		r.Field, r.Kind = fe.Field, ReplyInvalid
	}
	return r
}

// DeadLetter is a message that exhausted its deliveries: a copy of it, where
// it was, and why it died. They are kept in the dead-letter stream for
// `submit dlq list|show|replay`.
type DeadLetter struct {
	V int `json:"v"`
	// Stream, Consumer and StreamSeq say where the message was (from the
	// server's max-deliveries advisory); Subject is where it was published
	// and where a replay publishes it again.
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Subject    string `json:"subject"`
	Deliveries uint64 `json:"deliveries"`
	// Data is the message itself (base64 in JSON); Headers its NATS headers.
	Data    []byte              `json:"data"`
	Headers map[string][]string `json:"headers,omitempty"`
	// JobID, Stage and Seq say what the message was about, when it was a
	// stage command, a stage result or a submission.
	JobID  string    `json:"job_id,omitempty"`
	Stage  Stage     `json:"stage,omitempty"`
	Seq    int       `json:"seq,omitempty"`
	Reason string    `json:"reason"`
	DeadAt time.Time `json:"dead_at"`
	// JobState is the coordinator's record of the job just before the dead
	// letter failed it (opaque to producers): a replay restores it, so the
	// replayed stage's result finishes the job.
	JobState json.RawMessage `json:"job_state,omitempty"`
}

// DeadLetterEntry is a dead letter with its sequence in the dead-letter
// stream, which `submit dlq show|replay` take.
type DeadLetterEntry struct {
	Seq    uint64     `json:"seq"`
	Letter DeadLetter `json:"letter"`
}

// ReplayRequest asks the coordinator to replay dead letter Seq of the
// dead-letter stream; ReplayReply answers it.
type ReplayRequest struct {
	V   int    `json:"v"`
	Seq uint64 `json:"seq"`
}

// ReplayReply answers a ReplayRequest: the job the letter was about, and
// whether the job was re-opened (it had failed because of the letter).
type ReplayReply struct {
	V        int    `json:"v"`
	JobID    string `json:"job_id,omitempty"`
	Subject  string `json:"subject,omitempty"`
	Reopened bool   `json:"reopened,omitempty"`
	Error    string `json:"error,omitempty"`
}
