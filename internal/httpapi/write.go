package httpapi

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/pkg/messages"
)

// The write endpoints (token scope submit) and the API's own description.
// Submissions go through the coordinator's message API (docs/api.md), so
// a job sent over HTTP is checked by the same code as one sent over NATS,
// and its answer (the job ID, or the error naming the field) comes back at
// once.

//go:embed openapi.json
var openAPI []byte

// messageRoutes are the endpoints of the message API; Handler serves them
// beside routes.
var messageRoutes = []route{
	{"GET /v1/openapi.json", "", (*api).openapi, nil},
	{"POST /v1/jobs", ScopeSubmit, (*api).submit, hasClient},
	{"POST /v1/jobs/{id}/run", ScopeSubmit, (*api).runJob, hasClient},
	{"POST /v1/tasks/{name}/run", ScopeSubmit, (*api).runTask, hasClient},
	{"POST /v1/samples", ScopeSubmit, (*api).putSample, hasClient},
	{"GET /v1/dlq", ScopeRead, (*api).deadLetters, hasClient},
	{"GET /v1/dlq/{seq}", ScopeRead, (*api).deadLetter, hasClient},
	{"POST /v1/dlq/{seq}/replay", ScopeSubmit, (*api).replay, hasClient},
}

// allRoutes are every endpoint Handler serves.
func allRoutes() []route {
	return append(append(append(append([]route{}, routes...), messageRoutes...), taskRoutes...), opsRoutes...)
}

// maxRequestBytes bounds a JSON request body (a job spec with its prompt).
const maxRequestBytes = 4 << 20

func (a *api) openapi(w http.ResponseWriter, r *http.Request) {
	doc, err := openAPIDocument()
	if err != nil {
		writeError(w, http.StatusInternalServerError, messages.CodeInternal, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(doc)
}

// submit is POST /v1/jobs: a messages.APIRequest.
func (a *api) submit(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	req, err := messages.DecodeAPIRequest(body)
	if err != nil {
		writeReply(w, messages.ReplyOf("", err), nil)
		return
	}
	reply, err := a.c.SubmitRequest(r.Context(), *req)
	writeReply(w, reply, err)
}

// runRequest is the body of POST /v1/jobs/{id}/run: a run of that job's
// script on new data (messages.RunRequest without from_job).
type runRequest struct {
	JobID   string               `json:"job_id,omitempty"`
	Args    map[string]string    `json:"args,omitempty"`
	Samples map[string]string    `json:"samples,omitempty"`
	ReplyTo string               `json:"reply_to,omitempty"`
	Options *messages.RunOptions `json:"options,omitempty"`
}

// checkOptions answers 400 with the field when the body's run settings
// are invalid.
func (rr *runRequest) checkOptions(w http.ResponseWriter) bool {
	if rr.Options == nil {
		return true
	}
	if err := rr.Options.Validate(); err != nil {
		writeReply(w, messages.ReplyOf("", err), nil)
		return false
	}
	return true
}

// runJob is POST /v1/jobs/{id}/run.
func (a *api) runJob(w http.ResponseWriter, r *http.Request) {
	from, ok := jobID(w, r)
	if !ok {
		return
	}
	var rr runRequest
	if !decodeBody(w, r, &rr) || !rr.checkOptions(w) {
		return
	}
	run := messages.RunRequest{FromJob: from, Args: rr.Args, Samples: rr.Samples, Options: rr.Options}
	reply, err := a.c.SubmitRequest(r.Context(), messages.APIRequest{JobID: rr.JobID, Run: &run, ReplyTo: rr.ReplyTo})
	writeReply(w, reply, err)
}

// runTask is POST /v1/tasks/{name}/run.
func (a *api) runTask(w http.ResponseWriter, r *http.Request) {
	var rr runRequest
	if !decodeBody(w, r, &rr) || !rr.checkOptions(w) {
		return
	}
	req := messages.TaskRunRequest{Task: r.PathValue("name"), JobID: rr.JobID, Args: rr.Args, Samples: rr.Samples, ReplyTo: rr.ReplyTo, Options: rr.Options}
	if !messages.ValidTaskName(req.Task) {
		writeReply(w, messages.ReplyOf("", &messages.FieldError{Field: "task", Msg: "not a task name"}), nil)
		return
	}
	reply, err := a.c.RunTaskRequest(r.Context(), req)
	writeReply(w, reply, err)
}

// maxUploads bounds the sample uploads in progress at once: each is
// spooled to a temporary file (up to messages.MaxSampleBytes) before the
// store takes it, on the disk an embedded NATS may share.
const maxUploads = 4

// putSample is POST /v1/samples?name=sales.csv: the body is the file; the
// answer is its object reference for a spec's samples.
func (a *api) putSample(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	if name == "" {
		writeInvalid(w, &messages.FieldError{Field: "name", Msg: "name= is required: the sample's file name (its extension is kept)"})
		return
	}
	if r.ContentLength > messages.MaxSampleBytes { // refused before a byte is read
		writeError(w, http.StatusRequestEntityTooLarge, messages.CodeTooLarge, fmt.Sprintf("%v: larger than %s", client.ErrSampleTooLarge, messages.FormatBytes(messages.MaxSampleBytes)))
		return
	}
	select {
	case a.uploads <- struct{}{}:
		defer func() { <-a.uploads }()
	default:
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, messages.CodeUnavailable, fmt.Sprintf("%d sample uploads are in progress: retry", maxUploads))
		return
	}
	ref, err := a.c.PutSample(r.Context(), name, r.Body)
	switch {
	case errors.Is(err, client.ErrSampleTooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, messages.CodeTooLarge, err.Error())
	case errors.Is(err, bus.ErrStoreFull):
		writeError(w, http.StatusInsufficientStorage, messages.CodeUnavailable, err.Error())
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, messages.CodeUnavailable, err.Error())
	default:
		writeJSON(w, http.StatusCreated, struct {
			Object string `json:"object"`
			Size   int64  `json:"size"`
		}{ref.Object, ref.Size})
	}
}

