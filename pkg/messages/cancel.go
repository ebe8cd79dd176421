package messages

import (
	"fmt"
	"time"
	"unicode/utf8"
)

// CancelJob asks the coordinator to cancel a running job. It is published
// on the jobs stream (a client's request, like SubmitJob); cancelling a job
// that has finished changes nothing.
type CancelJob struct {
	V     int    `json:"v"`
	JobID string `json:"job_id"`
	// By says who asks: "http:<token name>" from the HTTP API,
	// "cli:<user>@<host>" from submit cancel. The coordinator keeps it
	// on the result; it is a label, not an authentication.
	By     string `json:"by"`
	Reason string `json:"reason,omitempty"`
}

// Cancellation is on the result object of a cancelled job: who cancelled
// it, when (the coordinator's clock when it took the request) and why.
type Cancellation struct {
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason,omitempty"`
}

// Bounds of CancelJob's free text, which ends up on the result object.
const (
	MaxCancelByBytes     = 200
	MaxCancelReasonBytes = 1000
)

// Validate checks the free text of a cancel request (the job id is the
// bus's to check): UTF-8, within its bound.
func (c *CancelJob) Validate() error {
	for _, f := range []struct {
		name, value string
		limit       int
	}{{"by", c.By, MaxCancelByBytes}, {"reason", c.Reason, MaxCancelReasonBytes}} {
		if !utf8.ValidString(f.value) {
			return &FieldError{f.name, "is not UTF-8 text"}
		}
		if len(f.value) > f.limit {
			return &FieldError{f.name, fmt.Sprintf("is %d bytes, more than %d", len(f.value), f.limit)}
		}
	}
	return nil
}
