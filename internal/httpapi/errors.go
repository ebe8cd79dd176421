package httpapi

import (
	"errors"
	"net/http"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Every error answer of the API is JSON, one shape
// (messages.HTTPError): {"error": "...", "code": "...", "field": "..."},
// whatever the route, so a client reads them all the same way. The
// message API's routes answer with an APIReply, which has the same three
// fields (writeReply).

// writeError answers status with code and msg.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, messages.HTTPError{Error: msg, Code: code})
}

// writeInvalid answers 400 for a request that is wrong, with the field at
// fault when err names one.
func writeInvalid(w http.ResponseWriter, err error) {
	body := messages.HTTPError{Error: err.Error(), Code: messages.CodeInvalid}
	var fe *messages.FieldError
	if errors.As(err, &fe) {
		body.Field = fe.Field
	}
	writeJSON(w, http.StatusBadRequest, body)
}

// writeClientError answers for an error of the client: 404 for a job that
// does not exist, 503 (retry) for NATS or a store that did not answer.
func writeClientError(w http.ResponseWriter, err error) {
	var fe *messages.FieldError
	switch {
	case errors.Is(err, client.ErrNotFound):
		writeError(w, http.StatusNotFound, messages.CodeNotFound, "job not found")
	case errors.As(err, &fe):
		writeInvalid(w, err)
	default:
		writeError(w, http.StatusServiceUnavailable, messages.CodeUnavailable, err.Error())
	}
}

// noRoute answers every request no route takes.
func noRoute(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, messages.CodeNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path+" (see /v1/openapi.json)")
}
