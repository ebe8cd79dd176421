package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/autocoder/autocoder/pkg/messages"
)

// cancelWait bounds how long POST /v1/jobs/{id}/cancel waits for the
// cancelled job's result before it answers 202 Accepted instead.
const cancelWait = 10 * time.Second

// maxCancelBody bounds the optional JSON body of a cancel request.
const maxCancelBody = 4 << 10

// cancel is POST /v1/jobs/{id}/cancel (submit scope), with an optional
// body {"reason": "..."}. It answers 200 with the result object of the
// cancelled job (its "cancelled" says who and when), 202 with the job's
// status when the coordinator has not finished it within cancelWait, 409
// with the result of a job that had already finished, 404 for no such job.
func (a *api) cancel(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	reason, ok := reasonBody(w, r) // ops.go
	if !ok {
		return
	}
	res, err := a.c.Cancel(r.Context(), id, "http:"+a.access.caller(r), reason)
	var fe *messages.FieldError
	switch {
	case errors.As(err, &fe):
		writeInvalid(w, fe)
		return
	case err != nil:
		writeClientError(w, err)
		return
	case res.Status != messages.StatusRunning:
		writeJSON(w, http.StatusConflict, res)
		return
	}
	ctx, stop := context.WithTimeout(r.Context(), cancelWait)
	defer stop()
	final, err := a.c.WaitResult(ctx, id)
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, final)
	case errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil:
		writeJSON(w, http.StatusAccepted, res)
	default:
		writeClientError(w, err)
	}
}

// caller names who makes request r: its bearer token's name in the tokens
// file, "anonymous" on an API without authentication.
func (a *access) caller(r *http.Request) string {
	if token, ok := bearer(r); ok {
		if name, known, _ := a.Tokens.Check(token, ScopeSubmit); known {
			return name
		}
	}
	return "anonymous"
}