// deadLetters is GET /v1/dlq: the dead letters, oldest first.
func (a *api) deadLetters(w http.ResponseWriter, r *http.Request) {
	letters, err := a.c.DeadLetters(r.Context(), 0)
	writeResult(w, letters, err)
}

func (a *api) deadLetter(w http.ResponseWriter, r *http.Request) {
	seq, ok := dlqSeq(w, r)
	if !ok {
		return
	}
	e, err := a.c.DeadLetter(r.Context(), seq)
	if errors.Is(err, client.ErrNoDeadLetter) {
		writeError(w, http.StatusNotFound, messages.CodeNotFound, err.Error())
		return
	}
	writeResult(w, e, err)
}

// replay is POST /v1/dlq/{seq}/replay.
func (a *api) replay(w http.ResponseWriter, r *http.Request) {
	seq, ok := dlqSeq(w, r)
	if !ok {
		return
	}
	reply, err := a.c.Replay(r.Context(), seq)
	switch {
	case errors.Is(err, client.ErrNoCoordinator):
		writeError(w, http.StatusServiceUnavailable, messages.CodeUnavailable, err.Error())
	case err != nil && reply.Error == "":
		writeError(w, http.StatusServiceUnavailable, messages.CodeUnavailable, err.Error())
	case err != nil:
		writeJSON(w, http.StatusConflict, reply)
	default:
		writeJSON(w, http.StatusOK, reply)
	}
}

func dlqSeq(w http.ResponseWriter, r *http.Request) (uint64, bool) {
	seq, err := strconv.ParseUint(r.PathValue("seq"), 10, 64)
	if err != nil || seq == 0 {
		writeInvalid(w, &messages.FieldError{Field: "seq", Msg: "not a dead letter's sequence (a number from 1)"})
		return 0, false
	}
	return seq, true
}

// readBody reads a JSON request body of at most maxRequestBytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	if err != nil {
		writeBodyError(w, err)
		return nil, false
	}
	return body, true
}

// writeBodyError answers a request whose body could not be read: 413 when
// it was over its bound, else 400 (a body cut off, a malformed chunk, the
// server's read timeout), which a client must not take for "make it
// smaller".
func writeBodyError(w http.ResponseWriter, err error) {
	if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
		writeError(w, http.StatusRequestEntityTooLarge, messages.CodeTooLarge, "request body: "+err.Error())
		return
	}
	writeError(w, http.StatusBadRequest, messages.CodeInvalid, "request body not read: "+err.Error())
}

// decodeBody decodes a JSON body strictly into v; a bad one is answered
// with 400 and the field.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	body, ok := readBody(w, r)
	if !ok {
		return false
	}
	if err := messages.DecodeStrict(body, v); err != nil {
		writeReply(w, messages.ReplyOf("", err), nil)
		return false
	}
	return true
}

// writeReply answers with an APIReply: 202 for an accepted job, 400 for a
// refused one, 503 when no coordinator answered. An error reply has the
// error body's code too (errors.go).
func writeReply(w http.ResponseWriter, reply messages.APIReply, err error) {
	switch {
	case err != nil: // no coordinator answered, or NATS failed
		writeJSON(w, http.StatusServiceUnavailable, messages.APIReply{V: messages.WireVersion, Error: err.Error(), Kind: messages.ReplyUnavailable, Code: messages.CodeUnavailable})
	case reply.Error != "" && reply.Kind == messages.ReplyInvalid:
		reply.Code = messages.CodeInvalid
		writeJSON(w, http.StatusBadRequest, reply)
	case reply.Error != "":
		reply.Code = messages.CodeUnavailable
		writeJSON(w, http.StatusServiceUnavailable, reply)
	default:
		writeJSON(w, http.StatusAccepted, reply)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the status is sent; a client gone away is its own loss
}
